//! Inputs: every delivery refusal, the answerer, approval and tool checks, attachments, the
//! 64-input bound, listing and deleting.

use axum::http::{Method, StatusCode};
use nexus_store::NewUpload;
use nexus_store::prelude::*;
use serde_json::{Value, json};

use crate::common::{Harness, harnesses};
use crate::{c, input, new_conversation, ok, reason, refused};

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
        let never = input(&h, &agent, &conv, json!({"content": "x", "approval_mode": "never"})).await;
        reason(&never, "invalid", "/input/approval_mode");
        // The message names the refused value and the words that would work.
        assert_eq!(
            never.json()["error"]["message"],
            "approval_mode \"never\" is not one of bypass, ask, rules",
            "{}",
            never.json()
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
