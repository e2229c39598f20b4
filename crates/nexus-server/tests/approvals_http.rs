//! The approval gate over HTTP on both engines (approvals.md §3–§6): grants by mode and by
//! rule, holds listed in `GET W/approvals` with their frozen effect profile, approve, deny,
//! expiry through the sweep, `rules` mode's denial, the verbs' refusals and the event order.

mod common;

use axum::http::{Method, StatusCode};
use common::{Harness, Reply, harnesses_with_scripts, write_script};
use nexus_core::registry::EffectProfile;
use nexus_kernel::admin::MemberSpec;
use nexus_store::prelude::*;
use nexus_store::{MemberKind, Standing};
use serde_json::{Value, json};

const DAY: i64 = 86_400_000;

// ---- helpers ---------------------------------------------------------------------------------

fn refused(r: &Reply, status: StatusCode, code: &str) -> Value {
    assert_eq!(
        r.status,
        status,
        "expected {status} {code}, got {}",
        String::from_utf8_lossy(&r.bytes)
    );
    assert_eq!(r.code(), code, "{}", String::from_utf8_lossy(&r.bytes));
    r.json()["error"].clone()
}

/// A script whose first reply calls `runners_list` once (call id `c1`) and whose second reply
/// ends, asserting that the result it read contains `expect`.
fn script(dir: &std::path::Path, name: &str, expect: &str) {
    write_script(
        dir,
        name,
        &[
            json!({"text": "Listing.", "tool_calls": [{"id": "c1", "name": "runners_list", "input": {}}]}),
            json!({"text": "Done.", "expect": {"last_result": {"call_id": "c1", "contains": expect}}}),
        ],
    );
}

/// Creates and starts (as the agent) a run of one model step on `scripted/<name>` with the
/// kernel tools declared, then drives the engine to idle. Returns the run id.
async fn model_run(h: &Harness, name: &str, mode: &str, rules: Option<Value>) -> String {
    let mut run = json!({
        "approval_mode": mode,
        "steps": [{"model": {"prompt": "List the machines.", "model": format!("scripted/{name}"),
                             "kernel_tools": ["nexus.runners.list", "nexus.tools.search"]}}],
    });
    if let Some(rules) = rules {
        run["approval_rules"] = rules;
    }
    let r = h
        .json(
            Method::POST,
            &format!("{}/runs", h.w()),
            Some(&h.agent_token()),
            &json!({ "run": run }),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&r.bytes));
    let id = r.json()["run"]["public_id"].as_str().unwrap().to_string();
    let r = h
        .json(
            Method::POST,
            &format!("{}/start", h.r(&id)),
            Some(&h.agent_token()),
            &json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    h.kernel.runs().work_until_idle(50).await.unwrap();
    id
}

async fn task(h: &Harness, run: &str, key: &str) -> Value {
    h.get_ok(&format!("{}/tasks/{key}", h.r(run))).await["task"].clone()
}

async fn run_status(h: &Harness, run: &str) -> String {
    h.get_ok(&h.r(run)).await["run"]["status"].as_str().unwrap().to_string()
}

async fn decide(h: &Harness, token: &str, run: &str, key: &str, verb: &str, body: Option<Value>) -> Reply {
    let path = format!("{}/tasks/{key}/{verb}", h.r(run));
    match body {
        Some(b) => h.json(Method::POST, &path, Some(token), &b).await,
        None => h.send(Method::POST, &path, Some(token), None).await,
    }
}

/// Every event of the run, through the HTTP page.
async fn events(h: &Harness, run: &str) -> Vec<Value> {
    h.get_ok(&format!("{}/events?limit=500", h.r(run))).await["events"]
        .as_array()
        .unwrap()
        .clone()
}

/// The `from>to` status changes of one task, in event order.
async fn statuses(h: &Harness, run: &str, key: &str) -> Vec<String> {
    events(h, run)
        .await
        .iter()
        .filter(|e| e["type"] == "task_status_changed" && e["task_key"] == key)
        .map(|e| {
            format!(
                "{}>{}",
                e["data"]["from"].as_str().unwrap(),
                e["data"]["to"].as_str().unwrap()
            )
        })
        .collect()
}

/// The output of the continuation's one tool result (the pairing law's view).
async fn continuation_reads(h: &Harness, run: &str) -> Value {
    let req = h.get_ok(&format!("{}/tasks/r1/request", h.r(run))).await;
    let results: Vec<Value> = req["request"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .cloned()
        .collect();
    assert_eq!(results.len(), 1, "{}", req["request"]["entries"]);
    results[0].clone()
}

async fn member(h: &Harness, handle: &str, standing: Option<Standing>) -> String {
    let created = h
        .kernel
        .admin()
        .create_member(MemberSpec {
            kind: MemberKind::Human,
            handle: handle.into(),
            display_name: None,
            steward: None,
            standing: None,
        })
        .await
        .unwrap();
    if let Some(s) = standing {
        h.kernel
            .store
            .set_standing(h.ws_id().await, created.member.id, s)
            .await
            .unwrap();
    }
    created.member_token
}

fn runners_list_profile() -> Value {
    nexus_core::registry::resolve_canonical("nexus.runners.list")
        .unwrap()
        .effect
        .to_json()
}

// ---- grants ----------------------------------------------------------------------------------

#[tokio::test]
async fn bypass_grants_by_mode() {
    let dir = tempfile::tempdir().unwrap();
    script(dir.path(), "bypass", "runners");
    for h in harnesses_with_scripts(dir.path()).await {
        let id = model_run(&h, "bypass", "bypass", None).await;
        assert_eq!(run_status(&h, &id).await, "completed", "{}", h.dialect);
        let t = task(&h, &id, "r1t0").await;
        assert_eq!(t["status"], "completed");
        assert_eq!(t["approval"]["origin"], "mode");
        assert!(t["approval"].get("decided_by").is_none());
        assert!(t["approval"]["decided_at"].as_str().unwrap().ends_with('Z'));
        assert_eq!(t["effect_profile"], runners_list_profile());
        assert_eq!(
            statuses(&h, &id, "r1t0").await,
            ["waiting>needs_approval", "needs_approval>running", "running>completed"]
        );
        // Nothing was held.
        assert_eq!(h.get_ok(&format!("{}/approvals", h.w())).await["approvals"], json!([]));
        assert!(!events(&h, &id).await.iter().any(|e| e["type"] == "attention_required"));
    }
}

#[tokio::test]
async fn rules_mode_grants_by_rule_and_denies_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    script(dir.path(), "allowed", "runners");
    script(dir.path(), "refused", "approval_denied");
    for h in harnesses_with_scripts(dir.path()).await {
        // A matching allow rule grants with origin `rule`.
        let id = model_run(
            &h,
            "allowed",
            "rules",
            Some(json!([{"tool": "runners_*|tool_search", "verdict": "allow"}])),
        )
        .await;
        let t = task(&h, &id, "r1t0").await;
        assert_eq!(t["status"], "completed", "{t}");
        assert_eq!(t["approval"]["origin"], "rule");
        assert_eq!(run_status(&h, &id).await, "completed");

        // No matching rule: denied, and the detail names the tool.
        let id = model_run(
            &h,
            "refused",
            "rules",
            Some(json!([{"tool": "read", "verdict": "allow"}])),
        )
        .await;
        let t = task(&h, &id, "r1t0").await;
        assert_eq!(t["status"], "failed", "{t}");
        assert_eq!(t["error"]["key"], "approval_denied");
        let detail = t["error"]["detail"].as_str().unwrap();
        assert!(detail.contains("runners_list"), "{detail}");
        assert_eq!(detail, "no approval rule allows `runners_list`");
        assert!(t.get("approval").is_none(), "a deny records no approval fact: {t}");
        assert_eq!(
            statuses(&h, &id, "r1t0").await,
            ["waiting>needs_approval", "needs_approval>failed"]
        );
        // The model reads the denial; the run still completes (fans absorb).
        let read = continuation_reads(&h, &id).await;
        assert!(read["output"].as_str().unwrap().contains("(approval_denied)"), "{read}");
        assert_eq!(read["is_error"], true);
        assert_eq!(run_status(&h, &id).await, "completed");
    }
}

// ---- holds -----------------------------------------------------------------------------------

#[tokio::test]
async fn ask_holds_lists_and_approve_completes_the_run() {
    let dir = tempfile::tempdir().unwrap();
    script(dir.path(), "ask", "runners");
    for h in harnesses_with_scripts(dir.path()).await {
        let id = model_run(&h, "ask", "ask", None).await;
        let t = task(&h, &id, "r1t0").await;
        assert_eq!(t["status"], "needs_approval", "{}: {t}", h.dialect);
        assert_eq!(t["timeout_ms"], DAY);
        assert_eq!(t["effect_profile"], runners_list_profile());
        assert_eq!(run_status(&h, &id).await, "running", "a hold leaves the run running");
        let held_events = events(&h, &id).await;
        let attention: Vec<&Value> = held_events
            .iter()
            .filter(|e| e["type"] == "attention_required")
            .collect();
        assert_eq!(attention.len(), 1);
        assert_eq!(
            attention[0]["data"],
            json!({"reason": "approval_required", "task_key": "r1t0"})
        );

        // The queue shows the held row with its frozen profile and deadline.
        let list = h.get_ok(&format!("{}/approvals", h.w())).await;
        let approvals = list["approvals"].as_array().unwrap();
        assert_eq!(approvals.len(), 1, "{list}");
        let a = &approvals[0];
        assert_eq!(a["run_public_id"], id);
        assert_eq!(a["task_key"], "r1t0");
        assert_eq!(a["tool_name"], "runners_list");
        assert!(a.get("tool_alias").is_none());
        assert_eq!(a["tool_input"], json!({}));
        assert_eq!(a["effect_profile"], runners_list_profile());
        assert_eq!(a["effect_profile"]["kind"], "read_only");
        assert_eq!(a["effect_profile"], EffectProfile::READ.to_json());
        assert_eq!(a["deadline_at"], t["deadline_at"]);
        assert!(a["deadline_at"].as_str().unwrap().ends_with('Z'));
        assert_eq!(a["declaring_task_key"], "s1-model-1");
        assert_eq!(list["pagination"]["next_after"], Value::Null);
        // A reader sees the queue; an outsider does not see the workspace.
        let reader = member(&h, "reader", Some(Standing::Read)).await;
        assert_eq!(
            h.get(&format!("{}/approvals", h.w()), Some(&reader)).await.status,
            StatusCode::OK
        );
        let outsider = member(&h, "outsider", None).await;
        let r = h.get(&format!("{}/approvals", h.w()), Some(&outsider)).await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");
        let r = h
            .get(&format!("{}/approvals?limit=x", h.w()), Some(&h.agent_token()))
            .await;
        refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");

        // Refusals before the decision: read standing, no standing, unknown key, bad reason.
        let r = decide(&h, &reader, &id, "r1t0", "approve", Some(json!({}))).await;
        refused(&r, StatusCode::FORBIDDEN, "not_authorized");
        let r = decide(&h, &reader, &id, "r1t0", "deny", Some(json!({"reason": "no"}))).await;
        refused(&r, StatusCode::FORBIDDEN, "not_authorized");
        let r = decide(&h, &outsider, &id, "r1t0", "approve", None).await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");
        let r = decide(&h, &h.human_token(), &id, "r9t9", "approve", None).await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");
        let r = decide(&h, &h.human_token(), &id, "r1t0", "deny", Some(json!({"reason": 5}))).await;
        refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");
        let r = decide(
            &h,
            &h.human_token(),
            &id,
            "r1t0",
            "deny",
            Some(json!({"reason": ["a"]})),
        )
        .await;
        refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");
        // A model row that is not a tool row is not awaiting approval.
        let r = decide(&h, &h.human_token(), &id, "s1-model-1", "approve", None).await;
        refused(&r, StatusCode::CONFLICT, "not_awaiting_approval");
        assert_eq!(
            task(&h, &id, "r1t0").await["status"],
            "needs_approval",
            "refusals changed nothing"
        );

        // Approve (the human, no body): released to the kernel.
        let r = decide(&h, &h.human_token(), &id, "r1t0", "approve", None).await;
        assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
        let released = r.json()["task"].clone();
        assert_eq!(released["key"], "r1t0");
        assert_eq!(released["status"], "running");
        assert_eq!(released["approval"]["origin"], "human");
        assert_eq!(released["approval"]["decided_by"], h.boot["human"]["public_id"]);
        assert!(released["approval"]["decided_at"].as_str().unwrap().ends_with('Z'));
        // A second decision is refused.
        let r = decide(&h, &h.human_token(), &id, "r1t0", "approve", None).await;
        refused(&r, StatusCode::CONFLICT, "not_awaiting_approval");
        let r = decide(&h, &h.human_token(), &id, "r1t0", "deny", Some(json!({}))).await;
        refused(&r, StatusCode::CONFLICT, "not_awaiting_approval");
        assert_eq!(h.get_ok(&format!("{}/approvals", h.w())).await["approvals"], json!([]));

        h.kernel.runs().work_until_idle(50).await.unwrap();
        assert_eq!(task(&h, &id, "r1t0").await["status"], "completed");
        assert_eq!(task(&h, &id, "r1").await["status"], "completed");
        assert_eq!(run_status(&h, &id).await, "completed");
        assert_eq!(
            statuses(&h, &id, "r1t0").await,
            ["waiting>needs_approval", "needs_approval>running", "running>completed"]
        );
        let all = events(&h, &id).await;
        let decided: Vec<&Value> = all.iter().filter(|e| e["type"] == "approval_decided").collect();
        assert_eq!(decided.len(), 1);
        assert_eq!(
            decided[0]["data"],
            json!({"decision": "approved", "origin": "human", "decided_by": h.boot["human"]["public_id"]})
        );
        assert_eq!(decided[0]["task_key"], "r1t0");
        // The decision is narrated after the hold and before the release.
        let pos = |pred: &dyn Fn(&Value) -> bool| all.iter().position(pred).unwrap();
        let held = pos(&|e| {
            e["type"] == "task_status_changed" && e["task_key"] == "r1t0" && e["data"]["to"] == "needs_approval"
        });
        let dec = pos(&|e| e["type"] == "approval_decided");
        let run_ =
            pos(&|e| e["type"] == "task_status_changed" && e["task_key"] == "r1t0" && e["data"]["to"] == "running");
        assert!(held < dec && held < run_, "{all:?}");
        // A granted row is not awaiting approval.
        let r = decide(&h, &h.human_token(), &id, "r1t0", "approve", None).await;
        refused(&r, StatusCode::CONFLICT, "not_adjudicable");
    }
}

#[tokio::test]
async fn deny_fails_the_row_and_the_continuation_reads_approval_denied() {
    let dir = tempfile::tempdir().unwrap();
    script(dir.path(), "deny", "approval_denied");
    for h in harnesses_with_scripts(dir.path()).await {
        let id = model_run(&h, "deny", "ask", None).await;
        assert_eq!(task(&h, &id, "r1t0").await["status"], "needs_approval");
        // The agent (the declaring agent) denies with a reason.
        let r = decide(
            &h,
            &h.agent_token(),
            &id,
            "r1t0",
            "deny",
            Some(json!({"reason": "not on a Friday"})),
        )
        .await;
        assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
        let t = r.json()["task"].clone();
        assert_eq!(t["status"], "failed");
        assert_eq!(
            t["error"],
            json!({"key": "approval_denied", "detail": "not on a Friday"})
        );
        let r = decide(&h, &h.agent_token(), &id, "r1t0", "approve", None).await;
        refused(&r, StatusCode::CONFLICT, "not_awaiting_approval");

        h.kernel.runs().work_until_idle(50).await.unwrap();
        let read = continuation_reads(&h, &id).await;
        let output = read["output"].as_str().unwrap();
        assert!(output.starts_with("<tool_use_error>"), "{output}");
        assert!(output.contains("(approval_denied): not on a Friday"), "{output}");
        assert_eq!(read["call_id"], "c1");
        assert_eq!(
            task(&h, &id, "r1").await["status"],
            "completed",
            "the script's expectation held"
        );
        assert_eq!(run_status(&h, &id).await, "completed");
        assert_eq!(
            statuses(&h, &id, "r1t0").await,
            ["waiting>needs_approval", "needs_approval>failed"]
        );
        let decided: Vec<Value> = events(&h, &id)
            .await
            .into_iter()
            .filter(|e| e["type"] == "approval_decided")
            .collect();
        assert_eq!(
            decided[0]["data"],
            json!({"decision": "denied", "origin": "agent", "decided_by": h.boot["agent"]["public_id"]})
        );

        // A long reason is cut to 256 bytes at a character boundary.
        let id = model_run(&h, "deny", "ask", None).await;
        let long = "é".repeat(200);
        let r = decide(&h, &h.human_token(), &id, "r1t0", "deny", Some(json!({"reason": long}))).await;
        assert_eq!(r.status, StatusCode::OK);
        let detail = r.json()["task"]["error"]["detail"].as_str().unwrap().to_string();
        assert_eq!(detail.len(), 256);
        assert_eq!(detail, "é".repeat(128));
        // No reason: the default detail.
        let id = model_run(&h, "deny", "ask", None).await;
        let r = decide(&h, &h.human_token(), &id, "r1t0", "deny", None).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.json()["task"]["error"]["key"], "approval_denied");
    }
}

#[tokio::test]
async fn a_hold_expires_through_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    script(dir.path(), "expire", "approval_expired");
    for h in harnesses_with_scripts(dir.path()).await {
        let id = model_run(&h, "expire", "ask", None).await;
        assert_eq!(task(&h, &id, "r1t0").await["status"], "needs_approval");
        // Just before the deadline nothing happens; after it the row times out.
        let now = nexus_kernel::time::now_ms();
        h.kernel.runs().sweep_at(now + DAY - 60_000).await.unwrap();
        assert_eq!(task(&h, &id, "r1t0").await["status"], "needs_approval");
        h.kernel.runs().sweep_at(now + DAY + 1_000).await.unwrap();
        let t = task(&h, &id, "r1t0").await;
        assert_eq!(t["status"], "timed_out", "{t}");
        assert_eq!(t["error"]["key"], "approval_expired");
        assert!(t.get("approval").is_none());
        assert_eq!(h.get_ok(&format!("{}/approvals", h.w())).await["approvals"], json!([]));
        let r = decide(&h, &h.human_token(), &id, "r1t0", "approve", None).await;
        refused(&r, StatusCode::CONFLICT, "not_awaiting_approval");

        h.kernel.runs().work_until_idle(50).await.unwrap();
        let read = continuation_reads(&h, &id).await;
        let output = read["output"].as_str().unwrap();
        assert!(output.starts_with("<tool_use_error>"), "{output}");
        assert!(output.contains("(approval_expired)"), "{output}");
        assert_eq!(run_status(&h, &id).await, "completed");
        assert_eq!(
            statuses(&h, &id, "r1t0").await,
            ["waiting>needs_approval", "needs_approval>timed_out"]
        );
        assert!(!events(&h, &id).await.iter().any(|e| e["type"] == "approval_decided"));
    }
}
