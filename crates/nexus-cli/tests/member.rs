//! The member verbs on the built `nexus` binary against a real `nexus serve`: exit statuses,
//! `--json` shapes, a refusal printed as its code, the profile `nexus login` writes. On
//! SQLite, and on PostgreSQL when configured.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{NEXUS, Server, json_of, nexus, spawn_server};
use nexus_sdk::Client;
use serde_json::{Value, json};

/// A served, bootstrapped store and the environment the member verbs read.
struct World {
    _server: Server,
    base: String,
    token: String,
    agent: String,
    boot_agent_id: String,
    runner_id: String,
    workspace: String,
    /// `XDG_CONFIG_HOME` for every command (a fresh, empty profile folder).
    config: tempfile::TempDir,
    _data: tempfile::TempDir,
}

impl World {
    async fn new(store: &[&str]) -> World {
        let data = tempfile::tempdir().unwrap();
        let d = data.path().to_str().unwrap().to_string();
        let mut args = vec!["admin", "bootstrap", "--data-dir", &d];
        args.extend_from_slice(store);
        args.push("--json");
        let boot = json_of(&nexus(&args));
        let mut serve_args = vec!["--data-dir", d.as_str()];
        serve_args.extend_from_slice(store);
        let server = spawn_server(&serve_args);
        let base = server.base.clone();
        let client = Client::new(&base, "none");
        let deadline = Instant::now() + Duration::from_secs(30);
        while client.healthz().await.is_err() {
            assert!(Instant::now() < deadline, "nexus serve did not become healthy");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        World {
            _server: server,
            base,
            token: boot["human"]["member_token"].as_str().unwrap().into(),
            agent: boot["agent"]["member_token"].as_str().unwrap().into(),
            boot_agent_id: boot["agent"]["public_id"].as_str().unwrap().into(),
            runner_id: boot["runner"]["executor_public_id"].as_str().unwrap().into(),
            workspace: boot["workspace_public_id"].as_str().unwrap().into(),
            config: tempfile::tempdir().unwrap(),
            _data: data,
        }
    }

    /// `nexus args…` with no connection in the environment (only the profile folder).
    fn bare(&self) -> Command {
        let mut cmd = Command::new(NEXUS);
        cmd.env_remove("NEXUS_URL")
            .env_remove("NEXUS_TOKEN")
            .env_remove("NEXUS_WORKSPACE")
            .env_remove("NEXUS_PROFILE")
            .env("XDG_CONFIG_HOME", self.config.path())
            .stdin(Stdio::null());
        cmd
    }

    /// `nexus args…` connected through the environment.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = self.bare();
        cmd.args(args)
            .env("NEXUS_URL", &self.base)
            .env("NEXUS_TOKEN", &self.token)
            .env("NEXUS_WORKSPACE", &self.workspace);
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run nexus")
    }

    /// The JSON a successful `--json` command printed.
    fn json(&self, args: &[&str]) -> Value {
        json_of(&self.run(args))
    }
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Reads `pipe` on a thread into a shared string, as it arrives.
fn read_in_background(mut pipe: impl std::io::Read + Send + 'static) -> std::sync::Arc<std::sync::Mutex<String>> {
    let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = text.clone();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut chunk) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().push_str(&String::from_utf8_lossy(&chunk[..n]));
        }
    });
    text
}

/// Polls `nexus approvals list --json` until `n` calls are held.
fn held(w: &World, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let list = w.json(&["approvals", "list", "--json"]);
        let approvals = list["approvals"].as_array().unwrap().clone();
        if approvals.len() >= n {
            return approvals;
        }
        assert!(Instant::now() < deadline, "never held {n}: {list}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits for a child `nexus` and returns its output (killed after 60 s).
fn finish(mut child: std::process::Child) -> Output {
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("nexus did not exit");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// A held echo call: a run whose model calls `runners_list` under `ask`.
const HELD: [&str; 7] = [
    "--model",
    "scripted/echo",
    "--kernel-tools",
    "nexus.runners.list",
    "--approval-mode",
    "ask",
    "[[call:runners_list {}]]",
];

async fn runs_and_approvals(store: &[&str]) {
    let w = World::new(store).await;

    // A run from flags, followed to the end: exit 0 and the final run record.
    let done = w.json(&[
        "run",
        "hello there",
        "--model",
        "scripted/echo",
        "--approval-mode",
        "bypass",
        "--json",
    ]);
    assert_eq!(done["run"]["status"], "completed", "{done}");
    assert!(done["usage"]["output_tokens"].is_u64(), "{done}");
    let id = done["run"]["public_id"].as_str().unwrap().to_string();

    // The readable progress view names the round and the reply.
    let out = w.run(&["run", "say hi", "--model", "scripted/echo", "--approval-mode", "bypass"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("── round s1-model-1 (scripted/echo)"), "{text}");
    assert!(text.contains("  say hi"), "{text}");
    assert!(text.contains("run completed"), "{text}");

    // runs list, show, transcript, graph.
    let list = w.json(&["runs", "list", "--json"]);
    assert!(
        list["runs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["public_id"] == id.as_str()),
        "{list}"
    );
    let done_list = w.json(&["runs", "list", "--status", "completed", "--limit", "1", "--json"]);
    assert_eq!(done_list["runs"].as_array().unwrap().len(), 1, "{done_list}");
    let show = w.json(&["runs", "show", &id, "--json"]);
    assert_eq!(show["run"]["public_id"], id.as_str());
    assert_eq!(show["run"]["approval_mode"], "bypass");
    let transcript = w.json(&["runs", "transcript", &id, "--json"]);
    let rows = transcript["rows"].as_array().unwrap();
    assert_eq!(rows[0]["role"], "user");
    assert_eq!(rows[0]["text"], "hello there");
    assert_eq!(rows[1]["role"], "assistant");
    let out = w.run(&["runs", "transcript", &id]);
    assert!(stdout(&out).contains("user:\n  hello there"), "{}", stdout(&out));
    let graph = w.json(&["runs", "graph", &id, "--json"]);
    assert_eq!(graph["nodes"][0]["key"], "s1-model-1", "{graph}");
    let out = w.run(&["runs", "graph", &id]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).contains("n0"), "{}", stdout(&out));

    // A held call: approved from the CLI, and the run finishes.
    let created = w.json(&[&["run", "--detach", "--json"][..], &HELD[..]].concat());
    let run = created["run"]["public_id"].as_str().unwrap().to_string();
    let approvals = held(&w, 1);
    let a = &approvals[0];
    assert_eq!(a["run_public_id"], run.as_str());
    assert_eq!(a["tool_name"], "runners_list");
    assert!(a["effect_profile"]["kind"].is_string(), "{a}");
    let task = a["task_key"].as_str().unwrap().to_string();
    let out = w.run(&["approvals", "list"]);
    assert!(
        stdout(&out).contains(&format!("{run} {task}  runners_list  [")),
        "{}",
        stdout(&out)
    );
    let approved = w.json(&["approvals", "approve", &run, &task, "--json"]);
    assert_eq!(approved["task"]["key"], task.as_str(), "{approved}");

    // A refusal prints its code: approving it again, approving an unknown task.
    let out = w.run(&["approvals", "approve", &run, "nope"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).starts_with("error: not_found: "), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
    let out = w.run(&["approvals", "approve", &run, "nope", "--json"]);
    assert_eq!(code(&out), 1);
    let envelope: Value = serde_json::from_slice(&out.stdout).expect("the envelope");
    assert_eq!(envelope["error"]["code"], "not_found", "{envelope}");

    // Denied with a reason: the row fails `approval_denied` with it.
    let created = w.json(&[&["run", "--detach", "--json"][..], &HELD[..]].concat());
    let run2 = created["run"]["public_id"].as_str().unwrap().to_string();
    let approvals = held(&w, 1);
    let task2 = approvals[0]["task_key"].as_str().unwrap().to_string();
    assert_eq!(approvals[0]["run_public_id"], run2.as_str());
    let denied = w.json(&["approvals", "deny", &run2, &task2, "--reason", "not today", "--json"]);
    assert_eq!(denied["task"]["status"], "failed", "{denied}");
    assert_eq!(denied["task"]["error"]["key"], "approval_denied", "{denied}");
    assert_eq!(denied["task"]["error"]["detail"], "not today", "{denied}");

    // `nexus run` following a held run: stopping it from elsewhere exits 3 (canceled).
    let child = w
        .cmd(&[&["run", "--json"][..], &HELD[..]].concat())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let approvals = held(&w, 1);
    let run3 = approvals[0]["run_public_id"].as_str().unwrap().to_string();
    // The follower shows a hold only while the row is still held when it reads it, so the stop
    // waits until it has (under load the follower can be a moment behind the approvals list).
    let mut child = child;
    let follower_err = read_in_background(child.stderr.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(30);
    while !follower_err.lock().unwrap().contains("needs approval") {
        assert!(
            Instant::now() < deadline,
            "no hold shown: {}",
            follower_err.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let stopped = w.json(&["runs", "stop", &run3, "--force", "--json"]);
    assert!(stopped["run"]["status"].is_string(), "{stopped}");
    let out = finish(child);
    let err = follower_err.lock().unwrap().clone();
    assert_eq!(code(&out), 3, "{err}");
    let last: Value = serde_json::from_slice(&out.stdout).expect("the final run record");
    assert_eq!(last["run"]["status"], "canceled");
}

#[tokio::test(flavor = "multi_thread")]
async fn runs_and_approvals_on_sqlite() {
    runs_and_approvals(&[]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn runs_and_approvals_on_postgres() {
    let Some(pg) = nexus_store::testing::postgres().await else {
        eprintln!("skipped: NEXUS_TEST_DATABASE_URL is not set");
        return;
    };
    runs_and_approvals(&["--database-url", &pg.url]).await;
}

async fn files_conversations_and_login(store: &[&str]) {
    let w = World::new(store).await;

    // A run from a JSON file of the create body.
    let file = w.config.path().join("run.json");
    let body = json!({"run": {"approval_mode": "bypass", "steps": [{"model": {"prompt": "from a file", "model": "scripted/echo"}}]}});
    std::fs::write(&file, body.to_string()).unwrap();
    let done = w.json(&["run", "-f", file.to_str().unwrap(), "--json"]);
    assert_eq!(done["run"]["status"], "completed", "{done}");
    // A halting failure: the run needs attention, and `nexus run` exits 4.
    let halt = json!({"approval_mode": "bypass", "steps": [
        {"model": {"prompt": "x", "model": "scripted/nosuch"}, "on_failure": "halt"}]});
    std::fs::write(&file, halt.to_string()).unwrap();
    let out = w.run(&["run", "-f", file.to_str().unwrap(), "--json"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let last: Value = serde_json::from_slice(&out.stdout).expect("the final run record");
    assert_eq!(last["run"]["status"], "needs_attention", "{last}");
    assert_eq!(last["run"]["attention"]["reason"], "halt_failure", "{last}");
    // A body that is not one is refused before anything is sent.
    std::fs::write(&file, r#"{"run": {"steps": []}}"#).unwrap();
    let out = w.run(&["run", "-f", file.to_str().unwrap()]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).starts_with("error: invalid_argument: "),
        "{}",
        stderr(&out)
    );
    // The server's refusal of a bad step carries its code and its details.
    let out = w.run(&["run", "x", "--model", "nowhere/model", "--approval-mode", "bypass"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).starts_with("error: "), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));

    // Conversations: create, say, turns, list, show.
    let created = w.json(&[
        "conversations",
        "create",
        "--title",
        "plans",
        "--answerer",
        "me",
        "--json",
    ]);
    let c = created["conversation"]["public_id"].as_str().unwrap().to_string();
    assert_eq!(created["conversation"]["title"], "plans");
    let said = w.json(&["conversations", "say", &c, "first thought", "--json"]);
    assert_eq!(said["input"]["delivery_mode"], "queue", "{said}");
    let steered = w.json(&["conversations", "say", &c, "second", "--steer", "--json"]);
    assert_eq!(steered["input"]["delivery_mode"], "steer", "{steered}");
    let deadline = Instant::now() + Duration::from_secs(30);
    let turns = loop {
        let turns = w.json(&["conversations", "turns", &c, "--json"]);
        if turns["turns"].as_array().unwrap().len() >= 2 {
            break turns;
        }
        assert!(Instant::now() < deadline, "no turns: {turns}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(turns["turns"][0]["role"], "user", "{turns}");
    assert_eq!(turns["turns"][0]["content"], "first thought", "{turns}");
    let list = w.json(&["conversations", "list", "--json"]);
    assert!(
        list["conversations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["public_id"] == c.as_str())
    );
    let show = w.json(&["conversations", "show", &c, "--json"]);
    assert_eq!(show["conversation"]["public_id"], c.as_str());
    let out = w.run(&["conversations", "show", "0190c7d4-0000-7000-8000-000000000000"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).starts_with("error: not_found: "), "{}", stderr(&out));

    // A person's conversation opens no reply: --wait is refused before anything is sent.
    let inputs_before = w.json(&["conversations", "turns", &c, "--json"])["turns"]
        .as_array()
        .unwrap()
        .len();
    let out = w.run(&["conversations", "say", &c, "anyone?", "--wait"]);
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(
        stderr(&out).starts_with("error: no_reply: ") && stderr(&out).contains("answered by a person (admin)"),
        "{}",
        stderr(&out)
    );
    let turns = w.json(&["conversations", "turns", &c, "--json"]);
    assert_eq!(turns["turns"].as_array().unwrap().len(), inputs_before, "{turns}");

    // An agent's conversation answers: --wait follows the reply and prints the turn.
    let agent = |args: &[&str]| {
        let mut cmd = w.cmd(args);
        cmd.env("NEXUS_TOKEN", &w.agent);
        cmd.output().unwrap()
    };
    let created = json_of(&agent(&["conversations", "create", "--title", "echo", "--json"]));
    let ac = created["conversation"]["public_id"].as_str().unwrap().to_string();
    let out = agent(&[
        "conversations",
        "say",
        &ac,
        "hello agent",
        "-m",
        "scripted/echo",
        "--wait",
        "--json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let reply: Value = serde_json::from_slice(&out.stdout).expect("the reply turn");
    assert_eq!(reply["turn"]["role"], "assistant", "{reply}");
    assert_eq!(reply["turn"]["status"], "completed", "{reply}");
    assert_eq!(reply["turn"]["content"], "hello agent", "{reply}");
    let out = agent(&["conversations", "say", &ac, "again", "-m", "scripted/echo", "--wait"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("  again\nrun completed"), "{}", stdout(&out));

    conversations_find_their_agent(store, w._data.path(), &w).await;
    login(&w);
}

/// A person's `conversations create` without `--answerer` goes to the workspace's one agent
/// (and says so); `nexus agent configure` gives that agent its model, and `say --wait` then
/// follows the reply. Several agents: refused with the list, and `--answerer` takes a handle.
async fn conversations_find_their_agent(store: &[&str], data: &Path, w: &World) {
    let agent_id = w.boot_agent_id.as_str();
    let out = w.run(&["conversations", "create", "--title", "triage"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("answered by agent agent ({agent_id})")),
        "{}",
        stderr(&out)
    );
    let c = stdout(&out).trim().to_string();
    let show = w.json(&["conversations", "show", &c, "--json"]);
    assert_eq!(show["conversation"]["answering_user_public_id"], agent_id, "{show}");

    // The agent's own bearer sets its default model; the person's bearer may not.
    let out = w.run(&["agent", "configure", "--default-model", "scripted/echo"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).starts_with("error: not_agent: "), "{}", stderr(&out));
    let mut cmd = w.cmd(&[
        "agent",
        "configure",
        "--default-model",
        "scripted/echo",
        "--instructions",
        "Be brief.",
    ]);
    let out = cmd.env("NEXUS_TOKEN", &w.agent).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("default_model  scripted/echo"),
        "{}",
        stdout(&out)
    );
    let mut cmd = w.cmd(&["agent", "configure", "--approval-mode", "bypass", "--json"]);
    let profile = json_of(&cmd.env("NEXUS_TOKEN", &w.agent).output().unwrap());
    assert_eq!(
        profile["configuration"]["default_model"], "scripted/echo",
        "kept: {profile}"
    );
    assert_eq!(profile["configuration"]["instructions"], "Be brief.", "kept: {profile}");
    assert_eq!(profile["configuration"]["approval_mode"], "bypass", "{profile}");

    let out = w.run(&["conversations", "say", &c, "what broke?", "--wait"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("  what broke?\nrun completed"),
        "{}",
        stdout(&out)
    );

    // A second agent: the default is ambiguous, and is refused with both listed.
    let d = data.to_str().unwrap();
    let mut args = vec!["admin", "member", "create", "--kind", "agent", "--handle", "second"];
    args.extend_from_slice(&["--steward", "admin", "--standing", "write", "--data-dir", d, "--json"]);
    args.extend_from_slice(store);
    let second = json_of(&nexus(&args));
    let out = w.run(&["conversations", "create"]);
    assert_eq!(code(&out), 1);
    let said = stderr(&out);
    assert!(
        said.starts_with("error: answerer_required: 2 agents can answer here: "),
        "{said}"
    );
    assert!(said.contains(agent_id) && said.contains("second (agent, "), "{said}");
    let picked = w.json(&["conversations", "create", "--answerer", "second", "--json"]);
    assert_eq!(
        picked["conversation"]["answering_user_public_id"], second["public_id"],
        "{picked} {second}"
    );
    let out = w.run(&["conversations", "create", "--answerer", "nobody"]);
    assert!(
        stderr(&out).starts_with("error: answerer_not_found: "),
        "{}",
        stderr(&out)
    );

    // The runners the person may use.
    let out = w.run(&["runners", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains(&w.runner_id), "{}", stdout(&out));
}

/// `nexus login` writes a 0600 profile the verbs then read; the bearer is never printed.
fn login(w: &World) {
    // Nothing named anywhere: a clear refusal.
    let out = w.bare().args(["runs", "list"]).output().unwrap();
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).starts_with("error: not_logged_in: "), "{}", stderr(&out));

    // A wrong bearer is refused and nothing is saved.
    let out = w
        .bare()
        .args([
            "login",
            "--url",
            &w.base,
            "--workspace",
            &w.workspace,
            "--token",
            "nx_wrong",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).starts_with("error: unauthorized: "), "{}", stderr(&out));
    let path = w.config.path().join("nexus").join("profiles.toml");
    assert!(!path.exists());

    // The bearer from the environment; printed nowhere.
    let out = w
        .bare()
        .args(["login", "--url", &w.base, "--workspace", &w.workspace])
        .env("NEXUS_TOKEN", &w.token)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stdout(&out).contains(&w.token) && !stderr(&out).contains(&w.token));
    assert_mode_0600(&path);
    let list = json_of(&w.bare().args(["runs", "list", "--json"]).output().unwrap());
    assert!(list["runs"].is_array(), "{list}");
    // A flag still wins over the profile.
    let out = w.bare().args(["runs", "list", "--token", "nx_wrong"]).output().unwrap();
    assert!(stderr(&out).starts_with("error: unauthorized: "), "{}", stderr(&out));
}

#[cfg(unix)]
fn assert_mode_0600(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", path.display());
}

#[cfg(not(unix))]
fn assert_mode_0600(_: &Path) {}

#[tokio::test(flavor = "multi_thread")]
async fn files_conversations_and_login_on_sqlite() {
    files_conversations_and_login(&[]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn files_conversations_and_login_on_postgres() {
    let Some(pg) = nexus_store::testing::postgres().await else {
        eprintln!("skipped: NEXUS_TEST_DATABASE_URL is not set");
        return;
    };
    files_conversations_and_login(&["--database-url", &pg.url]).await;
}
