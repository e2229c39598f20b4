//! A keyed claim repeated after its answer was lost (executor.md §7;
//! docs/decisions/108-claim-idempotency-key.md), on both engines: the claimant presenting the same
//! `Idempotency-Key` gets the standing grant again, with no second `task_claimed`; another key, no
//! key, a settled row and a lapsed claim are refused as before.
//!
//! The fault run found the case: a node killed after a claim committed but before it answered
//! left the row claimed by nobody until its deadline, and the run ended `needs_attention`.

mod common;

use axum::http::{Method, StatusCode};
use common::{Harness, Reply, harnesses};
use nexus_core::registry::EffectProfile;
use nexus_store::Announcement;
use nexus_store::prelude::*;
use serde_json::{Value, json};
use uuid::Uuid;

fn runner_id(h: &Harness) -> String {
    h.boot["runner"]["executor_public_id"].as_str().unwrap().to_string()
}

/// The runner serves `read` (READ, announced 60 s).
async fn announce_read(h: &Harness) {
    let id = Uuid::parse_str(&runner_id(h)).unwrap();
    let runner = h.kernel.store.executor_by_public_id(id).await.unwrap().unwrap();
    let tools = json!([{"name": "read", "effect_profile": EffectProfile::READ.to_json(), "timeout_ms": 60000,
                        "description": "Read a file.", "input_schema": {"type": "object"}}]);
    let announcement = Announcement {
        served_tools: tools.to_string(),
        environment: "{}".into(),
        served_documents: "[]".into(),
    };
    let now = nexus_kernel::time::now_ms();
    h.kernel
        .store
        .put_announcement(runner.id, &announcement, now)
        .await
        .unwrap();
}

/// A started run of one `read` step `t` routed to the runner.
async fn read_run(h: &Harness) -> String {
    let step = json!({"key": "t", "tool": {"name": "read", "input": {"path": "x"},
                      "route": {"kind": "runner", "runner_executor_public_id": runner_id(h)}}});
    h.start_run(&h.human_token(), "bypass", Value::Null, json!([step]))
        .await
}

fn item(run: &str, verb: &str) -> String {
    format!("/agent_api/v1/executor/inbox/{run}/t/{verb}")
}

async fn claim(h: &Harness, run: &str, key: Option<&str>) -> Reply {
    let headers: Vec<(&str, &str)> = key.map(|k| ("idempotency-key", k)).into_iter().collect();
    h.send_with(
        Method::POST,
        &item(run, "claim"),
        Some(&h.runner_token()),
        None,
        &headers,
    )
    .await
}

fn ok(r: &Reply) -> Value {
    assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
    r.json()
}

fn refused(r: &Reply, status: StatusCode, code: &str) {
    assert_eq!(r.status, status, "{}", String::from_utf8_lossy(&r.bytes));
    assert_eq!(r.code(), code, "{}", r.json());
}

async fn claimed_events(h: &Harness, run: &str) -> usize {
    let r = h
        .get(&format!("{}/events?limit=500", h.r(run)), Some(&h.human_token()))
        .await;
    let events = ok(&r)["events"].as_array().cloned().unwrap_or_default();
    events.iter().filter(|e| e["type"] == "task_claimed").count()
}

#[tokio::test]
async fn a_claim_whose_answer_was_lost_is_answered_again_under_its_key() {
    for h in harnesses().await {
        announce_read(&h).await;
        let run = read_run(&h).await;
        // The first answer is lost on the way back: the row is claimed, the claimant never
        // learned its token.
        let first = ok(&claim(&h, &run, Some("key-one")).await);
        let token = first["claim"]["claim_token"].as_str().unwrap().to_string();
        assert_eq!(Uuid::parse_str(&token).unwrap().get_version_num(), 4, "{}", h.dialect);
        // The claimant repeats its claim: the same grant, no change, no second event.
        let again = ok(&claim(&h, &run, Some("key-one")).await);
        assert_eq!(again["claim"], first["claim"], "{}", h.dialect);
        assert_eq!(again["task"]["claimed"], true);
        assert_eq!(claimed_events(&h, &run).await, 1, "{}", h.dialect);
        // Another claimant of the same address (another key, or none) still loses.
        refused(
            &claim(&h, &run, Some("key-two")).await,
            StatusCode::CONFLICT,
            "already_claimed",
        );
        refused(&claim(&h, &run, None).await, StatusCode::CONFLICT, "already_claimed");
        // The key's grammar is errors-and-auth.md §6's.
        refused(
            &claim(&h, &run, Some("two words")).await,
            StatusCode::BAD_REQUEST,
            "parameter_invalid",
        );
        // The recovered token commits; a repeat after the settle is refused.
        let body = json!({"claim_token": token, "content": "done"});
        let committed = h
            .json(Method::POST, &item(&run, "commit"), Some(&h.runner_token()), &body)
            .await;
        assert_eq!(ok(&committed)["task"]["status"], "completed", "{}", h.dialect);
        refused(
            &claim(&h, &run, Some("key-one")).await,
            StatusCode::CONFLICT,
            "task_not_claimable",
        );
        // The token is bound to its row: the same key on another row draws another token.
        let other = read_run(&h).await;
        let second = ok(&claim(&h, &other, Some("key-one")).await);
        assert_ne!(second["claim"]["claim_token"], first["claim"]["claim_token"]);
    }
}

#[tokio::test]
async fn a_lapsed_keyed_claim_is_never_granted_again() {
    for h in harnesses().await {
        announce_read(&h).await;
        let run = read_run(&h).await;
        let first = ok(&claim(&h, &run, Some("key-one")).await);
        let token = first["claim"]["claim_token"].as_str().unwrap();
        let body = json!({"claim_token": token, "timeout_ms": 1});
        let extended = h
            .json(Method::POST, &item(&run, "extend"), Some(&h.runner_token()), &body)
            .await;
        ok(&extended);
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        refused(
            &claim(&h, &run, Some("key-one")).await,
            StatusCode::CONFLICT,
            "already_claimed",
        );
        assert_eq!(claimed_events(&h, &run).await, 1, "{}", h.dialect);
    }
}
