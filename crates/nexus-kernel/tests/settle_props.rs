//! A model-based property test of the executor plane's settle (executor.md §7–§9, §13), on
//! both engines: random interleavings of claim, extend, commit (current and stale tokens,
//! good, refused and unstorable payloads), sweeps at a moving clock, and restarts (a new
//! Kernel over the same store) never settle a task twice and never accept a stale token.
//! Every answer is checked against a small model of the park.

mod common;

use common::{RunnerWorld as World, runner_world};

use nexus_core::codes::Code;
use nexus_core::registry::EffectProfile;
use nexus_kernel::executor::claim::Extend;
use nexus_kernel::executor::commit::CommitRequest;
use nexus_kernel::{Kernel, KernelResult};
use nexus_store::prelude::*;
use nexus_store::testing::{TestStore, engines};
use nexus_store::{RunStatus, Store, TaskStatus};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};
use uuid::Uuid;

/// The announced (and only) timeout of `read`: also the extension cap.
const ANNOUNCED_MS: i64 = 60_000;

#[derive(Debug, Clone)]
enum Payload {
    Good,
    Refused,
    Unstorable,
}

#[derive(Debug, Clone)]
enum Op {
    Claim,
    Extend {
        current: bool,
        ms: i64,
    },
    Commit {
        current: bool,
        payload: Payload,
        failed: bool,
    },
    Advance(i64),
    Sweep,
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    let payload = prop_oneof![
        4 => Just(Payload::Good),
        1 => Just(Payload::Refused),
        1 => Just(Payload::Unstorable),
    ];
    prop_oneof![
        3 => Just(Op::Claim),
        2 => (any::<bool>(), 1i64..=70_000).prop_map(|(current, ms)| Op::Extend { current, ms }),
        3 => (any::<bool>(), payload, any::<bool>())
            .prop_map(|(current, payload, failed)| Op::Commit { current, payload, failed }),
        2 => (0i64..=90_000).prop_map(Op::Advance),
        2 => Just(Op::Sweep),
        1 => Just(Op::Restart),
    ]
}

/// The model of the one park.
#[derive(Debug, Clone)]
struct Park {
    deadline: i64,
    token: Option<String>,
    /// The settled status, once settled.
    settled: Option<&'static str>,
}

async fn world(ts: TestStore) -> World {
    let tools = json!([{"name": "read", "effect_profile": EffectProfile::READ.to_json(), "timeout_ms": ANNOUNCED_MS,
                        "description": "Read a file.", "input_schema": {"type": "object"}}]);
    runner_world(ts, tools).await
}

/// A started run of one runner-routed `read` step `t`, dispatched.
async fn dispatched_run(w: &World, kernel: &Kernel) -> (Uuid, i64) {
    let step = json!({"key": "t", "tool": {"name": "read", "input": {"path": "x"},
                      "route": {"kind": "runner", "runner_executor_public_id": w.runner.executor.public_id.to_string()}}});
    let body = json!({"run": {"approval_mode": "bypass", "steps": [step]}});
    let created = kernel
        .runs()
        .create_run(&w.human, w.ws, &body, None)
        .await
        .unwrap()
        .fresh()
        .expect("a fresh create");
    let id = Uuid::parse_str(&created.run.public_id).unwrap();
    kernel.runs().start_run(&w.human, w.ws, id).await.unwrap();
    kernel.runs().work_until_idle(10).await.unwrap();
    let run = w.ts.store.run_by_public_id(id).await.unwrap().unwrap();
    (id, run.id)
}

fn code_of<T>(r: &KernelResult<T>) -> Option<Code> {
    r.as_ref().err().map(|e| e.code)
}

fn fail(msg: String) -> TestCaseError {
    TestCaseError::fail(msg)
}

/// Settled transitions of `t`, by generation.
async fn settles(store: &Store, run_id: i64) -> Vec<(i64, String)> {
    let events = store.events_after(run_id, 0, 10_000).await.unwrap();
    events
        .iter()
        .filter(|e| e.kind.as_str() == "task_status_changed" && e.task_key.as_deref() == Some("t"))
        .filter_map(|e| {
            let d: Value = serde_json::from_str(&e.data).unwrap();
            let to = d["to"].as_str()?.to_string();
            matches!(
                to.as_str(),
                "completed" | "failed" | "canceled" | "timed_out" | "skipped" | "uncertain"
            )
            .then(|| (d["generation"].as_i64().unwrap_or(-1), to))
        })
        .collect()
}

async fn run_case(w: &World, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut kernel = Kernel::new(w.ts.store.clone());
    let (run, run_id) = dispatched_run(w, &kernel).await;
    let row = w.ts.store.task_by_key(run_id, "t").await.unwrap().unwrap();
    prop_assert_eq!(row.status.as_str(), "dispatched");
    let mut now = nexus_kernel::time::now_ms();
    let mut park = Park {
        deadline: row.deadline_at.unwrap(),
        token: None,
        settled: None,
    };
    for (i, op) in ops.iter().enumerate() {
        let at = format!("op {i} {op:?} with {park:?} at {now}");
        match op {
            Op::Claim => {
                let r = kernel.executor().claim_at(&w.runner, run, "t", now).await;
                let expected = if park.settled.is_some() {
                    Some(Code::TaskNotClaimable)
                } else if park.token.is_some() {
                    Some(Code::AlreadyClaimed)
                } else if park.deadline <= now {
                    Some(Code::TaskNotClaimable)
                } else {
                    None
                };
                prop_assert_eq!(code_of(&r), expected, "{}", at);
                if let Ok(body) = r {
                    park.token = Some(body.claim.claim_token);
                    park.deadline = now + ANNOUNCED_MS;
                }
            }
            Op::Extend { current, ms } => {
                let token = match (current, &park.token) {
                    (true, Some(t)) => t.clone(),
                    _ => Uuid::now_v7().to_string(),
                };
                let body = json!({"claim_token": token, "timeout_ms": ms});
                let r = kernel
                    .executor()
                    .extend_at(&w.runner, run, "t", &Extend::parse(&body), now)
                    .await;
                let accepted = *current && park.token.is_some();
                let expected = if park.settled.is_some() || park.token.is_none() || park.deadline <= now {
                    Some(Code::NotExtendable)
                } else if !accepted {
                    Some(Code::NotClaimant)
                } else if *ms > ANNOUNCED_MS {
                    Some(Code::ExtensionTooLong)
                } else {
                    None
                };
                prop_assert_eq!(code_of(&r), expected, "{}", at);
                if r.is_ok() {
                    park.deadline = now + ms;
                }
            }
            Op::Commit {
                current,
                payload,
                failed,
            } => {
                let token = match (current, &park.token) {
                    (true, Some(t)) => Some(t.clone()),
                    (true, None) => None,
                    (false, _) => Some(Uuid::now_v7().to_string()),
                };
                let mut body = match payload {
                    Payload::Good => json!({"content": "done", "structured_content": false}),
                    Payload::Refused => json!({"content": "x", "result_type": "incomplete"}),
                    Payload::Unstorable => json!({"content": "a\u{0}b"}),
                };
                if *failed {
                    body["outcome"] = json!("failed");
                }
                if let Some(t) = &token {
                    body["claim_token"] = json!(t);
                }
                let r = match CommitRequest::parse(&body) {
                    Ok(request) => kernel.executor().commit_at(&w.runner, run, "t", &request, now).await,
                    Err(refused) => Err(refused),
                }
                .map(|reply| serde_json::to_value(reply).unwrap());
                let accepted = *current && park.token.is_some();
                // The payload's grammar is the commit's first door (executor.md §9): a refused
                // payload is answered before the row's state, and changes nothing.
                if matches!(payload, Payload::Refused) {
                    prop_assert_eq!(code_of(&r), Some(Code::InvalidResultType), "{}", at);
                } else if park.settled.is_some() {
                    let idle = r.as_ref().map(|b| b["idle"] == json!(true)).unwrap_or(false);
                    prop_assert!(idle, "{}: a commit on a settled row is idle, got {:?}", at, r);
                } else if !accepted {
                    prop_assert_eq!(code_of(&r), Some(Code::StaleClaim), "{}", at);
                } else if park.deadline <= now {
                    let body = r.map_err(|e| fail(format!("{at}: {e}")))?;
                    prop_assert!(body.get("idle").is_none(), "{}", at);
                    prop_assert_eq!(body["task"]["status"].as_str(), Some("timed_out"), "{}", at);
                    park.settled = Some("timed_out");
                } else {
                    match payload {
                        Payload::Refused => unreachable!("answered above"),
                        Payload::Unstorable => {
                            prop_assert_eq!(code_of(&r), Some(Code::ResultUnstorable), "{}", at);
                            park.settled = Some("failed");
                        }
                        Payload::Good => {
                            let body = r.map_err(|e| fail(format!("{at}: {e}")))?;
                            let to = if *failed { "failed" } else { "completed" };
                            prop_assert_eq!(body["task"]["status"].as_str(), Some(to), "{}", at);
                            park.settled = Some(to);
                        }
                    }
                }
            }
            Op::Advance(ms) => now += ms,
            Op::Sweep => {
                kernel
                    .runs()
                    .sweep_at(now)
                    .await
                    .map_err(|e| fail(format!("{at}: {e}")))?;
                if park.settled.is_none() && park.deadline <= now {
                    park.settled = Some("timed_out");
                }
            }
            Op::Restart => kernel = Kernel::new(w.ts.store.clone()),
        }
        let row = w.ts.store.task_by_key(run_id, "t").await.unwrap().unwrap();
        let status = park.settled.unwrap_or("dispatched");
        prop_assert_eq!(row.status.as_str(), status, "{}", at);
        if park.settled.is_none() {
            prop_assert_eq!(row.deadline_at, Some(park.deadline), "{}", at);
            prop_assert_eq!(row.claim_token.is_some(), park.token.is_some(), "{}", at);
        }
        let s = settles(&w.ts.store, run_id).await;
        prop_assert!(s.len() <= 1, "{}: settled twice: {:?}", at, s);
        prop_assert_eq!(s.len(), usize::from(park.settled.is_some()), "{}", at);
    }
    Ok(())
}

#[test]
fn random_interleavings_never_settle_twice_nor_accept_a_stale_token() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let worlds: Vec<World> = rt.block_on(async {
        let mut out = Vec::new();
        for ts in engines().await {
            out.push(world(ts).await);
        }
        out
    });
    let config = Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&proptest::collection::vec(op(), 1..14), |ops| {
        for w in &worlds {
            rt.block_on(run_case(w, &ops))
                .map_err(|e| fail(format!("{}: {e}", w.ts.dialect)))?;
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// A runner's commit cascades through the row's neighbourhood inside its unit of work, on both
/// engines: the dependent becomes ready, the dependent's reply names what it waited for, and
/// the run ends once both calls are committed.
#[tokio::test]
async fn a_commit_reaches_its_dependents_on_both_engines() {
    for ts in engines().await {
        let dialect = ts.dialect;
        let w = world(ts).await;
        let kernel = Kernel::new(w.ts.store.clone());
        let route = json!({"kind": "runner", "runner_executor_public_id": w.runner.executor.public_id.to_string()});
        let steps = json!([
            {"key": "a", "tool": {"name": "read", "input": {"path": "a"}, "route": route}},
            {"key": "b", "tool": {"name": "read", "input": {"path": "b"}, "route": route}},
        ]);
        let body = json!({"run": {"approval_mode": "bypass", "steps": steps}});
        let created = kernel
            .runs()
            .create_run(&w.human, w.ws, &body, None)
            .await
            .unwrap()
            .fresh()
            .expect("a fresh create");
        let run = Uuid::parse_str(&created.run.public_id).unwrap();
        kernel.runs().start_run(&w.human, w.ws, run).await.unwrap();
        kernel.runs().work_until_idle(10).await.unwrap();
        let status_of = |key: &'static str| {
            let store = w.ts.store.clone();
            async move {
                let row = store.run_by_public_id(run).await.unwrap().unwrap();
                store.task_by_key(row.id, key).await.unwrap().unwrap().status
            }
        };
        assert_eq!(
            (status_of("a").await, status_of("b").await),
            (TaskStatus::Dispatched, TaskStatus::Waiting),
            "{dialect}"
        );
        let settle = |key: &'static str| {
            let (kernel, runner) = (kernel.clone(), w.runner.clone());
            async move {
                let claimed = kernel.executor().claim(&runner, run, key).await.unwrap();
                let token = claimed.claim.claim_token;
                kernel
                    .executor()
                    .commit(
                        &runner,
                        run,
                        key,
                        &commit_body(json!({"claim_token": token, "content": key})),
                    )
                    .await
                    .map(|reply| serde_json::to_value(reply).unwrap())
                    .unwrap()
            }
        };
        let reply = settle("a").await;
        assert_eq!(reply["task"]["status"], "completed", "{dialect}: {reply}");
        assert_eq!(reply["task"]["after"], json!([]), "{dialect}: {reply}");
        kernel.runs().work_until_idle(10).await.unwrap();
        assert_eq!(status_of("b").await, TaskStatus::Dispatched, "{dialect}");
        let reply = settle("b").await;
        // The reply names what the row waited for.
        assert_eq!(reply["task"]["after"], json!(["a"]), "{dialect}: {reply}");
        kernel.runs().work_until_idle(10).await.unwrap();
        let row = w.ts.store.run_by_public_id(run).await.unwrap().unwrap();
        assert_eq!(row.status, RunStatus::Completed, "{dialect}");
    }
}

/// A commit body the test knows to be well formed.
fn commit_body(body: Value) -> CommitRequest {
    CommitRequest::parse(&body).expect("a well-formed commit body")
}
