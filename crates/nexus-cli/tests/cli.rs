//! The `nexus` command as scripts use it: a real binary, a real data dir, a real port.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const NEXUS: &str = env!("CARGO_BIN_EXE_nexus");

fn nexus(args: &[&str]) -> Output {
    Command::new(NEXUS)
        .args(args)
        .env_remove("NEXUS_DATABASE_URL")
        .output()
        .expect("run nexus")
}

fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "nexus failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn shape(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), shape(v))).collect()),
        _ => Value::Null,
    }
}

fn assert_bootstrap_contract(first: &Value, second: &Value) {
    let expected: Value = serde_json::from_str(
        r#"{"account_public_id":null,"workspace_public_id":null,
            "agent":{"public_id":null,"member_token":null,"executor_public_id":null,"transport_token":null},
            "human":{"public_id":null,"member_token":null},
            "runner":{"executor_public_id":null,"transport_token":null}}"#,
    )
    .unwrap();
    assert_eq!(shape(first), expected, "exact keys: {first}");
    for path in [
        "/account_public_id",
        "/workspace_public_id",
        "/agent/public_id",
        "/agent/executor_public_id",
        "/human/public_id",
        "/runner/executor_public_id",
    ] {
        let id = first.pointer(path).unwrap().as_str().unwrap();
        assert_eq!(uuid_version(id), 7, "{path} is a UUIDv7: {id}");
        assert_eq!(
            first.pointer(path),
            second.pointer(path),
            "{path} is stable across runs"
        );
    }
    for path in [
        "/agent/member_token",
        "/agent/transport_token",
        "/human/member_token",
        "/runner/transport_token",
    ] {
        let a = first.pointer(path).unwrap().as_str().unwrap();
        assert!(a.starts_with("nexus-v1-"), "{path}");
        assert_ne!(first.pointer(path), second.pointer(path), "{path} is freshly minted");
    }
}

fn uuid_version(id: &str) -> u32 {
    assert_eq!(id.len(), 36);
    assert_eq!(id, id.to_lowercase());
    id.as_bytes()[14].to_ascii_lowercase() as u32 - b'0' as u32
}

#[test]
fn bootstrap_is_idempotent_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let first = json_of(&nexus(&["admin", "bootstrap", "--data-dir", d, "--json"]));
    let second = json_of(&nexus(&["admin", "bootstrap", "--data-dir", d, "--json"]));
    assert_bootstrap_contract(&first, &second);
    assert!(dir.path().join("nexus.db").exists());
    assert!(dir.path().join("blobs").is_dir());
    assert!(dir.path().join("scripts").is_dir());
}

#[tokio::test(flavor = "multi_thread")]
async fn bootstrap_is_idempotent_on_postgres() {
    let Some(pg) = nexus_store::testing::postgres().await else {
        eprintln!("skipped: NEXUS_TEST_DATABASE_URL is not set");
        return;
    };
    let url = pg.url.clone();
    let (first, second) = tokio::task::spawn_blocking(move || {
        let a = json_of(&nexus(&["admin", "bootstrap", "--database-url", &url, "--json"]));
        let b = json_of(&nexus(&["admin", "bootstrap", "--database-url", &url, "--json"]));
        (a, b)
    })
    .await
    .unwrap();
    assert_bootstrap_contract(&first, &second);
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct Server {
    child: Child,
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_server(args: &[&str]) -> Server {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut all = vec!["serve", "--listen", &listen];
    all.extend_from_slice(args);
    let child = Command::new(NEXUS)
        .args(&all)
        .env_remove("NEXUS_DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Server {
        child,
        base: format!("http://{listen}"),
    }
}

async fn wait_healthy(server: &mut Server) {
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(resp) = client.get(format!("{}/healthz", server.base)).send().await {
            assert_eq!(resp.status(), 200);
            let body: Value = resp.json().await.unwrap();
            assert_eq!(body, serde_json::json!({"status": "ok"}));
            return;
        }
        if let Some(status) = server.child.try_wait().unwrap() {
            panic!("nexus serve exited early with {status}");
        }
        assert!(Instant::now() < deadline, "nexus serve did not become healthy");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn terminate(server: &mut Server) -> std::process::ExitStatus {
    let pid = server.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "nexus serve ignored SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

async fn get(base: &str, path: &str, token: &str) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .get(format!("{base}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_on_the_embedded_default() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let mut server = spawn_server(&["--data-dir", &d]);
    wait_healthy(&mut server).await;

    // admin verbs run beside a live server on the same SQLite file
    let boot = json_of(&nexus(&["admin", "bootstrap", "--data-dir", &d, "--json"]));
    let human = boot["human"]["member_token"].as_str().unwrap();
    let (status, profile) = get(&server.base, "/agent_api/v1/profile", human).await;
    assert_eq!(status, 200);
    assert_eq!(profile["member"]["public_id"], boot["human"]["public_id"]);
    let (status, catalog) = get(&server.base, "/agent_api/v1/tools", human).await;
    assert_eq!(status, 200);
    assert_eq!(catalog["tools"].as_array().unwrap().len(), 19);
    let runner = boot["runner"]["transport_token"].as_str().unwrap();
    let (status, me) = get(&server.base, "/agent_api/v1/executor", runner).await;
    assert_eq!(status, 200);
    assert_eq!(me["executor"]["public_id"], boot["runner"]["executor_public_id"]);

    // a second server on the same data dir refuses to start
    let second = Command::new(NEXUS)
        .args([
            "serve",
            "--data-dir",
            &d,
            "--listen",
            &format!("127.0.0.1:{}", free_port()),
        ])
        .env_remove("NEXUS_DATABASE_URL")
        .output()
        .unwrap();
    assert!(!second.status.success());
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("in use"),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );

    // admin verbs: a new agent, a runner, re-pairing fences the old bearer, revocation
    let agent = json_of(&nexus(&[
        "admin",
        "member",
        "create",
        "--data-dir",
        &d,
        "--kind",
        "agent",
        "--handle",
        "helper",
        "--steward",
        "admin",
        "--json",
    ]));
    let (status, _) = get(
        &server.base,
        "/agent_api/v1/profile",
        agent["member_token"].as_str().unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = get(
        &server.base,
        "/agent_api/v1/executor",
        agent["transport_token"].as_str().unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    let runner2 = json_of(&nexus(&[
        "admin",
        "executor",
        "create",
        "--data-dir",
        &d,
        "--kind",
        "runner",
        "--name",
        "build-mac",
        "--scope",
        "account_wide",
        "--manager",
        "admin",
        "--json",
    ]));
    let old = runner2["transport_token"].as_str().unwrap().to_string();
    assert_eq!(get(&server.base, "/agent_api/v1/executor", &old).await.0, 200);
    let id = runner2["executor_public_id"].as_str().unwrap();
    let repaired = json_of(&nexus(&["admin", "executor", "repair", "--data-dir", &d, id, "--json"]));
    assert_eq!(repaired["credential_epoch"], 1);
    assert_eq!(get(&server.base, "/agent_api/v1/executor", &old).await.0, 401);
    let fresh = repaired["transport_token"].as_str().unwrap();
    assert_eq!(get(&server.base, "/agent_api/v1/executor", fresh).await.0, 200);
    json_of(&nexus(&["admin", "token", "revoke", "--data-dir", &d, fresh, "--json"]));
    assert_eq!(get(&server.base, "/agent_api/v1/executor", fresh).await.0, 401);
    let minted = json_of(&nexus(&[
        "admin",
        "token",
        "create",
        "--data-dir",
        &d,
        "--executor",
        id,
        "--json",
    ]));
    assert_eq!(
        get(
            &server.base,
            "/agent_api/v1/executor",
            minted["token"].as_str().unwrap()
        )
        .await
        .0,
        200
    );
    json_of(&nexus(&["admin", "executor", "revoke", "--data-dir", &d, id, "--json"]));
    assert_eq!(
        get(
            &server.base,
            "/agent_api/v1/executor",
            minted["token"].as_str().unwrap()
        )
        .await
        .0,
        401
    );

    // a duplicate runner name under the same manager is refused with a clear message
    let dup = nexus(&[
        "admin",
        "executor",
        "create",
        "--data-dir",
        &d,
        "--name",
        "default-runner",
        "--manager",
        "admin",
    ]);
    assert!(!dup.status.success());
    assert!(String::from_utf8_lossy(&dup.stderr).contains("already manages"));

    // clean shutdown on SIGTERM
    let status = terminate(&mut server);
    assert!(status.success(), "exit status {status}");
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_on_postgres() {
    let Some(pg) = nexus_store::testing::postgres().await else {
        eprintln!("skipped: NEXUS_TEST_DATABASE_URL is not set");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let mut server = spawn_server(&["--data-dir", &d, "--database-url", &pg.url]);
    wait_healthy(&mut server).await;
    let boot = json_of(&nexus(&["admin", "bootstrap", "--database-url", &pg.url, "--json"]));
    let (status, _) = get(
        &server.base,
        "/agent_api/v1/profile",
        boot["agent"]["member_token"].as_str().unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        !Path::new(&d).join("nexus.db").exists(),
        "PostgreSQL mode writes no SQLite file"
    );
    assert!(terminate(&mut server).success());
}

#[test]
fn serve_refuses_pending_migrations_with_no_migrate() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = nexus(&["serve", "--data-dir", d, "--no-migrate", "--listen", "127.0.0.1:0"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("pending"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let migrated = nexus(&["migrate", "--data-dir", d]);
    assert!(
        migrated.status.success(),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
}

#[test]
fn contract_pack_is_current() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = nexus(&["contracts", "check", "--root", root]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn tools_list_is_the_catalog() {
    let out = nexus(&["tools", "list", "--json"]);
    let catalog = json_of(&out);
    assert_eq!(catalog["tools"].as_array().unwrap().len(), 19);
    let table = nexus(&["tools", "list"]);
    assert!(String::from_utf8_lossy(&table.stdout).contains("nexus.graph.delegate_task"));
}

/// `[providers.*]` is read by every command that builds a kernel: a valid table is accepted, an
/// unknown member and a credential in `extra_headers` are refused with the table's name.
#[test]
fn provider_tables_are_read_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let toml = dir.path().join("nexus.toml");
    let good = "[providers.claude]\nkind = \"anthropic\"\napi_key_env = \"ANTHROPIC_API_KEY\"\n\
                [providers.claude.models.\"claude-sonnet-4-5\"]\ncontext_window = 200000\n\
                [providers.local]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:8000/v1\"\n";
    std::fs::write(&toml, good).unwrap();
    let out = nexus(&["admin", "bootstrap", "--data-dir", d, "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for (bad, says) in [
        ("[providers.x]\nkind = \"openai\"\napi_key = \"sk-oops\"\n", "api_key"),
        (
            "[providers.x]\nkind = \"openai\"\n[providers.x.extra_headers]\nAuthorization = \"Bearer sk-oops\"\n",
            "api_key_env",
        ),
        ("[providers.Bad]\nkind = \"openai\"\n", "[a-z0-9]"),
    ] {
        std::fs::write(&toml, bad).unwrap();
        let out = nexus(&["admin", "bootstrap", "--data-dir", d, "--json"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bad}");
        assert!(err.contains(says), "{bad}: {err}");
        assert!(!err.contains("sk-oops") || says == "api_key", "{err}");
    }
}
