//! Runs that recover, over HTTP on both engines (runs.md §6, §2): retry, abandon and branch
//! cancel with their refusals in order, a failed tool task retried to success, a failed model
//! round retried to success with a new sealed generation, and `PUT R/default_runner`.

mod common;

use axum::http::{Method, StatusCode};
use common::{Harness, Reply, harnesses, harnesses_with_scripts, write_script};
use nexus_core::registry::EffectProfile;
use nexus_store::Standing;
use serde_json::{Value, json};
use uuid::Uuid;

const X: &str = "/agent_api/v1/executor";

// ---- helpers ---------------------------------------------------------------------------------

fn refused(r: &Reply, status: StatusCode, code: &str) {
    assert_eq!(
        r.status,
        status,
        "expected {code}: {}",
        String::from_utf8_lossy(&r.bytes)
    );
    assert_eq!(r.code(), code, "{}", String::from_utf8_lossy(&r.bytes));
}

fn ok(r: &Reply) -> Value {
    assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
    r.json()
}

fn runner_id(h: &Harness) -> String {
    h.runner_id()
}

/// The bootstrap runner serves `read`.
async fn announce(h: &Harness) {
    let tools = json!([{"name": "read", "effect_profile": EffectProfile::READ.to_json(), "timeout_ms": 60000,
                        "description": "Read a file.", "input_schema": {"type": "object"}}]);
    h.announce_runner(tools).await;
}

fn tool_step(h: &Harness, key: &str) -> Value {
    json!({"key": key, "tool": {"name": "read", "input": {"path": key},
           "route": {"kind": "runner", "runner_executor_public_id": runner_id(h)}}})
}

async fn member(h: &Harness, handle: &str, standing: Standing) -> String {
    h.member_with(handle, standing).await
}

async fn verb(h: &Harness, token: &str, run: &str, key: &str, verb: &str, body: Value) -> Reply {
    h.json(
        Method::POST,
        &format!("{}/tasks/{key}/{verb}", h.r(run)),
        Some(token),
        &body,
    )
    .await
}

/// The runner claims `key` and commits `outcome` with `content`.
async fn settle(h: &Harness, run: &str, key: &str, outcome: &str, content: &str) -> Value {
    settle_claimed(h, run, key, outcome, content).await.0
}

/// [`settle`], also returning the claim token it used.
async fn settle_claimed(h: &Harness, run: &str, key: &str, outcome: &str, content: &str) -> (Value, String) {
    let c = h
        .send(
            Method::POST,
            &inbox_item(run, key, "claim"),
            Some(&h.runner_token()),
            None,
        )
        .await;
    let token = ok(&c)["claim"]["claim_token"].as_str().unwrap().to_string();
    let r = commit(h, run, key, &token, outcome, content).await;
    h.kernel.runs().work_until_idle(20).await.unwrap();
    (ok(&r)["task"].clone(), token)
}

fn inbox_item(run: &str, key: &str, verb: &str) -> String {
    format!("{X}/inbox/{run}/{key}/{verb}")
}

async fn commit(h: &Harness, run: &str, key: &str, token: &str, outcome: &str, content: &str) -> Reply {
    let body = json!({"claim_token": token, "outcome": outcome, "content": content});
    h.json(
        Method::POST,
        &inbox_item(run, key, "commit"),
        Some(&h.runner_token()),
        &body,
    )
    .await
}

async fn task(h: &Harness, run: &str, key: &str) -> Value {
    ok(&h
        .get(&format!("{}/tasks/{key}", h.r(run)), Some(&h.human_token()))
        .await)["task"]
        .clone()
}

async fn run_of(h: &Harness, run: &str) -> Value {
    ok(&h.get(&h.r(run), Some(&h.human_token())).await)["run"].clone()
}

async fn events(h: &Harness, run: &str) -> Vec<Value> {
    let r = h
        .get(&format!("{}/events?limit=500", h.r(run)), Some(&h.human_token()))
        .await;
    ok(&r)["events"].as_array().cloned().unwrap_or_default()
}

fn of_type(events: &[Value], kind: &str) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["type"] == kind)
        .map(|e| e["data"].clone())
        .collect()
}

// ---- retry ------------------------------------------------------------------------------------

#[tokio::test]
async fn a_failed_tool_task_is_retried_to_success() {
    for h in harnesses().await {
        announce(&h).await;
        let human = h.human_token();
        let steps = json!([tool_step(&h, "t"), tool_step(&h, "u")]);
        let id = h.start_run(&human, "bypass", Value::Null, steps).await;
        let (failed, old_claim) = settle_claimed(&h, &id, "t", "failed", "disk full").await;
        assert_eq!(failed["status"], "failed");
        assert_eq!(task(&h, &id, "u").await["status"], "skipped");
        let run = run_of(&h, &id).await;
        assert_eq!(run["status"], "needs_attention", "{}", h.dialect);
        assert_eq!(run["attention"], json!({"reason": "halt_failure", "task_key": "t"}));

        // Refusals in order: write standing, the key, the candidate rule.
        let reader = member(&h, "reader", Standing::Read).await;
        refused(
            &verb(&h, &reader, &id, "t", "retry", json!({})).await,
            StatusCode::FORBIDDEN,
            "not_authorized",
        );
        refused(
            &verb(&h, &human, &id, "nope", "retry", json!({})).await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
        refused(
            &verb(&h, &human, &id, "u", "retry", json!({})).await,
            StatusCode::CONFLICT,
            "not_retryable",
        );
        refused(
            &verb(&h, &human, &id, "t", "retry", json!({"model": "scripted/echo"})).await,
            StatusCode::BAD_REQUEST,
            "parameter_invalid",
        );

        let retried = ok(&verb(&h, &human, &id, "t", "retry", json!({})).await)["task"].clone();
        assert_eq!(retried["generation"], 2);
        assert_eq!(retried["status"], "dispatched", "{retried}");
        assert!(retried.get("error").is_none_or(Value::is_null), "{retried}");
        assert_eq!(task(&h, &id, "u").await["status"], "waiting");
        let run = run_of(&h, &id).await;
        assert_eq!(run["status"], "running");
        assert_eq!(run["attention"], Value::Null);
        let evs = events(&h, &id).await;
        assert_eq!(
            of_type(&evs, "attention_resolved"),
            [json!({"reason": "halt_failure", "task_key": "t"})]
        );
        let moves: Vec<Value> = evs
            .iter()
            .filter(|e| e["type"] == "task_status_changed" && e["task_key"] == "u")
            .map(|e| json!([e["data"]["from"], e["data"]["to"]]))
            .collect();
        assert_eq!(moves, [json!(["waiting", "skipped"]), json!(["skipped", "waiting"])]);

        // The first generation's claim cannot commit the second.
        let stale = commit(&h, &id, "t", &old_claim, "completed", "late").await;
        assert_eq!(
            stale.status,
            StatusCode::CONFLICT,
            "{}",
            String::from_utf8_lossy(&stale.bytes)
        );
        let done = settle(&h, &id, "t", "completed", "contents").await;
        assert_eq!(
            (done["status"].clone(), done["generation"].clone()),
            (json!("completed"), json!(2))
        );
        assert_eq!(settle(&h, &id, "u", "completed", "more").await["status"], "completed");
        assert_eq!(run_of(&h, &id).await["status"], "completed");
        // A settled success is no candidate, and the run has ended.
        refused(
            &verb(&h, &human, &id, "t", "retry", json!({})).await,
            StatusCode::CONFLICT,
            "not_retryable",
        );
    }
}

#[tokio::test]
async fn a_failed_model_round_is_retried_with_a_new_sealed_generation() {
    let dir = tempfile::tempdir().unwrap();
    for h in harnesses_with_scripts(dir.path()).await {
        write_script(dir.path(), "broken", &[json!({"error": {"key": "provider_error"}})]);
        write_script(dir.path(), "fixed", &[json!({"text": "Recovered."})]);
        let human = h.human_token();
        let steps = json!([{"key": "m", "model": {"prompt": "Go.", "model": "scripted/broken"}}]);
        let id = h.start_run(&human, "bypass", Value::Null, steps).await;
        h.kernel.runs().work_until_idle(50).await.unwrap();
        let key = "m";
        let round = task(&h, &id, key).await;
        assert_eq!(round["status"], "failed", "{round}");
        assert_eq!(round["error"]["key"], "provider_error");
        assert_eq!(run_of(&h, &id).await["status"], "needs_attention");
        let request = |generation: Option<i64>| {
            let q = generation.map(|g| format!("?generation={g}")).unwrap_or_default();
            format!("{}/tasks/{key}/request{q}", h.r(&id))
        };
        let first = ok(&h.get(&request(None), Some(&human)).await)["request"].clone();

        // The model is checked: a string that resolves.
        for bad in [json!(5), json!("nope/none")] {
            refused(
                &verb(&h, &human, &id, key, "retry", json!({"model": bad})).await,
                StatusCode::BAD_REQUEST,
                "parameter_invalid",
            );
        }
        // A plain retry seals a new generation with the same model, and fails again.
        let again = ok(&verb(&h, &human, &id, key, "retry", json!({})).await)["task"].clone();
        assert_eq!(
            (again["generation"].clone(), again["status"].clone()),
            (json!(2), json!("waiting"))
        );
        h.kernel.runs().work_until_idle(50).await.unwrap();
        assert_eq!(task(&h, &id, key).await["status"], "failed");
        let second = ok(&h.get(&request(None), Some(&human)).await)["request"].clone();
        assert_eq!(second["body_sha256"], first["body_sha256"], "same model, same bytes");

        // A retry with another model succeeds; every generation's sealed record stays readable.
        let fixed = ok(&verb(&h, &human, &id, key, "retry", json!({"model": "scripted/fixed"})).await)["task"].clone();
        assert_eq!(fixed["generation"], 3);
        h.kernel.runs().work_until_idle(50).await.unwrap();
        let round = task(&h, &id, key).await;
        assert_eq!(
            (round["status"].clone(), round["generation"].clone()),
            (json!("completed"), json!(3))
        );
        assert_eq!(round["output"], "Recovered.");
        let third = ok(&h.get(&request(None), Some(&human)).await)["request"].clone();
        assert_ne!(third["body_sha256"], first["body_sha256"]);
        assert_eq!(third["request_options"]["model"], "fixed", "{third}");
        let old = ok(&h.get(&request(Some(1)), Some(&human)).await)["request"].clone();
        assert_eq!(old, first);
        refused(
            &h.get(&request(Some(4)), Some(&human)).await,
            StatusCode::NOT_FOUND,
            "request_not_sealed",
        );
        assert_eq!(run_of(&h, &id).await["status"], "completed");
        let resolved = of_type(&events(&h, &id).await, "attention_resolved");
        assert_eq!(resolved.len(), 2, "{resolved:?}");
    }
}

// ---- abandon ----------------------------------------------------------------------------------

#[tokio::test]
async fn an_abandoned_failure_returns_the_run_to_running_and_appendable() {
    for h in harnesses().await {
        announce(&h).await;
        let human = h.human_token();
        let id = h
            .start_run(&human, "bypass", Value::Null, json!([tool_step(&h, "t")]))
            .await;
        settle(&h, &id, "t", "failed", "disk full").await;
        assert_eq!(run_of(&h, &id).await["status"], "needs_attention");

        let reader = member(&h, "reader", Standing::Read).await;
        refused(
            &verb(&h, &reader, &id, "t", "abandon", json!({})).await,
            StatusCode::FORBIDDEN,
            "not_authorized",
        );
        refused(
            &verb(&h, &human, &id, "nope", "abandon", json!({})).await,
            StatusCode::NOT_FOUND,
            "not_found",
        );

        let t = ok(&verb(&h, &human, &id, "t", "abandon", json!({})).await)["task"].clone();
        assert_eq!(
            (t["status"].clone(), t["failure_resolution"].clone()),
            (json!("failed"), json!("abandoned"))
        );
        let run = run_of(&h, &id).await;
        assert_eq!(run["status"], "running");
        assert_eq!(
            of_type(&events(&h, &id).await, "attention_resolved"),
            [json!({"reason": "halt_failure", "task_key": "t"})]
        );
        // Resolved: neither abandonable nor retryable again.
        refused(
            &verb(&h, &human, &id, "t", "abandon", json!({})).await,
            StatusCode::CONFLICT,
            "not_abandonable",
        );
        refused(
            &verb(&h, &human, &id, "t", "retry", json!({})).await,
            StatusCode::CONFLICT,
            "not_retryable",
        );
        // Appendable: a new step (which waits on the abandoned deliverable, and runs) completes
        // the run.
        let r = h
            .json(
                Method::POST,
                &format!("{}/tasks", h.r(&id)),
                Some(&human),
                &json!({"steps": [tool_step(&h, "v")]}),
            )
            .await;
        ok(&r);
        h.kernel.runs().work_until_idle(20).await.unwrap();
        assert_eq!(settle(&h, &id, "v", "completed", "ok").await["status"], "completed");
        assert_eq!(run_of(&h, &id).await["status"], "completed");
        // An ended run: nothing is abandonable.
        refused(
            &verb(&h, &human, &id, "t", "abandon", json!({})).await,
            StatusCode::CONFLICT,
            "not_abandonable",
        );
    }
}

#[tokio::test]
async fn nothing_is_adjudicated_once_the_run_is_stopped() {
    for h in harnesses().await {
        announce(&h).await;
        let human = h.human_token();
        let id = h
            .start_run(&human, "bypass", Value::Null, json!([tool_step(&h, "t")]))
            .await;
        settle(&h, &id, "t", "failed", "disk full").await;
        assert_eq!(run_of(&h, &id).await["status"], "needs_attention");
        ok(&h
            .json(Method::POST, &format!("{}/stop", h.r(&id)), Some(&human), &json!({}))
            .await);
        assert_eq!(run_of(&h, &id).await["status"], "canceled");
        refused(
            &verb(&h, &human, &id, "t", "retry", json!({})).await,
            StatusCode::CONFLICT,
            "not_retryable",
        );
        refused(
            &verb(&h, &human, &id, "t", "abandon", json!({})).await,
            StatusCode::CONFLICT,
            "not_abandonable",
        );
        refused(
            &verb(&h, &human, &id, "t", "cancel", json!({})).await,
            StatusCode::CONFLICT,
            "not_a_branch",
        );
        assert_eq!(task(&h, &id, "t").await["failure_resolution"], Value::Null);
    }
}

// ---- branch cancel ----------------------------------------------------------------------------

#[tokio::test]
async fn a_branch_is_canceled_with_its_live_rows() {
    let dir = tempfile::tempdir().unwrap();
    for h in harnesses_with_scripts(dir.path()).await {
        write_script(
            dir.path(),
            "branching",
            &[
                json!({"text": "Delegating.", "tool_calls": [{"id": "c1", "name": "delegate_task",
                       "input": {"prompt": "[[thread:b]] Ask the human."}}]}),
                json!({"text": "Main done."}),
                json!({"text": "Noted the branch's end."}),
                json!({"thread": "b", "text": "Asking.", "tool_calls": [{"id": "b1", "name": "ask",
                       "input": {"prompt": "Proceed?"}}]}),
            ],
        );
        let human = h.human_token();
        let steps = json!([{"model": {"prompt": "Go.", "model": "scripted/branching",
                             "kernel_tools": ["nexus.graph.delegate_task", "nexus.human.ask"]}}]);
        let id = h.start_run(&human, "bypass", Value::Null, steps).await;
        h.kernel.runs().work_until_idle(50).await.unwrap();
        let rows = ok(&h.get(&format!("{}/tasks?limit=100", h.r(&id)), Some(&human)).await)["tasks"].clone();
        let rows = rows.as_array().unwrap();
        let root = rows
            .iter()
            .find(|t| {
                t["kind"] == "model_task"
                    && t["key"].as_str().unwrap().ends_with("-model-1")
                    && t["key"] != "s1-model-1"
            })
            .unwrap_or_else(|| panic!("no branch root in {rows:?}"));
        let root_key = root["key"].as_str().unwrap().to_string();
        let ask = rows
            .iter()
            .find(|t| t["kind"] == "await_task" && t["key"].as_str().unwrap().contains("-ask-"))
            .unwrap_or_else(|| panic!("no ask in {rows:?}"));
        let ask_key = ask["key"].as_str().unwrap().to_string();
        assert_eq!(ask["status"], "awaiting_input", "{ask}");

        let reader = member(&h, "reader", Standing::Read).await;
        refused(
            &verb(&h, &reader, &id, &root_key, "cancel", json!({})).await,
            StatusCode::FORBIDDEN,
            "not_authorized",
        );
        refused(
            &verb(&h, &human, &id, "nope", "cancel", json!({})).await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
        let call = root_key.trim_end_matches("-model-1").to_string();
        refused(
            &verb(&h, &human, &id, &call, "cancel", json!({})).await,
            StatusCode::CONFLICT,
            "not_a_branch",
        );

        let r = ok(&verb(&h, &human, &id, &root_key, "cancel", json!({})).await)["task"].clone();
        assert_eq!(r["key"], json!(root_key));
        let a = task(&h, &id, &ask_key).await;
        assert_eq!(a["status"], "canceled", "{a}");
        assert_eq!(a["failure_resolution"], "canceled");
        assert_eq!(a["error"]["key"], "task_canceled");
        refused(
            &verb(&h, &human, &id, &root_key, "cancel", json!({})).await,
            StatusCode::CONFLICT,
            "already_terminal",
        );
        // Nothing of the branch is live; the main line is not touched.
        h.kernel.runs().work_until_idle(50).await.unwrap();
        let rows = ok(&h.get(&format!("{}/tasks?limit=100", h.r(&id)), Some(&human)).await)["tasks"].clone();
        for t in rows.as_array().unwrap() {
            assert!(
                !matches!(
                    t["status"].as_str(),
                    Some("waiting" | "running" | "dispatched" | "awaiting_input")
                ),
                "{t}"
            );
        }
        assert_eq!(task(&h, &id, "s1-model-1").await["status"], "completed");
        // The root had already completed (it issued the ask): only live rows are canceled, the
        // ask and the continuation waiting on it.
        let root = task(&h, &id, &root_key).await;
        assert_eq!(
            (root["status"].clone(), root["failure_resolution"].clone()),
            (json!("completed"), Value::Null)
        );
        let canceled: Vec<Value> = events(&h, &id)
            .await
            .into_iter()
            .filter(|e| e["type"] == "task_status_changed" && e["data"]["to"] == "canceled")
            .map(|e| json!([e["task_key"], e["data"]["error"]["key"]]))
            .collect();
        assert_eq!(canceled.len(), 2, "{canceled:?}");
        assert!(canceled.iter().all(|c| c[1] == "task_canceled"), "{canceled:?}");
        assert_eq!(run_of(&h, &id).await["status"], "completed");
    }
}

// ---- default runner ---------------------------------------------------------------------------

#[tokio::test]
async fn the_default_runner_changes_without_moving_accepted_targets() {
    for h in harnesses().await {
        announce(&h).await;
        let human = h.human_token();
        let runner = runner_id(&h);
        let body = json!({"run": {"approval_mode": "bypass", "default_runner_executor_public_id": runner,
                                  "steps": [{"key": "t", "tool": {"name": "read", "input": {}, "route": {"kind": "runner"}}}]}});
        let created = h
            .json(Method::POST, &format!("{}/runs", h.w()), Some(&human), &body)
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.json());
        let id = created.json()["run"]["public_id"].as_str().unwrap().to_string();
        let path = format!("{}/default_runner", h.r(&id));
        let put = |token: String, body: Value| {
            let path = path.clone();
            let h = &h;
            async move { h.json(Method::PUT, &path, Some(&token), &body).await }
        };
        let to = |v: Value| json!({"default_runner": {"executor_public_id": v}});

        let reader = member(&h, "reader", Standing::Read).await;
        refused(
            &put(reader, to(Value::Null)).await,
            StatusCode::FORBIDDEN,
            "not_authorized",
        );
        let unknown = format!("{}/runs/{}/default_runner", h.w(), Uuid::now_v7());
        refused(
            &h.json(Method::PUT, &unknown, Some(&human), &to(Value::Null)).await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
        refused(
            &put(human.clone(), json!({})).await,
            StatusCode::BAD_REQUEST,
            "parameter_missing",
        );
        refused(
            &put(human.clone(), to(json!("x"))).await,
            StatusCode::BAD_REQUEST,
            "parameter_invalid",
        );
        refused(
            &put(human.clone(), to(json!(Uuid::now_v7().to_string()))).await,
            StatusCode::NOT_FOUND,
            "runner_not_found",
        );
        let agent_app = h.boot["agent"]["executor_public_id"].clone();
        refused(
            &put(human.clone(), to(agent_app)).await,
            StatusCode::NOT_FOUND,
            "runner_not_found",
        );

        // null: no default runner; the accepted row keeps its target.
        let run = ok(&put(human.clone(), to(Value::Null)).await)["run"].clone();
        assert_eq!(run["default_runner_executor_public_id"], Value::Null);
        assert_eq!(task(&h, &id, "t").await["target"]["executor_public_id"], json!(runner));
        // The same value again changes nothing.
        ok(&put(human.clone(), to(Value::Null)).await);
        let run = ok(&put(human.clone(), to(json!(runner))).await)["run"].clone();
        assert_eq!(run["default_runner_executor_public_id"], json!(runner));
        assert_eq!(
            of_type(&events(&h, &id).await, "default_runner_changed"),
            [json!({"from": runner, "to": null}), json!({"from": null, "to": runner})]
        );

        // A revoked runner is no longer eligible.
        h.kernel.admin().revoke_executor(&runner).await.unwrap();
        refused(
            &put(human.clone(), to(json!(runner))).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "runner_not_eligible",
        );
        // An ended run.
        ok(&h
            .json(Method::POST, &format!("{}/stop", h.r(&id)), Some(&human), &json!({}))
            .await);
        refused(
            &put(human.clone(), to(Value::Null)).await,
            StatusCode::CONFLICT,
            "already_terminal",
        );
    }
}
