//! The fault run (issue 27, deliverable 6; storage-and-scale.md §6): two real `nexus serve`
//! nodes on one PostgreSQL database, 8 runners spread over both, a steady stream of runs (a
//! runner tool call, then a model round after it), and SIGKILL restarts alternating between the
//! nodes. Then every run must be completed, every task settled exactly once (one terminal
//! `task_status_changed` per task, no task left open, no job left behind) and every run's event
//! sequence gapless.
//!
//! `NEXUS_CHAOS_RESTARTS` sets the number of restarts (default 6, the CI run); the full run is
//! `NEXUS_CHAOS_RESTARTS=100 cargo nextest run -p nexus-cli --test chaos --no-capture`, which
//! prints the counts of runs, settled tasks and restarts. Without PostgreSQL it skips.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::pair::{LEASE_MS, Pair, rows};
use common::{free_port, poll};
use nexus_sdk::member::{ApprovalMode, NewRun, Step, TaskStatus};
use nexus_sdk::runner::{EffectProfile, Runner, ToolResult, ToolSpec};
use serde_json::json;

const RUNNERS: usize = 8;

fn work_spec() -> ToolSpec {
    ToolSpec::new("work", EffectProfile::READ)
        .description("Does a little work.")
        .input_schema(json!({"type": "object"}))
}

/// What the runners did: how many times each (run, task) was handed to a handler.
#[derive(Default)]
struct Served {
    calls: Mutex<HashMap<(String, String), usize>>,
}

/// Creates and starts one run, through whichever node answers: a request that a killed node
/// may or may not have committed is sent again (the create with its idempotency key, so it
/// names the same run; a second start answers an error, and the run is started either way).
async fn create_and_start(pair: &Pair, bases: &[String], turn: usize) -> String {
    let tool = Step::runner_tool("work", json!({})).timeout_ms(120_000);
    let model = Step::model("Say done.").model("scripted/echo").after(["s1-tool-1"]);
    let new = NewRun::new(ApprovalMode::Bypass)
        .default_runner(&pair.runner_id)
        .idempotency_key(uuid::Uuid::now_v7().to_string())
        .step(tool)
        .step(model);
    let mut attempt = turn;
    let id = loop {
        match pair.workspace_at(&bases[attempt % 2]).create_run(&new).await {
            Ok(created) => break created.run.public_id,
            Err(nexus_sdk::Error::Transport(_)) => {}
            Err(e) => panic!("create refused: {e}"),
        }
        attempt += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    loop {
        match pair.workspace_at(&bases[attempt % 2]).run(&id).start().await {
            Ok(_) | Err(nexus_sdk::Error::Api(_)) => return id,
            Err(_) => {}
        }
        attempt += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_restarts_lose_and_double_nothing() {
    let Some(pair) = Pair::new().await else {
        eprintln!("skipped: NEXUS_TEST_DATABASE_URL is not set");
        return;
    };
    let restarts: usize = std::env::var("NEXUS_CHAOS_RESTARTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let pair = Arc::new(pair);
    let listens = [
        format!("127.0.0.1:{}", free_port()),
        format!("127.0.0.1:{}", free_port()),
    ];
    let mut nodes = [
        Some(pair.start_on(0, &listens[0], &[]).await),
        Some(pair.start_on(1, &listens[1], &[]).await),
    ];
    let bases: Vec<String> = nodes.iter().map(|n| n.as_ref().unwrap().base.clone()).collect();

    // Eight runners, four on each node, sharing the runner's identity (one inbox, eight
    // claimants). A runner whose node is down retries until it is back.
    let served = Arc::new(Served::default());
    let stop = Arc::new(tokio::sync::Notify::new());
    let mut runners = Vec::new();
    for i in 0..RUNNERS {
        let served = served.clone();
        let runner = Runner::builder(&bases[i % 2], &pair.runner_token)
            .poll_interval(Duration::from_millis(250))
            .tool(work_spec(), move |call| {
                let served = served.clone();
                async move {
                    *served
                        .calls
                        .lock()
                        .unwrap()
                        .entry((call.run_public_id.clone(), call.task_key.clone()))
                        .or_default() += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    ToolResult::text("worked")
                }
            })
            .build();
        let stop = stop.clone();
        runners.push(tokio::spawn(runner.run(async move { stop.notified().await })));
    }

    // A steady stream of runs, through either node.
    let creating = Arc::new(AtomicBool::new(true));
    let created = Arc::new(Mutex::new(Vec::<String>::new()));
    let creator = {
        let (pair, creating, created) = (pair.clone(), creating.clone(), created.clone());
        let bases = bases.clone();
        tokio::spawn(async move {
            let mut turn = 0usize;
            while creating.load(Ordering::SeqCst) {
                let id = create_and_start(&pair, &bases, turn).await;
                created.lock().unwrap().push(id);
                turn += 1;
                tokio::time::sleep(Duration::from_millis(60)).await;
            }
        })
    };

    // The restarts, alternating: SIGKILL, then the node again on its address.
    let started = Instant::now();
    let killed = AtomicUsize::new(0);
    for r in 0..restarts {
        let i = r % 2;
        tokio::time::sleep(Duration::from_millis(400 + (r as u64 * 137) % 600)).await;
        if let Some(mut node) = nodes[i].take() {
            node.server.kill_9();
            killed.fetch_add(1, Ordering::SeqCst);
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
        nodes[i] = Some(pair.start_on(i, &listens[i], &[]).await);
    }
    creating.store(false, Ordering::SeqCst);
    creator.await.unwrap();
    let faults = started.elapsed();

    // Everything settles: a killed node's model rounds after its lease lapses.
    let ids = created.lock().unwrap().clone();
    assert!(!ids.is_empty(), "no run was created");
    let a = nodes[0].as_ref().unwrap();
    let ws = pair.workspace(a);
    let settle_by = Instant::now() + Duration::from_secs(120 + LEASE_MS / 1000);
    for id in &ids {
        let run = ws.run(id);
        let left = settle_by.saturating_duration_since(Instant::now()).as_secs().max(1);
        let done = poll(
            left,
            || run.get(),
            |r| r.run.status.is_terminal() || r.run.status.as_str() == "needs_attention",
        )
        .await;
        if done.run.status.as_str() != "completed" {
            let task = run.task("s1-tool-1").await;
            let events = run.events(0, Some(500)).await.map(|p| p.events);
            // Whether a runner ever ran the call: none, with a `task_claimed`, is a claim
            // whose answer never reached its runner.
            let handled = served
                .calls
                .lock()
                .unwrap()
                .get(&(id.clone(), "s1-tool-1".to_string()))
                .copied();
            panic!(
                "{id} did not complete: {done:?}\ntask: {task:?}\nhandled by a runner: {} times\nevents: {events:?}",
                handled.unwrap_or(0)
            );
        }
    }
    stop.notify_waiters();
    for r in runners {
        let _ = tokio::time::timeout(Duration::from_secs(10), r).await;
    }

    // Each run: gapless events, each task ended once.
    let mut tasks = 0usize;
    for id in &ids {
        let mut events = Vec::new();
        let mut after = 0;
        loop {
            let page = ws.run(id).events(after, Some(500)).await.unwrap();
            let Some(last) = page.events.last() else { break };
            after = last.sequence;
            events.extend(page.events);
        }
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e.sequence, i as i64 + 1, "{id}: a gap in the events");
        }
        let mut ended: HashMap<String, usize> = HashMap::new();
        for e in &events {
            if let Some(change) = e.task_status_change()
                && change.to.is_settled()
            {
                *ended.entry(e.task_key.clone().unwrap_or_default()).or_default() += 1;
            }
        }
        assert_eq!(ended.len(), 2, "{id}: two tasks, each ended: {ended:?}");
        for (key, n) in &ended {
            assert_eq!(*n, 1, "{id}: task {key} ended {n} times");
        }
        let tool = ws.run(id).task("s1-tool-1").await.unwrap();
        assert_eq!(tool.status, TaskStatus::Completed, "{id}: {tool:?}");
        tasks += ended.len();
    }
    let open = nexus_store::testing::row_count(
        &pair._pg.store,
        "tasks",
        "status NOT IN ('completed', 'failed', 'canceled', 'timed_out', 'skipped', 'uncertain')",
    )
    .await
    .unwrap();
    assert_eq!(open, 0, "a task left open");
    assert_eq!(rows(&pair._pg, "jobs").await, 0, "a job left behind");
    let calls = served.calls.lock().unwrap();
    let handled: usize = calls.values().sum();
    let again = calls.values().filter(|n| **n > 1).count();
    println!(
        "chaos: {} restarts in {:.1} s; {} runs, {} tasks settled once each; {} tool calls handled \
         ({} tasks handed out again after a lost claim); every event sequence gapless",
        killed.load(Ordering::SeqCst),
        faults.as_secs_f64(),
        ids.len(),
        tasks,
        handled,
        again
    );
}
