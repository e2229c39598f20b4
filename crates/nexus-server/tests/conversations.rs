//! Conversations and their inputs over HTTP on both engines (runs.md §12): create (with an
//! `Idempotency-Key`), list with the archive filter and paging, read, children, archive /
//! unarchive of a whole tree, `PUT C/default_runner`; inputs with every delivery refusal, the
//! answerer, approval and tool checks, attachments, the 64-input bound, listing and deleting;
//! the feed; and what read standing may do.

mod common;

use axum::http::{Method, StatusCode};
use common::{Harness, Reply, harnesses};
use nexus_store::{Engine, NewConversation, NewUpload, Standing};
use serde_json::{Value, json};

fn ok(r: &Reply, status: StatusCode) -> Value {
    assert_eq!(r.status, status, "{}", String::from_utf8_lossy(&r.bytes));
    r.json()
}

fn refused(r: &Reply, status: StatusCode, code: &str) -> Value {
    assert_eq!(
        r.status,
        status,
        "want {status} {code}: {}",
        String::from_utf8_lossy(&r.bytes)
    );
    assert_eq!(r.code(), code, "{}", String::from_utf8_lossy(&r.bytes));
    r.json()["error"].clone()
}

fn reason(r: &Reply, reason: &str, pointer: &str) {
    let e = refused(r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert_eq!(e["reason"], reason, "{e}");
    assert_eq!(e["path"], pointer, "{e}");
}

fn cs(h: &Harness) -> String {
    format!("{}/conversations", h.w())
}

fn c(h: &Harness, id: &str) -> String {
    format!("{}/conversations/{id}", h.w())
}

async fn create(h: &Harness, token: &str, conversation: Value) -> Reply {
    h.json(
        Method::POST,
        &cs(h),
        Some(token),
        &json!({ "conversation": conversation }),
    )
    .await
}

async fn new_conversation(h: &Harness, token: &str, conversation: Value) -> String {
    let made = ok(&create(h, token, conversation).await, StatusCode::CREATED);
    made["conversation"]["public_id"].as_str().unwrap().to_string()
}

async fn input(h: &Harness, token: &str, conv: &str, input: Value) -> Reply {
    h.json(
        Method::POST,
        &format!("{}/inputs", c(h, conv)),
        Some(token),
        &json!({ "input": input }),
    )
    .await
}

fn ids(list: &Value, key: &str) -> Vec<String> {
    list[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["public_id"].as_str().unwrap().to_string())
        .collect()
}

/// Inserts a child conversation under `parent` through the store (spawn is not built yet).
async fn child_of(h: &Harness, parent: &str, label: &str) -> String {
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
        h.kernel.revoke_executor(&runner_id).await.unwrap();
        refused(
            &put(json!({"default_runner": {"executor_public_id": runner_id}})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "runner_not_eligible",
        );
    }
}

#[tokio::test]
async fn inputs_queue_with_their_refusals() {
    for h in harnesses().await {
        let agent = h.agent_token();
        let agent_id = h.boot["agent"]["public_id"].as_str().unwrap().to_string();
        let conv = new_conversation(&h, &agent, json!({})).await;

        let missing = h
            .json(
                Method::POST,
                &format!("{}/inputs", c(&h, &conv)),
                Some(&agent),
                &json!({}),
            )
            .await;
        refused(&missing, StatusCode::BAD_REQUEST, "parameter_missing");
        reason(
            &input(&h, &agent, &conv, json!({})).await,
            "content_required",
            "/input/content",
        );
        reason(
            &input(&h, &agent, &conv, json!({"content": 3})).await,
            "invalid",
            "/input/content",
        );
        reason(
            &input(&h, &agent, &conv, json!({"content": "x", "delivery_mode": "shout"})).await,
            "invalid",
            "/input/delivery_mode",
        );
        reason(
            &input(&h, &agent, &conv, json!({"content": "x", "model": "no model"})).await,
            "invalid",
            "/input/model",
        );
        reason(
            &input(&h, &agent, &conv, json!({"content": "x", "tool_names": "wait"})).await,
            "invalid",
            "/input/tool_names",
        );
        reason(
            &input(&h, &agent, &conv, json!({"content": "x", "approval_mode": "never"})).await,
            "invalid",
            "/input/approval_mode",
        );

        // The four delivery refusals, and the time grammar.
        let soon = nexus_kernel::time::iso(nexus_kernel::time::now_ms() + 300_000);
        let r = input(
            &h,
            &agent,
            &conv,
            json!({"content": "x", "deliver_at": soon, "deliver_in": "5m"}),
        )
        .await;
        refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "deliver_at_ambiguous");
        let r = input(
            &h,
            &agent,
            &conv,
            json!({"content": "x", "deliver_in": "5m", "delivery_mode": "steer"}),
        )
        .await;
        refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "deliver_at_not_steerable");
        let past = nexus_kernel::time::iso(nexus_kernel::time::now_ms() - 180_000);
        let r = input(&h, &agent, &conv, json!({"content": "x", "deliver_at": past})).await;
        refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "deliver_at_in_past");
        let r = input(
            &h,
            &agent,
            &conv,
            json!({"content": "x", "deliver_at": "2999-01-01T00:00:00+02:00"}),
        )
        .await;
        refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "deliver_at_too_far");
        let r = input(&h, &agent, &conv, json!({"content": "x", "deliver_in": "4000d"})).await;
        refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "deliver_at_too_far");
        for bad in ["5y", "m", "-5m", "5 m"] {
            let r = input(&h, &agent, &conv, json!({"content": "x", "deliver_in": bad})).await;
            reason(&r, "invalid", "/input/deliver_in");
        }
        let r = input(
            &h,
            &agent,
            &conv,
            json!({"content": "x", "deliver_at": "2030-01-01T00:00:00"}),
        )
        .await;
        reason(&r, "invalid", "/input/deliver_at");

        // `to` names the answerer, by id or handle.
        let r = input(&h, &agent, &conv, json!({"content": "x", "to": "someone-else"})).await;
        refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "answerer_not_eligible");

        // A queued input: pending, with its fields; a scheduled one keeps its time.
        let made = ok(
            &input(
                &h,
                &agent,
                &conv,
                json!({"content": "hello", "to": agent_id, "model": "scripted/echo", "approval_mode": "rules"}),
            )
            .await,
            StatusCode::CREATED,
        );
        let first = &made["input"];
        assert_eq!(first["state"], "pending", "{}", h.dialect);
        assert_eq!(first["kind"], "user");
        assert_eq!(first["delivery_mode"], "queue");
        assert_eq!(first["content"], "hello");
        assert_eq!(first["model"], "scripted/echo");
        assert_eq!(first["approval_mode"], "rules");
        assert_eq!(first["attachments"], json!([]));
        assert_eq!(first["deliver_at"], Value::Null);
        let later = ok(
            &input(
                &h,
                &agent,
                &conv,
                json!({"content": "later", "deliver_at": "2030-01-01T10:00:00+02:00"}),
            )
            .await,
            StatusCode::CREATED,
        );
        assert_eq!(later["input"]["deliver_at"], "2030-01-01T08:00:00Z");
        let steer = ok(
            &input(&h, &agent, &conv, json!({"content": "now", "delivery_mode": "steer"})).await,
            StatusCode::CREATED,
        );
        assert_eq!(steer["input"]["delivery_mode"], "steer");
        assert_eq!(steer["input"]["state"], "pending");

        // Idempotency on inputs.
        let url = format!("{}/inputs", c(&h, &conv));
        let body = json!({"input": {"content": "once"}});
        let key = [("idempotency-key", "input-1")];
        let one = ok(
            &h.send_with(Method::POST, &url, Some(&agent), Some(&body), &key).await,
            StatusCode::CREATED,
        );
        let two = ok(
            &h.send_with(Method::POST, &url, Some(&agent), Some(&body), &key).await,
            StatusCode::OK,
        );
        assert_eq!(two["input"], one["input"]);
        let other = json!({"input": {"content": "twice"}});
        let r = h.send_with(Method::POST, &url, Some(&agent), Some(&other), &key).await;
        refused(&r, StatusCode::CONFLICT, "idempotency_envelope_mismatch");

        // List, page, delete.
        let listed = ok(&h.get(&url, Some(&agent)).await, StatusCode::OK);
        assert_eq!(listed["inputs"].as_array().unwrap().len(), 4, "{}", h.dialect);
        let page = ok(&h.get(&format!("{url}?limit=2"), Some(&agent)).await, StatusCode::OK);
        assert_eq!(page["inputs"].as_array().unwrap().len(), 2);
        assert!(page["pagination"]["next_after"].is_string());
        let first_id = first["public_id"].as_str().unwrap();
        let gone = ok(
            &h.send(Method::DELETE, &format!("{url}/{first_id}"), Some(&agent), None)
                .await,
            StatusCode::OK,
        );
        assert_eq!(gone["input"]["state"], "canceled");
        let r = h
            .send(Method::DELETE, &format!("{url}/{first_id}"), Some(&agent), None)
            .await;
        refused(&r, StatusCode::CONFLICT, "input_not_pending");
        let stranger = uuid::Uuid::now_v7();
        let r = h
            .send(Method::DELETE, &format!("{url}/{stranger}"), Some(&agent), None)
            .await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");
        let r = input(&h, &agent, &stranger.to_string(), json!({"content": "x"})).await;
        refused(&r, StatusCode::NOT_FOUND, "not_found");

        // The 64-input bound counts pending inputs (three are pending now).
        for n in 3..64 {
            let r = input(&h, &agent, &conv, json!({"content": format!("n{n}")})).await;
            ok(&r, StatusCode::CREATED);
        }
        let r = input(&h, &agent, &conv, json!({"content": "one too many"})).await;
        refused(&r, StatusCode::CONFLICT, "input_queue_full");

        // An archived conversation takes no inputs (checked before the bound).
        let archive = format!("{}/archive", c(&h, &conv));
        ok(
            &h.json(Method::POST, &archive, Some(&agent), &json!({})).await,
            StatusCode::OK,
        );
        let r = input(&h, &agent, &conv, json!({"content": "x"})).await;
        refused(&r, StatusCode::CONFLICT, "conversation_archived");
    }
}

#[tokio::test]
async fn inputs_check_approval_tools_and_attachments() {
    for h in harnesses().await {
        let agent = h.agent_token();
        let human = h.human_token();
        let configuration = json!({"configuration": {"approval_mode": "ask", "kernel_tools": ["nexus.graph.wait"]}});
        let put = h
            .json(
                Method::PUT,
                "/agent_api/v1/profile/configuration",
                Some(&agent),
                &configuration,
            )
            .await;
        ok(&put, StatusCode::OK);
        let conv = new_conversation(&h, &agent, json!({})).await;

        // approval_mode only tightens the profile's `ask`.
        reason(
            &input(&h, &agent, &conv, json!({"content": "x", "approval_mode": "bypass"})).await,
            "approval_mode_loosened",
            "/input/approval_mode",
        );
        for word in ["ask", "rules"] {
            let r = input(&h, &agent, &conv, json!({"content": "x", "approval_mode": word})).await;
            ok(&r, StatusCode::CREATED);
        }

        // tool_names: callables of the answerer's assembly only (the kernel tool's callable is
        // its wire name).
        let r = input(&h, &agent, &conv, json!({"content": "x", "tool_names": ["wait"]})).await;
        ok(&r, StatusCode::CREATED);
        let r = input(
            &h,
            &agent,
            &conv,
            json!({"content": "x", "tool_names": ["wait", "no_such_tool"]}),
        )
        .await;
        let e = refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "tool_not_declared");
        assert_eq!(e["detail"], "no_such_tool", "{e}");

        // A human answerer declares nothing and sets no approval floor.
        let human_id = h.boot["human"]["public_id"].as_str().unwrap();
        let theirs = new_conversation(&h, &human, json!({"answering_user_public_id": human_id})).await;
        let r = input(&h, &human, &theirs, json!({"content": "x", "approval_mode": "bypass"})).await;
        ok(&r, StatusCode::CREATED);
        let r = input(&h, &human, &theirs, json!({"content": "x", "tool_names": ["wait"]})).await;
        refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "tool_not_declared");

        // Attachments: the caller's own upload binds; an unknown one is refused.
        let stranger = uuid::Uuid::now_v7().to_string();
        reason(
            &input(&h, &agent, &conv, json!({"attachments": [stranger]})).await,
            "invalid_attachments",
            "/input/attachments/0",
        );
        reason(
            &input(&h, &agent, &conv, json!({"attachments": ["x"]})).await,
            "invalid_attachments",
            "/input/attachments/0",
        );
        let agent_id = h.boot["agent"]["public_id"].as_str().unwrap().to_string();
        let upload = upload(&h, &agent_id).await;
        let made = ok(
            &input(&h, &agent, &conv, json!({"attachments": [upload]})).await,
            StatusCode::CREATED,
        );
        assert_eq!(made["input"]["attachments"], json!([upload]), "{}", h.dialect);
        assert_eq!(made["input"]["content"], Value::Null);
        let row = h
            .kernel
            .store
            .upload_by_public_id(upload.parse().unwrap())
            .await
            .unwrap()
            .unwrap();
        assert!(row.bound_at.is_some(), "{}: the input binds its attachment", h.dialect);
    }
}

/// An upload row created by the member `creator_public_id`, made in the store (the
/// common harness keeps no blob directory of its own, so no bytes are written); its public id.
async fn upload(h: &Harness, creator_public_id: &str) -> String {
    let store = &h.kernel.store;
    let member = store
        .member_by_public_id(creator_public_id.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    let sha = "ab".repeat(32);
    let mut tx = store.begin().await.unwrap();
    tx.insert_blob(&sha, 5, 1).await.unwrap();
    let row = tx
        .insert_upload(NewUpload {
            public_id: uuid::Uuid::now_v7(),
            account_id: member.account_id,
            creator_member_id: Some(member.id),
            creator_executor_id: None,
            filename: "a.txt".into(),
            content_type: "text/plain".into(),
            byte_size: 5,
            sha256: sha,
            created_at: 1,
        })
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert!(row.bound_at.is_none());
    row.public_id.to_string()
}

#[tokio::test]
async fn the_feed_records_inputs_and_archiving() {
    for h in harnesses().await {
        let agent = h.agent_token();
        let conv = new_conversation(&h, &agent, json!({})).await;
        let feed = format!("{}/events", c(&h, &conv));
        let empty = ok(&h.get(&feed, Some(&agent)).await, StatusCode::OK);
        assert_eq!(empty, json!({"events": [], "next_after": 0}), "{}", h.dialect);

        let first = ok(
            &input(&h, &agent, &conv, json!({"content": "a"})).await,
            StatusCode::CREATED,
        );
        let steer = json!({"content": "b", "delivery_mode": "steer"});
        ok(&input(&h, &agent, &conv, steer).await, StatusCode::CREATED);
        // A refused input appends nothing.
        refused(
            &input(&h, &agent, &conv, json!({"content": "x", "to": "nobody"})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "answerer_not_eligible",
        );
        let archive = format!("{}/archive", c(&h, &conv));
        ok(
            &h.json(Method::POST, &archive, Some(&agent), &json!({})).await,
            StatusCode::OK,
        );
        // Archiving again changes nothing and appends nothing; unarchiving has no feed word.
        ok(
            &h.json(Method::POST, &archive, Some(&agent), &json!({})).await,
            StatusCode::OK,
        );
        let unarchive = format!("{}/unarchive", c(&h, &conv));
        ok(
            &h.json(Method::POST, &unarchive, Some(&agent), &json!({})).await,
            StatusCode::OK,
        );

        let all = ok(&h.get(&feed, Some(&agent)).await, StatusCode::OK);
        let events = all["events"].as_array().unwrap();
        let seen: Vec<(i64, &str)> = events
            .iter()
            .map(|e| (e["sequence"].as_i64().unwrap(), e["type"].as_str().unwrap()))
            .collect();
        assert_eq!(
            seen,
            vec![
                (1, "input_accepted"),
                (2, "input_accepted"),
                (3, "conversation_archived")
            ],
            "{}",
            h.dialect
        );
        assert_eq!(all["next_after"], 3);
        assert_eq!(events[0]["conversation_public_id"], conv.as_str());
        assert_eq!(events[0]["data"]["input_public_id"], first["input"]["public_id"]);
        assert_eq!(events[1]["data"]["delivery_mode"], "steer");
        let page = ok(
            &h.get(&format!("{feed}?after=1&limit=1"), Some(&agent)).await,
            StatusCode::OK,
        );
        assert_eq!(page["events"][0]["sequence"], 2);
        assert_eq!(page["next_after"], 2);
        refused(
            &h.get(&format!("{feed}?after=-1"), Some(&agent)).await,
            StatusCode::BAD_REQUEST,
            "parameter_invalid",
        );
        let stranger = uuid::Uuid::now_v7();
        refused(
            &h.get(&format!("{}/events", c(&h, &stranger.to_string())), Some(&agent))
                .await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
    }
}

#[tokio::test]
async fn read_standing_reads_and_cannot_write_or_answer() {
    for h in harnesses().await {
        let agent = h.agent_token();
        let human = h.human_token();
        let human_id = h.boot["human"]["public_id"].as_str().unwrap().to_string();
        let conv = new_conversation(&h, &agent, json!({})).await;
        let made = ok(
            &input(&h, &agent, &conv, json!({"content": "a"})).await,
            StatusCode::CREATED,
        );
        let member = h
            .kernel
            .store
            .member_by_public_id(human_id.parse().unwrap())
            .await
            .unwrap()
            .unwrap();
        h.kernel
            .store
            .set_standing(h.ws_id().await, member.id, Standing::Read)
            .await
            .unwrap();

        // A member with read standing cannot be the answerer.
        let r = create(&h, &agent, json!({"answering_user_public_id": human_id})).await;
        refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "answerer_not_eligible");

        for url in [
            cs(&h),
            c(&h, &conv),
            format!("{}/children", c(&h, &conv)),
            format!("{}/inputs", c(&h, &conv)),
            format!("{}/events", c(&h, &conv)),
        ] {
            ok(&h.get(&url, Some(&human)).await, StatusCode::OK);
        }
        let forbidden = |r: &Reply| {
            refused(r, StatusCode::FORBIDDEN, "not_authorized");
        };
        forbidden(&create(&h, &human, json!({})).await);
        forbidden(&input(&h, &human, &conv, json!({"content": "x"})).await);
        for verb in ["archive", "unarchive"] {
            let url = format!("{}/{verb}", c(&h, &conv));
            forbidden(&h.json(Method::POST, &url, Some(&human), &json!({})).await);
        }
        let url = format!("{}/default_runner", c(&h, &conv));
        let body = json!({"default_runner": {"executor_public_id": null}});
        forbidden(&h.json(Method::PUT, &url, Some(&human), &body).await);
        let id = made["input"]["public_id"].as_str().unwrap();
        let url = format!("{}/inputs/{id}", c(&h, &conv));
        forbidden(&h.send(Method::DELETE, &url, Some(&human), None).await);
    }
}
