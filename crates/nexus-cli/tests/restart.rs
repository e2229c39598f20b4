//! Crash recovery of the real `nexus serve` (storage-and-scale.md §5, §7): a model round is in
//! flight when the server is killed with SIGKILL; the restarted server (same data dir, so the
//! same node id) releases its own leases at start, re-sends the sealed bytes, and the run
//! completes with nothing lost or doubled. On SQLite, and on PostgreSQL when configured.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Server, json_of, nexus, poll, spawn_server};
use nexus_sdk::Client;
use nexus_sdk::member::{ApprovalMode, NewRun, Step};
use nexus_store::prelude::*;
use nexus_store::{Store, StoreOptions};
use serde_json::{Value, json};

async fn wait_healthy(server: &mut Server) {
    let client = Client::new(&server.base, "");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if client.healthz().await.is_ok() {
            return;
        }
        if let Some(status) = server.child.try_wait().unwrap() {
            panic!("nexus serve exited early with {status}");
        }
        assert!(Instant::now() < deadline, "nexus serve did not become healthy");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn write_slow_script(data_dir: &Path) {
    let scripts = data_dir.join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    let lines = [
        json!({"delay_ms": 4000, "text": "Slowly listing.", "tool_calls": [{"id": "c1", "name": "runners_list", "input": {}}]}),
        json!({"text": "Listed.", "expect": {"last_result": {"call_id": "c1", "contains": "runners"}}}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(scripts.join("slow.jsonl"), text.join("\n")).unwrap();
}

/// The whole scenario against one store. `store_args` select it (`--data-dir D` and, for
/// PostgreSQL, `--database-url URL`); `url` reopens it for the final row checks.
async fn kill_mid_round_and_recover(store_args: &[&str], data_dir: &Path, url: &str) {
    let mut boot_args = vec!["admin", "bootstrap"];
    boot_args.extend_from_slice(store_args);
    boot_args.push("--json");
    let boot = json_of(&nexus(&boot_args));
    let token = boot["agent"]["member_token"].as_str().unwrap().to_string();
    let ws = boot["workspace_public_id"].as_str().unwrap().to_string();
    write_slow_script(data_dir);

    let mut server = spawn_server(store_args);
    wait_healthy(&mut server).await;
    let ws = Client::new(&server.base, &token).workspace(&ws);
    let step = Step::model("List the machines.")
        .model("scripted/slow")
        .kernel_tools([nexus_sdk::tools::RUNNERS_LIST]);
    let created = ws
        .create_run(&NewRun::new(ApprovalMode::Bypass).step(step))
        .await
        .expect("create the run");
    let id = created.run.public_id.clone();
    let run = ws.run(&id);
    run.start().await.expect("start the run");

    // The round is running and sealed: its provider call sleeps for 4 s.
    poll(20, || run.task("s1-model-1"), |t| t.status.as_str() == "running").await;
    let sealed_before = poll(20, || run.request("s1-model-1"), |_| true).await;
    let mid = run.tasks(&Default::default()).await.unwrap();
    let keys: Vec<&str> = mid.tasks.iter().map(|t| t.key.as_str()).collect();
    assert_eq!(keys, ["s1-model-1"], "killed before the reply: {mid:?}");

    server.kill_9();
    let mut server = spawn_server(store_args);
    wait_healthy(&mut server).await;
    let ws = Client::new(&server.base, &token).workspace(ws.public_id());
    let run = ws.run(&id);
    let done = poll(60, || run.get(), |r| r.run.status.as_str() == "completed").await;
    assert_eq!(done.run.deliverable_task_key.as_deref(), Some("r1"));

    // Nothing lost, nothing doubled.
    let tasks = run.tasks(&Default::default()).await.unwrap().tasks;
    let keys: Vec<&str> = tasks.iter().map(|t| t.key.as_str()).collect();
    assert_eq!(keys, ["s1-model-1", "r1t0", "r1"]);
    for t in &tasks {
        assert_eq!(t.status.as_str(), "completed", "{t:?}");
        assert_eq!(t.generation, 1, "{t:?}");
    }
    let events = run.events(0, Some(500)).await.unwrap().events;
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.sequence, i as i64 + 1, "gapless: {events:?}");
    }
    for key in ["s1-model-1", "r1t0", "r1"] {
        let completions = events
            .iter()
            .filter(|e| {
                e.kind.as_str() == "task_status_changed"
                    && e.task_key.as_deref() == Some(key)
                    && e.data["to"] == "completed"
            })
            .count();
        assert_eq!(completions, 1, "{key}: {events:?}");
    }
    let expansions: Vec<_> = events
        .iter()
        .filter(|e| e.kind.as_str() == "tasks_appended" && e.data["origin"] == "model")
        .collect();
    assert_eq!(expansions.len(), 1, "{events:?}");
    assert_eq!(expansions[0].data["keys"], json!(["r1t0", "r1"]));
    let completed_runs = events
        .iter()
        .filter(|e| e.kind.as_str() == "run_status_changed" && e.data["to"] == "completed")
        .count();
    assert_eq!(completed_runs, 1);

    // The round was sealed once: the same record and bytes, re-sent after the restart.
    let sealed_after = run.request("s1-model-1").await.unwrap();
    assert_eq!(sealed_after.body_sha256, sealed_before.body_sha256);
    assert_eq!(sealed_after.entries, sealed_before.entries);
    // The continuation read exactly one result.
    let r1 = run.request("r1").await.unwrap();
    let results = r1.entries.iter().filter(|e| e["type"] == "tool_result").count();
    assert_eq!(results, 1, "{r1:?}");
    drop(server);

    // In the store: exactly one sealed record for the round (generation 1 only), and no job left.
    let mut options = StoreOptions::new(url);
    options.single_node_lock = false;
    let store = Store::open(&options).await.unwrap();
    let run_row = store
        .run_by_public_id(uuid::Uuid::parse_str(&id).unwrap())
        .await
        .unwrap()
        .unwrap();
    let round = store.task_by_key(run_row.id, "s1-model-1").await.unwrap().unwrap();
    assert_eq!(round.generation, 1);
    assert!(store.sealed_request(round.id, 1).await.unwrap().is_some());
    assert!(store.sealed_request(round.id, 2).await.unwrap().is_none());
    assert!(store.sealed_request(round.id, 0).await.unwrap().is_none());
    let leftover = store
        .dequeue_jobs("restart-test-probe", i64::MAX / 2, 1, 100)
        .await
        .unwrap();
    assert!(leftover.is_empty(), "no job left behind: {leftover:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn kill_9_mid_round_then_restart_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let url = format!("sqlite://{}", dir.path().join("nexus.db").display());
    kill_mid_round_and_recover(&["--data-dir", &d], dir.path(), &url).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kill_9_mid_round_then_restart_on_postgres() {
    let Some(pg) = nexus_store::testing::postgres().await else {
        eprintln!("skipped: NEXUS_TEST_DATABASE_URL is not set");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let url = pg.url.clone();
    kill_mid_round_and_recover(&["--data-dir", &d, "--database-url", &url], dir.path(), &url).await;
}
