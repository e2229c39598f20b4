//! The run engine end to end on both engines: create, start, rounds with kernel tool calls,
//! expansion and pairing, birth failures, aliases, completion, stop, append refusals,
//! idempotency and the sweep of a lost kernel tool evaluation.

mod common;

use common::world;

use nexus_core::codes::Code;
use nexus_kernel::runs::{Idempotent, Stop};
use nexus_store::prelude::*;
use nexus_store::testing::engines;
use nexus_store::{JobKind, RunStatus, TaskRow, TaskStatus};
use serde_json::{Value, json};
use uuid::Uuid;

fn model_step(model: &str, extra: Value) -> Value {
    let mut m = json!({"prompt": "Look around.", "model": model});
    if let (Value::Object(m), Value::Object(extra)) = (&mut m, extra) {
        m.extend(extra);
    }
    json!({ "model": m })
}

fn keys(tasks: &[TaskRow]) -> Vec<&str> {
    tasks.iter().map(|t| t.key.as_str()).collect()
}

#[tokio::test]
async fn a_round_of_two_kernel_calls_pairs_in_call_order() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script(
            "twice",
            &[
                json!({"text": "Checking.", "tool_calls": [
                    {"id": "c1", "name": "runners_list", "input": {}},
                    {"id": "c2", "name": "runners_list", "input": {}}
                ]}),
                json!({"text": "All done.", "expect": {"last_result": {"call_id": "c2"}}}),
            ],
        );
        let (id, body) = w
            .create(json!({
                "approval_mode": "bypass",
                "steps": [model_step("scripted/twice", json!({"kernel_tools": ["nexus.runners.list"]}))],
            }))
            .await;
        assert_eq!(body["run"]["status"], "pending");
        assert_eq!(body["receipt"]["accepted_task_keys"], json!(["s1-model-1"]));
        assert_eq!(body["receipt"]["revision"], 1);
        let started = w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
        assert_eq!(started.run.status.as_str(), "running");
        w.drive().await;

        let tasks = w.tasks(id).await;
        assert_eq!(keys(&tasks), ["s1-model-1", "r1t0", "r1t1", "r1"]);
        for t in &tasks {
            assert_eq!(
                t.status,
                TaskStatus::Completed,
                "{} {:?} {:?}",
                t.key,
                t.error_key,
                t.error_detail
            );
        }
        let r1t0 = w.task(id, "r1t0").await;
        assert_eq!(r1t0.tool_name.as_deref(), Some("runners_list"));
        assert_eq!(r1t0.tool_call_id.as_deref(), Some("c1"));
        assert_eq!(r1t0.origin, nexus_store::Origin::Model);
        assert_eq!(r1t0.on_failure, nexus_store::OnFailure::Absorb);
        assert_eq!(r1t0.visibility, nexus_store::Visibility::Collapsed);

        // The continuation reads every call, in call order.
        let (r1, _) = w.sealed_row(id, "r1").await;
        let entries = r1["entries"].as_array().unwrap();
        let kinds: Vec<&str> = entries.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["user", "assistant", "tool_result", "tool_result"]);
        assert_eq!(entries[2]["call_id"], "c1");
        assert_eq!(entries[3]["call_id"], "c2");
        assert_eq!(entries[2]["name"], "runners_list");
        assert!(
            entries[2]["output"].as_str().unwrap().contains("runners"),
            "{}",
            entries[2]
        );

        // The tools block is byte-identical round after round, and exactly the projection.
        let (s1, _) = w.sealed_row(id, "s1-model-1").await;
        let tools0 = serde_json::to_string(&s1["request_options"]["tools"]).unwrap();
        let tools1 = serde_json::to_string(&r1["request_options"]["tools"]).unwrap();
        assert_eq!(tools0, tools1);
        assert_eq!(s1["request_options"]["tools"][0]["function"]["name"], "runners_list");
        assert_eq!(s1["request_options"]["tools"][0]["function"]["strict"], false);
        // The continuation's request extends the round's (a byte prefix of entries).
        assert_eq!(r1["entries"][0], s1["entries"][0]);

        let run = w.run_row(id).await;
        assert_eq!(run.status, RunStatus::Completed);
        let deliverable = w
            .kernel
            .store
            .task_by_id(run.deliverable_task_id.unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(deliverable.key, "r1");

        // Events: gap-free, the fan appended by the model.
        let events = w.kernel.store.events_after(run.id, 0, 500).await.unwrap();
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e.sequence, i as i64 + 1);
        }
        let appended: Vec<Value> = events
            .iter()
            .filter(|e| e.kind.as_str() == "tasks_appended")
            .map(|e| serde_json::from_str(&e.data).unwrap())
            .collect();
        assert_eq!(
            appended[0],
            json!({"keys": ["s1-model-1"], "origin": "author", "revision": 1})
        );
        assert_eq!(appended[1], json!({"keys": ["r1t0", "r1t1", "r1"], "origin": "model"}));
        assert!(
            events
                .iter()
                .any(|e| e.kind.as_str() == "run_status_changed" && e.data.contains("\"completed\""))
        );
    }
}

#[tokio::test]
async fn an_undeclared_call_fails_at_birth_and_the_round_goes_on() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script(
            "guess",
            &[
                json!({"tool_calls": [
                    {"id": "a", "name": "delegate_task", "input": {"prompt": "x"}},
                    {"id": "b", "name": "runners_list", "input": {}},
                    {"id": "c", "name": "runners_list", "arguments": "{not json"}
                ]}),
                json!({"text": "ok"}),
            ],
        );
        let (id, _) = w
            .create(json!({
                "approval_mode": "bypass",
                "steps": [model_step("scripted/guess", json!({"kernel_tools": ["nexus.runners.list"]}))],
            }))
            .await;
        w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
        w.drive().await;
        let t0 = w.task(id, "r1t0").await;
        assert_eq!(t0.status, TaskStatus::Failed);
        assert_eq!(t0.error_key.as_deref(), Some("unknown_tool"));
        assert_eq!(t0.tool_name.as_deref(), Some("delegate_task"));
        assert_eq!(w.task(id, "r1t1").await.status, TaskStatus::Completed);
        let t2 = w.task(id, "r1t2").await;
        assert_eq!(t2.error_key.as_deref(), Some("invalid_tool_arguments"));
        assert_eq!(t2.tool_input.as_deref(), Some("{}"));
        assert_eq!(w.task(id, "r1").await.status, TaskStatus::Completed);
        let (r1, _) = w.sealed_row(id, "r1").await;
        let first = &r1["entries"][2];
        assert_eq!(first["call_id"], "a");
        assert_eq!(first["is_error"], true);
        assert!(
            first["output"].as_str().unwrap().starts_with("<tool_use_error>"),
            "{first}"
        );
        assert!(first["output"].as_str().unwrap().contains("(unknown_tool)"), "{first}");
        assert_eq!(w.run_row(id).await.status, RunStatus::Completed);
    }
}

#[tokio::test]
async fn an_alias_call_is_stored_under_the_wire_name() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script(
            "alias",
            &[
                json!({"tool_calls": [{"id": "a1", "name": "ListRunners", "input": {}}]}),
                json!({"text": "ok"}),
            ],
        );
        let (id, _) = w
            .create(json!({
                "approval_mode": "bypass",
                "steps": [model_step("scripted/alias", json!({
                    "tools": [{"name": "ListRunners", "canonical": "nexus.runners.list"}]
                }))],
            }))
            .await;
        w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
        w.drive().await;
        let t = w.task(id, "r1t0").await;
        assert_eq!(t.tool_name.as_deref(), Some("runners_list"));
        assert_eq!(t.tool_alias.as_deref(), Some("ListRunners"));
        assert_eq!(t.status, TaskStatus::Completed, "{:?}", t.error_key);
        let (r1, _) = w.sealed_row(id, "r1").await;
        assert_eq!(r1["entries"][2]["name"], "ListRunners");
        assert_eq!(r1["request_options"]["tools"][0]["function"]["name"], "ListRunners");
    }
}

#[tokio::test]
async fn stop_cancels_live_work() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script("quiet", &[json!({"text": "hi"})]);
        let (id, _) = w
            .create(json!({"approval_mode": "bypass", "steps": [model_step("scripted/quiet", json!({}))]}))
            .await;
        w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
        let stopped = w
            .kernel
            .runs()
            .stop_run(&w.agent, w.ws, id, Stop::parse(&json!({})))
            .await
            .unwrap();
        assert_eq!(stopped.run.status.as_str(), "canceled");
        let t = w.task(id, "s1-model-1").await;
        assert_eq!(t.status, TaskStatus::Canceled);
        assert_eq!(t.error_key.as_deref(), Some("run_canceled"));
        w.drive().await;
        let t = w.task(id, "s1-model-1").await;
        assert_eq!(t.status, TaskStatus::Canceled);
        // The queued model job met a round no longer sealable: nothing of its seal is kept
        // (on PostgreSQL the request went out with the seal's lock, and that unit rolled back).
        let sealed = w.kernel.store.sealed_request(t.id, t.generation).await.unwrap();
        assert_eq!(sealed, None);
        let again = w
            .kernel
            .runs()
            .stop_run(&w.agent, w.ws, id, Stop::parse(&json!({})))
            .await
            .unwrap_err();
        assert_eq!(again.code, Code::AlreadyTerminal);
        // A pending run is canceled at once.
        let (id2, _) = w
            .create(json!({"approval_mode": "bypass", "steps": [model_step("scripted/quiet", json!({}))]}))
            .await;
        let stopped = w
            .kernel
            .runs()
            .stop_run(&w.agent, w.ws, id2, Stop::parse(&json!({"force": false})))
            .await
            .unwrap();
        assert_eq!(stopped.run.status.as_str(), "canceled");
        let e = w.kernel.runs().start_run(&w.agent, w.ws, id2).await.unwrap_err();
        assert_eq!(e.code, Code::NotStartable);
    }
}

#[tokio::test]
async fn append_refusals() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script("quiet", &[json!({"text": "one"}), json!({"text": "two"})]);
        let (id, _) = w
            .create(json!({"approval_mode": "bypass", "steps": [model_step("scripted/quiet", json!({}))]}))
            .await;
        let tool = json!({"steps": [{"key": "s1-model-1", "tool": {"name": "read"}}]});
        let e = w
            .kernel
            .runs()
            .append(&w.agent, w.ws, id, &tool, None)
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::DuplicateTaskKey);
        let stale = json!({"steps": [model_step("scripted/quiet", json!({}))], "expected_revision": 7});
        let e = w
            .kernel
            .runs()
            .append(&w.agent, w.ws, id, &stale, None)
            .await
            .unwrap_err();
        assert_eq!(
            e.code,
            Code::TipLive,
            "a live mainline round refuses a model step first"
        );
        let stale = json!({"steps": [{"tool": {"name": "read"}}], "expected_revision": 7});
        let e = w
            .kernel
            .runs()
            .append(&w.agent, w.ws, id, &stale, None)
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::StaleRevision);
        assert_eq!(e.extra.as_ref().unwrap()["current_revision"], 1);
        let bad = json!({"steps": [{"tool": {"name": ""}}]});
        let e = w
            .kernel
            .runs()
            .append(&w.agent, w.ws, id, &bad, None)
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::InvalidSteps);
        assert_eq!(e.extra.as_ref().unwrap()["steps"][0]["path"], "steps[0].tool.name");

        // An accepted append continues the mainline and moves the deliverable.
        w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
        w.drive().await;
        assert_eq!(w.run_row(id).await.status, RunStatus::Completed);
        let more = json!({"steps": [model_step("scripted/quiet", json!({}))]});
        let e = w
            .kernel
            .runs()
            .append(&w.agent, w.ws, id, &more, None)
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::RunNotAppendable);

        // Append before the run finishes: the second round replays the first.
        let (id, _) = w
            .create(json!({"approval_mode": "bypass", "steps": [model_step("scripted/quiet", json!({}))]}))
            .await;
        let more = json!({"steps": [{"tool": {"name": "read"}, "on_failure": "absorb"}, model_step("scripted/quiet", json!({}))], "expected_revision": 1});
        let e = w
            .kernel
            .runs()
            .append(&w.agent, w.ws, id, &more, None)
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::TipLive);
        let more = json!({"steps": [{"key": "peek", "tool": {"name": "read"}, "on_failure": "absorb"}], "expected_revision": 1});
        let appended = w.kernel.runs().append(&w.agent, w.ws, id, &more, None).await.unwrap();
        let appended = appended.fresh().expect("a fresh append");
        assert_eq!(appended.receipt.revision, 2);
        assert_eq!(appended.receipt.deliverable_task_key.as_deref(), Some("peek"));
        w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
        w.drive().await;
        // `read` is served by nobody: the row fails tool_not_served, absorbed; the run ends.
        let peek = w.task(id, "peek").await;
        assert_eq!(peek.status, TaskStatus::Failed);
        assert_eq!(w.run_row(id).await.status, RunStatus::Completed);

        // A failed deliverable (halt) puts the run in needs_attention: tip_unresolved.
        let (id, _) = w
            .create(json!({"approval_mode": "bypass", "steps": [model_step("scripted/missing", json!({}))]}))
            .await;
        w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
        w.drive().await;
        let t = w.task(id, "s1-model-1").await;
        assert_eq!(t.status, TaskStatus::Failed);
        assert_eq!(t.error_key.as_deref(), Some("provider_error"));
        let run = w.run_row(id).await;
        assert_eq!(run.status, RunStatus::NeedsAttention);
        let attention: Value = serde_json::from_str(run.attention.as_deref().unwrap()).unwrap();
        assert_eq!(attention, json!({"reason": "halt_failure", "task_key": "s1-model-1"}));
        let more = json!({"steps": [{"tool": {"name": "read"}}]});
        let e = w
            .kernel
            .runs()
            .append(&w.agent, w.ws, id, &more, None)
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::TipUnresolved);
    }
}

#[tokio::test]
async fn appended_model_steps_replay_the_mainline() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script(
            "chat",
            &[json!({"text": "first answer"}), json!({"text": "second answer"})],
        );
        let (id, _) = w
            .create(json!({"approval_mode": "bypass", "steps": [
                model_step("scripted/chat", json!({})),
                {"model": {"prompt": "And then?", "model": "scripted/chat"}}
            ]}))
            .await;
        w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
        w.drive().await;
        assert_eq!(w.run_row(id).await.status, RunStatus::Completed);
        let (s2, _) = w.sealed_row(id, "s1-model-2").await;
        let entries = s2["entries"].as_array().unwrap();
        let kinds: Vec<&str> = entries.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["user", "assistant", "user"]);
        assert_eq!(entries[1]["text"], "first answer");
    }
}

#[tokio::test]
async fn create_refusals_and_idempotency() {
    for ts in engines().await {
        let w = world(ts).await;
        let k = &w.kernel;
        let e = k.runs().create_run(&w.agent, w.ws, &json!({}), None).await.unwrap_err();
        assert_eq!(e.code, Code::ParameterMissing);
        let e = k
            .runs()
            .create_run(
                &w.agent,
                w.ws,
                &json!({"run": {"steps": [], "approval_mode": "bypass", "tasks": []}}),
                None,
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::EdgeAuthoringRefused);
        assert_eq!(e.path.as_deref(), Some("run.tasks"));
        let e = k
            .runs()
            .create_run(
                &w.agent,
                w.ws,
                &json!({"run": {"steps": [{"tool": {"name": "x"}}]}}),
                None,
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::InvalidApprovalMode);
        let e = k
            .runs().create_run(
                &w.agent,
                w.ws,
                &json!({"run": {"steps": [{"tool": {"name": "x"}}], "approval_mode": "rules", "approval_rules": [{"verdict": "allow"}]}}),
                None,
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::InvalidApprovalRules);
        assert_eq!(e.reason.as_deref(), Some("tool_required"));
        let e = k
            .runs()
            .create_run(
                &w.agent,
                w.ws,
                &json!({"run": {"steps": [{"model": {"prompt": "x"}}], "approval_mode": "bypass"}}),
                None,
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::InvalidSteps);
        assert_eq!(
            e.extra.as_ref().unwrap()["steps"][0],
            json!({"code": "model_required", "path": "run.steps[0].model"})
        );
        let e = k
            .runs().create_run(
                &w.agent,
                w.ws,
                &json!({"run": {"steps": [{"tool": {"name": "x", "route": {"kind": "runner"}}}], "approval_mode": "bypass"}}),
                None,
            )
            .await
            .unwrap_err();
        assert_eq!(e.extra.as_ref().unwrap()["steps"][0]["code"], "runner_target_required");
        let e = k
            .runs().create_run(
                &w.agent,
                w.ws,
                &json!({"run": {"steps": [{"key": "a", "tool": {"name": "x"}}, {"key": "a", "tool": {"name": "y"}}], "approval_mode": "bypass"}}),
                None,
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::DuplicateTaskKey);

        // Idempotency: replay, mismatch, invalid key.
        let body = json!({"run": {"steps": [{"tool": {"name": "x"}}], "approval_mode": "bypass"}});
        let b1 = k.runs().create_run(&w.agent, w.ws, &body, Some("key-1")).await.unwrap();
        let b1 = b1.fresh().expect("the first create applies");
        let Idempotent::Replayed(b2) = k.runs().create_run(&w.agent, w.ws, &body, Some("key-1")).await.unwrap() else {
            panic!("a repeated key replays");
        };
        assert_eq!(b2["replayed"], true);
        assert_eq!(b2["run"]["public_id"], b1.run.public_id);
        // The replay is the first answer's bytes with `replayed: true` added last.
        let first = serde_json::to_string(&b1).unwrap();
        assert!(!first.contains("replayed"), "{first}");
        let replayed = format!("{},\"replayed\":true}}", &first[..first.len() - 1]);
        assert_eq!(serde_json::to_string(&b2).unwrap(), replayed);
        let other = json!({"run": {"steps": [{"tool": {"name": "y"}}], "approval_mode": "bypass"}});
        let e = k
            .runs()
            .create_run(&w.agent, w.ws, &other, Some("key-1"))
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::IdempotencyEnvelopeMismatch);
        let e = k
            .runs()
            .create_run(&w.agent, w.ws, &body, Some("bad key"))
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::ParameterInvalid);
        let e = k.runs().create_run(&w.agent, w.ws, &body, Some("")).await.unwrap_err();
        assert_eq!(e.code, Code::ParameterInvalid);

        // Append idempotency.
        let run = Uuid::parse_str(&b1.run.public_id).unwrap();
        let add = json!({"steps": [{"tool": {"name": "z"}}]});
        let a1 = k.runs().append(&w.agent, w.ws, run, &add, Some("k")).await.unwrap();
        let a1 = a1.fresh().expect("the first append applies");
        let Idempotent::Replayed(a2) = k.runs().append(&w.agent, w.ws, run, &add, Some("k")).await.unwrap() else {
            panic!("a repeated key replays");
        };
        assert_eq!(a2["replayed"], true);
        assert_eq!(a2["receipt"], serde_json::to_value(&a1.receipt).unwrap());
        assert_eq!(w.run_row(run).await.revision, 2);

        // Standing: another workspace is concealed.
        let e = k
            .runs()
            .create_run(&w.agent, Uuid::now_v7(), &body, None)
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::NotFound);
    }
}

#[tokio::test]
async fn a_kernel_tool_a_reply_calls_is_evaluated_in_the_same_pass() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script(
            "handoff",
            &[
                json!({"tool_calls": [{"id": "c1", "name": "runners_list", "input": {}}]}),
                json!({"text": "ok"}),
            ],
        );
        let (id, _) = w
            .create(json!({
                "approval_mode": "bypass",
                "steps": [model_step("scripted/handoff", json!({"kernel_tools": ["nexus.runners.list"]}))],
            }))
            .await;
        w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
        // One job: the model call, then the kernel tool job its reply inserted, handed to the
        // worker that applied the reply instead of waiting in the queue for a dequeue.
        assert_eq!(w.kernel.runs().work_once().await.unwrap(), 1);
        let t = w.task(id, "r1t0").await;
        assert_eq!(t.status, TaskStatus::Completed);
        // What the queue holds now is the continuation's model call alone.
        let jobs = w
            .kernel
            .store
            .dequeue_jobs("peek", nexus_kernel::time::now_ms(), 60_000, 10)
            .await
            .unwrap();
        assert!(jobs.unreadable.is_empty());
        let kinds: Vec<JobKind> = jobs.jobs.iter().map(|j| j.kind).collect();
        assert_eq!(kinds, [JobKind::ModelCall]);
        w.kernel.store.release_node_leases("peek").await.unwrap();
        w.drive().await;
        assert_eq!(w.run_row(id).await.status, RunStatus::Completed);
    }
}

#[tokio::test]
async fn the_live_feed_publishes_after_commit() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script("quiet", &[json!({"text": "hi"})]);
        let (id, _) = w
            .create(json!({"approval_mode": "bypass", "steps": [model_step("scripted/quiet", json!({}))]}))
            .await;
        let run = w.run_row(id).await;
        let mut rx = w.kernel.runs().subscribe(run.id);
        w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
        w.drive().await;
        let mut seen = Vec::new();
        while let Ok(e) = rx.try_recv() {
            seen.push(e.sequence);
        }
        assert!(!seen.is_empty());
        let last = w.kernel.store.latest_event_sequence(run.id).await.unwrap();
        assert_eq!(*seen.last().unwrap(), last);
        assert!(seen.windows(2).all(|p| p[1] == p[0] + 1), "{seen:?}");
    }
}

#[tokio::test]
async fn provider_errors_are_retried_then_fail_the_round() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script(
            "flaky",
            &[json!({"text": "made it", "error": {"key": "provider_overloaded", "times": 1, "status": 529}})],
        );
        let (id, _) = w
            .create(json!({"approval_mode": "bypass", "steps": [model_step("scripted/flaky", json!({}))]}))
            .await;
        w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
        w.drive().await;
        assert_eq!(w.task(id, "s1-model-1").await.status, TaskStatus::Completed);
        let t = w.task(id, "s1-model-1").await;
        let sealed = w
            .kernel
            .store
            .sealed_request(t.id, t.generation)
            .await
            .unwrap()
            .unwrap();
        let attempts: Value = serde_json::from_str(&sealed.attempts).unwrap();
        assert_eq!(attempts.as_array().unwrap().len(), 2, "{attempts}");
        assert_eq!(attempts[0]["error_key"], "provider_overloaded");
        assert_eq!(attempts[0]["http_status"], 529);
        assert!(attempts[1].get("error_key").is_none());
        assert_eq!(w.run_row(id).await.status, RunStatus::Completed);

        w.script(
            "down",
            &[json!({"text": "never", "error": {"key": "provider_overloaded"}})],
        );
        let (id, _) = w
            .create(json!({"approval_mode": "bypass", "steps": [model_step("scripted/down", json!({}))]}))
            .await;
        w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
        w.drive().await;
        let t = w.task(id, "s1-model-1").await;
        assert_eq!(t.status, TaskStatus::Failed);
        assert_eq!(t.error_key.as_deref(), Some("provider_overloaded"));
        let sealed = w
            .kernel
            .store
            .sealed_request(t.id, t.generation)
            .await
            .unwrap()
            .unwrap();
        let attempts: Value = serde_json::from_str(&sealed.attempts).unwrap();
        assert_eq!(attempts.as_array().unwrap().len(), 4);
        assert_eq!(w.run_row(id).await.status, RunStatus::NeedsAttention);
    }
}

#[tokio::test]
async fn the_spawned_worker_drives_runs_to_the_end() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script(
            "bg",
            &[
                json!({"tool_calls": [{"id": "c1", "name": "runners_list", "input": {}}]}),
                json!({"text": "ok"}),
            ],
        );
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let handle = w.kernel.runs().spawn_worker(async move {
            let _ = stop_rx.await;
        });
        let (id, _) = w
            .create(json!({
                "approval_mode": "bypass",
                "steps": [model_step("scripted/bg", json!({"kernel_tools": ["nexus.runners.list"]}))],
            }))
            .await;
        w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            if w.run_row(id).await.status == RunStatus::Completed {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the worker did not finish the run"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        stop_tx.send(()).unwrap();
        handle.await.unwrap();
        assert_eq!(keys(&w.tasks(id).await), ["s1-model-1", "r1t0", "r1"]);
    }
}

async fn wait_for<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !f().await {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn stop_during_a_model_call() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script("slow", &[json!({"text": "late", "delay_ms": 400})]);
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let handle = w.kernel.runs().spawn_worker(async move {
            let _ = stop_rx.await;
        });
        for force in [false, true] {
            let (id, _) = w
                .create(json!({"approval_mode": "bypass", "steps": [model_step("scripted/slow", json!({}))]}))
                .await;
            w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
            wait_for("the seal", || async {
                w.task(id, "s1-model-1").await.status == TaskStatus::Running
            })
            .await;
            let stopped = w
                .kernel
                .runs()
                .stop_run(&w.agent, w.ws, id, Stop::parse(&json!({"force": force})))
                .await
                .unwrap();
            assert_eq!(
                stopped.run.status.as_str(),
                if force { "canceled" } else { "canceling" }
            );
            wait_for("the cancel", || async {
                w.run_row(id).await.status == RunStatus::Canceled
            })
            .await;
            let t = w.task(id, "s1-model-1").await;
            let expected = if force {
                TaskStatus::Canceled
            } else {
                TaskStatus::Completed
            };
            assert_eq!(t.status, expected, "force={force}");
        }
        stop_tx.send(()).unwrap();
        handle.await.unwrap();
    }
}

#[tokio::test]
async fn a_repeat_call_loop_refuses_expansion() {
    for ts in engines().await {
        let w = world(ts).await;
        let line = json!({"tool_calls": [{"name": "runners_list", "input": {}}]});
        w.script("loop", &vec![line; 14]);
        let (id, _) = w
            .create(json!({
                "approval_mode": "bypass",
                "steps": [model_step("scripted/loop", json!({"kernel_tools": ["nexus.runners.list"]}))],
            }))
            .await;
        w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
        w.drive().await;
        let refused: Vec<TaskRow> = w
            .tasks(id)
            .await
            .into_iter()
            .filter(|t| t.error_key.as_deref() == Some("round_expansion_refused"))
            .collect();
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].key, "r9");
        assert_eq!(refused[0].error_detail.as_deref(), Some("repeat_call_loop"));
        let run = w.run_row(id).await;
        assert_eq!(run.status, RunStatus::NeedsAttention);
    }
}
