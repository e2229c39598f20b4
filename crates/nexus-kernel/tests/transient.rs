//! Units of work that PostgreSQL aborts as deadlock victims run again with what they had in
//! hand (`runs/worker.rs`, `rerun_transient`): a model reply is applied, not lost to a lease
//! that lapses 15 minutes later. PostgreSQL only: SQLite has no row locks to hold.

mod common;

use std::time::{Duration, Instant};

use common::world;
use nexus_store::prelude::*;
use nexus_store::testing::{self, OutsideSession};
use nexus_store::{RunStatus, TaskStatus};
use serde_json::json;

/// Polls `check` every 10 ms for up to 10 s.
async fn until<F: AsyncFnMut() -> bool>(what: &str, mut check: F) {
    let start = Instant::now();
    while !check().await {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_model_reply_whose_unit_was_a_deadlock_victim_is_applied_again() {
    let Some(ts) = testing::postgres().await else {
        return;
    };
    let w = world(ts).await;
    // One text-only round whose reply takes a moment, so the round's row can be held first.
    w.script("slow", &[json!({"text": "Done.", "delay_ms": 1500})]);
    let (id, _) = w
        .create(json!({
            "approval_mode": "bypass",
            "steps": [{"model": {"prompt": "Say done.", "model": "scripted/slow"}}],
        }))
        .await;
    w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
    let run = w.run_row(id).await;
    let key = "s1-model-1";

    let kernel = w.kernel.clone();
    let worker = tokio::spawn(async move { kernel.runs().work_once().await });
    // The round sealed, its call in flight: an outside session holds the round's row. Its
    // own deadlock check waits 30 s, so the kernel's session (1 s, the default) finds the
    // cycle first and is the victim.
    let store = w.kernel.store.clone();
    until("the round to run", async || {
        let t = store.task_by_key(run.id, key).await.unwrap().unwrap();
        t.status == TaskStatus::Running
    })
    .await;
    let round = store.task_by_key(run.id, key).await.unwrap().unwrap();
    let mut outside = OutsideSession::open(&w.ts).await.unwrap();
    outside.execute("SET deadlock_timeout = '30s'").await.unwrap();
    outside.execute("BEGIN").await.unwrap();
    outside
        .execute(&format!("SELECT 1 FROM tasks WHERE id = {} FOR UPDATE", round.id))
        .await
        .unwrap();
    // The reply's unit locks the run, then waits for the round's row.
    until("the reply's unit to wait for the row", async || {
        outside.is_waited_for().await
    })
    .await;
    // Asking for the run closes the cycle; PostgreSQL aborts the reply's unit, which lets go
    // of the run.
    let asked = Instant::now();
    outside
        .execute(&format!("SELECT 1 FROM runs WHERE id = {} FOR UPDATE", run.id))
        .await
        .unwrap();
    assert!(
        asked.elapsed() >= Duration::from_millis(500),
        "the run was not held by the reply's unit ({:?}): no deadlock was made",
        asked.elapsed()
    );
    outside.execute("ROLLBACK").await.unwrap();

    worker.await.unwrap().unwrap();
    let round = store.task_by_key(run.id, key).await.unwrap().unwrap();
    assert_eq!(round.status, TaskStatus::Completed, "the reply was applied on a rerun");
    assert_eq!(common::text_of(&round), "Done.");
    let run = store.run_by_public_id(id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Completed);
}
