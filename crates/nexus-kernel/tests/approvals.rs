//! The approval gate on both engines (approvals.md): grants by mode, holds, approve, deny,
//! expiry through the sweep, `rules` mode, rule precedence, author-origin rows, re-addressing
//! on approve, and the approval queue.

mod common;

use common::World;

use nexus_core::codes::Code;
use nexus_core::registry::EffectProfile;
use nexus_kernel::MemberPrincipal;
use nexus_kernel::admin::MemberSpec;
use nexus_kernel::runs::Deny;
use nexus_store::prelude::*;
use nexus_store::testing::{TestStore, engines};
use nexus_store::{EventRow, JobKind, MemberKind, RunStatus, Standing, TaskRow, TaskStatus};
use serde_json::{Value, json};
use uuid::Uuid;

const DAY: i64 = 86_400_000;

fn write_profile() -> Value {
    json!({"kind": "write", "destructive": true, "effect_scope": "closed", "idempotency": "intrinsic", "reconciliation": "lookup"})
}

fn read_tools() -> Value {
    json!([
        {"name": "read", "effect_profile": EffectProfile::READ.to_json(), "description": "Read a file.", "input_schema": {"type": "object"}},
        {"name": "write", "effect_profile": write_profile(), "timeout_ms": 120000, "description": "Write a file.", "input_schema": {"type": "object"}},
    ])
}

/// The runner's environment as it announces it.
fn environment() -> Value {
    json!({"os": "linux"})
}

async fn world(ts: TestStore) -> World {
    let w = common::world(ts).await;
    w.announce(read_tools(), environment()).await;
    w
}

impl World {
    /// Creates and starts a run of one model step that calls `calls` (script `name`), as `who`.
    async fn model_run(&self, who: &MemberPrincipal, name: &str, mode: &str, rules: Value, calls: Value) -> Uuid {
        self.script(
            name,
            &[
                json!({"text": "Working.", "tool_calls": calls}),
                json!({"text": "Done."}),
            ],
        );
        let tools = json!([self.routed("read", "read"), self.routed("write", "write")]);
        let mut run = json!({
            "approval_mode": mode,
            "steps": [{"model": {"prompt": "Go.", "model": format!("scripted/{name}"), "tools": tools}}],
        });
        if !rules.is_null() {
            run["approval_rules"] = rules;
        }
        self.start_as(who, run).await
    }

    /// The `from → to` status changes of one task, in order.
    async fn statuses(&self, id: Uuid, key: &str) -> Vec<String> {
        self.events(id)
            .await
            .iter()
            .filter(|e| e.kind.as_str() == "task_status_changed" && e.task_key.as_deref() == Some(key))
            .map(|e| {
                let d: Value = serde_json::from_str(&e.data).unwrap();
                format!("{}>{}", d["from"].as_str().unwrap(), d["to"].as_str().unwrap())
            })
            .collect()
    }
}

fn approval(t: &TaskRow) -> Value {
    serde_json::from_str(t.approval.as_deref().unwrap_or("null")).unwrap()
}

fn profile(t: &TaskRow) -> Value {
    serde_json::from_str(t.effect_profile.as_deref().unwrap_or("null")).unwrap()
}

fn read_call(id: &str, path: &str) -> Value {
    json!({"id": id, "name": "read", "input": {"path": path}})
}

#[tokio::test]
async fn bypass_grants_a_model_call_by_mode_and_dispatches_it() {
    for ts in engines().await {
        let w = world(ts).await;
        let id = w
            .model_run(
                &w.agent,
                "bypass",
                "bypass",
                Value::Null,
                json!([read_call("c1", "a.txt")]),
            )
            .await;
        let t = w.task(id, "r1t0").await;
        assert_eq!(t.status, TaskStatus::Dispatched, "{:?}", t.error_key);
        assert_eq!(t.origin, nexus_store::Origin::Model);
        assert_eq!(t.addressed_executor_id, Some(w.executor_id(w.runner).await));
        assert_eq!(t.addressed_role, Some(nexus_store::ExecutorKind::Runner));
        assert_eq!(approval(&t)["origin"], "mode");
        assert!(approval(&t)["decided_at"].as_str().unwrap().ends_with('Z'));
        assert_eq!(profile(&t), EffectProfile::READ.to_json());
        assert_eq!(t.timeout_ms, Some(600_000));
        assert_eq!(t.deadline_at, Some(t.await_started_at.unwrap() + 600_000));
        assert_eq!(
            w.statuses(id, "r1t0").await,
            ["waiting>needs_approval", "needs_approval>dispatched"]
        );
        // The task read shows the release.
        let read = serde_json::to_value(w.kernel.runs().get_task(&w.agent, w.ws, id, "r1t0").await.unwrap()).unwrap();
        assert_eq!(read["task"]["addressed_to"]["role"], "runner");
        assert_eq!(read["task"]["addressed_to"]["executor_public_id"], w.runner.to_string());
        assert_eq!(read["task"]["target"]["executor_public_id"], w.runner.to_string());
        assert_eq!(read["task"]["approval"]["origin"], "mode");
        assert_eq!(read["task"]["timeout_ms"], 600_000);
    }
}

#[tokio::test]
async fn ask_holds_and_approve_releases_with_the_approvers_fact() {
    for ts in engines().await {
        let w = world(ts).await;
        let id = w
            .model_run(
                &w.agent,
                "ask",
                "ask",
                Value::Null,
                json!([{"id": "c1", "name": "write", "input": {"path": "x"}}]),
            )
            .await;
        let t = w.task(id, "r1t0").await;
        assert_eq!(t.status, TaskStatus::NeedsApproval);
        assert_eq!(t.timeout_ms, Some(DAY));
        assert_eq!(t.deadline_at, Some(t.await_started_at.unwrap() + DAY));
        assert_eq!(t.addressed_executor_id, Some(w.executor_id(w.agent_app).await));
        assert_eq!(t.addressed_role, Some(nexus_store::ExecutorKind::AgentApplication));
        assert_eq!(profile(&t), write_profile());
        assert!(t.approval.is_none());
        let events = w.events(id).await;
        let attention: Vec<&EventRow> = events
            .iter()
            .filter(|e| e.kind.as_str() == "attention_required")
            .collect();
        assert_eq!(attention.len(), 1);
        assert_eq!(
            serde_json::from_str::<Value>(&attention[0].data).unwrap(),
            json!({"reason": "approval_required", "task_key": "r1t0"})
        );
        let run = w.kernel.runs().get_run(&w.agent, w.ws, id).await.unwrap();
        assert_eq!(run.run.status.as_str(), "running");
        let read = serde_json::to_value(w.kernel.runs().get_task(&w.human, w.ws, id, "r1t0").await.unwrap()).unwrap();
        assert_eq!(read["task"]["timeout_ms"], DAY);
        assert_eq!(read["task"]["waiting_on"], json!(["approver"]));
        assert_eq!(read["task"]["effect_profile"], write_profile());

        // The queue carries the frozen effect profile.
        let q = serde_json::to_value(
            w.kernel
                .runs()
                .list_approvals(&w.human, w.ws, None, None)
                .await
                .unwrap(),
        )
        .unwrap();
        let rows = q["approvals"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{q}");
        assert_eq!(rows[0]["run_public_id"], id.to_string());
        assert_eq!(rows[0]["task_key"], "r1t0");
        assert_eq!(rows[0]["tool_name"], "write");
        assert!(rows[0].get("tool_alias").is_none());
        assert_eq!(rows[0]["tool_input"], json!({"path": "x"}));
        assert_eq!(rows[0]["effect_profile"], write_profile());
        assert_eq!(rows[0]["declaring_task_key"], "s1-model-1");
        assert!(rows[0]["deadline_at"].as_str().unwrap().ends_with('Z'));
        assert_eq!(q["pagination"]["next_after"], Value::Null);
        let page = w
            .kernel
            .runs()
            .list_approvals(&w.human, w.ws, None, Some(1))
            .await
            .unwrap();
        let next = page.pagination.next_after.clone().unwrap();
        let rest = serde_json::to_value(
            w.kernel
                .runs()
                .list_approvals(&w.human, w.ws, Some(&next), Some(1))
                .await
                .unwrap(),
        )
        .unwrap();
        assert_eq!(rest["approvals"], json!([]));
        let bad = w
            .kernel
            .runs()
            .list_approvals(&w.human, w.ws, Some("x"), None)
            .await
            .unwrap_err();
        assert_eq!(bad.code, Code::ParameterInvalid);

        // The human approves: released with the announced timeout.
        let out = w.kernel.runs().approve(&w.human, w.ws, id, "r1t0").await.unwrap();
        let out = serde_json::to_value(&out).unwrap();
        assert_eq!(out["task"]["status"], "dispatched");
        assert_eq!(out["task"]["approval"]["origin"], "human");
        assert_eq!(
            out["task"]["approval"]["decided_by"],
            w.human.member.public_id.to_string()
        );
        let t = w.task(id, "r1t0").await;
        assert_eq!(t.addressed_executor_id, Some(w.executor_id(w.runner).await));
        assert_eq!(t.timeout_ms, Some(120_000));
        assert_eq!(t.deadline_at, Some(t.await_started_at.unwrap() + 120_000));
        assert_eq!(
            w.statuses(id, "r1t0").await,
            ["waiting>needs_approval", "needs_approval>dispatched"]
        );
        let decided: Vec<Value> = w
            .events(id)
            .await
            .iter()
            .filter(|e| e.kind.as_str() == "approval_decided")
            .map(|e| serde_json::from_str(&e.data).unwrap())
            .collect();
        assert_eq!(
            decided,
            [json!({"decision": "approved", "origin": "human", "decided_by": w.human.member.public_id.to_string()})]
        );
        assert_eq!(
            serde_json::to_value(
                w.kernel
                    .runs()
                    .list_approvals(&w.human, w.ws, None, None)
                    .await
                    .unwrap()
            )
            .unwrap()["approvals"],
            json!([])
        );

        // A second decision finds nothing held.
        let again = w.kernel.runs().approve(&w.human, w.ws, id, "r1t0").await.unwrap_err();
        assert_eq!(again.code, Code::NotAwaitingApproval);
        let missing = w.kernel.runs().approve(&w.human, w.ws, id, "nope").await.unwrap_err();
        assert_eq!(missing.code, Code::NotFound);
    }
}

#[tokio::test]
async fn standing_gates_the_verbs() {
    for ts in engines().await {
        let w = world(ts).await;
        let id = w
            .model_run(&w.agent, "standing", "ask", Value::Null, json!([read_call("c1", "a")]))
            .await;
        let reader = w
            .kernel
            .admin()
            .create_member(MemberSpec {
                kind: MemberKind::Human,
                handle: "reader".into(),
                display_name: None,
                steward: None,
                standing: Some(Standing::Read),
            })
            .await
            .unwrap();
        let reader = w
            .kernel
            .admin()
            .authenticate_member(Some(&format!("Bearer {}", reader.member_token)))
            .await
            .unwrap();
        let outsider = w
            .kernel
            .admin()
            .create_member(MemberSpec {
                kind: MemberKind::Human,
                handle: "outsider".into(),
                display_name: None,
                steward: None,
                standing: None,
            })
            .await
            .unwrap();
        let outsider = w
            .kernel
            .admin()
            .authenticate_member(Some(&format!("Bearer {}", outsider.member_token)))
            .await
            .unwrap();
        let e = w.kernel.runs().approve(&reader, w.ws, id, "r1t0").await.unwrap_err();
        assert_eq!(e.code, Code::NotAuthorized);
        let e = w
            .kernel
            .runs()
            .deny(&reader, w.ws, id, "r1t0", Deny::parse(&json!({"reason": 3})))
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::NotAuthorized);
        let e = w.kernel.runs().approve(&outsider, w.ws, id, "r1t0").await.unwrap_err();
        assert_eq!(e.code, Code::NotFound);
        let e = w
            .kernel
            .runs()
            .list_approvals(&outsider, w.ws, None, None)
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::NotFound);
        // Read standing reads the queue.
        let q = serde_json::to_value(w.kernel.runs().list_approvals(&reader, w.ws, None, None).await.unwrap()).unwrap();
        assert_eq!(q["approvals"].as_array().unwrap().len(), 1);
        // The declaring agent is an approver too.
        let out = w.kernel.runs().approve(&w.agent, w.ws, id, "r1t0").await.unwrap();
        let out = serde_json::to_value(&out).unwrap();
        assert_eq!(out["task"]["approval"]["origin"], "agent");
    }
}

#[tokio::test]
async fn deny_fails_the_row_and_the_continuation_reads_it() {
    for ts in engines().await {
        let w = world(ts).await;
        let id = w
            .model_run(&w.agent, "deny", "ask", Value::Null, json!([read_call("c1", "a")]))
            .await;
        let e = w
            .kernel
            .runs()
            .deny(&w.human, w.ws, id, "r1t0", Deny::parse(&json!({"reason": ["no"]})))
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::ParameterInvalid);
        // A reason past 256 bytes is cut at a character boundary.
        let reason = format!("{}é and more", "x".repeat(255));
        let out = w
            .kernel
            .runs()
            .deny(&w.human, w.ws, id, "r1t0", Deny::parse(&json!({"reason": reason})))
            .await
            .unwrap();
        let out = serde_json::to_value(&out).unwrap();
        assert_eq!(out["task"]["status"], "failed");
        assert_eq!(out["task"]["error"]["key"], "approval_denied");
        assert_eq!(out["task"]["error"]["detail"], "x".repeat(255));
        assert_eq!(out["task"]["approval"]["origin"], "human");
        assert_eq!(
            w.statuses(id, "r1t0").await,
            ["waiting>needs_approval", "needs_approval>failed"]
        );
        let decided = w
            .events(id)
            .await
            .into_iter()
            .find(|e| e.kind.as_str() == "approval_decided")
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&decided.data).unwrap()["decision"],
            "denied"
        );
        // The fan absorbs the failure: the continuation runs and the run completes.
        w.drive().await;
        assert_eq!(w.task(id, "r1").await.status, TaskStatus::Completed);
        let run = w.kernel.runs().get_run(&w.agent, w.ws, id).await.unwrap();
        assert_eq!(run.run.status.as_str(), "completed");
        // The run is over: nothing is adjudicable.
        let e = w
            .kernel
            .runs()
            .deny(&w.human, w.ws, id, "r1t0", Deny::parse(&json!({})))
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::NotAdjudicable);
    }
}

#[tokio::test]
async fn a_hold_expires_through_the_sweep_and_on_a_late_decision() {
    for ts in engines().await {
        let w = world(ts).await;
        let id = w
            .model_run(
                &w.agent,
                "expire",
                "ask",
                Value::Null,
                json!([read_call("c1", "a"), read_call("c2", "b")]),
            )
            .await;
        let t0 = w.task(id, "r1t0").await;
        let t1 = w.task(id, "r1t1").await;
        assert_eq!(
            (t0.status.as_str(), t1.status.as_str()),
            ("needs_approval", "needs_approval")
        );
        // Nothing is due yet.
        assert_eq!(
            w.kernel.runs().sweep_once(nexus_kernel::time::now_ms()).await.unwrap(),
            0
        );

        // A late decision settles the row expired first, then refuses.
        let mut tx = w.kernel.store.begin().await.unwrap();
        let mut late = t1.clone();
        late.deadline_at = Some(nexus_kernel::time::now_ms() - 1);
        assert!(
            tx.update_task(nexus_store::TaskUpdate::new(
                &late,
                late.generation,
                &[TaskStatus::NeedsApproval]
            ))
            .await
            .unwrap()
        );
        tx.commit().await.unwrap();
        let e = w.kernel.runs().approve(&w.human, w.ws, id, "r1t1").await.unwrap_err();
        assert_eq!(e.code, Code::NotAwaitingApproval);
        let t1 = w.task(id, "r1t1").await;
        assert_eq!(t1.status, TaskStatus::TimedOut);
        assert_eq!(t1.error_key.as_deref(), Some("approval_expired"));
        assert!(t1.approval.is_none());

        // The sweep, a day later, expires the other hold.
        let later = t0.deadline_at.unwrap();
        assert_eq!(w.kernel.runs().sweep_once(later).await.unwrap(), 1);
        let t0 = w.task(id, "r1t0").await;
        assert_eq!(t0.status, TaskStatus::TimedOut);
        assert_eq!(t0.error_key.as_deref(), Some("approval_expired"));
        assert_eq!(
            w.statuses(id, "r1t0").await,
            ["waiting>needs_approval", "needs_approval>timed_out"]
        );
        let e = w
            .kernel
            .runs()
            .deny(&w.human, w.ws, id, "r1t0", Deny::parse(&json!({})))
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::NotAwaitingApproval);
        assert_eq!(w.kernel.runs().sweep_once(later).await.unwrap(), 0);
        // The continuation reads both expiries.
        w.drive().await;
        assert_eq!(w.task(id, "r1").await.status, TaskStatus::Completed);
    }
}

#[tokio::test]
async fn rules_mode_denies_what_no_rule_allows() {
    for ts in engines().await {
        let w = world(ts).await;
        let id = w
            .model_run(&w.agent, "rules", "rules", Value::Null, json!([read_call("c1", "a")]))
            .await;
        let t = w.task(id, "r1t0").await;
        assert_eq!(t.status, TaskStatus::Failed);
        assert_eq!(t.error_key.as_deref(), Some("approval_denied"));
        assert_eq!(t.error_detail.as_deref(), Some("no approval rule allows `read`"));
        assert!(t.approval.is_none());
        assert_eq!(
            w.statuses(id, "r1t0").await,
            ["waiting>needs_approval", "needs_approval>failed"]
        );
    }
}

#[tokio::test]
async fn rule_precedence_is_deny_then_ask_then_allow() {
    for ts in engines().await {
        let w = world(ts).await;
        let rules = json!([
            {"tool": "read|write", "verdict": "allow"},
            {"tool": "read", "path": "path", "match": "secret*", "verdict": "deny", "reason": "no secrets"},
            {"tool": "read", "path": "path", "match": "secret*", "verdict": "deny", "reason": "second reason"},
            {"tool": "w*", "verdict": "ask"},
        ]);
        let calls = json!([
            read_call("c1", "notes.txt"),
            read_call("c2", "secret.txt"),
            {"id": "c3", "name": "write", "input": {"path": "x"}},
        ]);
        let id = w
            .model_run(&w.agent, "precedence", "rules", rules.clone(), calls.clone())
            .await;
        let allowed = w.task(id, "r1t0").await;
        assert_eq!(allowed.status, TaskStatus::Dispatched);
        assert_eq!(approval(&allowed)["origin"], "rule");
        let denied = w.task(id, "r1t1").await;
        assert_eq!(denied.status, TaskStatus::Failed);
        assert_eq!(denied.error_detail.as_deref(), Some("no secrets"));
        let asked = w.task(id, "r1t2").await;
        assert_eq!(asked.status, TaskStatus::NeedsApproval);

        // Under ask, an allow rule grants; a deny without reason carries the default detail.
        let rules = json!([
            {"tool": "read", "verdict": "allow"},
            {"tool": "write", "verdict": "deny"},
        ]);
        let id = w.model_run(&w.agent, "ask-rules", "ask", rules, calls.clone()).await;
        assert_eq!(approval(&w.task(id, "r1t0").await)["origin"], "rule");
        assert_eq!(
            w.task(id, "r1t2").await.error_detail.as_deref(),
            Some("denied by an approval rule")
        );

        // Under bypass, an ask rule does not hold a model call; a deny still denies.
        let rules = json!([{"tool": "*", "verdict": "ask"}, {"tool": "write", "verdict": "deny"}]);
        let id = w.model_run(&w.agent, "bypass-rules", "bypass", rules, calls).await;
        assert_eq!(w.task(id, "r1t0").await.status, TaskStatus::Dispatched);
        assert_eq!(approval(&w.task(id, "r1t0").await)["origin"], "mode");
        assert_eq!(w.task(id, "r1t2").await.status, TaskStatus::Failed);
    }
}

#[tokio::test]
async fn author_rows_are_granted_as_themselves_unless_a_rule_asks() {
    for ts in engines().await {
        let w = world(ts).await;
        let step = json!({"tool": {"name": "read", "input": {"path": "a"},
                                   "route": {"kind": "runner", "runner_executor_public_id": w.runner.to_string()}}});
        // `rules` with no rules: an author row is granted (origin author), not denied.
        let id = w
            .start_as(&w.agent, json!({"approval_mode": "rules", "steps": [step.clone()]}))
            .await;
        let t = w.task(id, "s1-tool-1").await;
        assert_eq!(t.origin, nexus_store::Origin::Author);
        assert_eq!(t.status, TaskStatus::Dispatched, "{t:?}");
        assert_eq!(approval(&t)["origin"], "author");
        // Model-origin rules do not apply to author rows; author rules do.
        let rules =
            json!([{"tool": "read", "verdict": "deny"}, {"tool": "read", "verdict": "ask", "origin": "author"}]);
        let id = w
            .start_as(
                &w.agent,
                json!({"approval_mode": "bypass", "approval_rules": rules, "steps": [step.clone()]}),
            )
            .await;
        let t = w.task(id, "s1-tool-1").await;
        assert_eq!(t.status, TaskStatus::NeedsApproval);
        let rules = json!([{"tool": "read", "verdict": "deny", "origin": "author", "reason": "authors may not read"}]);
        let id = w
            .start_as(
                &w.agent,
                json!({"approval_mode": "bypass", "approval_rules": rules, "steps": [step.clone()]}),
            )
            .await;
        let t = w.task(id, "s1-tool-1").await;
        assert_eq!(t.status, TaskStatus::Failed);
        assert_eq!(t.error_detail.as_deref(), Some("authors may not read"));

        // An authored budget survives the hold and wins over the default at release.
        let timed = json!({"tool": {"name": "read", "input": {"path": "a"}, "timeout_ms": 5000,
                                    "route": {"kind": "runner", "runner_executor_public_id": w.runner.to_string()}}});
        let rules = json!([{"tool": "read", "verdict": "ask", "origin": "author"}]);
        let id = w
            .start_as(
                &w.agent,
                json!({"approval_mode": "bypass", "approval_rules": rules, "steps": [timed]}),
            )
            .await;
        let t = w.task(id, "s1-tool-1").await;
        assert_eq!((t.status.as_str(), t.timeout_ms), ("needs_approval", Some(DAY)));
        w.kernel.runs().approve(&w.human, w.ws, id, "s1-tool-1").await.unwrap();
        let t = w.task(id, "s1-tool-1").await;
        assert_eq!((t.status.as_str(), t.timeout_ms), ("dispatched", Some(5000)));
        assert_eq!(t.deadline_at, Some(t.await_started_at.unwrap() + 5000));

        // On a human's own run a hold has no addressee.
        let rules = json!([{"tool": "read", "verdict": "ask", "origin": "author"}]);
        let step = json!({"tool": {"name": "read", "input": {"path": "a"}, "route": {"kind": "runner"}}});
        let id = w
            .start_as(
                &w.human,
                json!({"approval_mode": "ask", "approval_rules": rules,
                       "default_runner_executor_public_id": w.runner.to_string(), "steps": [step]}),
            )
            .await;
        let t = w.task(id, "s1-tool-1").await;
        assert_eq!(t.status, TaskStatus::NeedsApproval);
        assert_eq!(t.addressed_executor_id, None);
        let out = w.kernel.runs().approve(&w.human, w.ws, id, "s1-tool-1").await.unwrap();
        let out = serde_json::to_value(&out).unwrap();
        assert_eq!(out["task"]["status"], "dispatched");
    }
}

#[tokio::test]
async fn approve_addresses_again_and_compares_the_profile() {
    for ts in engines().await {
        let w = world(ts).await;
        let id = w
            .model_run(
                &w.agent,
                "readdress",
                "ask",
                Value::Null,
                json!([read_call("c1", "a"), read_call("c2", "b")]),
            )
            .await;
        // The runner changes the profile of `read`: the approver must see it again.
        let mut tools = read_tools();
        tools[0]["effect_profile"] = write_profile();
        w.announce(tools, environment()).await;
        let before = w.task(id, "r1t0").await;
        let out = w.kernel.runs().approve(&w.human, w.ws, id, "r1t0").await.unwrap();
        let out = serde_json::to_value(&out).unwrap();
        assert_eq!(out["task"]["status"], "needs_approval");
        assert_eq!(out["task"]["effect_profile"], write_profile());
        let after = w.task(id, "r1t0").await;
        assert!(after.await_started_at >= before.await_started_at);
        assert_eq!(after.deadline_at, Some(after.await_started_at.unwrap() + DAY));
        assert!(after.approval.is_none());
        // Approved against the new profile, it is released.
        let out = w.kernel.runs().approve(&w.human, w.ws, id, "r1t0").await.unwrap();
        let out = serde_json::to_value(&out).unwrap();
        assert_eq!(out["task"]["status"], "dispatched");
        // The runner stops serving `read`: approving fails the row.
        w.announce(json!([]), environment()).await;
        let out = w.kernel.runs().approve(&w.human, w.ws, id, "r1t1").await.unwrap();
        let out = serde_json::to_value(&out).unwrap();
        assert_eq!(out["task"]["status"], "failed");
        assert_eq!(out["task"]["error"]["key"], "tool_not_served");
    }
}

#[tokio::test]
async fn an_unserved_name_fails_from_waiting_without_a_park() {
    for ts in engines().await {
        let w = world(ts).await;
        // A plain function nobody serves: the declaring agent's address announces nothing.
        w.script(
            "unserved",
            &[
                json!({"tool_calls": [{"id": "c1", "name": "lookup", "input": {}}]}),
                json!({"text": "ok"}),
            ],
        );
        let tools = json!([{"type": "function", "function": {"name": "lookup", "description": "Look.", "parameters": {"type": "object"}}}]);
        let id = w
            .start_as(
                &w.agent,
                json!({"approval_mode": "bypass", "steps": [{"model": {"prompt": "Go.", "model": "scripted/unserved", "tools": tools}}]}),
            )
            .await;
        let t = w.task(id, "r1t0").await;
        assert_eq!(t.status, TaskStatus::Failed);
        assert_eq!(t.error_key.as_deref(), Some("tool_not_served"));
        assert_eq!(t.deadline_at, None);
        assert_eq!(w.statuses(id, "r1t0").await, ["waiting>failed"]);
        assert_eq!(w.task(id, "r1").await.status, TaskStatus::Completed);
    }
}

#[tokio::test]
async fn a_held_kernel_tool_runs_in_the_kernel_once_approved() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script(
            "held-kernel",
            &[
                json!({"tool_calls": [{"id": "c1", "name": "runners_list", "input": {}}]}),
                json!({"text": "ok"}),
            ],
        );
        let id = w
            .start_as(
                &w.agent,
                json!({"approval_mode": "ask", "steps": [{"model": {"prompt": "Go.", "model": "scripted/held-kernel",
                                                                    "kernel_tools": ["nexus.runners.list"]}}]}),
            )
            .await;
        let t = w.task(id, "r1t0").await;
        assert_eq!(t.status, TaskStatus::NeedsApproval);
        // Held rows are addressed to the declaring agent, kernel tools included.
        assert_eq!(t.addressed_executor_id, Some(w.executor_id(w.agent_app).await));
        assert_eq!(profile(&t), EffectProfile::READ.to_json());
        let out = w.kernel.runs().approve(&w.agent, w.ws, id, "r1t0").await.unwrap();
        let out = serde_json::to_value(&out).unwrap();
        assert_eq!(out["task"]["status"], "running");
        assert!(out["task"].get("addressed_to").is_none());
        let t = w.task(id, "r1t0").await;
        assert_eq!(t.deadline_at, Some(t.await_started_at.unwrap() + 600_000));
        w.drive().await;
        let t = w.task(id, "r1t0").await;
        assert_eq!(t.status, TaskStatus::Completed);
        assert_eq!(
            w.statuses(id, "r1t0").await,
            ["waiting>needs_approval", "needs_approval>running", "running>completed"]
        );
        assert_eq!(w.task(id, "r1").await.status, TaskStatus::Completed);
    }
}

#[tokio::test]
async fn a_lost_kernel_evaluation_times_out_through_the_sweep() {
    for ts in engines().await {
        let w = world(ts).await;
        w.script(
            "lost",
            &[
                json!({"tool_calls": [{"id": "c1", "name": "runners_list", "input": {}}]}),
                json!({"text": "ok"}),
            ],
        );
        // Held, then approved through a door: the approval queues the kernel tool job (a
        // door's units hand nothing to a worker), which is then lost: another node dequeues
        // and deletes it, and dies before evaluating.
        let id = w
            .start_as(
                &w.agent,
                json!({"approval_mode": "ask", "steps": [{"model": {"prompt": "Go.", "model": "scripted/lost",
                                                                    "kernel_tools": ["nexus.runners.list"]}}]}),
            )
            .await;
        w.kernel.runs().approve(&w.agent, w.ws, id, "r1t0").await.unwrap();
        let t = w.task(id, "r1t0").await;
        assert_eq!(t.status, TaskStatus::Running);
        let deadline = t.deadline_at.unwrap();
        let jobs = w
            .kernel
            .store
            .dequeue_jobs("elsewhere", nexus_kernel::time::now_ms(), 60_000, 10)
            .await
            .unwrap()
            .jobs;
        assert_eq!(jobs.iter().filter(|j| j.kind == JobKind::KernelTool).count(), 1);
        for j in jobs {
            w.kernel.store.delete_job(j.id).await.unwrap();
        }
        assert_eq!(w.kernel.runs().sweep_once(deadline - 1).await.unwrap(), 0);
        assert_eq!(w.kernel.runs().sweep_once(deadline).await.unwrap(), 1);
        let t = w.task(id, "r1t0").await;
        assert_eq!(t.status, TaskStatus::TimedOut);
        assert_eq!(t.error_key.as_deref(), Some("tool_timeout"));
    }
}

/// A run whose stored approval mode or rules do not read passes no call, on both engines: the
/// unit that reads the run meets a corrupt row, and the run stops in `needs_attention`
/// (`attention.reason = corrupt_row`) instead of running under `bypass` or under no rules.
#[tokio::test]
async fn a_run_whose_approval_words_do_not_read_passes_no_call() {
    let deny_read = json!([{"tool": "read", "verdict": "deny"}]);
    let cases = [
        // Read as `bypass`, this mode would have dispatched the call.
        ("ask", Value::Null, "approval_mode", "bogus"),
        // Read as no rules, `bypass` would have dispatched what the rule denies.
        (
            "bypass",
            deny_read,
            "approval_rules",
            r#"[{"tool":"read","verdict":"nope"}]"#,
        ),
    ];
    for (mode, rules, column, word) in cases {
        for ts in engines().await {
            let w = world(ts).await;
            let d = w.dialect;
            w.script(
                "corrupt",
                &[
                    json!({"text": "Working.", "tool_calls": [read_call("c1", "a")]}),
                    json!({"text": "Done."}),
                ],
            );
            let run = json!({"approval_mode": mode, "approval_rules": rules, "steps": [{"model": {
                "prompt": "Go.", "model": "scripted/corrupt", "tools": [w.routed("read", "read")]}}]});
            let (id, _) = w.create(run).await;
            w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
            let run_id = w.run_row(id).await.id;
            w.ts.execute_unchecked(
                &["runs"],
                &format!("UPDATE runs SET {column} = '{word}' WHERE id = {run_id}"),
            )
            .await;
            assert!(w.kernel.store.run_by_id(run_id).await.is_err(), "{column} on {d}");

            w.drive().await;
            let status =
                w.ts.query_text(&format!("SELECT status FROM runs WHERE id = {run_id}"))
                    .await;
            assert_eq!(status.as_deref(), Some("needs_attention"), "{column} on {d}");
            // The run row no longer reads: its tasks and events by its internal id.
            let tasks = w.kernel.store.tasks_of_run(run_id, 0, 100).await.unwrap();
            assert!(
                tasks
                    .iter()
                    .all(|t| t.kind != nexus_store::TaskKind::Tool || t.approval.is_none()),
                "{column} on {d}: {tasks:?}"
            );
            let last = w
                .kernel
                .store
                .events_after(run_id, 0, 1000)
                .await
                .unwrap()
                .pop()
                .unwrap();
            assert_eq!(last.kind, nexus_store::EventKind::RunStatusChanged, "{d}");
            let data: Value = serde_json::from_str(&last.data).unwrap();
            assert_eq!(
                (data["to"].as_str(), data["reason"].as_str()),
                (Some("needs_attention"), Some("corrupt_row")),
                "{d}"
            );
        }
    }
}

/// A round whose stored row holds a word no variant has (here `tasks.failure_resolution`,
/// which no CHECK guards) stops its run in `needs_attention` (`corrupt_row`) on both engines:
/// the job that reads it is dropped instead of failing forever, and no model call is made.
#[tokio::test]
async fn a_round_whose_stored_words_do_not_read_stops_its_run() {
    for ts in engines().await {
        let w = world(ts).await;
        let d = w.dialect;
        w.script("unread", &[json!({"text": "Done."})]);
        let run = json!({"approval_mode": "bypass", "steps": [{"model": {
            "prompt": "Go.", "model": "scripted/unread"}}]});
        let (id, _) = w.create(run).await;
        w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
        let run_id = w.run_row(id).await.id;
        w.ts.execute_unchecked(
            &["tasks"],
            &format!("UPDATE tasks SET failure_resolution = 'bogus' WHERE run_id = {run_id}"),
        )
        .await;

        w.drive().await;
        let status =
            w.ts.query_text(&format!("SELECT status FROM runs WHERE id = {run_id}"))
                .await;
        assert_eq!(status.as_deref(), Some("needs_attention"), "{d}");
        let last = w.events(id).await.pop().unwrap();
        assert_eq!(last.kind, nexus_store::EventKind::RunStatusChanged, "{d}");
        let data: Value = serde_json::from_str(&last.data).unwrap();
        assert_eq!(data["reason"], "corrupt_row", "{d}");
        let reply =
            w.ts.query_text(&format!(
                "SELECT reply FROM tasks WHERE run_id = {run_id} AND key = 'r1'"
            ))
            .await;
        assert_eq!(reply, None, "no model reply was applied on {d}");
    }
}

/// A job whose stored kind does not read stops its run in `needs_attention` (`corrupt_row`)
/// and leaves the queue on both engines, while the job leased beside it runs as usual: one
/// damaged row does not fail the dequeue of every other job.
#[tokio::test]
async fn a_job_whose_kind_does_not_read_holds_its_run_and_spares_the_others() {
    for ts in engines().await {
        let w = world(ts).await;
        let d = w.dialect;
        let mut runs = Vec::new();
        for name in ["damaged", "sound"] {
            w.script(name, &[json!({"text": "Done."})]);
            let run = json!({"approval_mode": "bypass", "steps": [{"model": {
                "prompt": "Go.", "model": format!("scripted/{name}")}}]});
            let body = w
                .kernel
                .runs()
                .create_run(&w.agent, w.ws, &json!({ "run": run }), None)
                .await
                .unwrap()
                .fresh()
                .expect("a fresh create");
            let id = Uuid::parse_str(&body.run.public_id).unwrap();
            w.kernel.runs().start_run(&w.agent, w.ws, id).await.unwrap();
            runs.push(w.kernel.store.run_by_public_id(id).await.unwrap().unwrap().id);
        }
        let [damaged, sound] = runs[..] else { unreachable!() };
        let job: i64 =
            w.ts.query_text(&format!("SELECT CAST(id AS TEXT) FROM jobs WHERE run_id = {damaged}"))
                .await
                .expect("the damaged run's model call is queued")
                .parse()
                .unwrap();
        w.ts.execute_unchecked(&["jobs"], &format!("UPDATE jobs SET kind = 'bogus' WHERE id = {job}"))
            .await;

        w.kernel.runs().work_until_idle(50).await.unwrap();
        let store = &w.kernel.store;
        let status = |id: i64| async move { store.run_by_id(id).await.unwrap().unwrap().status };
        assert_eq!(status(damaged).await, RunStatus::NeedsAttention, "{d}");
        assert_eq!(
            w.kernel.store.job_by_id(job).await.unwrap(),
            None,
            "the job left the queue on {d}"
        );
        let last = w
            .kernel
            .store
            .events_after(damaged, 0, 1000)
            .await
            .unwrap()
            .pop()
            .unwrap();
        let data: Value = serde_json::from_str(&last.data).unwrap();
        assert_eq!(
            (last.kind, data["reason"].as_str()),
            (nexus_store::EventKind::RunStatusChanged, Some("corrupt_row")),
            "{d}"
        );
        assert_eq!(status(sound).await, RunStatus::Completed, "{d}");
    }
}
