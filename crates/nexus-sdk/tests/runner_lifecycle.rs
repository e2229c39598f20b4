//! The runner framework's lifecycle against a real server on both engines: at most
//! `concurrency` calls at once, a shutdown that lets calls in flight commit and claims nothing
//! new, and a server killed and restarted on the same port and store mid-call.

mod runner_support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nexus_sdk::runner::{Runner, ToolCall, ToolResult};
use runner_support::{eventually, lives};
use serde_json::json;
use tokio::sync::watch;

/// Counts calls in flight and the most seen at once.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    most: AtomicUsize,
    calls: AtomicUsize,
}

impl Gauge {
    fn enter(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
    }

    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn at_most_concurrency_calls_run_at_once() {
    for live in lives().await {
        let gauge = Arc::new(Gauge::default());
        let g = gauge.clone();
        let runner = Runner::builder(&live.base, &live.runner_token())
            .concurrency(2)
            .poll_interval(Duration::from_millis(200))
            .tool(runner_support::read_tool("busy"), move |_call: ToolCall| {
                let g = g.clone();
                async move {
                    g.enter();
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    g.leave();
                    ToolResult::text("done")
                }
            })
            .build();
        let handle = runner.handle();
        let serving = tokio::spawn(runner.run(std::future::pending()));
        live.wait_served("busy").await;
        let mut runs = Vec::new();
        for _ in 0..5 {
            runs.push(live.tool_run("busy", json!({})).await);
        }
        for run in &runs {
            assert_eq!(live.settled(run).await["status"], "completed", "{}", live.dialect);
        }
        assert_eq!(gauge.calls.load(Ordering::SeqCst), 5);
        assert_eq!(gauge.most.load(Ordering::SeqCst), 2, "{}", live.dialect);
        handle.shutdown();
        serving.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn a_shutdown_lets_calls_in_flight_commit_and_claims_nothing_new() {
    for live in lives().await {
        let gauge = Arc::new(Gauge::default());
        let (open, gate) = watch::channel(false);
        let g = gauge.clone();
        let runner = Runner::builder(&live.base, &live.runner_token())
            .concurrency(4)
            .poll_interval(Duration::from_millis(100))
            .tool(runner_support::read_tool("gated"), move |_call: ToolCall| {
                let (g, mut gate) = (g.clone(), gate.clone());
                async move {
                    g.enter();
                    let _ = gate.wait_for(|open| *open).await;
                    ToolResult::text("finished after the shutdown")
                }
            })
            .build();
        let handle = runner.handle();
        let serving = tokio::spawn(runner.run(std::future::pending()));
        live.wait_served("gated").await;
        let first = live.tool_run("gated", json!({})).await;
        let second = live.tool_run("gated", json!({})).await;
        eventually("both calls started", || gauge.now.load(Ordering::SeqCst) == 2).await;
        handle.shutdown();
        // Polls every 100 ms would claim this one if the runner still claimed.
        let late = live.tool_run("gated", json!({})).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!serving.is_finished(), "the runner waits for its calls");
        open.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(10), serving)
            .await
            .expect("the runner returns once its calls committed")
            .unwrap()
            .unwrap();
        for run in [&first, &second] {
            let task = live.task(run).await;
            assert_eq!(task["status"], "completed", "{} {task}", live.dialect);
            assert_eq!(task["output"], "finished after the shutdown");
        }
        let task = live.task(&late).await;
        assert_eq!(task["status"], "dispatched", "{} {task}", live.dialect);
        assert!(task.get("claimed_by").is_none(), "{task}");
        assert_eq!(gauge.calls.load(Ordering::SeqCst), 2);
    }
}

#[tokio::test]
async fn a_killed_and_restarted_server_loses_no_task_and_settles_none_twice() {
    for mut live in lives().await {
        let calls: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let (open, gate) = watch::channel(false);
        let c = calls.clone();
        // Polls are a minute apart: only the channel (and the poll after each reconnect)
        // finds work in time.
        let runner = Runner::builder(&live.base, &live.runner_token())
            .poll_interval(Duration::from_secs(60))
            .tool(runner_support::read_tool("survive"), move |call: ToolCall| {
                let (c, mut gate) = (c.clone(), gate.clone());
                async move {
                    *c.lock().unwrap().entry(call.run_public_id.clone()).or_default() += 1;
                    if call.input["wait"] == true {
                        let _ = gate.wait_for(|open| *open).await;
                    }
                    ToolResult::text(format!("served {}", call.run_public_id))
                }
            })
            .build();
        let handle = runner.handle();
        let serving = tokio::spawn(runner.run(std::future::pending()));
        live.wait_served("survive").await;
        let before = live.tool_run("survive", json!({"wait": true})).await;
        eventually("the first call started", || calls.lock().unwrap().contains_key(&before)).await;
        live.kill();
        // The handler finishes while the server is down: its commit is retried.
        open.send(true).unwrap();
        tokio::time::sleep(Duration::from_millis(700)).await;
        live.restart().await;
        let after = live.tool_run("survive", json!({})).await;
        for run in [&before, &after] {
            let task = live.settled(run).await;
            assert_eq!(task["status"], "completed", "{} {task}", live.dialect);
            assert_eq!(task["output"], format!("served {run}"));
            assert_eq!(live.events(run, "task_claimed").await.len(), 1, "{}", live.dialect);
            let settles: Vec<_> = live
                .events(run, "task_status_changed")
                .await
                .into_iter()
                .filter(|e| e["data"]["to"] == "completed")
                .collect();
            assert_eq!(settles.len(), 1, "{} {settles:?}", live.dialect);
        }
        let calls = calls.lock().unwrap().clone();
        assert_eq!(calls.get(&before), Some(&1), "{calls:?}");
        assert_eq!(calls.get(&after), Some(&1), "{calls:?}");
        handle.shutdown();
        serving.await.unwrap().unwrap();
    }
}
