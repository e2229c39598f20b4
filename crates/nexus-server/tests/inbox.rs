//! The executor inbox over HTTP on both engines (executor.md §6–§9, §13): the inbox
//! projection and its cursor, every claim precondition in order, claim status, extend, the
//! commit door and settle engine with the result envelope, and what a settled task reads back.

mod common;

use axum::http::{Method, StatusCode};
use common::{Harness, Reply, harnesses, harnesses_with_scripts, write_script};
use nexus_core::registry::EffectProfile;
use nexus_store::prelude::*;
use nexus_store::{Announcement, Standing};
use serde_json::{Value, json};
use uuid::Uuid;

const X: &str = "/agent_api/v1/executor";

fn write_profile() -> Value {
    json!({"kind": "write", "destructive": true, "effect_scope": "closed", "idempotency": "none", "reconciliation": "lookup"})
}

/// The runner serves `read` (READ, announced 60 s) and `write` (not replayable, no timeout).
fn runner_tools() -> Value {
    json!([
        {"name": "read", "effect_profile": EffectProfile::READ.to_json(), "timeout_ms": 60000,
         "description": "Read a file.", "input_schema": {"type": "object"}},
        {"name": "write", "effect_profile": write_profile(),
         "description": "Write a file.", "input_schema": {"type": "object"}},
    ])
}

fn runner_id(h: &Harness) -> String {
    h.boot["runner"]["executor_public_id"].as_str().unwrap().to_string()
}

fn agent_app_id(h: &Harness) -> String {
    h.boot["agent"]["executor_public_id"].as_str().unwrap().to_string()
}

async fn announce(h: &Harness, tools: Value) {
    let id = Uuid::parse_str(&runner_id(h)).unwrap();
    let runner = h.kernel.store.executor_by_public_id(id).await.unwrap().unwrap();
    h.kernel
        .store
        .put_announcement(
            runner.id,
            &Announcement {
                served_tools: tools.to_string(),
                environment: "{}".into(),
                served_documents: "[]".into(),
            },
            nexus_kernel::time::now_ms(),
        )
        .await
        .unwrap();
}

fn tool_step(h: &Harness, key: &str, tool: &str, extra: Value) -> Value {
    let mut t = json!({"name": tool, "input": {"path": "x"},
                       "route": {"kind": "runner", "runner_executor_public_id": runner_id(h)}});
    if let Value::Object(m) = extra {
        for (k, v) in m {
            t[k] = v;
        }
    }
    json!({"key": key, "tool": t})
}

/// A started run of one runner-routed tool step `t` (bypass), created by the human.
async fn tool_run(h: &Harness, tool: &str, extra: Value) -> String {
    let step = tool_step(h, "t", tool, extra);
    h.start_run(&h.human_token(), "bypass", Value::Null, json!([step]))
        .await
}

fn item(run: &str, key: &str, verb: &str) -> String {
    format!("{X}/inbox/{run}/{key}/{verb}")
}

async fn claim(h: &Harness, token: &str, run: &str, key: &str) -> Reply {
    h.send(Method::POST, &item(run, key, "claim"), Some(token), None).await
}

async fn commit(h: &Harness, token: &str, run: &str, key: &str, body: Value) -> Reply {
    h.json(Method::POST, &item(run, key, "commit"), Some(token), &body)
        .await
}

async fn extend(h: &Harness, token: &str, run: &str, key: &str, body: Value) -> Reply {
    h.json(Method::POST, &item(run, key, "extend"), Some(token), &body)
        .await
}

/// Claims `t` with the runner and returns the token.
async fn claimed(h: &Harness, run: &str) -> String {
    let r = claim(h, &h.runner_token(), run, "t").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    r.json()["claim"]["claim_token"].as_str().unwrap().to_string()
}

async fn task(h: &Harness, run: &str, key: &str) -> Value {
    let r = h
        .get(&format!("{}/tasks/{key}", h.r(run)), Some(&h.human_token()))
        .await;
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

fn expect(r: &Reply, status: StatusCode, code: &str) {
    assert_eq!(r.status, status, "{}", String::from_utf8_lossy(&r.bytes));
    assert_eq!(r.code(), code, "{}", r.json());
}

async fn inbox(h: &Harness, token: &str, query: &str) -> Reply {
    h.get(&format!("{X}/inbox{query}"), Some(token)).await
}

async fn set_creator_standing(h: &Harness, standing: Standing) {
    let human = Uuid::parse_str(h.boot["human"]["public_id"].as_str().unwrap()).unwrap();
    let m = h.kernel.store.member_by_public_id(human).await.unwrap().unwrap();
    h.kernel
        .store
        .set_standing(h.ws_id().await, m.id, standing)
        .await
        .unwrap();
}

#[tokio::test]
async fn the_inbox_lists_dispatched_rows_with_the_row_projection_and_an_opaque_cursor() {
    for h in harnesses().await {
        announce(&h, runner_tools()).await;
        let mut runs = Vec::new();
        for _ in 0..3 {
            runs.push(tool_run(&h, "read", json!({})).await);
        }
        let r = inbox(&h, &h.runner_token(), "").await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.json());
        let body = r.json();
        let rows = body["tasks"].as_array().unwrap();
        assert_eq!(rows.len(), 3, "{body}");
        assert_eq!(body["pagination"]["next_after"], Value::Null);
        let row = &rows[0];
        assert_eq!(row["kind"], "tool_call");
        assert_eq!(row["run_public_id"], runs[0].as_str());
        assert_eq!(row["workspace_public_id"], h.ws_public_id().as_str());
        assert_eq!(row["task_key"], "t");
        assert!(row["started_at"].as_str().unwrap().ends_with('Z'));
        assert!(row["deadline_at"].as_str().unwrap().ends_with('Z'));
        assert_eq!(row["timeout_ms"], 60000, "the announced timeout");
        assert_eq!(row["claimed"], false);
        assert_eq!(
            row["addressed_to"],
            json!({"role": "runner", "executor_public_id": runner_id(&h)})
        );
        assert!(row.get("conversation_public_id").is_some_and(Value::is_null));
        assert!(row.get("parent_public_id").is_some_and(Value::is_null));
        assert_eq!(row["tool_name"], "read");
        assert_eq!(row["tool_input"], json!({"path": "x"}));
        assert_eq!(row["target"]["executor_public_id"], runner_id(&h).as_str());
        for absent in [
            "tool_alias",
            "tool_call_id",
            "effect_profile",
            "scope",
            "model_context",
            "prompt",
        ] {
            assert!(row.get(absent).is_none(), "{absent} in {row}");
        }
        // Members come in the projection's order (executor.md §6), the kind's own last.
        let members: Vec<&str> = row.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            members,
            [
                "kind",
                "run_public_id",
                "workspace_public_id",
                "task_key",
                "started_at",
                "deadline_at",
                "timeout_ms",
                "claimed",
                "addressed_to",
                "conversation_public_id",
                "parent_public_id",
                "tool_name",
                "target",
                "tool_input",
            ],
            "{row}"
        );
        assert_eq!(
            row["addressed_to"].as_object().unwrap().keys().collect::<Vec<_>>(),
            ["role", "executor_public_id"]
        );

        // A full page carries next_after; the cursor resumes after it.
        let page = inbox(&h, &h.runner_token(), "?limit=2").await.json();
        assert_eq!(page["tasks"].as_array().unwrap().len(), 2);
        let next = page["pagination"]["next_after"].as_str().unwrap().to_string();
        let rest = inbox(&h, &h.runner_token(), &format!("?after={next}&limit=2"))
            .await
            .json();
        assert_eq!(rest["tasks"].as_array().unwrap().len(), 1);
        assert_eq!(rest["tasks"][0]["run_public_id"], runs[2].as_str());
        assert_eq!(rest["pagination"]["next_after"], Value::Null);
        // Limits clamp; a bad cursor is 400.
        let all = inbox(&h, &h.runner_token(), "?limit=1000").await.json();
        assert_eq!(all["tasks"].as_array().unwrap().len(), 3);
        let one = inbox(&h, &h.runner_token(), "?limit=0").await.json();
        assert_eq!(one["tasks"].as_array().unwrap().len(), 1);
        expect(
            &inbox(&h, &h.runner_token(), "?after=abc").await,
            StatusCode::BAD_REQUEST,
            "parameter_invalid",
        );
        expect(
            &inbox(&h, &h.runner_token(), "?limit=x").await,
            StatusCode::BAD_REQUEST,
            "parameter_invalid",
        );

        // Another executor sees none of it; a member bearer reaches nothing.
        let other = inbox(&h, &h.agent_transport_token(), "").await.json();
        assert_eq!(other["tasks"], json!([]));
        expect(
            &inbox(&h, &h.human_token(), "").await,
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        );

        // A claimed row stays listed (claimed: true) until it settles.
        let token = claimed(&h, &runs[0]).await;
        let rows = inbox(&h, &h.runner_token(), "").await.json();
        assert_eq!(rows["tasks"][0]["claimed"], true);
        let done = commit(
            &h,
            &h.runner_token(),
            &runs[0],
            "t",
            json!({"claim_token": token, "content": "ok"}),
        )
        .await;
        assert_eq!(done.status, StatusCode::OK, "{}", done.json());
        let rows = inbox(&h, &h.runner_token(), "").await.json();
        assert_eq!(rows["tasks"].as_array().unwrap().len(), 2);
    }
}

#[tokio::test]
async fn an_approval_row_is_listed_to_the_declaring_agent_and_is_not_claimable() {
    for h in harnesses().await {
        announce(&h, runner_tools()).await;
        let rules = json!([{"tool": "read", "verdict": "ask", "origin": "author"}]);
        let step = tool_step(&h, "t", "read", json!({}));
        let run = h.start_run(&h.agent_token(), "rules", rules, json!([step])).await;
        let body = inbox(&h, &h.agent_transport_token(), "").await.json();
        let rows = body["tasks"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{body}");
        let row = &rows[0];
        assert_eq!(row["kind"], "approval");
        assert_eq!(row["timeout_ms"], 86_400_000);
        assert_eq!(row["effect_profile"], EffectProfile::READ.to_json());
        assert_eq!(
            row["addressed_to"],
            json!({"role": "agent_application", "executor_public_id": agent_app_id(&h)})
        );
        assert_eq!(inbox(&h, &h.runner_token(), "").await.json()["tasks"], json!([]));
        // Claim: the runner is not the addressee; the agent's address may not claim an approval.
        expect(
            &claim(&h, &h.runner_token(), &run, "t").await,
            StatusCode::CONFLICT,
            "not_addressed_here",
        );
        expect(
            &claim(&h, &h.agent_transport_token(), &run, "t").await,
            StatusCode::CONFLICT,
            "not_claimable_kind",
        );
        // Commit: the same doors.
        let body = json!({"content": "yes"});
        expect(
            &commit(&h, &h.runner_token(), &run, "t", body.clone()).await,
            StatusCode::CONFLICT,
            "not_addressed_here",
        );
        expect(
            &commit(&h, &h.agent_transport_token(), &run, "t", body).await,
            StatusCode::CONFLICT,
            "not_claimable_kind",
        );
    }
}

#[tokio::test]
async fn a_kernel_row_has_no_addressee_and_is_never_claimed() {
    let dir = tempfile::tempdir().unwrap();
    write_script(
        dir.path(),
        "kernel",
        &[
            json!({"text": "Listing.", "tool_calls": [{"id": "c1", "name": "runners_list", "input": {}}]}),
            json!({"text": "Done."}),
        ],
    );
    for h in harnesses_with_scripts(dir.path()).await {
        let step =
            json!({"model": {"prompt": "Go.", "model": "scripted/kernel", "kernel_tools": ["nexus.runners.list"]}});
        let run = h
            .start_run(&h.human_token(), "bypass", Value::Null, json!([step]))
            .await;
        let tasks = h
            .get(&format!("{}/tasks", h.r(&run)), Some(&h.human_token()))
            .await
            .json();
        let key = tasks["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["kind"] == "tool_task")
            .unwrap_or_else(|| panic!("no kernel row in {tasks}"))["key"]
            .as_str()
            .unwrap()
            .to_string();
        expect(
            &claim(&h, &h.runner_token(), &run, &key).await,
            StatusCode::CONFLICT,
            "not_addressed_here",
        );
        expect(
            &claim(&h, &h.agent_transport_token(), &run, &key).await,
            StatusCode::CONFLICT,
            "not_addressed_here",
        );
        expect(
            &commit(&h, &h.runner_token(), &run, &key, json!({"content": "forged"})).await,
            StatusCode::CONFLICT,
            "not_addressed_here",
        );
    }
}

#[tokio::test]
async fn claim_preconditions_answer_in_the_spec_order() {
    for h in harnesses().await {
        announce(&h, runner_tools()).await;
        let run = tool_run(&h, "read", json!({})).await;
        let runner = h.runner_token();
        // 1. not_found: unknown run, malformed run, unknown key.
        expect(
            &claim(&h, &runner, &Uuid::now_v7().to_string(), "t").await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
        expect(
            &claim(&h, &runner, "nope", "t").await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
        expect(
            &claim(&h, &runner, &run, "zz").await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
        // 2. not_addressed_here: another executor's row.
        expect(
            &claim(&h, &h.agent_transport_token(), &run, "t").await,
            StatusCode::CONFLICT,
            "not_addressed_here",
        );
        // 6 before 7: no longer served, and the creator lost write standing.
        announce(&h, json!([])).await;
        set_creator_standing(&h, Standing::Read).await;
        expect(
            &claim(&h, &runner, &run, "t").await,
            StatusCode::CONFLICT,
            "tool_not_served",
        );
        announce(&h, runner_tools()).await;
        // 7. not_authorized (409 on the executor plane).
        expect(
            &claim(&h, &runner, &run, "t").await,
            StatusCode::CONFLICT,
            "not_authorized",
        );
        set_creator_standing(&h, Standing::Write).await;
        // Grant.
        let r = claim(&h, &runner, &run, "t").await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.json());
        let body = r.json();
        let token = body["claim"]["claim_token"].as_str().unwrap().to_string();
        assert_eq!(Uuid::parse_str(&token).unwrap().get_version_num(), 4);
        assert_eq!(body["task"]["kind"], "tool_call");
        assert_eq!(body["task"]["claimed"], true);
        assert_eq!(body["task"]["deadline_at"], body["claim"]["deadline_at"]);
        assert_eq!(body["task"]["timeout_ms"], 60000);
        let claimed_event = events(&h, &run)
            .await
            .into_iter()
            .find(|e| e["type"] == "task_claimed")
            .expect("task_claimed");
        assert_eq!(claimed_event["task_key"], "t");
        assert_eq!(
            claimed_event["data"],
            json!({"executor_public_id": runner_id(&h), "deadline_at": body["claim"]["deadline_at"]})
        );
        // 9. already_claimed.
        expect(
            &claim(&h, &runner, &run, "t").await,
            StatusCode::CONFLICT,
            "already_claimed",
        );
        // 8. task_not_claimable once settled.
        let done = commit(&h, &runner, &run, "t", json!({"claim_token": token, "content": "ok"})).await;
        assert_eq!(done.status, StatusCode::OK, "{}", done.json());
        expect(
            &claim(&h, &runner, &run, "t").await,
            StatusCode::CONFLICT,
            "task_not_claimable",
        );
    }
}

#[tokio::test]
async fn claim_status_reads_the_claim_without_side_effects() {
    for h in harnesses().await {
        announce(&h, runner_tools()).await;
        let run = tool_run(&h, "read", json!({})).await;
        let token = claimed(&h, &run).await;
        let path = item(&run, "t", "claim");
        let status = |tok: String, claim: Option<String>| {
            let path = path.clone();
            let h = &h;
            async move {
                let headers: Vec<(&str, &str)> = match &claim {
                    Some(c) => vec![("claim-token", c.as_str())],
                    None => vec![],
                };
                h.send_with(Method::GET, &path, Some(&tok), None, &headers).await
            }
        };
        let r = status(h.runner_token(), Some(token.clone())).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.json(), json!({"claim": {"active": true}}));
        assert_eq!(r.headers["cache-control"], "no-store");
        expect(
            &status(h.runner_token(), None).await,
            StatusCode::BAD_REQUEST,
            "parameter_missing",
        );
        expect(
            &status(h.runner_token(), Some("  ".into())).await,
            StatusCode::BAD_REQUEST,
            "parameter_missing",
        );
        let wrong = status(h.runner_token(), Some(Uuid::now_v7().to_string())).await;
        expect(&wrong, StatusCode::CONFLICT, "not_claimant");
        assert_eq!(wrong.headers["cache-control"], "no-store");
        expect(
            &status(h.agent_transport_token(), Some(token.clone())).await,
            StatusCode::CONFLICT,
            "not_claimant",
        );
        let missing = h
            .send_with(
                Method::GET,
                &item(&run, "zz", "claim"),
                Some(&h.runner_token()),
                None,
                &[("claim-token", &token)],
            )
            .await;
        expect(&missing, StatusCode::NOT_FOUND, "not_found");
        // Settled: the claimant reads active: false.
        let done = commit(
            &h,
            &h.runner_token(),
            &run,
            "t",
            json!({"claim_token": token, "content": "ok"}),
        )
        .await;
        assert_eq!(done.status, StatusCode::OK);
        let r = status(h.runner_token(), Some(token.clone())).await;
        assert_eq!(r.json(), json!({"claim": {"active": false}}));
    }
}

#[tokio::test]
async fn extend_checks_in_order_and_shifts_the_one_clock() {
    for h in harnesses().await {
        announce(&h, runner_tools()).await;
        let run = tool_run(&h, "read", json!({})).await;
        let runner = h.runner_token();
        // 1. not_extendable before anything else: an unclaimed row.
        expect(
            &extend(&h, &runner, &run, "t", json!({"claim_token": "x", "timeout_ms": 0})).await,
            StatusCode::CONFLICT,
            "not_extendable",
        );
        let token = claimed(&h, &run).await;
        // 2. not_claimant.
        expect(
            &extend(&h, &runner, &run, "t", json!({"claim_token": "x", "timeout_ms": 0})).await,
            StatusCode::CONFLICT,
            "not_claimant",
        );
        expect(
            &extend(
                &h,
                &h.agent_transport_token(),
                &run,
                "t",
                json!({"claim_token": token, "timeout_ms": 10}),
            )
            .await,
            StatusCode::CONFLICT,
            "not_claimant",
        );
        // 3. invalid_timeout_ms.
        for bad in [json!(0), json!(-5), json!("10"), json!(1.5), Value::Null] {
            expect(
                &extend(&h, &runner, &run, "t", json!({"claim_token": token, "timeout_ms": bad})).await,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_timeout_ms",
            );
        }
        // 4. extension_too_long: past the announced 60 s.
        expect(
            &extend(
                &h,
                &runner,
                &run,
                "t",
                json!({"claim_token": token, "timeout_ms": 60001}),
            )
            .await,
            StatusCode::CONFLICT,
            "extension_too_long",
        );
        let r = extend(
            &h,
            &runner,
            &run,
            "t",
            json!({"claim_token": token, "timeout_ms": 30000}),
        )
        .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.json());
        let body = r.json();
        assert_eq!(body["claim"]["claim_token"], token.as_str());
        assert_eq!(body["task"]["timeout_ms"], 60000, "the row's timeout_ms is unchanged");
        let ev = events(&h, &run)
            .await
            .into_iter()
            .find(|e| e["type"] == "task_deadline_extended")
            .expect("task_deadline_extended");
        assert_eq!(ev["data"]["deadline_at"], body["claim"]["deadline_at"]);
        assert_eq!(ev["data"]["by"], runner_id(&h).as_str(), "{ev}");
        assert_eq!(ev["data"]["timeout_ms"], 30000, "{ev}");
        let row = task(&h, &run, "t").await;
        assert_eq!(row["deadline_at"], body["claim"]["deadline_at"]);

        // Without an announced timeout the cap is one hour.
        let run2 = tool_run(&h, "write", json!({})).await;
        let t2 = claimed(&h, &run2).await;
        expect(
            &extend(
                &h,
                &runner,
                &run2,
                "t",
                json!({"claim_token": t2, "timeout_ms": 3_600_001}),
            )
            .await,
            StatusCode::CONFLICT,
            "extension_too_long",
        );
        let ok = extend(
            &h,
            &runner,
            &run2,
            "t",
            json!({"claim_token": t2, "timeout_ms": 3_600_000}),
        )
        .await;
        assert_eq!(ok.status, StatusCode::OK, "{}", ok.json());
    }
}

#[tokio::test]
async fn an_expired_claim_is_never_granted_again_and_a_late_commit_loses() {
    for h in harnesses().await {
        announce(&h, runner_tools()).await;
        let runner = h.runner_token();
        for (tool, status, key) in [
            ("read", "timed_out", "tool_timeout"),
            ("write", "uncertain", "tool_uncertain"),
        ] {
            let run = tool_run(&h, tool, json!({})).await;
            let token = claimed(&h, &run).await;
            // Shrink the deadline to 1 ms, then let it pass.
            let r = extend(&h, &runner, &run, "t", json!({"claim_token": token, "timeout_ms": 1})).await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.json());
            tokio::time::sleep(std::time::Duration::from_millis(30)).await;
            expect(
                &claim(&h, &runner, &run, "t").await,
                StatusCode::CONFLICT,
                "already_claimed",
            );
            expect(
                &extend(&h, &runner, &run, "t", json!({"claim_token": token, "timeout_ms": 10})).await,
                StatusCode::CONFLICT,
                "not_extendable",
            );
            // A stale token still loses to stale_claim; the right one loses to the deadline.
            expect(
                &commit(&h, &runner, &run, "t", json!({"claim_token": "old", "content": "late"})).await,
                StatusCode::CONFLICT,
                "stale_claim",
            );
            let late = commit(&h, &runner, &run, "t", json!({"claim_token": token, "content": "late"})).await;
            assert_eq!(late.status, StatusCode::OK, "{}", late.json());
            let body = late.json();
            assert!(body.get("idle").is_none(), "{body}");
            assert_eq!(body["task"]["status"], status);
            assert_eq!(body["task"]["error"]["key"], key);
            assert_eq!(body["task"]["output"], "", "the content is discarded");
            // Settled once: the retry is idle, the sweep finds nothing.
            let again = commit(&h, &runner, &run, "t", json!({"claim_token": token, "content": "late"})).await;
            assert_eq!(again.status, StatusCode::OK);
            assert_eq!(again.json()["idle"], true);
            let idle = again.json();
            let members: Vec<&str> = idle.as_object().unwrap().keys().map(String::as_str).collect();
            assert_eq!(members, ["task", "idle"]);
            let settles = events(&h, &run)
                .await
                .into_iter()
                .filter(|e| e["type"] == "task_status_changed" && e["task_key"] == "t" && e["data"]["to"] == status)
                .count();
            assert_eq!(settles, 1);
        }
    }
}

#[tokio::test]
async fn commit_doors_and_settle_engine_answer_in_order() {
    for h in harnesses().await {
        announce(&h, runner_tools()).await;
        let runner = h.runner_token();
        let run = tool_run(&h, "read", json!({})).await;
        // Door 1 before door 2: a bad outcome on a missing row.
        expect(
            &commit(
                &h,
                &runner,
                &Uuid::now_v7().to_string(),
                "t",
                json!({"outcome": "done"}),
            )
            .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_outcome",
        );
        expect(
            &commit(&h, &runner, &Uuid::now_v7().to_string(), "t", json!({})).await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
        expect(
            &commit(&h, &runner, &run, "zz", json!({})).await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
        expect(
            &commit(&h, &h.agent_transport_token(), &run, "t", json!({})).await,
            StatusCode::CONFLICT,
            "not_addressed_here",
        );
        // Door 5.
        set_creator_standing(&h, Standing::Read).await;
        expect(
            &commit(&h, &runner, &run, "t", json!({"content": "x"})).await,
            StatusCode::CONFLICT,
            "not_authorized",
        );
        set_creator_standing(&h, Standing::Write).await;
        // Settle 3: a tool row without a token, or with a wrong one.
        expect(
            &commit(&h, &runner, &run, "t", json!({"content": "x"})).await,
            StatusCode::CONFLICT,
            "stale_claim",
        );
        let token = claimed(&h, &run).await;
        expect(
            &commit(
                &h,
                &runner,
                &run,
                "t",
                json!({"claim_token": Uuid::now_v7().to_string(), "content": "x"}),
            )
            .await,
            StatusCode::CONFLICT,
            "stale_claim",
        );
        // Door 1 (the payload) and settle 5 (its links): every refusal leaves the park standing.
        let link =
            |id: String| json!({"type": "resource_link", "uri": format!("nexus://uploads/{id}"), "name": "a.png"});
        let many: Vec<Value> = (0..32_769).map(|_| json!({"type": "text", "text": "a"})).collect();
        let refusals = [
            (json!({"result_type": "incomplete"}), "invalid_result_type"),
            (json!({"content": 7}), "invalid_content"),
            (
                json!({"content": [{"type": "resource_link", "uri": "https://x", "name": "n"}]}),
                "invalid_content",
            ),
            (
                json!({"content": [{"type": "resource_link", "uri": format!("nexus://uploads/{}", Uuid::now_v7())}]}),
                "invalid_content",
            ),
            (
                json!({"content": [{"type": "image", "data": "", "mimeType": "image/png"}]}),
                "unsupported_content_kind",
            ),
            (json!({"content": many}), "too_many_content_blocks"),
            (json!({"content": "a".repeat(1_048_577)}), "result_too_large"),
            (json!({"title": "a\u{0}"}), "invalid_title"),
            (json!({"title": 3}), "invalid_title"),
            (json!({"metadata": [1]}), "invalid_metadata"),
            (
                json!({"metadata": {"checkpoint": {"no_hash": true}}}),
                "invalid_metadata",
            ),
            (json!({"metadata": {"checkpoint": "abc"}}), "invalid_metadata"),
            (json!({"metadata": {"blob": "m".repeat(65_537)}}), "metadata_too_large"),
            (
                json!({"content": [link(Uuid::now_v7().to_string())]}),
                "unknown_result_upload",
            ),
            (
                json!({"content": [{"type": "text", "text": "fine"}, link(Uuid::now_v7().to_string())]}),
                "unknown_result_upload",
            ),
        ];
        for (mut body, code) in refusals {
            body["claim_token"] = json!(token);
            let r = commit(&h, &runner, &run, "t", body).await;
            expect(&r, StatusCode::UNPROCESSABLE_ENTITY, code);
        }
        let row = task(&h, &run, "t").await;
        assert_eq!(row["status"], "dispatched", "the park stands");
        assert!(row.get("content").is_none());
        // Settle 8: the accepted envelope.
        let title = "t".repeat(250);
        let metadata = json!({"renderer": {"lines": 3}, "checkpoint": {"hash": "abc123", "files": ["a", "b"]}});
        let ok = commit(
            &h,
            &runner,
            &run,
            "t",
            json!({"claim_token": token, "content": [{"type": "text", "text": "line one"}, {"type": "text", "text": "  "}, {"type": "text", "text": "line two"}],
                   "structured_content": {"n": 1, "flag": false, "none": null}, "result_type": "complete",
                   "is_error": true, "title": title, "metadata": metadata}),
        )
        .await;
        assert_eq!(ok.status, StatusCode::OK, "{}", ok.json());
        let t = &ok.json()["task"];
        assert!(ok.json().get("idle").is_none());
        // Members come in the task read's order (runs.md §9): the trace, the tool row's own,
        // the outcome, then the title and metadata.
        let members: Vec<&str> = t.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            members,
            [
                "key",
                "kind",
                "status",
                "generation",
                "on_failure",
                "visibility",
                "after",
                "created_at",
                "started_at",
                "settled_at",
                "is_error",
                "tool_name",
                "tool_input",
                "target",
                "addressed_to",
                "claimed_by",
                "approval",
                "effect_profile",
                "output_preview",
                "output",
                "content",
                "structured_content",
                "title",
                "metadata"
            ]
        );
        assert_eq!(t["status"], "completed");
        assert_eq!(t["output"], "line one\nline two");
        assert_eq!(
            t["content"],
            json!([{"type": "text", "text": "line one"}, {"type": "text", "text": "line two"}])
        );
        assert_eq!(t["structured_content"], json!({"n": 1, "flag": false, "none": null}));
        assert_eq!(t["title"].as_str().unwrap().chars().count(), 200);
        assert_eq!(t["metadata"], metadata);
        assert_eq!(
            t["metadata"]["checkpoint"],
            json!({"hash": "abc123", "files": ["a", "b"]})
        );
        assert_eq!(*t, task(&h, &run, "t").await, "the commit answers the task read");
        // Settle 1: a second commit is idle and changes nothing.
        let again = commit(
            &h,
            &runner,
            &run,
            "t",
            json!({"claim_token": token, "content": "other"}),
        )
        .await;
        assert_eq!(again.status, StatusCode::OK);
        assert_eq!(again.json()["idle"], true);
        assert_eq!(again.json()["task"]["output"], "line one\nline two");
        // Door 1 holds on a settled row too: a malformed commit is refused, never idle.
        let malformed = [
            (
                json!({"claim_token": token, "content": [{"type": "resource_link", "uri": "nexus://uploads/x", "name": null}]}),
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_content",
            ),
            (
                json!({"claim_token": token, "is_error": "yes"}),
                StatusCode::UNPROCESSABLE_ENTITY,
                "validation_failed",
            ),
            (
                json!({"claim_token": 7}),
                StatusCode::UNPROCESSABLE_ENTITY,
                "validation_failed",
            ),
        ];
        for (body, status, code) in malformed {
            expect(&commit(&h, &runner, &run, "t", body).await, status, code);
        }
        // The run completed with the tool's answer.
        let r = h.get(&h.r(&run), Some(&h.human_token())).await.json();
        assert_eq!(r["run"]["status"], "completed", "{r}");
    }
}

#[tokio::test]
async fn a_bare_string_and_a_single_text_block_store_the_same_bytes() {
    for h in harnesses().await {
        announce(&h, runner_tools()).await;
        let runner = h.runner_token();
        let mut stored = Vec::new();
        for content in [json!("same bytes"), json!([{"type": "text", "text": "same bytes"}])] {
            let run = tool_run(&h, "read", json!({})).await;
            let token = claimed(&h, &run).await;
            let r = commit(
                &h,
                &runner,
                &run,
                "t",
                json!({"claim_token": token, "content": content}),
            )
            .await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.json());
            let id = h
                .kernel
                .store
                .run_by_public_id(Uuid::parse_str(&run).unwrap())
                .await
                .unwrap()
                .unwrap()
                .id;
            let row = h.kernel.store.task_by_key(id, "t").await.unwrap().unwrap();
            stored.push(row.content);
        }
        assert_eq!(stored[0], stored[1]);
        assert_eq!(stored[0].as_deref(), Some(r#"[{"type":"text","text":"same bytes"}]"#));

        // Blank writes no body; structured false and null are kept; omission is none.
        for (structured, expected) in [
            (Some(json!(false)), Some(json!(false))),
            (Some(Value::Null), Some(Value::Null)),
            (None, None),
        ] {
            let run = tool_run(&h, "read", json!({})).await;
            let token = claimed(&h, &run).await;
            let mut body = json!({"claim_token": token, "content": "   "});
            if let Some(s) = structured {
                body["structured_content"] = s;
            }
            let r = commit(&h, &runner, &run, "t", body).await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.json());
            let t = task(&h, &run, "t").await;
            assert_eq!(t["output"], "");
            assert_eq!(t["content"], json!([]));
            assert_eq!(t.get("structured_content").cloned(), expected);
            assert!(t.get("title").is_none() && t.get("metadata").is_none());
            let id = h
                .kernel
                .store
                .run_by_public_id(Uuid::parse_str(&run).unwrap())
                .await
                .unwrap()
                .unwrap()
                .id;
            assert_eq!(
                h.kernel.store.task_by_key(id, "t").await.unwrap().unwrap().content,
                None
            );
        }
    }
}

#[tokio::test]
async fn a_failed_outcome_and_unstorable_text_settle_the_row_failed() {
    for h in harnesses().await {
        announce(&h, runner_tools()).await;
        let runner = h.runner_token();
        // outcome: failed → tool_failed with the first text as detail.
        let run = tool_run(&h, "read", json!({})).await;
        let token = claimed(&h, &run).await;
        let r = commit(
            &h,
            &runner,
            &run,
            "t",
            json!({"claim_token": token, "outcome": "failed", "content": "disk full"}),
        )
        .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.json());
        assert_eq!(r.json()["task"]["status"], "failed");
        assert_eq!(
            r.json()["task"]["error"],
            json!({"key": "tool_failed", "detail": "disk full"})
        );

        // U+0000 in content text or structured strings: 422, and the park closes at once.
        for body in [
            json!({"content": "a\u{0}b"}),
            json!({"content": "ok", "structured_content": {"k": ["\u{0}"]}}),
        ] {
            let run = tool_run(&h, "read", json!({})).await;
            let token = claimed(&h, &run).await;
            let mut body = body;
            body["claim_token"] = json!(token);
            let r = commit(&h, &runner, &run, "t", body.clone()).await;
            expect(&r, StatusCode::UNPROCESSABLE_ENTITY, "result_unstorable");
            assert_eq!(r.json()["error"]["detail"], "unsupported_text");
            let t = task(&h, &run, "t").await;
            assert_eq!(t["status"], "failed");
            assert_eq!(
                t["error"],
                json!({"key": "result_unstorable", "detail": "unsupported_text"})
            );
            let again = commit(&h, &runner, &run, "t", body).await;
            assert_eq!(again.status, StatusCode::OK);
            assert_eq!(again.json()["idle"], true);
            assert_eq!(inbox(&h, &runner, "").await.json()["tasks"], json!([]));
        }
    }
}

#[tokio::test]
async fn a_model_ask_is_listed_to_the_agent_and_committed_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let ask =
        json!({"id": "c1", "name": "ask", "input": {"prompt": "Which one?", "options": ["a", "b"], "multi": false}});
    write_script(
        dir.path(),
        "asking",
        &[
            json!({"text": "Asking.", "tool_calls": [ask]}),
            json!({"text": "Done."}),
        ],
    );
    for h in harnesses_with_scripts(dir.path()).await {
        let step = json!({"model": {"prompt": "Go.", "model": "scripted/asking", "kernel_tools": ["nexus.human.ask"]}});
        let run = h
            .start_run(&h.agent_token(), "bypass", Value::Null, json!([step]))
            .await;
        let app = h.agent_transport_token();
        let body = inbox(&h, &app, "").await.json();
        let rows = body["tasks"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{body}");
        let row = &rows[0];
        assert_eq!(row["kind"], "ask");
        assert_eq!(row["prompt"], "Which one?");
        assert_eq!(row["options"], json!(["a", "b"]));
        assert_eq!(row["multi"], false);
        assert_eq!(row["claimed"], false);
        assert_eq!(
            row["addressed_to"],
            json!({"role": "agent_application", "executor_public_id": agent_app_id(&h)})
        );
        for absent in ["tool_name", "tool_input", "effect_profile"] {
            assert!(row.get(absent).is_none(), "{absent} in {row}");
        }
        let key = row["task_key"].as_str().unwrap().to_string();
        expect(
            &claim(&h, &app, &run, &key).await,
            StatusCode::CONFLICT,
            "not_claimable_kind",
        );
        expect(
            &commit(&h, &h.runner_token(), &run, &key, json!({"content": "a"})).await,
            StatusCode::CONFLICT,
            "not_addressed_here",
        );
        // Unstorable text on an await leaves the park standing: a person answers again.
        expect(
            &commit(&h, &app, &run, &key, json!({"content": "a\u{0}"})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "result_unstorable",
        );
        assert_eq!(task(&h, &run, &key).await["status"], "awaiting_input");
        let ok = commit(&h, &app, &run, &key, json!({"content": "a"})).await;
        assert_eq!(ok.status, StatusCode::OK, "{}", ok.json());
        assert_eq!(ok.json()["task"]["status"], "completed");
        assert_eq!(ok.json()["task"]["output"], "a");
        // The member door and the executor door are one settle: the second answer is idle.
        let again = commit(&h, &app, &run, &key, json!({"content": "b"})).await;
        assert_eq!(again.json()["idle"], true);
        assert_eq!(inbox(&h, &app, "").await.json()["tasks"], json!([]));
    }
}

/// Stages a capture as the executor behind `token`; returns its public id.
async fn capture(h: &Harness, token: &str, name: &str, bytes: &[u8]) -> String {
    let boundary = "XBOUNDARYX";
    let mut body = Vec::new();
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"upload[file]\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let r = h
        .send(
            Method::POST,
            &format!("{X}/uploads"),
            Some(token),
            Some((&format!("multipart/form-data; boundary={boundary}"), body)),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&r.bytes));
    r.json()["upload"]["public_id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_resource_link_must_name_the_committers_own_capture() {
    for h in harnesses().await {
        announce(&h, runner_tools()).await;
        let runner = h.runner_token();
        let run = tool_run(&h, "read", json!({})).await;
        let token = claimed(&h, &run).await;
        let own = capture(&h, &runner, "out.txt", b"captured bytes").await;
        let foreign = capture(&h, &h.agent_transport_token(), "other.txt", b"not yours").await;
        let link = |id: &str| json!({"type": "resource_link", "uri": format!("nexus://uploads/{id}"), "name": "out.txt", "mimeType": "text/plain", "size": 14});
        // Whole or nothing: one foreign link refuses the whole result, and the park stands.
        let r = commit(
            &h,
            &runner,
            &run,
            "t",
            json!({"claim_token": token, "content": [link(&own), link(&foreign)]}),
        )
        .await;
        expect(&r, StatusCode::UNPROCESSABLE_ENTITY, "unknown_result_upload");
        assert_eq!(task(&h, &run, "t").await["status"], "dispatched");
        let ok = commit(
            &h,
            &runner,
            &run,
            "t",
            json!({"claim_token": token, "content": [{"type": "text", "text": "see the file"}, link(&own)]}),
        )
        .await;
        assert_eq!(ok.status, StatusCode::OK, "{}", ok.json());
        let t = &ok.json()["task"];
        assert_eq!(t["status"], "completed");
        assert_eq!(t["output"], "see the file");
        assert_eq!(
            t["content"],
            json!([{"type": "text", "text": "see the file"}, link(&own)])
        );
    }
}
