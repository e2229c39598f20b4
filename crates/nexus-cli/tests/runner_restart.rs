//! The SDK's runner framework across a real server crash: `nexus serve` is killed with SIGKILL
//! while the runner's handlers are running, and restarted on the same port and store. The
//! runner reconnects on its own (push channel and polling), commits under the claims it holds,
//! and serves work created after the restart: every task settles exactly once, none is lost.
//! On SQLite, and on PostgreSQL when configured.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{free_port, json_of, nexus, spawn_server_at};
use nexus_sdk::member::{ApprovalMode, NewRun, Step};
use nexus_sdk::runner::{EffectProfile, Runner, ToolResult, ToolSpec};
use nexus_sdk::{Client, Workspace};
use serde_json::{Value, json};

async fn healthy(client: &Client) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while client.healthz().await.is_err() {
        assert!(Instant::now() < deadline, "nexus serve did not become healthy");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A single-tool seed run of `slow` routed to the runner.
async fn slow_run(ws: &Workspace, runner: &str, label: &str) -> String {
    let step = Step::runner_tool("slow", json!({"label": label}));
    let created = ws
        .create_run(&NewRun::new(ApprovalMode::Bypass).default_runner(runner).step(step))
        .await
        .expect("create");
    ws.run(&created.run.public_id).start().await.expect("start");
    created.run.public_id
}

/// Waits until `run` is terminal; its status and its one task's output.
async fn settled(ws: &Workspace, run: &str) -> (String, Option<String>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let read = ws.run(run).get().await.expect("read the run");
        if read.run.status.is_terminal() {
            let task = ws.run(run).task("s1-tool-1").await.expect("read the task");
            return (read.run.status.as_str().to_string(), task.output);
        }
        assert!(Instant::now() < deadline, "{run} never settled: {:?}", read.run.status);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn kill_9_under_a_running_runner(store_args: &[&str]) {
    let mut boot_args = vec!["admin", "bootstrap"];
    boot_args.extend_from_slice(store_args);
    boot_args.push("--json");
    let boot = json_of(&nexus(&boot_args));
    let s = |v: &Value| v.as_str().unwrap().to_string();
    let runner_id = s(&boot["runner"]["executor_public_id"]);

    let listen = format!("127.0.0.1:{}", free_port());
    let base = format!("http://{listen}");
    let member = Client::new(&base, &s(&boot["human"]["member_token"]));
    let ws = member.workspace(&s(&boot["workspace_public_id"]));
    let mut server = spawn_server_at(&listen, store_args);
    healthy(&member).await;

    // Each handler records its start and takes 1.5 s: long enough to be cut by the crash.
    let starts: Arc<Mutex<BTreeMap<String, usize>>> = Arc::default();
    let seen = starts.clone();
    let spec = ToolSpec::new("slow", EffectProfile::READ)
        .description("Answers slowly.")
        .input_schema(json!({"type": "object"}));
    let runner = Runner::builder(&base, &s(&boot["runner"]["transport_token"]))
        .poll_interval(Duration::from_millis(500))
        .tool(spec, move |call| {
            let seen = seen.clone();
            async move {
                let label = call.input["label"].as_str().unwrap_or_default().to_string();
                *seen.lock().unwrap().entry(label.clone()).or_default() += 1;
                tokio::time::sleep(Duration::from_millis(1500)).await;
                ToolResult::text(format!("done {label}"))
            }
        })
        .build();
    let handle = runner.handle();
    let serving = tokio::spawn(runner.run(std::future::pending()));

    let deadline = Instant::now() + Duration::from_secs(30);
    while member
        .runner(&runner_id)
        .await
        .map(|r| r.tool_names().count())
        .unwrap_or(0)
        == 0
    {
        assert!(Instant::now() < deadline, "the runner never announced");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = [
        slow_run(&ws, &runner_id, "a").await,
        slow_run(&ws, &runner_id, "b").await,
    ];
    let deadline = Instant::now() + Duration::from_secs(30);
    while starts.lock().unwrap().len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the handlers never started: {:?}",
            starts.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // SIGKILL with both handlers in flight; the commits meet a closed port until the restart.
    server.kill_9();
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let _server = spawn_server_at(&listen, store_args);
    healthy(&member).await;
    let after = slow_run(&ws, &runner_id, "c").await;

    for (run, label) in before.iter().zip(["a", "b"]).chain([(&after, "c")]) {
        let (status, output) = settled(&ws, run).await;
        assert_eq!(status, "completed", "{label}");
        assert_eq!(output.as_deref(), Some(format!("done {label}").as_str()), "{label}");
        let events = ws.run(run).events(0, Some(500)).await.unwrap().events;
        let count = |ty: &str, to: Option<&str>| {
            events
                .iter()
                .filter(|e| e.kind.as_str() == ty && to.is_none_or(|t| e.data["to"] == t))
                .count()
        };
        assert_eq!(count("task_claimed", None), 1, "{label}: claimed once: {events:?}");
        assert_eq!(
            count("task_status_changed", Some("completed")),
            1,
            "{label}: settled once: {events:?}"
        );
    }
    assert_eq!(
        *starts.lock().unwrap(),
        BTreeMap::from([("a".into(), 1), ("b".into(), 1), ("c".into(), 1)]),
        "each call ran exactly once"
    );
    handle.shutdown();
    serving.await.unwrap().expect("the runner stops cleanly");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runner_survives_a_kill_9_of_the_server_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    kill_9_under_a_running_runner(&["--data-dir", &d]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runner_survives_a_kill_9_of_the_server_on_postgres() {
    let Some(pg) = nexus_store::testing::postgres().await else {
        eprintln!("skipped: NEXUS_TEST_DATABASE_URL is not set");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    kill_9_under_a_running_runner(&["--data-dir", &d, "--database-url", &pg.url]).await;
}
