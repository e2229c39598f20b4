//! `POST W/runs/{run}/tasks/{key}/resolution` over HTTP on both engines (runs.md §6): a
//! model-issued `ask` answered by a person, its refusals in order, the idle second answer and
//! the answer read by the continuation as the `ask` call's result.

mod common;

use axum::http::{Method, StatusCode};
use common::{Harness, Reply, harnesses_with_scripts, write_script};
use serde_json::{Value, json};

fn refused(r: &Reply, status: StatusCode, code: &str) {
    assert_eq!(r.status, status, "{}", String::from_utf8_lossy(&r.bytes));
    assert_eq!(r.code(), code);
}

async fn resolve(h: &Harness, run: &str, key: &str, token: &str, body: Value) -> Reply {
    h.json(
        Method::POST,
        &format!("{}/tasks/{key}/resolution", h.r(run)),
        Some(token),
        &body,
    )
    .await
}

#[tokio::test]
async fn an_ask_is_answered_through_the_resolution_route() {
    let dir = tempfile::tempdir().unwrap();
    for h in harnesses_with_scripts(dir.path()).await {
        write_script(
            dir.path(),
            "ask",
            &[
                json!({"text": "Asking.", "tool_calls": [{"id": "c1", "name": "ask", "input": {"prompt": "Proceed?", "options": ["yes", "no"]}}]}),
                json!({"text": "Thanks."}),
            ],
        );
        let r = h
            .json(
                Method::POST,
                &format!("{}/runs", h.w()),
                Some(&h.agent_token()),
                &json!({"run": {"approval_mode": "bypass", "steps": [{"model": {
                    "prompt": "Go.", "model": "scripted/ask", "kernel_tools": ["nexus.human.ask"]}}]}}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&r.bytes));
        let id = r.json()["run"]["public_id"].as_str().unwrap().to_string();
        let s = h
            .json(
                Method::POST,
                &format!("{}/start", h.r(&id)),
                Some(&h.agent_token()),
                &json!({}),
            )
            .await;
        assert_eq!(s.status, StatusCode::OK);
        h.kernel.runs().work_until_idle(50).await.unwrap();

        let t = h
            .get(&format!("{}/tasks/r1t0-ask-1", h.r(&id)), Some(&h.agent_token()))
            .await;
        assert_eq!(t.status, StatusCode::OK);
        assert_eq!(t.json()["task"]["status"], "awaiting_input");

        let human = h.human_token();
        refused(
            &resolve(&h, &id, "nope", &human, json!({"content": "yes"})).await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
        refused(
            &resolve(&h, &id, "r1t0", &human, json!({"content": "yes"})).await,
            StatusCode::CONFLICT,
            "not_resolvable",
        );
        refused(
            &resolve(&h, &id, "r1t0-ask-1", &human, json!({"outcome": "done"})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_outcome",
        );
        refused(
            &resolve(&h, &id, "r1t0-ask-1", &human, json!({"content": [{"type": "audio"}]})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "unsupported_content_kind",
        );
        refused(
            &resolve(&h, &id, "r1t0-ask-1", &human, json!({"content": "a\u{0}"})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "result_unstorable",
        );
        // A `null` outcome is the same as none: the await completes (runs.md §6).
        let ok = resolve(
            &h,
            &id,
            "r1t0-ask-1",
            &human,
            json!({"content": "yes", "outcome": null}),
        )
        .await;
        assert_eq!(ok.status, StatusCode::OK, "{}", String::from_utf8_lossy(&ok.bytes));
        assert_eq!(ok.json()["task"]["status"], "completed");
        let idle = resolve(&h, &id, "r1t0-ask-1", &human, json!({"content": "no"})).await;
        assert_eq!(idle.status, StatusCode::OK);
        assert_eq!(idle.json()["idle"], true);
        // The body's grammar comes before the await's state: a malformed answer to a settled
        // await is refused, never idle.
        refused(
            &resolve(&h, &id, "r1t0-ask-1", &human, json!({"content": [{"type": "audio"}]})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "unsupported_content_kind",
        );
        refused(
            &resolve(&h, &id, "r1t0-ask-1", &human, json!({"content": null})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_content",
        );
        refused(
            &resolve(&h, &id, "r1t0-ask-1", &human, json!({"resolution_token": 5})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_failed",
        );

        h.kernel.runs().work_until_idle(50).await.unwrap();
        let req = h
            .get(&format!("{}/tasks/r1/request", h.r(&id)), Some(&h.agent_token()))
            .await;
        assert_eq!(req.status, StatusCode::OK);
        let entries = req.json()["request"]["entries"].clone();
        let result = entries
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["type"] == "tool_result" && e["call_id"] == "c1")
            .cloned()
            .unwrap_or_else(|| panic!("no result for c1: {entries}"));
        assert_eq!(result["output"], "yes");
        let run = h.get(&h.r(&id), Some(&h.agent_token())).await;
        assert_eq!(run.json()["run"]["status"], "completed");
    }
}
