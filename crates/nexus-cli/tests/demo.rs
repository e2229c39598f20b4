//! `nexus demo --exit` on the built binary, with the bundled script: it runs to completion and
//! shows every step (search, deferred call, approval with its effect profile, the edit, the
//! answer, the console sign-in). On SQLite, and on PostgreSQL when configured.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::NEXUS;

fn demo(extra: &[&str]) -> String {
    let mut child = Command::new(NEXUS)
        .args(["demo", "--exit"])
        .args(extra)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("NEXUS_DATABASE_URL")
        .env_remove("NEXUS_DATA_DIR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start nexus demo");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("nexus demo did not finish");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn assert_the_whole_story(out: &str) {
    let steps = [
        "model      scripted/demo (the bundled script",
        "/console/#/signin?ws=",
        "sign in    or paste this bearer",
        "── round s1-model-1 (scripted/demo)",
        "→ glob",
        "→ grep",
        "→ read",
        "→ tool_search {\"query\":\"edit\"}",
        "→ tool_call",
        "⏸ edit needs approval [write · destructive · scope: closed]",
        "approved by the demo",
        "→ edit",
        "Done. greet.py already prints",
        "run completed",
        "── transcript of run",
        "- [x] say hello in greet.py (checked by the demo agent)",
    ];
    let mut at = 0;
    for step in steps {
        let found = out[at..]
            .find(step)
            .unwrap_or_else(|| panic!("`{step}` missing (in order) from:\n{out}"));
        at += found;
    }
    // The bearer line is a real member bearer.
    let bearer = out
        .lines()
        .skip_while(|l| !l.contains("sign in"))
        .nth(1)
        .unwrap()
        .trim();
    assert!(bearer.len() > 20, "{bearer}");
    // The console link signs in with that bearer.
    let link = out.lines().find(|l| l.contains("/console/#/signin?")).unwrap();
    assert!(link.ends_with(&format!("&token={bearer}")), "{link}");
}

#[test]
fn the_demo_runs_to_completion_on_sqlite() {
    assert_the_whole_story(&demo(&[]));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_demo_runs_to_completion_on_postgres() {
    let Some(pg) = nexus_store::testing::postgres().await else {
        eprintln!("skipped: NEXUS_TEST_DATABASE_URL is not set");
        return;
    };
    let url = pg.url.clone();
    let out = tokio::task::spawn_blocking(move || demo(&["--database-url", &url]))
        .await
        .unwrap();
    assert_the_whole_story(&out);
}

/// Without `--exit` the demo keeps serving (the console's server answers) until Ctrl-C, then
/// drains and exits 0. The store plays no part here, so SQLite only.
#[tokio::test(flavor = "multi_thread")]
async fn without_exit_the_demo_serves_until_ctrl_c() {
    use std::io::BufRead;

    let mut child = Command::new(NEXUS)
        .arg("demo")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start nexus demo");
    let stdout = child.stdout.take().unwrap();
    let lines = tokio::task::spawn_blocking(move || {
        let mut seen = Vec::new();
        for line in std::io::BufReader::new(stdout).lines() {
            let line = line.unwrap();
            let done = line.starts_with("Serving until Ctrl-C");
            seen.push(line);
            if done {
                break;
            }
        }
        seen
    });
    let lines = tokio::time::timeout(Duration::from_secs(120), lines)
        .await
        .expect("the demo reached its serving line")
        .unwrap();
    assert!(
        lines.last().is_some_and(|l| l.starts_with("Serving until Ctrl-C")),
        "{lines:#?}"
    );
    let base = lines
        .iter()
        .find_map(|l| {
            l.trim()
                .strip_prefix("server")
                .map(|r| r.split_whitespace().next().unwrap().to_string())
        })
        .expect("the banner names the server");
    let health = nexus_sdk::Client::new(&base, "none")
        .healthz()
        .await
        .expect("still serving");
    assert_eq!(health["status"], "ok");

    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the demo did not stop on Ctrl-C");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
    assert!(
        nexus_sdk::Client::new(&base, "none").healthz().await.is_err(),
        "stopped serving"
    );
}
