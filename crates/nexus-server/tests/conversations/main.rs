//! Conversations and their inputs over HTTP on both engines (runs.md §12): create (with an
//! `Idempotency-Key`), list with the archive filter and paging, read, children, archive /
//! unarchive of a whole tree, `PUT C/default_runner`; inputs with every delivery refusal, the
//! answerer, approval and tool checks, attachments, the 64-input bound, listing and deleting
//! (`inputs.rs`); the feed and what read standing may do (`feed_and_standing.rs`); the live
//! feed (`stream.rs`); turns and steering (`turns.rs`); turns that do not answer — failed at
//! birth, canceled, abandoned (`failed_turns.rs`); children and the conversation tools
//! (`children.rs`); the history routes, search and read (`search.rs`).

mod children;
#[path = "../common/mod.rs"]
mod common;
mod failed_turns;
mod feed_and_standing;
mod inputs;
mod search;
mod stream;
mod turns;

use axum::http::{Method, StatusCode};
use common::{Harness, Reply, harnesses};
use nexus_store::NewConversation;
use nexus_store::prelude::*;
use serde_json::{Value, json};

pub(crate) fn ok(r: &Reply, status: StatusCode) -> Value {
    assert_eq!(r.status, status, "{}", String::from_utf8_lossy(&r.bytes));
    r.json()
}

pub(crate) fn refused(r: &Reply, status: StatusCode, code: &str) -> Value {
    assert_eq!(
        r.status,
        status,
        "want {status} {code}: {}",
        String::from_utf8_lossy(&r.bytes)
    );
    assert_eq!(r.code(), code, "{}", String::from_utf8_lossy(&r.bytes));
    r.json()["error"].clone()
}

pub(crate) fn reason(r: &Reply, reason: &str, pointer: &str) {
    let e = refused(r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert_eq!(e["reason"], reason, "{e}");
    assert_eq!(e["path"], pointer, "{e}");
}

pub(crate) fn cs(h: &Harness) -> String {
    format!("{}/conversations", h.w())
}

pub(crate) fn c(h: &Harness, id: &str) -> String {
    format!("{}/conversations/{id}", h.w())
}

pub(crate) async fn create(h: &Harness, token: &str, conversation: Value) -> Reply {
    h.json(
        Method::POST,
        &cs(h),
        Some(token),
        &json!({ "conversation": conversation }),
    )
    .await
}

pub(crate) async fn new_conversation(h: &Harness, token: &str, conversation: Value) -> String {
    let made = ok(&create(h, token, conversation).await, StatusCode::CREATED);
    made["conversation"]["public_id"].as_str().unwrap().to_string()
}

pub(crate) async fn input(h: &Harness, token: &str, conv: &str, input: Value) -> Reply {
    h.json(
        Method::POST,
        &format!("{}/inputs", c(h, conv)),
        Some(token),
        &json!({ "input": input }),
    )
    .await
}

pub(crate) fn ids(list: &Value, key: &str) -> Vec<String> {
    list[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["public_id"].as_str().unwrap().to_string())
        .collect()
}

/// Inserts a child conversation under `parent` through the store (spawn is not built yet).
pub(crate) async fn child_of(h: &Harness, parent: &str, label: &str) -> String {
    let store = &h.kernel.store;
    let parent = store
        .conversation_by_public_id(parent.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    let mut tx = store.begin().await.unwrap();
    let child = tx
        .insert_conversation(NewConversation {
            public_id: uuid::Uuid::now_v7(),
            workspace_id: parent.workspace_id,
            created_by_id: parent.created_by_id,
            answering_member_id: parent.answering_member_id,
            default_runner_id: None,
            title: None,
            parent_id: Some(parent.id),
            spawn_task_id: None,
            label: Some(label.into()),
            reply_route: None,
            created_at: parent.created_at,
        })
        .await
        .unwrap();
    tx.commit().await.unwrap();
    child.public_id.to_string()
}

#[tokio::test]
async fn create_read_and_idempotency() {
    for h in harnesses().await {
        let agent = h.agent_token();
        let human = h.human_token();
        let agent_id = h.boot["agent"]["public_id"].as_str().unwrap().to_string();
        let human_id = h.boot["human"]["public_id"].as_str().unwrap().to_string();
        let runner_id = h.boot["runner"]["executor_public_id"].as_str().unwrap().to_string();

        let missing = h.json(Method::POST, &cs(&h), Some(&agent), &json!({})).await;
        refused(&missing, StatusCode::BAD_REQUEST, "parameter_missing");
        reason(
            &create(&h, &agent, json!({"title": 7})).await,
            "invalid",
            "/conversation/title",
        );

        // The answerer defaults to the creator.
        let made = ok(
            &create(&h, &agent, json!({"title": "Plans"})).await,
            StatusCode::CREATED,
        );
        let conv = &made["conversation"];
        assert_eq!(conv["title"], "Plans", "{}", h.dialect);
        assert_eq!(conv["answering_user_public_id"], agent_id.as_str());
        assert_eq!(conv["created_by_public_id"], agent_id.as_str());
        assert_eq!(conv["default_runner_executor_public_id"], Value::Null);
        assert_eq!(conv["parent"], Value::Null);
        assert_eq!(conv["archived"], false);
        let id = conv["public_id"].as_str().unwrap();
        let read = ok(&h.get(&c(&h, id), Some(&human)).await, StatusCode::OK);
        assert_eq!(read, made);

        // An explicit answerer and runner.
        let named = ok(
            &create(
                &h,
                &human,
                json!({"answering_user_public_id": agent_id, "default_runner_executor_public_id": runner_id}),
            )
            .await,
            StatusCode::CREATED,
        );
        assert_eq!(named["conversation"]["answering_user_public_id"], agent_id.as_str());
        assert_eq!(named["conversation"]["created_by_public_id"], human_id.as_str());
        assert_eq!(
            named["conversation"]["default_runner_executor_public_id"],
            runner_id.as_str()
        );

        let stranger = uuid::Uuid::now_v7().to_string();
        for bad in [json!(stranger), json!("not-a-uuid"), json!(7)] {
            let r = create(&h, &agent, json!({"answering_user_public_id": bad})).await;
            refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "answerer_not_eligible");
        }
        let r = create(&h, &agent, json!({"default_runner_executor_public_id": stranger})).await;
        refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "runner_not_eligible");
        // The answerer is checked before the runner.
        let r = create(
            &h,
            &agent,
            json!({"answering_user_public_id": stranger, "default_runner_executor_public_id": stranger}),
        )
        .await;
        refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "answerer_not_eligible");

        // Idempotency: a repeat replays, another body with the key is refused.
        let body = json!({"conversation": {"title": "Once"}});
        let key = [("idempotency-key", "conv-1")];
        let first = h
            .send_with(Method::POST, &cs(&h), Some(&agent), Some(&body), &key)
            .await;
        let first = ok(&first, StatusCode::CREATED);
        let again = h
            .send_with(Method::POST, &cs(&h), Some(&agent), Some(&body), &key)
            .await;
        assert_eq!(again.headers["idempotency-replayed"], "true");
        let again = ok(&again, StatusCode::OK);
        assert_eq!(again["replayed"], true);
        assert_eq!(again["conversation"], first["conversation"]);
        let other = json!({"conversation": {"title": "Twice"}});
        let r = h
            .send_with(Method::POST, &cs(&h), Some(&agent), Some(&other), &key)
            .await;
        refused(&r, StatusCode::CONFLICT, "idempotency_envelope_mismatch");
        let r = h
            .send_with(
                Method::POST,
                &cs(&h),
                Some(&agent),
                Some(&body),
                &[("idempotency-key", "")],
            )
            .await;
        refused(&r, StatusCode::BAD_REQUEST, "parameter_invalid");

        // Unknown and malformed ids, another workspace.
        refused(
            &h.get(&c(&h, &stranger), Some(&agent)).await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
        refused(
            &h.get(&c(&h, "nope"), Some(&agent)).await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
        let elsewhere = format!("/agent_api/v1/workspaces/{stranger}/conversations/{id}");
        refused(
            &h.get(&elsewhere, Some(&agent)).await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
        refused(&h.get(&c(&h, id), None).await, StatusCode::UNAUTHORIZED, "unauthorized");
    }
}

#[tokio::test]
async fn list_children_archive_and_default_runner() {
    for h in harnesses().await {
        let agent = h.agent_token();
        let a = new_conversation(&h, &agent, json!({"title": "a"})).await;
        let b = new_conversation(&h, &agent, json!({"title": "b"})).await;
        let kid = child_of(&h, &a, "scout").await;

        // The list shows top-level conversations only, oldest first, paged.
        let all = ok(&h.get(&cs(&h), Some(&agent)).await, StatusCode::OK);
        assert_eq!(ids(&all, "conversations"), vec![a.clone(), b.clone()], "{}", h.dialect);
        assert_eq!(all["pagination"]["next_after"], Value::Null);
        let page = ok(
            &h.get(&format!("{}?limit=1", cs(&h)), Some(&agent)).await,
            StatusCode::OK,
        );
        assert_eq!(ids(&page, "conversations"), vec![a.clone()]);
        let next = page["pagination"]["next_after"].as_str().unwrap();
        let rest = ok(
            &h.get(&format!("{}?limit=1&after={next}", cs(&h)), Some(&agent)).await,
            StatusCode::OK,
        );
        assert_eq!(ids(&rest, "conversations"), vec![b.clone()]);
        let bad = h.get(&format!("{}?archived=sometimes", cs(&h)), Some(&agent)).await;
        refused(&bad, StatusCode::BAD_REQUEST, "parameter_invalid");

        // Children carry their parent.
        let kids = ok(
            &h.get(&format!("{}/children", c(&h, &a)), Some(&agent)).await,
            StatusCode::OK,
        );
        assert_eq!(ids(&kids, "conversations"), vec![kid.clone()]);
        let parent = &kids["conversations"][0]["parent"];
        assert_eq!(
            parent,
            &json!({"public_id": a, "spawn_task_key": null, "label": "scout"})
        );
        let none = ok(
            &h.get(&format!("{}/children", c(&h, &b)), Some(&agent)).await,
            StatusCode::OK,
        );
        assert_eq!(none["conversations"], json!([]));
        let stranger = uuid::Uuid::now_v7().to_string();
        let r = h.get(&format!("{}/children", c(&h, &stranger)), Some(&agent)).await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");

        // A child follows its parent; archiving the parent archives the child.
        let r = h
            .json(
                Method::POST,
                &format!("{}/archive", c(&h, &kid)),
                Some(&agent),
                &json!({}),
            )
            .await;
        refused(&r, StatusCode::CONFLICT, "subagent_follows_parent");
        let r = h
            .json(
                Method::POST,
                &format!("{}/unarchive", c(&h, &kid)),
                Some(&agent),
                &json!({}),
            )
            .await;
        refused(&r, StatusCode::CONFLICT, "subagent_follows_parent");
        let archived = ok(
            &h.json(
                Method::POST,
                &format!("{}/archive", c(&h, &a)),
                Some(&agent),
                &json!({}),
            )
            .await,
            StatusCode::OK,
        );
        assert_eq!(archived["conversation"]["archived"], true);
        assert!(archived["conversation"]["archived_at"].is_string());
        let child = ok(&h.get(&c(&h, &kid), Some(&agent)).await, StatusCode::OK);
        assert_eq!(child["conversation"]["archived"], true, "{}", h.dialect);
        let live = ok(&h.get(&cs(&h), Some(&agent)).await, StatusCode::OK);
        assert_eq!(ids(&live, "conversations"), vec![b.clone()]);
        let only = ok(
            &h.get(&format!("{}?archived=only", cs(&h)), Some(&agent)).await,
            StatusCode::OK,
        );
        assert_eq!(ids(&only, "conversations"), vec![a.clone()]);
        let both = ok(
            &h.get(&format!("{}?archived=include", cs(&h)), Some(&agent)).await,
            StatusCode::OK,
        );
        assert_eq!(ids(&both, "conversations"), vec![a.clone(), b.clone()]);
        let back = ok(
            &h.json(
                Method::POST,
                &format!("{}/unarchive", c(&h, &a)),
                Some(&agent),
                &json!({}),
            )
            .await,
            StatusCode::OK,
        );
        assert_eq!(back["conversation"]["archived"], false);
        let child = ok(&h.get(&c(&h, &kid), Some(&agent)).await, StatusCode::OK);
        assert_eq!(child["conversation"]["archived"], false);

        // PUT C/default_runner.
        let runner_id = h.boot["runner"]["executor_public_id"].as_str().unwrap().to_string();
        let url = format!("{}/default_runner", c(&h, &b));
        let put = |body: Value| {
            let url = url.clone();
            let agent = agent.clone();
            let h = &h;
            async move { h.json(Method::PUT, &url, Some(&agent), &body).await }
        };
        refused(&put(json!({})).await, StatusCode::BAD_REQUEST, "parameter_missing");
        refused(
            &put(json!({"default_runner": {"executor_public_id": 7}})).await,
            StatusCode::BAD_REQUEST,
            "parameter_invalid",
        );
        refused(
            &put(json!({"default_runner": {"executor_public_id": stranger}})).await,
            StatusCode::NOT_FOUND,
            "runner_not_found",
        );
        let set = ok(
            &put(json!({"default_runner": {"executor_public_id": runner_id}})).await,
            StatusCode::OK,
        );
        assert_eq!(
            set["conversation"]["default_runner_executor_public_id"],
            runner_id.as_str()
        );
        let cleared = ok(
            &put(json!({"default_runner": {"executor_public_id": null}})).await,
            StatusCode::OK,
        );
        assert_eq!(
            cleared["conversation"]["default_runner_executor_public_id"],
            Value::Null
        );
        // A revoked runner still exists but is no longer eligible.
        h.kernel.admin().revoke_executor(&runner_id).await.unwrap();
        refused(
            &put(json!({"default_runner": {"executor_public_id": runner_id}})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "runner_not_eligible",
        );
    }
}
