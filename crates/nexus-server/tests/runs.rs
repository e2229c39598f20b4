//! The run doors over HTTP on both engines (runs.md §2–§11, errors-and-auth.md §2/§3/§6):
//! create, start, stop, append, idempotency, run and task reads, round keys, the pairing law,
//! the sealed request, the transcript, the graph, the event pages and the SSE feed. Every
//! refusal is checked by status, `error.code` and its extra fields.

mod common;

use std::time::Duration;

use axum::http::{Method, StatusCode};
use common::{Harness, Reply, frames, harnesses_with_scripts, read_until, write_script};
use nexus_kernel::admin::MemberSpec;
use nexus_store::prelude::*;
use nexus_store::{MemberKind, Standing};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

// ---- helpers ---------------------------------------------------------------------------------

fn model(name: &str, extra: Value) -> Value {
    let mut m = json!({"prompt": "Look around.", "model": format!("scripted/{name}")});
    if let (Value::Object(m), Value::Object(extra)) = (&mut m, extra) {
        m.extend(extra);
    }
    json!({ "model": m })
}

fn kernel_tools() -> Value {
    json!({"kernel_tools": ["nexus.runners.list", "nexus.tools.search"]})
}

/// Asserts status and `error.code`; returns the `error` object.
fn refused(r: &Reply, status: StatusCode, code: &str) -> Value {
    assert_eq!(
        r.status,
        status,
        "expected {status} {code}, got {}",
        String::from_utf8_lossy(&r.bytes)
    );
    assert_eq!(r.code(), code, "{}", String::from_utf8_lossy(&r.bytes));
    assert!(r.json()["error"]["message"].is_string());
    r.json()["error"].clone()
}

/// The `steps` of a 422 `invalid_steps` as `(code, path)` pairs.
fn step_faults(r: &Reply) -> Vec<(String, String)> {
    let e = refused(r, StatusCode::UNPROCESSABLE_ENTITY, "invalid_steps");
    e["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("no steps in {e}"))
        .iter()
        .map(|s| {
            (
                s["code"].as_str().unwrap().to_string(),
                s["path"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pair(code: &str, path: &str) -> (String, String) {
    (code.to_string(), path.to_string())
}

async fn post_run(h: &Harness, token: &str, run: Value) -> Reply {
    h.json(
        Method::POST,
        &format!("{}/runs", h.w()),
        Some(token),
        &json!({ "run": run }),
    )
    .await
}

/// Creates a run (201) as the agent; returns its public id and the body.
async fn create(h: &Harness, run: Value) -> (String, Value) {
    let r = post_run(h, &h.agent_token(), run).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&r.bytes));
    let body = r.json();
    (body["run"]["public_id"].as_str().unwrap().to_string(), body)
}

async fn start(h: &Harness, run: &str) -> Reply {
    h.json(
        Method::POST,
        &format!("{}/start", h.r(run)),
        Some(&h.agent_token()),
        &json!({}),
    )
    .await
}

/// Creates, starts and drives a run to idle.
async fn run_to_idle(h: &Harness, run: Value) -> String {
    let (id, _) = create(h, run).await;
    assert_eq!(start(h, &id).await.status, StatusCode::OK);
    h.kernel.runs().work_until_idle(50).await.unwrap();
    id
}

async fn task(h: &Harness, run: &str, key: &str) -> Value {
    h.get_ok(&format!("{}/tasks/{key}", h.r(run))).await["task"].clone()
}

async fn task_keys(h: &Harness, run: &str) -> Vec<String> {
    h.get_ok(&format!("{}/tasks", h.r(run))).await["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].as_str().unwrap().to_string())
        .collect()
}

async fn request(h: &Harness, run: &str, key: &str) -> Value {
    h.get_ok(&format!("{}/tasks/{key}/request", h.r(run))).await["request"].clone()
}

async fn run_status(h: &Harness, run: &str) -> String {
    h.get_ok(&h.r(run)).await["run"]["status"].as_str().unwrap().to_string()
}

/// A member with the given standing (None: none), and its member bearer.
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

fn quiet(dir: &std::path::Path) {
    write_script(
        dir,
        "quiet",
        &[json!({"text": "one"}), json!({"text": "two"}), json!({"text": "three"})],
    );
}

// ---- create ----------------------------------------------------------------------------------

#[tokio::test]
async fn create_answers_201_with_run_and_receipt() {
    let dir = tempfile::tempdir().unwrap();
    quiet(dir.path());
    for h in harnesses_with_scripts(dir.path()).await {
        let (id, body) = create(
            &h,
            json!({"approval_mode": "bypass", "steps": [model("quiet", json!({}))]}),
        )
        .await;
        let keys: Vec<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["run", "receipt"], "{}", h.dialect);
        let run = &body["run"];
        assert_eq!(run["status"], "pending");
        assert_eq!(run["workspace_public_id"], h.ws_public_id());
        assert_eq!(run["hosting"], json!({"kind": "standalone"}));
        assert_eq!(run["created_by"], h.boot["agent"]["public_id"]);
        assert_eq!(run["answering_principal"], h.boot["agent"]["public_id"]);
        assert_eq!(run["declaring_agent"], h.boot["agent"]["public_id"]);
        assert_eq!(run["approval_mode"], "bypass");
        assert_eq!(run["deliverable_task_key"], "s1-model-1");
        assert_eq!(run["revision"], 1);
        assert_eq!(run["attention"], Value::Null);
        assert_eq!(run["started_at"], Value::Null);
        assert!(run["created_at"].as_str().unwrap().ends_with('Z'));
        assert_eq!(
            body["receipt"],
            json!({
                "accepted_task_keys": ["s1-model-1"],
                "steps": [{"key": "s1-model-1", "verb": "model"}],
                "deliverable_task_key": "s1-model-1",
                "revision": 1,
                "resolution_tokens": {},
            })
        );
        // The run reads back identically.
        assert_eq!(h.get_ok(&h.r(&id)).await["run"], body["run"]);
        // A human's run has no declaring agent.
        let r = post_run(
            &h,
            &h.human_token(),
            json!({"approval_mode": "ask", "steps": [model("quiet", json!({}))]}),
        )
        .await;
        assert_eq!(r.status, StatusCode::CREATED);
        assert_eq!(r.json()["run"]["declaring_agent"], Value::Null);
        assert_eq!(r.json()["run"]["created_by"], h.boot["human"]["public_id"]);
    }
}

#[tokio::test]
async fn create_refuses_by_door_standing_and_shell() {
    let dir = tempfile::tempdir().unwrap();
    quiet(dir.path());
    for h in harnesses_with_scripts(dir.path()).await {
        let agent = h.agent_token();
        let ok_run = json!({"approval_mode": "bypass", "steps": [model("quiet", json!({}))]});

        // 400 parameter_missing: no `run`, or a `run` that is not an object.
        let runs = format!("{}/runs", h.w());
        let r = h.json(Method::POST, &runs, Some(&agent), &json!({})).await;
        refused(&r, StatusCode::BAD_REQUEST, "parameter_missing");
        let r = h
            .json(Method::POST, &runs, Some(&agent), &json!({"run": [ok_run.clone()]}))
            .await;
        refused(&r, StatusCode::BAD_REQUEST, "parameter_missing");

        // 404: an unknown workspace, a malformed id, and a member without standing.
        let unknown = format!("/agent_api/v1/workspaces/{}/runs", uuid::Uuid::now_v7());
        let r = h
            .json(Method::POST, &unknown, Some(&agent), &json!({ "run": ok_run }))
            .await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");
        let r = h
            .json(
                Method::POST,
                "/agent_api/v1/workspaces/not-a-uuid/runs",
                Some(&agent),
                &json!({ "run": ok_run }),
            )
            .await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");
        let outsider = member(&h, "outsider", None).await;
        let r = post_run(&h, &outsider, ok_run.clone()).await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");
        let r = h.get(&runs, Some(&outsider)).await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");

        // 403: read standing reads but cannot create.
        let reader = member(&h, "reader", Some(Standing::Read)).await;
        let r = post_run(&h, &reader, ok_run.clone()).await;
        refused(&r, StatusCode::FORBIDDEN, "not_authorized");
        assert_eq!(h.get(&runs, Some(&reader)).await.status, StatusCode::OK);

        // 401 without a bearer.
        let r = h.json(Method::POST, &runs, None, &json!({ "run": ok_run })).await;
        refused(&r, StatusCode::UNAUTHORIZED, "unauthorized");

        // 422 invalid_approval_mode: missing, and a word outside the three.
        let r = post_run(&h, &agent, json!({"steps": [model("quiet", json!({}))]})).await;
        refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "invalid_approval_mode");
        let r = post_run(
            &h,
            &agent,
            json!({"approval_mode": "sometimes", "steps": [model("quiet", json!({}))]}),
        )
        .await;
        refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "invalid_approval_mode");
        let r = post_run(
            &h,
            &agent,
            json!({"approval_mode": true, "steps": [model("quiet", json!({}))]}),
        )
        .await;
        refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "invalid_approval_mode");

        // 422 invalid_approval_rules with the rule word and its path.
        let rules_run = |rules: Value| json!({"approval_mode": "rules", "approval_rules": rules, "steps": [model("quiet", json!({}))]});
        let r = post_run(&h, &agent, rules_run(json!({"tool": "*"}))).await;
        let e = refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "invalid_approval_rules");
        assert_eq!(e["reason"], "not_a_list", "{e}");
        assert!(e["path"].as_str().unwrap().starts_with("/run/approval_rules"), "{e}");
        let r = post_run(
            &h,
            &agent,
            rules_run(json!([{"tool": "*", "verdict": "allow"}, {"verdict": "allow"}])),
        )
        .await;
        let e = refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "invalid_approval_rules");
        assert_eq!(e["reason"], "tool_required", "{e}");
        assert_eq!(e["path"], "/run/approval_rules/1/tool", "{e}");
        let r = post_run(&h, &agent, rules_run(json!([{"tool": "*", "verdict": "maybe"}]))).await;
        let e = refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "invalid_approval_rules");
        assert_eq!(e["reason"], "verdict_invalid", "{e}");
        assert!(e["path"].as_str().unwrap().starts_with("/run/approval_rules/0"), "{e}");

        // 422 edge_authoring_refused, by path: the shell, a step, and a verb body.
        for (run, path) in [
            (
                json!({"approval_mode": "bypass", "steps": [model("quiet", json!({}))], "edges": []}),
                "run.edges",
            ),
            (
                json!({"approval_mode": "bypass", "steps": [model("quiet", json!({}))], "deliverable": "x"}),
                "run.deliverable",
            ),
            (
                json!({"approval_mode": "bypass", "steps": [model("quiet", json!({}))], "tools": []}),
                "run.tools",
            ),
            (
                json!({"approval_mode": "bypass", "steps": [model("quiet", json!({})), {"tool": {"name": "read"}, "depends_on": ["s1-model-1"]}]}),
                "run.steps[1].depends_on",
            ),
            (
                json!({"approval_mode": "bypass", "steps": [model("quiet", json!({"input_from": ["x"]}))]}),
                "run.steps[0].model.input_from",
            ),
        ] {
            let r = post_run(&h, &agent, run).await;
            let e = refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "edge_authoring_refused");
            assert_eq!(e["path"], path, "{e}");
        }

        // Nothing refused was written.
        let runs_now = h.get_ok(&runs).await;
        assert_eq!(runs_now["runs"], json!([]), "{}", h.dialect);
    }
}

#[tokio::test]
async fn create_reports_step_words_inside_invalid_steps() {
    let dir = tempfile::tempdir().unwrap();
    quiet(dir.path());
    for h in harnesses_with_scripts(dir.path()).await {
        let agent = h.agent_token();
        let run = |steps: Value| json!({"approval_mode": "bypass", "steps": steps});
        let big = "x".repeat(70_000);
        let cases: Vec<(Value, Vec<(String, String)>)> = vec![
            (json!([]), vec![pair("steps_required", "run.steps")]),
            (json!({"model": {}}), vec![pair("steps_must_be_an_array", "run.steps")]),
            (
                json!([{"parallel": []}]),
                vec![pair("unsupported_step", "run.steps[0].parallel")],
            ),
            (
                json!([{"model": {"prompt": "x", "model": "scripted/quiet"}, "tool": {"name": "read"}}]),
                vec![pair("unsupported_step", "run.steps[0]")],
            ),
            (
                json!([{"model": {"prompt": "x", "model": "scripted/quiet"}, "retry": 2}]),
                vec![pair("unknown_step_option", "run.steps[0].retry")],
            ),
            (
                json!([{"key": "r1", "model": {"prompt": "x", "model": "scripted/quiet"}}]),
                vec![pair("invalid_task_key", "run.steps[0].key")],
            ),
            (
                json!([{"tool": {"name": "delegate_task"}}]),
                vec![pair("reserved_tool_name", "run.steps[0].tool.name")],
            ),
            (
                json!([{"tool": {"name": "nexus.graph.delegate_task"}}]),
                vec![pair("reserved_tool_name", "run.steps[0].tool.name")],
            ),
            (
                json!([{"tool": {"name": "read", "input": {"blob": big}}}]),
                vec![pair("tool_input_too_large", "run.steps[0].tool.input")],
            ),
            // Several faults in one envelope, in order.
            (
                json!([{"key": "r2t0", "tool": {"name": "runners_list"}}, {"tool": {"name": "read"}, "visibility": "loud"}]),
                vec![
                    pair("invalid_task_key", "run.steps[0].key"),
                    pair("reserved_tool_name", "run.steps[0].tool.name"),
                    pair("invalid_visibility", "run.steps[1].visibility"),
                ],
            ),
            // Kernel acceptance words.
            (
                json!([{"model": {"prompt": "No model named."}}]),
                vec![pair("model_required", "run.steps[0].model")],
            ),
            (
                json!([{"tool": {"name": "read", "route": {"kind": "runner"}}}]),
                vec![pair("runner_target_required", "run.steps[0].tool.route")],
            ),
        ];
        for (steps, expected) in cases {
            let r = post_run(&h, &agent, run(steps.clone())).await;
            assert_eq!(step_faults(&r), expected, "{steps}");
        }
    }
}

#[tokio::test]
async fn create_over_one_mebibyte_is_413() {
    let dir = tempfile::tempdir().unwrap();
    for h in harnesses_with_scripts(dir.path()).await {
        let pad = "p".repeat(1_048_576);
        let body = json!({"run": {"approval_mode": "bypass", "steps": [{"model": {"prompt": pad, "model": "scripted/echo"}}]}});
        let r = h
            .json(Method::POST, &format!("{}/runs", h.w()), Some(&h.agent_token()), &body)
            .await;
        refused(&r, StatusCode::PAYLOAD_TOO_LARGE, "content_too_large");
        // Just under the bound is accepted by the door (the prompt is a plain string).
        let pad = "p".repeat(1_048_576 - 200);
        let body = json!({"run": {"approval_mode": "bypass", "steps": [{"model": {"prompt": pad, "model": "scripted/echo"}}]}});
        let r = h
            .json(Method::POST, &format!("{}/runs", h.w()), Some(&h.agent_token()), &body)
            .await;
        assert_eq!(
            r.status,
            StatusCode::CREATED,
            "{}",
            String::from_utf8_lossy(&r.bytes[..r.bytes.len().min(400)])
        );
    }
}

#[tokio::test]
async fn create_replays_by_idempotency_key() {
    let dir = tempfile::tempdir().unwrap();
    quiet(dir.path());
    for h in harnesses_with_scripts(dir.path()).await {
        let path = format!("{}/runs", h.w());
        let agent = h.agent_token();
        let body = json!({"run": {"approval_mode": "bypass", "steps": [model("quiet", json!({}))]}});
        let first = h
            .send_with(
                Method::POST,
                &path,
                Some(&agent),
                Some(&body),
                &[("idempotency-key", "create-1")],
            )
            .await;
        assert_eq!(first.status, StatusCode::CREATED);
        assert!(first.headers.get("idempotency-replayed").is_none());
        assert!(first.json().get("replayed").is_none());
        let again = h
            .send_with(
                Method::POST,
                &path,
                Some(&agent),
                Some(&body),
                &[("idempotency-key", "create-1")],
            )
            .await;
        assert_eq!(
            again.status,
            StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&again.bytes)
        );
        assert_eq!(again.headers.get("idempotency-replayed").unwrap(), "true");
        let mut replay = again.json();
        assert_eq!(replay["replayed"], true);
        replay.as_object_mut().unwrap().remove("replayed");
        assert_eq!(replay, first.json(), "the original body, plus replayed");
        // Only one run exists.
        assert_eq!(h.get_ok(&path).await["runs"].as_array().unwrap().len(), 1);
        // The replay is served even after the state moved on: the original body.
        let id = first.json()["run"]["public_id"].as_str().unwrap().to_string();
        assert_eq!(start(&h, &id).await.status, StatusCode::OK);
        let later = h
            .send_with(
                Method::POST,
                &path,
                Some(&agent),
                Some(&body),
                &[("idempotency-key", "create-1")],
            )
            .await;
        assert_eq!(later.status, StatusCode::OK);
        assert_eq!(later.json()["run"]["status"], "pending");
        assert_eq!(later.json()["replayed"], true);

        // Same key, different envelope.
        let other = json!({"run": {"approval_mode": "ask", "steps": [model("quiet", json!({}))]}});
        let r = h
            .send_with(
                Method::POST,
                &path,
                Some(&agent),
                Some(&other),
                &[("idempotency-key", "create-1")],
            )
            .await;
        refused(&r, StatusCode::CONFLICT, "idempotency_envelope_mismatch");
        // The scope includes the member: the human's same key is its own.
        let r = h
            .send_with(
                Method::POST,
                &path,
                Some(&h.human_token()),
                Some(&other),
                &[("idempotency-key", "create-1")],
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED);

        // Malformed keys: too long, a space, empty.
        let long = "k".repeat(65);
        for key in [long.as_str(), "has space", "", "tab\tkey"] {
            let r = h
                .send_with(
                    Method::POST,
                    &path,
                    Some(&agent),
                    Some(&body),
                    &[("idempotency-key", key)],
                )
                .await;
            refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");
        }
        let max = "k".repeat(64);
        let r = h
            .send_with(
                Method::POST,
                &path,
                Some(&agent),
                Some(&body),
                &[("idempotency-key", &max)],
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED);

        // A refused request writes no receipt: its key stays free.
        let bad = json!({"run": {"steps": [model("quiet", json!({}))]}});
        let r = h
            .send_with(
                Method::POST,
                &path,
                Some(&agent),
                Some(&bad),
                &[("idempotency-key", "create-2")],
            )
            .await;
        refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "invalid_approval_mode");
        let r = h
            .send_with(
                Method::POST,
                &path,
                Some(&agent),
                Some(&body),
                &[("idempotency-key", "create-2")],
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED);
    }
}

// ---- start / stop ----------------------------------------------------------------------------

#[tokio::test]
async fn start_and_stop() {
    let dir = tempfile::tempdir().unwrap();
    quiet(dir.path());
    for h in harnesses_with_scripts(dir.path()).await {
        let (id, _) = create(
            &h,
            json!({"approval_mode": "bypass", "steps": [model("quiet", json!({}))]}),
        )
        .await;
        let r = start(&h, &id).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.json()["run"]["status"], "running");
        assert!(r.json()["run"]["started_at"].as_str().unwrap().ends_with('Z'));
        let r = start(&h, &id).await;
        let e = refused(&r, StatusCode::CONFLICT, "not_startable");
        assert!(e["message"].as_str().unwrap().contains("running"), "{e}");
        h.kernel.runs().work_until_idle(50).await.unwrap();
        assert_eq!(run_status(&h, &id).await, "completed");
        let r = start(&h, &id).await;
        refused(&r, StatusCode::CONFLICT, "not_startable");
        let stop = format!("{}/stop", h.r(&id));
        let r = h.json(Method::POST, &stop, Some(&h.agent_token()), &json!({})).await;
        refused(&r, StatusCode::CONFLICT, "already_terminal");

        // A running run stops (no body needed); its live model round is canceled.
        let (id, _) = create(
            &h,
            json!({"approval_mode": "bypass", "steps": [model("quiet", json!({}))]}),
        )
        .await;
        assert_eq!(start(&h, &id).await.status, StatusCode::OK);
        let stop = format!("{}/stop", h.r(&id));
        let r = h.send(Method::POST, &stop, Some(&h.agent_token()), None).await;
        assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
        assert_eq!(r.json()["run"]["status"], "canceled");
        let t = task(&h, &id, "s1-model-1").await;
        assert_eq!(t["status"], "canceled");
        assert_eq!(t["error"]["key"], "run_canceled");
        let r = h.json(Method::POST, &stop, Some(&h.agent_token()), &json!({})).await;
        let e = refused(&r, StatusCode::CONFLICT, "already_terminal");
        assert!(e["message"].as_str().unwrap().contains("canceled"), "{e}");
        let r = start(&h, &id).await;
        refused(&r, StatusCode::CONFLICT, "not_startable");

        // A pending run is canceled at once; `force` must be a boolean.
        let (id, _) = create(
            &h,
            json!({"approval_mode": "bypass", "steps": [model("quiet", json!({}))]}),
        )
        .await;
        let stop = format!("{}/stop", h.r(&id));
        let r = h
            .json(Method::POST, &stop, Some(&h.agent_token()), &json!({"force": "yes"}))
            .await;
        refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");
        let r = h
            .json(Method::POST, &stop, Some(&h.agent_token()), &json!({"force": false}))
            .await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.json()["run"]["status"], "canceled");

        // Read standing cannot start or stop; an unknown or malformed run is 404.
        let reader = member(&h, "reader", Some(Standing::Read)).await;
        let (id, _) = create(
            &h,
            json!({"approval_mode": "bypass", "steps": [model("quiet", json!({}))]}),
        )
        .await;
        let r = h
            .json(Method::POST, &format!("{}/start", h.r(&id)), Some(&reader), &json!({}))
            .await;
        refused(&r, StatusCode::FORBIDDEN, "not_authorized");
        let r = h
            .json(Method::POST, &format!("{}/stop", h.r(&id)), Some(&reader), &json!({}))
            .await;
        refused(&r, StatusCode::FORBIDDEN, "not_authorized");
        let r = start(&h, &uuid::Uuid::now_v7().to_string()).await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");
        let r = start(&h, "nope").await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");
        assert_eq!(run_status(&h, &id).await, "pending");
    }
}

// ---- append ----------------------------------------------------------------------------------

#[tokio::test]
async fn append_door_refusals_receipt_and_idempotency() {
    let dir = tempfile::tempdir().unwrap();
    quiet(dir.path());
    for h in harnesses_with_scripts(dir.path()).await {
        let agent = h.agent_token();
        let (id, _) = create(
            &h,
            json!({"approval_mode": "bypass", "steps": [model("quiet", json!({}))]}),
        )
        .await;
        let tasks = format!("{}/tasks", h.r(&id));
        let post = |body: Value| {
            let (h, tasks, agent) = (&h, tasks.clone(), agent.clone());
            async move { h.json(Method::POST, &tasks, Some(&agent), &body).await }
        };

        // duplicate_task_key: a key used in the run, and one repeated in the envelope.
        let r = post(json!({"steps": [{"key": "s1-model-1", "tool": {"name": "read"}}]})).await;
        refused(&r, StatusCode::CONFLICT, "duplicate_task_key");
        let r = post(
            json!({"steps": [{"key": "twin", "tool": {"name": "read"}}, {"key": "twin", "tool": {"name": "read"}}]}),
        )
        .await;
        refused(&r, StatusCode::CONFLICT, "duplicate_task_key");
        // tip_live: a model step while the mainline round is live.
        let r = post(json!({"steps": [model("quiet", json!({}))]})).await;
        refused(&r, StatusCode::CONFLICT, "tip_live");
        // stale_revision carries current_revision.
        let r = post(json!({"steps": [{"tool": {"name": "read"}}], "expected_revision": 7})).await;
        let e = refused(&r, StatusCode::CONFLICT, "stale_revision");
        assert_eq!(e["current_revision"], 1, "{e}");
        // invalid_steps: append paths have no `run.` prefix.
        let r = post(json!({"steps": [{"tool": {"name": ""}}]})).await;
        assert_eq!(step_faults(&r), [pair("invalid_tool_name", "steps[0].tool.name")]);
        let r = post(json!({"steps": []})).await;
        assert_eq!(step_faults(&r), [pair("steps_required", "steps")]);
        let r = post(json!({"steps": [{"tool": {"name": "read"}, "depends_on": ["s1-model-1"]}]})).await;
        let e = refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "edge_authoring_refused");
        assert_eq!(e["path"], "steps[0].depends_on");
        // Read standing: 403.
        let reader = member(&h, "reader", Some(Standing::Read)).await;
        let r = h
            .json(
                Method::POST,
                &tasks,
                Some(&reader),
                &json!({"steps": [{"tool": {"name": "read"}}]}),
            )
            .await;
        refused(&r, StatusCode::FORBIDDEN, "not_authorized");

        // An accepted envelope: 200 {receipt}.
        let body = json!({"steps": [{"key": "peek", "tool": {"name": "read"}, "on_failure": "absorb"}, {"tool": {"name": "grep"}, "on_failure": "absorb"}], "expected_revision": 1});
        let r = h
            .send_with(
                Method::POST,
                &tasks,
                Some(&agent),
                Some(&body),
                &[("idempotency-key", "append-1")],
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
        let receipt = r.json();
        assert_eq!(
            receipt,
            json!({"receipt": {
                "accepted_task_keys": ["peek", "s2-tool-2"],
                "steps": [{"key": "peek", "verb": "tool"}, {"key": "s2-tool-2", "verb": "tool"}],
                "deliverable_task_key": "s2-tool-2",
                "revision": 2,
                "resolution_tokens": {},
            }})
        );
        assert!(r.headers.get("idempotency-replayed").is_none());
        // The replay: even after state moved on.
        let r = h
            .send_with(
                Method::POST,
                &tasks,
                Some(&agent),
                Some(&body),
                &[("idempotency-key", "append-1")],
            )
            .await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.headers.get("idempotency-replayed").unwrap(), "true");
        assert_eq!(r.json()["replayed"], true);
        assert_eq!(r.json()["receipt"], receipt["receipt"]);
        let run = h.get_ok(&h.r(&id)).await["run"].clone();
        assert_eq!(run["revision"], 2, "the replay wrote nothing");
        assert_eq!(run["deliverable_task_key"], "s2-tool-2");
        let r = h
            .send_with(
                Method::POST,
                &tasks,
                Some(&agent),
                Some(&json!({"steps": [{"tool": {"name": "read"}}]})),
                &[("idempotency-key", "append-1")],
            )
            .await;
        refused(&r, StatusCode::CONFLICT, "idempotency_envelope_mismatch");
        let r = h
            .send_with(
                Method::POST,
                &tasks,
                Some(&agent),
                Some(&body),
                &[("idempotency-key", "bad key")],
            )
            .await;
        refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");
        // The scope includes the run: the same key on another run is its own.
        let (other, _) = create(
            &h,
            json!({"approval_mode": "bypass", "steps": [model("quiet", json!({}))]}),
        )
        .await;
        let r = h
            .send_with(
                Method::POST,
                &format!("{}/tasks", h.r(&other)),
                Some(&agent),
                Some(&body),
                &[("idempotency-key", "append-1")],
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
        assert!(r.json().get("replayed").is_none());
        // The append door takes at most 1 MiB.
        let pad = "p".repeat(1_048_576);
        let r = post(json!({"steps": [{"tool": {"name": "read", "input": {"pad": pad}}}]})).await;
        refused(&r, StatusCode::PAYLOAD_TOO_LARGE, "content_too_large");
        // Now revision 2 is current: expected_revision 1 is stale.
        let r = post(json!({"steps": [{"tool": {"name": "read"}}], "expected_revision": 1})).await;
        assert_eq!(
            refused(&r, StatusCode::CONFLICT, "stale_revision")["current_revision"],
            2
        );

        // The run finishes; a completed run is not appendable.
        assert_eq!(start(&h, &id).await.status, StatusCode::OK);
        h.kernel.runs().work_until_idle(50).await.unwrap();
        assert_eq!(run_status(&h, &id).await, "completed");
        assert_eq!(task_keys(&h, &id).await, ["s1-model-1", "peek", "s2-tool-2"]);
        let r = post(json!({"steps": [{"tool": {"name": "read"}}]})).await;
        refused(&r, StatusCode::CONFLICT, "run_not_appendable");
        // An unknown run is 404.
        let r = h
            .json(
                Method::POST,
                &format!("{}/runs/{}/tasks", h.w(), uuid::Uuid::now_v7()),
                Some(&agent),
                &json!({"steps": []}),
            )
            .await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");
    }
}

// ---- run reads -------------------------------------------------------------------------------

#[tokio::test]
async fn get_run_and_list_runs() {
    let dir = tempfile::tempdir().unwrap();
    quiet(dir.path());
    for h in harnesses_with_scripts(dir.path()).await {
        let done = run_to_idle(
            &h,
            json!({"approval_mode": "bypass", "steps": [model("quiet", json!({}))]}),
        )
        .await;
        let (pending, _) = create(
            &h,
            json!({"approval_mode": "ask", "steps": [model("quiet", json!({}))]}),
        )
        .await;
        let run = h.get_ok(&h.r(&done)).await["run"].clone();
        assert_eq!(run["public_id"], done);
        assert_eq!(run["status"], "completed");
        assert!(run["ended_at"].as_str().unwrap().ends_with('Z'));
        let all = h.get_ok(&format!("{}/runs", h.w())).await;
        let ids: Vec<&str> = all["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["public_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [done.as_str(), pending.as_str()]);
        assert!(all["pagination"].is_object());
        let only = h.get_ok(&format!("{}/runs?status=pending", h.w())).await;
        assert_eq!(only["runs"].as_array().unwrap().len(), 1);
        assert_eq!(only["runs"][0]["public_id"], pending);
        let page = h.get_ok(&format!("{}/runs?limit=1", h.w())).await;
        assert_eq!(page["runs"].as_array().unwrap().len(), 1);
        assert_eq!(page["runs"][0]["public_id"], done);
        let next = page["pagination"]["next_after"]
            .as_str()
            .expect("a next cursor")
            .to_string();
        let rest = h.get_ok(&format!("{}/runs?limit=1&after={next}", h.w())).await;
        assert_eq!(rest["runs"][0]["public_id"], pending);
        let r = h
            .get(&format!("{}/runs?limit=many", h.w()), Some(&h.agent_token()))
            .await;
        refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");
        let r = h
            .get(&format!("{}/runs?status=bogus", h.w()), Some(&h.agent_token()))
            .await;
        refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");
        let r = h
            .get(&format!("{}/runs?after=zzz", h.w()), Some(&h.agent_token()))
            .await;
        refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");
        // Newest first (`order=desc`, the console's list): the cursor continues below.
        let desc = h.get_ok(&format!("{}/runs?order=desc&limit=1", h.w())).await;
        assert_eq!(desc["runs"][0]["public_id"], pending);
        let next = desc["pagination"]["next_after"]
            .as_str()
            .expect("a next cursor")
            .to_string();
        let older = h
            .get_ok(&format!("{}/runs?order=desc&limit=1&after={next}", h.w()))
            .await;
        assert_eq!(older["runs"][0]["public_id"], done);
        let desc_done = h.get_ok(&format!("{}/runs?order=desc&status=completed", h.w())).await;
        assert_eq!(desc_done["runs"].as_array().unwrap().len(), 1);
        assert_eq!(desc_done["runs"][0]["public_id"], done);
        let asc = h.get_ok(&format!("{}/runs?order=asc", h.w())).await;
        assert_eq!(asc["runs"][0]["public_id"], done);
        let r = h
            .get(&format!("{}/runs?order=newest", h.w()), Some(&h.agent_token()))
            .await;
        refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");
        // Unknown and malformed runs, and another workspace's concealment.
        let r = h
            .get(&h.r(&uuid::Uuid::now_v7().to_string()), Some(&h.agent_token()))
            .await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");
        let r = h.get(&h.r("12"), Some(&h.agent_token())).await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");
        let outsider = member(&h, "outsider", None).await;
        let r = h.get(&h.r(&done), Some(&outsider)).await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");
        let reader = member(&h, "reader", Some(Standing::Read)).await;
        assert_eq!(h.get(&h.r(&done), Some(&reader)).await.status, StatusCode::OK);
    }
}

// ---- rounds ----------------------------------------------------------------------------------

#[tokio::test]
async fn round_keys_tools_block_and_provider_bytes() {
    let dir = tempfile::tempdir().unwrap();
    write_script(
        dir.path(),
        "rounds",
        &[
            json!({"text": "Two calls.", "tool_calls": [
                {"id": "c1", "name": "runners_list", "input": {}},
                {"id": "c2", "name": "tool_search", "input": {"query": "runner"}}
            ]}),
            json!({"text": "One more.", "tool_calls": [{"id": "c3", "name": "runners_list", "input": {}}]}),
            json!({"text": "Done."}),
        ],
    );
    for h in harnesses_with_scripts(dir.path()).await {
        let id = run_to_idle(
            &h,
            json!({"approval_mode": "bypass", "steps": [model("rounds", kernel_tools())]}),
        )
        .await;
        assert_eq!(run_status(&h, &id).await, "completed", "{}", h.dialect);
        assert_eq!(
            task_keys(&h, &id).await,
            ["s1-model-1", "r1t0", "r1t1", "r1", "r2t0", "r2"]
        );
        assert_eq!(h.get_ok(&h.r(&id)).await["run"]["deliverable_task_key"], "r2");
        let root = task(&h, &id, "s1-model-1").await;
        assert_eq!(
            root["tool_calls"],
            json!([{"call_id": "c1", "name": "runners_list", "task_key": "r1t0"},
                   {"call_id": "c2", "name": "tool_search", "task_key": "r1t1"}])
        );
        assert_eq!(task(&h, &id, "r1").await["tool_calls"][0]["task_key"], "r2t0");
        assert_eq!(task(&h, &id, "r2t0").await["declaring_task_key"], "r1");
        assert_eq!(task(&h, &id, "r1").await["after"], json!(["r1t0", "r1t1"]));

        // The tools block is byte-identical round after round.
        let s1 = request(&h, &id, "s1-model-1").await;
        let r1 = request(&h, &id, "r1").await;
        let r2 = request(&h, &id, "r2").await;
        let tools = serde_json::to_string(&s1["request_options"]["tools"]).unwrap();
        assert!(
            tools.contains("runners_list") && tools.contains("tool_search"),
            "{tools}"
        );
        assert_eq!(tools, serde_json::to_string(&r1["request_options"]["tools"]).unwrap());
        assert_eq!(tools, serde_json::to_string(&r2["request_options"]["tools"]).unwrap());
        assert_eq!(
            r2["entries"].as_array().unwrap().len(),
            6,
            "user, a, tr, tr, a, tr: {}",
            r2["entries"]
        );

        // ?format=provider: the exact body bytes, whose sha256 is body_sha256.
        for (key, sealed) in [("s1-model-1", &s1), ("r1", &r1), ("r2", &r2)] {
            let r = h
                .get(
                    &format!("{}/tasks/{key}/request?format=provider", h.r(&id)),
                    Some(&h.agent_token()),
                )
                .await;
            assert_eq!(r.status, StatusCode::OK);
            assert_eq!(r.headers.get("content-type").unwrap(), "application/json");
            assert_eq!(
                hex::encode(Sha256::digest(&r.bytes)),
                sealed["body_sha256"].as_str().unwrap(),
                "{key}"
            );
            assert_eq!(r.bytes.len() as i64, sealed["request_bytes"].as_i64().unwrap());
            assert!(sealed["attempts"].is_array());
        }
        let r = h
            .get(
                &format!("{}/tasks/r1/request?format=anthropic", h.r(&id)),
                Some(&h.agent_token()),
            )
            .await;
        refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");

        // 404 request_not_sealed: a tool row, and a round not yet sealed; not_found for no key.
        let r = h
            .get(&format!("{}/tasks/r1t0/request", h.r(&id)), Some(&h.agent_token()))
            .await;
        refused(&r, StatusCode::NOT_FOUND, "request_not_sealed");
        let (pending, _) = create(
            &h,
            json!({"approval_mode": "bypass", "steps": [model("rounds", json!({}))]}),
        )
        .await;
        let r = h
            .get(
                &format!("{}/tasks/s1-model-1/request", h.r(&pending)),
                Some(&h.agent_token()),
            )
            .await;
        refused(&r, StatusCode::NOT_FOUND, "request_not_sealed");
        let r = h
            .get(&format!("{}/tasks/r9/request", h.r(&id)), Some(&h.agent_token()))
            .await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");
    }
}

#[tokio::test]
async fn pairing_law_three_calls_two_failures() {
    let dir = tempfile::tempdir().unwrap();
    write_script(
        dir.path(),
        "pairs",
        &[
            json!({"text": "Three.", "tool_calls": [
                {"id": "a", "name": "runners_list", "input": {}},
                {"id": "b", "name": "read_file", "input": {"path": "x"}},
                {"id": "c", "name": "runners_list", "arguments": "{"}
            ]}),
            json!({"text": "Read them all."}),
        ],
    );
    for h in harnesses_with_scripts(dir.path()).await {
        let id = run_to_idle(
            &h,
            json!({"approval_mode": "bypass", "steps": [model("pairs", kernel_tools())]}),
        )
        .await;
        assert_eq!(run_status(&h, &id).await, "completed", "{}", h.dialect);
        assert_eq!(task_keys(&h, &id).await, ["s1-model-1", "r1t0", "r1t1", "r1t2", "r1"]);
        let ok = task(&h, &id, "r1t0").await;
        assert_eq!(ok["status"], "completed");
        let unknown = task(&h, &id, "r1t1").await;
        assert_eq!(unknown["status"], "failed");
        assert_eq!(unknown["error"]["key"], "unknown_tool");
        assert_eq!(unknown["tool_name"], "read_file");
        assert_eq!(unknown["tool_input"], json!({"path": "x"}));
        let malformed = task(&h, &id, "r1t2").await;
        assert_eq!(malformed["status"], "failed");
        assert_eq!(malformed["error"]["key"], "invalid_tool_arguments");
        assert_eq!(malformed["tool_input"], json!({}));

        let r1 = request(&h, &id, "r1").await;
        let results: Vec<&Value> = r1["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "tool_result")
            .collect();
        assert_eq!(results.len(), 3, "{}", r1["entries"]);
        let ids: Vec<&str> = results.iter().map(|e| e["call_id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        let names: Vec<&str> = results.iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["runners_list", "read_file", "runners_list"]);
        let out = |i: usize| results[i]["output"].as_str().unwrap().to_string();
        assert!(!out(0).contains("<tool_use_error>"), "{}", out(0));
        assert!(out(0).contains("runners"), "{}", out(0));
        assert!(results[0].get("is_error").is_none_or(|v| v == false));
        for (i, key) in [(1, "unknown_tool"), (2, "invalid_tool_arguments")] {
            assert!(out(i).starts_with("<tool_use_error>"), "{}", out(i));
            assert!(out(i).ends_with("</tool_use_error>"), "{}", out(i));
            assert!(out(i).contains(&format!("({key})")), "{}", out(i));
            assert_eq!(results[i]["is_error"], true);
        }
        // The results follow the assistant entry that made the calls, nothing in between.
        let kinds: Vec<&str> = r1["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["user", "assistant", "tool_result", "tool_result", "tool_result"]
        );
    }
}

#[tokio::test]
async fn task_read_fields_with_an_alias() {
    let dir = tempfile::tempdir().unwrap();
    write_script(
        dir.path(),
        "alias",
        &[
            json!({"text": "Listing.", "tool_calls": [
                {"id": "m1", "name": "list_machines", "input": {}},
                {"id": "m2", "name": "nope", "input": {}}
            ]}),
            json!({"text": "Listed."}),
        ],
    );
    for h in harnesses_with_scripts(dir.path()).await {
        let id = run_to_idle(
            &h,
            json!({"approval_mode": "bypass", "steps": [model("alias", json!({
                "tools": [{"name": "list_machines", "canonical": "nexus.runners.list"}]
            }))]}),
        )
        .await;
        let t = task(&h, &id, "r1t0").await;
        assert_eq!(t["key"], "r1t0");
        assert_eq!(t["kind"], "tool_task");
        assert_eq!(t["status"], "completed", "{t}");
        assert_eq!(t["tool_name"], "runners_list");
        assert_eq!(t["tool_alias"], "list_machines");
        assert_eq!(t["tool_input"], json!({}));
        assert_eq!(t["tool_call_id"], "m1");
        assert_eq!(t["declaring_task_key"], "s1-model-1");
        assert_eq!(t["generation"], 1);
        assert_eq!(t["visibility"], "collapsed");
        assert_eq!(t["on_failure"], "absorb");
        let output = t["output"].as_str().unwrap();
        let listed: Value = serde_json::from_str(output).unwrap();
        assert!(listed["runners"].is_array(), "{listed}");
        assert_eq!(t["content"], json!([{"type": "text", "text": output}]));
        assert_eq!(t["output_preview"], output.chars().take(200).collect::<String>());
        assert!(t.get("error").is_none(), "{t}");
        assert!(t["settled_at"].as_str().unwrap().ends_with('Z'));
        let bad = task(&h, &id, "r1t1").await;
        assert_eq!(bad["status"], "failed");
        assert_eq!(bad["tool_name"], "nope");
        assert!(bad.get("tool_alias").is_none());
        assert_eq!(bad["error"]["key"], "unknown_tool");
        // The continuation reads the model's own spelling; the list shows the alias.
        let r1 = request(&h, &id, "r1").await;
        assert_eq!(r1["entries"][2]["name"], "list_machines");
        let listed = h.get_ok(&format!("{}/tasks", h.r(&id))).await;
        assert_eq!(listed["tasks"][1]["tool_alias"], "list_machines");
        assert_eq!(listed["tasks"][1]["tool_name"], "runners_list");
        // Model row fields.
        let m = task(&h, &id, "s1-model-1").await;
        assert_eq!(m["model"], "scripted/alias");
        assert_eq!(m["mainline"], true);
        assert_eq!(m["prompt"], "Look around.");
        assert!(m["request_bytes"].as_i64().unwrap() > 0);
        // 404 for a key the run lacks.
        let r = h.get(&format!("{}/tasks/r7t0", h.r(&id)), Some(&h.agent_token())).await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");
    }
}

// ---- transcript, graph, events ----------------------------------------------------------------

#[tokio::test]
async fn transcript_graph_and_event_pages() {
    let dir = tempfile::tempdir().unwrap();
    write_script(
        dir.path(),
        "seen",
        &[
            json!({"text": "Calling.", "tool_calls": [{"id": "c1", "name": "runners_list", "input": {}}]}),
            json!({"text": "Seen."}),
            json!({"text": "Hidden reply."}),
        ],
    );
    for h in harnesses_with_scripts(dir.path()).await {
        let id = run_to_idle(
            &h,
            json!({"approval_mode": "bypass", "steps": [
                model("seen", kernel_tools()),
                {"model": {"prompt": "Quietly.", "model": "scripted/seen"}, "visibility": "hidden", "key": "quiet"},
            ]}),
        )
        .await;
        assert_eq!(run_status(&h, &id).await, "completed", "{}", h.dialect);
        let rows = h.get_ok(&format!("{}/transcript", h.r(&id))).await["rows"].clone();
        let shape: Vec<(String, String)> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["key"].as_str().unwrap().into(), r["role"].as_str().unwrap().into()))
            .collect();
        let expect = |v: &[(&str, &str)]| {
            v.iter()
                .map(|(k, r)| (k.to_string(), r.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            shape,
            expect(&[
                ("s1-model-1", "user"),
                ("s1-model-1", "assistant"),
                ("r1t0", "tool"),
                ("r1", "assistant")
            ])
        );
        assert_eq!(rows[2]["tool_name"], "runners_list");
        assert_eq!(rows[2]["visibility"], "collapsed");
        assert_eq!(rows[3]["text"], "Seen.");
        let all = h.get_ok(&format!("{}/transcript?include_hidden=true", h.r(&id))).await["rows"].clone();
        let hidden: Vec<&Value> = all.as_array().unwrap().iter().filter(|r| r["key"] == "quiet").collect();
        assert!(!hidden.is_empty(), "{all}");
        assert!(hidden.iter().all(|r| r["visibility"] == "hidden"));
        assert!(hidden.iter().any(|r| r["text"] == "Hidden reply."), "{all}");
        let r = h
            .get(
                &format!("{}/transcript?include_hidden=yes", h.r(&id)),
                Some(&h.agent_token()),
            )
            .await;
        refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");

        // The graph.
        let g = h.get_ok(&format!("{}/graph", h.r(&id))).await;
        let nodes = g["nodes"].as_array().unwrap();
        let ids: Vec<&str> = nodes.iter().map(|n| n["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["n0", "n1", "n2", "n3"]);
        let keys: Vec<&str> = nodes.iter().map(|n| n["key"].as_str().unwrap()).collect();
        // Creation order: the authored steps, then the round's fan and continuation.
        assert_eq!(keys, ["s1-model-1", "quiet", "r1t0", "r1"]);
        assert_eq!(nodes[2]["tool_name"], "runners_list");
        assert!(nodes[0].get("tool_name").is_none());
        assert!(nodes.iter().all(|n| n["status"] == "completed"));
        let edges: Vec<(String, String)> = g["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["from"].as_str().unwrap().into(), e["to"].as_str().unwrap().into()))
            .collect();
        assert!(edges.contains(&("n0".into(), "n2".into())), "{edges:?}");
        assert!(edges.contains(&("n2".into(), "n3".into())), "{edges:?}");
        // The waiter on the round follows its continuation (runs.md §7 step 4).
        assert!(edges.contains(&("n3".into(), "n1".into())), "{edges:?}");
        assert!(
            g["edges"]
                .as_array()
                .unwrap()
                .iter()
                .all(|e| ["after", "reads", "pairs"].contains(&e["kind"].as_str().unwrap()))
        );
        let mermaid = g["mermaid"].as_str().unwrap();
        assert!(mermaid.starts_with("flowchart TD\n"), "{mermaid}");
        assert!(
            mermaid.contains("  n2[\"r1t0 · tool_task · completed · runners_list\"]"),
            "{mermaid}"
        );
        assert!(mermaid.contains("  n0 --> n2\n"), "{mermaid}");
        assert!(mermaid.contains("  n3 --> n1"), "{mermaid}");
        assert!(mermaid.contains("classDef completed"), "{mermaid}");

        // Events: gapless from 1, next_after, limit, after.
        let page = h.get_ok(&format!("{}/events", h.r(&id))).await;
        let events = page["events"].as_array().unwrap().clone();
        assert!(events.len() > 8, "{}", events.len());
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e["sequence"], i as i64 + 1);
            assert_eq!(e["run_public_id"], id);
            assert!(e["at"].as_str().unwrap().ends_with('Z'));
            assert!(e["type"].is_string() && e["data"].is_object());
        }
        assert_eq!(page["next_after"], events.len() as i64);
        assert_eq!(events[0]["type"], "tasks_appended");
        assert_eq!(
            events[0]["data"],
            json!({"keys": ["s1-model-1", "quiet"], "origin": "author", "revision": 1})
        );
        let last = events.last().unwrap();
        assert_eq!(last["type"], "run_status_changed");
        assert_eq!(last["data"]["to"], "completed");
        let two = h.get_ok(&format!("{}/events?after=2&limit=2", h.r(&id))).await;
        let seqs: Vec<i64> = two["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["sequence"].as_i64().unwrap())
            .collect();
        assert_eq!(seqs, [3, 4]);
        assert_eq!(two["next_after"], 4);
        let end = h.get_ok(&format!("{}/events?after={}", h.r(&id), events.len())).await;
        assert_eq!(end["events"], json!([]));
        assert_eq!(end["next_after"], events.len() as i64);
        let r = h
            .get(&format!("{}/events?after=x", h.r(&id)), Some(&h.agent_token()))
            .await;
        refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");
        let r = h
            .get(&format!("{}/events?after=-1", h.r(&id)), Some(&h.agent_token()))
            .await;
        refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");
        let big = h.get_ok(&format!("{}/events?limit=100000", h.r(&id))).await;
        assert_eq!(
            big["events"].as_array().unwrap().len(),
            events.len(),
            "clamped, not refused"
        );
    }
}

#[tokio::test]
async fn sse_feed_sends_durable_events_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    write_script(
        dir.path(),
        "sse",
        &[
            json!({"text": "Calling.", "tool_calls": [{"id": "c1", "name": "runners_list", "input": {}}]}),
            json!({"text": "Done."}),
        ],
    );
    for h in harnesses_with_scripts(dir.path()).await {
        let (id, _) = create(
            &h,
            json!({"approval_mode": "bypass", "steps": [model("sse", kernel_tools())]}),
        )
        .await;
        let stream = format!("{}/events/stream", h.r(&id));
        // Open before anything runs: the backlog (one event), then live events.
        let resp = h
            .open(h.request(Method::GET, &stream, Some(&h.agent_token()), None, &[]))
            .await;
        assert_eq!(resp.status(), StatusCode::OK);
        assert!(
            resp.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream"),
            "{:?}",
            resp.headers()
        );
        let mut body = resp.into_body();
        let text = read_until(&mut body, Duration::from_secs(5), |t| !frames(t).is_empty()).await;
        let got = frames(&text);
        assert_eq!(got[0].0.as_deref(), Some("1"), "{text}");
        assert_eq!(got[0].1.as_deref(), Some("tasks_appended"));
        assert_eq!(got[0].2["sequence"], 1);
        assert_eq!(got[0].2["data"]["keys"], json!(["s1-model-1"]));
        // Live: start and drive; the open stream receives what commits.
        assert_eq!(start(&h, &id).await.status, StatusCode::OK);
        h.kernel.runs().work_until_idle(50).await.unwrap();
        let total = h.get_ok(&format!("{}/events", h.r(&id))).await["events"]
            .as_array()
            .unwrap()
            .len();
        let more = read_until(&mut body, Duration::from_secs(5), |t| {
            frames(&format!("{text}{t}")).len() >= total
        })
        .await;
        let text = format!("{text}{more}");
        let got = frames(&text);
        assert_eq!(got.len(), total, "{text}");
        for (i, (fid, event, data)) in got.iter().enumerate() {
            assert_eq!(fid.as_deref(), Some((i + 1).to_string().as_str()));
            assert_eq!(event.as_deref(), data["type"].as_str());
            assert_eq!(data["sequence"], i as i64 + 1);
        }
        assert_eq!(got.last().unwrap().2["data"]["to"], "completed");
        drop(body);

        // Resume with Last-Event-ID: earlier events are skipped.
        let resp = h
            .open(h.request(
                Method::GET,
                &stream,
                Some(&h.agent_token()),
                None,
                &[("last-event-id", "3")],
            ))
            .await;
        assert_eq!(resp.status(), StatusCode::OK);
        let mut body = resp.into_body();
        let text = read_until(&mut body, Duration::from_secs(5), |t| frames(t).len() >= total - 3).await;
        let got = frames(&text);
        assert_eq!(got.len(), total - 3, "{text}");
        assert_eq!(got[0].0.as_deref(), Some("4"));
        // And with ?after=.
        let resp = h
            .open(h.request(
                Method::GET,
                &format!("{stream}?after={}", total - 1),
                Some(&h.agent_token()),
                None,
                &[],
            ))
            .await;
        let mut body = resp.into_body();
        let text = read_until(&mut body, Duration::from_secs(5), |t| !frames(t).is_empty()).await;
        let got = frames(&text);
        assert_eq!(got.len(), 1, "{text}");
        assert_eq!(got[0].0, Some(total.to_string()));
        // Bad cursors and concealment.
        let resp = h
            .open(h.request(
                Method::GET,
                &stream,
                Some(&h.agent_token()),
                None,
                &[("last-event-id", "soon")],
            ))
            .await;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
        let r = h
            .send_with(
                Method::GET,
                &stream,
                Some(&h.agent_token()),
                None,
                &[("last-event-id", "-2")],
            )
            .await;
        refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");
        let r = h.get(&format!("{stream}?after=x"), Some(&h.agent_token())).await;
        refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");
        let r = h
            .get(
                &format!("{}/runs/{}/events/stream", h.w(), uuid::Uuid::now_v7()),
                Some(&h.agent_token()),
            )
            .await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");
        let r = h.get(&stream, None).await;
        refused(&r, StatusCode::UNAUTHORIZED, "unauthorized");
    }
}

// ---- a damaged row ---------------------------------------------------------------------------

/// A run whose stored row does not read (here an approval mode no variant has, written past
/// the CHECK constraint) answers the reads that need it with `500 corrupt_row`, a code the
/// document lists, on both engines: never a default mode, never an unlisted `internal_error`.
#[tokio::test]
async fn a_run_whose_stored_row_does_not_read_answers_corrupt_row() {
    let dir = tempfile::tempdir().unwrap();
    quiet(dir.path());
    for h in harnesses_with_scripts(dir.path()).await {
        let d = h.dialect;
        let (id, _) = create(
            &h,
            json!({"approval_mode": "ask", "steps": [model("quiet", json!({}))]}),
        )
        .await;
        h._store
            .execute_unchecked(
                &["runs"],
                &format!("UPDATE runs SET approval_mode = 'bogus' WHERE public_id = '{id}'"),
            )
            .await;
        for path in [h.r(&id), format!("{}/runs", h.w())] {
            let r = h.get(&path, Some(&h.agent_token())).await;
            let e = refused(&r, StatusCode::INTERNAL_SERVER_ERROR, "corrupt_row");
            assert_eq!(e["message"], nexus_core::codes::Code::CorruptRow.doc(), "{path} on {d}");
        }
        h._store
            .execute_unchecked(
                &["runs"],
                &format!("UPDATE runs SET approval_mode = 'ask' WHERE public_id = '{id}'"),
            )
            .await;
        assert_eq!(h.get_ok(&h.r(&id)).await["run"]["approval_mode"], "ask", "{d}");
    }
}
