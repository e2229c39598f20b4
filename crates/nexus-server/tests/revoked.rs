//! The sweep's revoked-executor part (executor.md §13, approvals.md §4) on both engines: once
//! an executor is revoked, the sweep fails its unclaimed `dispatched` rows with
//! `executor_revoked`, leaves its claimed rows to their deadline and the expiry rule, and
//! clears the addressee of a held approval with `task_readdressed`. The revoked claimant's
//! later commit is refused with the uniform 401, and no row settles twice.

mod common;

use axum::http::{Method, StatusCode};
use common::{Harness, Reply, harnesses};
use nexus_core::registry::EffectProfile;
use nexus_store::Announcement;
use nexus_store::prelude::*;
use serde_json::{Value, json};
use uuid::Uuid;

const X: &str = "/agent_api/v1/executor";

/// The runner serves `read` (READ, announced 60 s) and `write` (not replayable, announced 60 s).
fn runner_tools() -> Value {
    let write = json!({"kind": "write", "destructive": true, "effect_scope": "closed", "idempotency": "none",
                       "reconciliation": "lookup"});
    json!([
        {"name": "read", "effect_profile": EffectProfile::READ.to_json(), "timeout_ms": 60000,
         "description": "Read a file.", "input_schema": {"type": "object"}},
        {"name": "write", "effect_profile": write, "timeout_ms": 60000,
         "description": "Write a file.", "input_schema": {"type": "object"}},
    ])
}

fn runner_id(h: &Harness) -> String {
    h.boot["runner"]["executor_public_id"].as_str().unwrap().to_string()
}

fn agent_app_id(h: &Harness) -> String {
    h.boot["agent"]["executor_public_id"].as_str().unwrap().to_string()
}

async fn announce(h: &Harness) {
    let id = Uuid::parse_str(&runner_id(h)).unwrap();
    let runner = h.kernel.store.executor_by_public_id(id).await.unwrap().unwrap();
    h.kernel
        .store
        .put_announcement(
            runner.id,
            &Announcement {
                served_tools: runner_tools().to_string(),
                environment: "{}".into(),
                served_documents: "[]".into(),
            },
            nexus_kernel::time::now_ms(),
        )
        .await
        .unwrap();
}

/// Creates and starts a run of one runner-routed `tool` step `t` as `token`, drives the
/// engine, returns the run id.
async fn tool_run(h: &Harness, token: &str, tool: &str, mode: &str, rules: Value) -> String {
    let step = json!({"key": "t", "tool": {"name": tool, "input": {"path": "x"},
                      "route": {"kind": "runner", "runner_executor_public_id": runner_id(h)}}});
    h.start_run(token, mode, rules, json!([step])).await
}

fn item(run: &str, key: &str, verb: &str) -> String {
    format!("{X}/inbox/{run}/{key}/{verb}")
}

async fn task(h: &Harness, run: &str) -> Value {
    let r = h.get(&format!("{}/tasks/t", h.r(run)), Some(&h.human_token())).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    r.json()["task"].clone()
}

async fn events(h: &Harness, run: &str) -> Vec<Value> {
    let r = h
        .get(&format!("{}/events?limit=500", h.r(run)), Some(&h.human_token()))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    r.json()["events"].as_array().cloned().unwrap_or_default()
}

/// `task_status_changed` events of `t` into a settled status.
async fn settles(h: &Harness, run: &str) -> Vec<Value> {
    events(h, run)
        .await
        .into_iter()
        .filter(|e| e["type"] == "task_status_changed" && e["task_key"] == "t")
        .filter(|e| {
            matches!(
                e["data"]["to"].as_str(),
                Some("completed" | "failed" | "canceled" | "timed_out" | "skipped" | "uncertain")
            )
        })
        .map(|e| e["data"].clone())
        .collect()
}

async fn readdressed(h: &Harness, run: &str) -> Vec<Value> {
    events(h, run)
        .await
        .into_iter()
        .filter(|e| e["type"] == "task_readdressed")
        .collect()
}

fn expect_401(r: &Reply) {
    assert_eq!(
        r.status,
        StatusCode::UNAUTHORIZED,
        "{}",
        String::from_utf8_lossy(&r.bytes)
    );
    assert_eq!(r.headers["www-authenticate"], "Bearer realm=\"Nexus\"");
}

#[tokio::test]
async fn a_revoked_runner_loses_its_unclaimed_rows_and_its_claims_run_out() {
    for h in harnesses().await {
        announce(&h).await;
        let unclaimed = tool_run(&h, &h.human_token(), "read", "bypass", Value::Null).await;
        let claimed = tool_run(&h, &h.human_token(), "write", "bypass", Value::Null).await;
        let r = h
            .send(
                Method::POST,
                &item(&claimed, "t", "claim"),
                Some(&h.runner_token()),
                None,
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.json());
        let token = r.json()["claim"]["claim_token"].as_str().unwrap().to_string();
        let deadline = {
            let run = h
                .kernel
                .store
                .run_by_public_id(claimed.parse().unwrap())
                .await
                .unwrap()
                .unwrap();
            let row = h.kernel.store.task_by_key(run.id, "t").await.unwrap().unwrap();
            row.deadline_at.unwrap()
        };

        h.kernel.admin().revoke_executor(&runner_id(&h)).await.unwrap();
        // Revocation itself changes no row: the sweep does.
        assert_eq!(task(&h, &unclaimed).await["status"], "dispatched");

        let now = nexus_kernel::time::now_ms();
        assert_eq!(h.kernel.runs().sweep_at(now).await.unwrap(), 1, "{}", h.dialect);

        // The unclaimed row failed `executor_revoked`, in one event, and its run reached
        // attention (the deliverable failed).
        let t = task(&h, &unclaimed).await;
        assert_eq!(t["status"], "failed", "{t}");
        assert_eq!(t["error"]["key"], "executor_revoked", "{t}");
        let s = settles(&h, &unclaimed).await;
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(s[0]["from"], "dispatched");
        assert_eq!(s[0]["to"], "failed");
        assert_eq!(s[0]["error"]["key"], "executor_revoked");
        let run = h.get(&h.r(&unclaimed), Some(&h.human_token())).await.json();
        assert_eq!(run["run"]["status"], "needs_attention", "{run}");

        // The claimed row is left to its deadline: still dispatched, still claimed.
        let t = task(&h, &claimed).await;
        assert_eq!(t["status"], "dispatched", "{t}");
        assert!(settles(&h, &claimed).await.is_empty());

        // The revoked claimant can no longer reach the row: its commit (and every other
        // executor door) gets the uniform 401, and the row is unchanged.
        let late = json!({"claim_token": token, "content": "done"});
        expect_401(
            &h.json(
                Method::POST,
                &item(&claimed, "t", "commit"),
                Some(&h.runner_token()),
                &late,
            )
            .await,
        );
        expect_401(&h.get(&format!("{X}/inbox"), Some(&h.runner_token())).await);
        assert_eq!(task(&h, &claimed).await["status"], "dispatched");

        // A second pass at the same clock changes nothing.
        assert_eq!(h.kernel.runs().sweep_at(now).await.unwrap(), 0);
        assert_eq!(settles(&h, &unclaimed).await.len(), 1);

        // At the deadline the expiry rule settles the claim: `write` is not replayable, so the
        // row is `uncertain`. Once, whatever the later passes.
        assert_eq!(h.kernel.runs().sweep_at(deadline).await.unwrap(), 1);
        let t = task(&h, &claimed).await;
        assert_eq!(t["status"], "uncertain", "{t}");
        assert_eq!(t["error"]["key"], "tool_uncertain", "{t}");
        assert_eq!(h.kernel.runs().sweep_at(deadline + 1).await.unwrap(), 0);
        for run in [&unclaimed, &claimed] {
            let s = settles(&h, run).await;
            assert_eq!(s.len(), 1, "settled twice: {s:?}");
        }
        expect_401(
            &h.json(
                Method::POST,
                &item(&claimed, "t", "commit"),
                Some(&h.runner_token()),
                &late,
            )
            .await,
        );
    }
}

#[tokio::test]
async fn a_held_approval_loses_its_revoked_addressee_and_stays_approvable() {
    for h in harnesses().await {
        announce(&h).await;
        let rules = json!([{"tool": "read", "verdict": "ask", "origin": "author"}]);
        let run = tool_run(&h, &h.agent_token(), "read", "rules", rules).await;
        let inbox = h.get(&format!("{X}/inbox"), Some(&h.agent_transport_token())).await;
        assert_eq!(inbox.json()["tasks"][0]["kind"], "approval", "{}", inbox.json());

        h.kernel.admin().revoke_executor(&agent_app_id(&h)).await.unwrap();
        let now = nexus_kernel::time::now_ms();
        assert_eq!(h.kernel.runs().sweep_at(now).await.unwrap(), 1, "{}", h.dialect);

        // The row keeps its status and clock; only the addressee is cleared, with one event.
        let t = task(&h, &run).await;
        assert_eq!(t["status"], "needs_approval", "{t}");
        let row = {
            let r = h
                .kernel
                .store
                .run_by_public_id(run.parse().unwrap())
                .await
                .unwrap()
                .unwrap();
            h.kernel.store.task_by_key(r.id, "t").await.unwrap().unwrap()
        };
        assert_eq!((row.addressed_executor_id, row.addressed_role), (None, None));
        let moved = readdressed(&h, &run).await;
        assert_eq!(moved.len(), 1, "{moved:?}");
        assert_eq!(moved[0]["task_key"], "t");
        assert_eq!(moved[0]["data"], json!({"from": agent_app_id(&h), "to": null}));
        assert!(settles(&h, &run).await.is_empty());

        // Idle on the next pass: no second event.
        assert_eq!(h.kernel.runs().sweep_at(now).await.unwrap(), 0);
        assert_eq!(readdressed(&h, &run).await.len(), 1);

        // A member still approves it, and the row goes to its runner.
        let r = h
            .json(
                Method::POST,
                &format!("{}/tasks/t/approve", h.r(&run)),
                Some(&h.human_token()),
                &json!({}),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
        assert_eq!(task(&h, &run).await["status"], "dispatched");
        let inbox = h.get(&format!("{X}/inbox"), Some(&h.runner_token())).await.json();
        assert_eq!(inbox["tasks"][0]["run_public_id"], run, "{inbox}");
    }
}
