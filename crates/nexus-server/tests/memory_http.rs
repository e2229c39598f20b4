//! The member door of memory (kernel-tools.md §8) over HTTP on both engines: list, read, put,
//! delete; 404 `not_found`, 403 `not_authorized`, 409 `stale_object`, 422 `validation_failed`
//! with every memory reason; `conversation/` paths and their `conversation_public_id`; and a
//! skill document put through the door reaching the assembly, the round's skills block and
//! `skill`.

mod common;

use axum::http::{Method, StatusCode};
use common::{Harness, Reply, harnesses, harnesses_with_scripts, write_script};
use nexus_core::bounds;
use nexus_store::Standing;
use nexus_store::prelude::*;
use serde_json::{Value, json};

fn doc_url(h: &Harness, path: &str) -> String {
    format!("{}/memory/doc?path={path}", h.w())
}

async fn put(h: &Harness, token: &str, body: Value) -> Reply {
    h.json(Method::PUT, &format!("{}/memory/doc", h.w()), Some(token), &body)
        .await
}

fn ok(r: &Reply) -> Value {
    assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
    r.json()
}

fn refused(r: &Reply, status: StatusCode, code: &str) -> Value {
    assert_eq!(
        r.status,
        status,
        "want {status} {code}: {}",
        String::from_utf8_lossy(&r.bytes)
    );
    assert_eq!(r.code(), code);
    r.json()["error"].clone()
}

fn reason(r: &Reply, reason: &str, pointer: &str) {
    let e = refused(r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert_eq!(e["reason"], reason, "{e}");
    assert_eq!(e["path"], pointer, "{e}");
}

#[tokio::test]
async fn put_read_list_delete_with_versions() {
    for h in harnesses().await {
        let agent = h.agent_token();
        let human = h.human_token();
        let created = ok(&put(
            &h,
            &agent,
            json!({"path": "workspace/notes/a.md", "content": "hello\n"}),
        )
        .await);
        let d = &created["document"];
        let keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["path", "content", "lock_version", "updated_at"], "{}", h.dialect);
        assert_eq!(d["path"], "workspace/notes/a.md");
        assert_eq!(d["lock_version"], 1);
        let at = d["updated_at"].as_str().expect("an ISO 8601 timestamp");
        assert!(at.len() == 20 && at.ends_with('Z'), "whole-second UTC: {at}");

        let read = ok(&h.get(&doc_url(&h, "workspace/notes/a.md"), Some(&human)).await);
        assert_eq!(read, created);

        // Stale and matching versions.
        let stale = put(
            &h,
            &agent,
            json!({"path": "workspace/notes/a.md", "content": "x", "expected_lock_version": 7}),
        )
        .await;
        refused(&stale, StatusCode::CONFLICT, "stale_object");
        let new_stale = put(
            &h,
            &agent,
            json!({"path": "workspace/notes/new", "content": "x", "expected_lock_version": 1}),
        )
        .await;
        refused(&new_stale, StatusCode::CONFLICT, "stale_object");
        let replaced = ok(&put(
            &h,
            &agent,
            json!({"path": "workspace/notes/a.md", "content": "hello again\n", "expected_lock_version": 1}),
        )
        .await);
        assert_eq!(replaced["document"]["lock_version"], 2);
        assert_eq!(replaced["document"]["content"], "hello again\n");
        // Omitted: last-writer-wins.
        let lww = ok(&put(&h, &human, json!({"path": "workspace/notes/a.md", "content": "third"})).await);
        assert_eq!(lww["document"]["lock_version"], 3);

        ok(&put(
            &h,
            &human,
            json!({"path": "workspace/skills/style", "content": "Plain.", "description": "House style."}),
        )
        .await);
        ok(&put(&h, &agent, json!({"path": "user/mine", "content": "me"})).await);

        let list = ok(&h.get(&format!("{}/memory", h.w()), Some(&human)).await);
        assert_eq!(
            list,
            json!({"documents": [
                {"path": "user/mine", "byte_size": 2, "lock_version": 1,
                 "updated_at": list["documents"][0]["updated_at"]},
                {"path": "workspace/notes/a.md", "byte_size": 5, "lock_version": 3,
                 "updated_at": list["documents"][1]["updated_at"]},
                {"path": "workspace/skills/style", "byte_size": 6, "description": "House style.", "lock_version": 1,
                 "updated_at": list["documents"][2]["updated_at"]},
            ]}),
            "{}",
            h.dialect
        );
        let skills = ok(&h
            .get(&format!("{}/memory?prefix=workspace/skills/", h.w()), Some(&agent))
            .await);
        assert_eq!(skills["documents"].as_array().unwrap().len(), 1);
        let notes = ok(&h
            .get(&format!("{}/memory?prefix=workspace/no", h.w()), Some(&agent))
            .await);
        assert_eq!(notes["documents"][0]["path"], "workspace/notes/a.md");
        let users = ok(&h.get(&format!("{}/memory?prefix=user", h.w()), Some(&agent)).await);
        assert_eq!(users["documents"][0]["path"], "user/mine");

        // Delete: stale, then removed (with the version removed), then 404.
        let url = format!("{}&expected_lock_version=2", doc_url(&h, "workspace/notes/a.md"));
        refused(
            &h.send(Method::DELETE, &url, Some(&agent), None).await,
            StatusCode::CONFLICT,
            "stale_object",
        );
        let url = format!("{}&expected_lock_version=3", doc_url(&h, "workspace/notes/a.md"));
        let gone = ok(&h.send(Method::DELETE, &url, Some(&agent), None).await);
        assert_eq!(
            gone,
            json!({"document": {"path": "workspace/notes/a.md", "lock_version": 3}})
        );
        let again = h
            .send(Method::DELETE, &doc_url(&h, "workspace/notes/a.md"), Some(&agent), None)
            .await;
        refused(&again, StatusCode::NOT_FOUND, "not_found");
        refused(
            &h.get(&doc_url(&h, "workspace/notes/a.md"), Some(&agent)).await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
        let bad = h
            .send(
                Method::DELETE,
                &format!("{}&expected_lock_version=x", doc_url(&h, "user/mine")),
                Some(&agent),
                None,
            )
            .await;
        refused(&bad, StatusCode::BAD_REQUEST, "parameter_invalid");
        refused(
            &h.get(&format!("{}/memory/doc", h.w()), Some(&agent)).await,
            StatusCode::BAD_REQUEST,
            "parameter_missing",
        );
    }
}

#[tokio::test]
async fn user_paths_are_the_callers_controlling_human() {
    for h in harnesses().await {
        // The agent's user/ documents are its steward's: the human reads the same document.
        ok(&put(&h, &h.agent_token(), json!({"path": "user/prefs", "content": "tea"})).await);
        let read = ok(&h.get(&doc_url(&h, "user/prefs"), Some(&h.human_token())).await);
        assert_eq!(read["document"]["content"], "tea", "{}", h.dialect);
    }
}

#[tokio::test]
async fn grammar_faults_are_validation_failed_with_their_reasons() {
    for h in harnesses().await {
        let t = h.agent_token();
        for bad in ["notes", "team/x", "workspace/", "workspace/a b", "workspace/../x"] {
            reason(
                &put(&h, &t, json!({"path": bad, "content": "x"})).await,
                "memory_path_invalid",
                "/path",
            );
        }
        reason(
            &h.get(&format!("{}/memory?prefix=conversation/../x", h.w()), Some(&t))
                .await,
            "memory_path_invalid",
            "/prefix",
        );
        reason(
            &h.get(&format!("{}/memory?prefix=bogus", h.w()), Some(&t)).await,
            "memory_path_invalid",
            "/prefix",
        );
        reason(
            &h.get(&doc_url(&h, "notes"), Some(&t)).await,
            "memory_path_invalid",
            "/path",
        );

        let at_bound = "x".repeat(bounds::MEMORY_DOCUMENT);
        ok(&put(&h, &t, json!({"path": "workspace/big", "content": at_bound})).await);
        let over = "x".repeat(bounds::MEMORY_DOCUMENT + 1);
        reason(
            &put(&h, &t, json!({"path": "workspace/big", "content": over})).await,
            "memory_document_too_large",
            "/content",
        );

        for bad in [
            "workspace/skills/Bad",
            "workspace/skills/a--b",
            "user/skills/a/b",
            "workspace/skills/-a",
        ] {
            reason(
                &put(&h, &t, json!({"path": bad, "content": "x", "description": "d"})).await,
                "skill_name_invalid",
                "/path",
            );
        }
        for desc in [
            Value::Null,
            json!(""),
            json!("  "),
            json!("d".repeat(bounds::DESCRIPTION_BYTES + 1)),
        ] {
            reason(
                &put(
                    &h,
                    &t,
                    json!({"path": "workspace/skills/ok", "content": "x", "description": desc}),
                )
                .await,
                "skill_description_required",
                "/description",
            );
        }
        ok(&put(
            &h,
            &t,
            json!({"path": "workspace/skills/ok", "content": "x", "description": "d".repeat(bounds::DESCRIPTION_BYTES)}),
        )
        .await);

        // 64 documents per person.
        for i in 0..64 {
            ok(&put(&h, &t, json!({"path": format!("user/n{i}"), "content": "x"})).await);
        }
        reason(
            &put(&h, &t, json!({"path": "user/n64", "content": "x"})).await,
            "memory_full",
            "/path",
        );
        ok(&put(&h, &t, json!({"path": "user/n0", "content": "replace is fine"})).await);

        refused(
            &put(&h, &t, json!({"content": "x"})).await,
            StatusCode::BAD_REQUEST,
            "parameter_missing",
        );
        refused(
            &put(&h, &t, json!({"path": "workspace/a", "content": 1})).await,
            StatusCode::BAD_REQUEST,
            "parameter_invalid",
        );
    }
}

/// A new conversation of the harness's workspace (as `token`), by public id.
async fn conversation(h: &Harness, token: &str, w: &str) -> String {
    let made = h
        .json(
            Method::POST,
            &format!("{w}/conversations"),
            Some(token),
            &json!({"conversation": {}}),
        )
        .await;
    assert_eq!(
        made.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&made.bytes)
    );
    made.json()["conversation"]["public_id"].as_str().unwrap().to_string()
}

fn paths(list: &Value) -> Vec<&str> {
    list["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn conversation_paths_name_their_conversation() {
    for h in harnesses().await {
        let t = h.agent_token();
        let (c1, c2) = (conversation(&h, &t, &h.w()).await, conversation(&h, &t, &h.w()).await);
        let in_c1 = |path: &str| format!("{}&conversation_public_id={c1}", doc_url(&h, path));
        let made = ok(&put(
            &h,
            &t,
            json!({"path": "conversation/notes/a", "content": "hello", "conversation_public_id": c1}),
        )
        .await);
        assert_eq!(made["document"]["path"], "conversation/notes/a", "{}", h.dialect);
        ok(&put(&h, &t, json!({"path": "workspace/w", "content": "w"})).await);
        ok(&put(&h, &t, json!({"path": "user/u", "content": "u"})).await);

        let read = ok(&h.get(&in_c1("conversation/notes/a"), Some(&t)).await);
        assert_eq!(read["document"]["content"], "hello");
        // Another conversation is another scope.
        let in_c2 = format!("{}&conversation_public_id={c2}", doc_url(&h, "conversation/notes/a"));
        refused(&h.get(&in_c2, Some(&t)).await, StatusCode::NOT_FOUND, "not_found");

        // Without a conversation: 400 parameter_missing on every verb.
        refused(
            &h.get(&doc_url(&h, "conversation/notes/a"), Some(&t)).await,
            StatusCode::BAD_REQUEST,
            "parameter_missing",
        );
        refused(
            &put(&h, &t, json!({"path": "conversation/x", "content": "x"})).await,
            StatusCode::BAD_REQUEST,
            "parameter_missing",
        );
        refused(
            &h.send(Method::DELETE, &doc_url(&h, "conversation/notes/a"), Some(&t), None)
                .await,
            StatusCode::BAD_REQUEST,
            "parameter_missing",
        );
        refused(
            &h.get(&format!("{}/memory?prefix=conversation/", h.w()), Some(&t)).await,
            StatusCode::BAD_REQUEST,
            "parameter_missing",
        );
        // Not a UUID: 400 parameter_invalid; no conversation of this workspace: 404 not_found.
        for bad in [json!(7), json!("nope")] {
            refused(
                &put(
                    &h,
                    &t,
                    json!({"path": "conversation/x", "content": "x", "conversation_public_id": bad}),
                )
                .await,
                StatusCode::BAD_REQUEST,
                "parameter_invalid",
            );
        }
        refused(
            &h.get(
                &format!("{}&conversation_public_id=nope", doc_url(&h, "conversation/x")),
                Some(&t),
            )
            .await,
            StatusCode::BAD_REQUEST,
            "parameter_invalid",
        );
        let member = uuid::Uuid::parse_str(h.boot["agent"]["public_id"].as_str().unwrap()).unwrap();
        let member = h.kernel.store.member_by_public_id(member).await.unwrap().unwrap();
        let elsewhere = h
            .kernel
            .store
            .ensure_workspace(uuid::Uuid::now_v7(), member.account_id, "elsewhere", 1)
            .await
            .unwrap();
        h.kernel
            .store
            .set_standing(elsewhere.id, member.id, Standing::Write)
            .await
            .unwrap();
        let foreign = conversation(&h, &t, &format!("/agent_api/v1/workspaces/{}", elsewhere.public_id)).await;
        for stranger in [foreign.clone(), uuid::Uuid::now_v7().to_string()] {
            refused(
                &put(
                    &h,
                    &t,
                    json!({"path": "conversation/x", "content": "x", "conversation_public_id": stranger}),
                )
                .await,
                StatusCode::NOT_FOUND,
                "not_found",
            );
            let url = format!(
                "{}&conversation_public_id={stranger}",
                doc_url(&h, "conversation/notes/a")
            );
            refused(&h.get(&url, Some(&t)).await, StatusCode::NOT_FOUND, "not_found");
            refused(
                &h.send(Method::DELETE, &url, Some(&t), None).await,
                StatusCode::NOT_FOUND,
                "not_found",
            );
            refused(
                &h.get(&format!("{}/memory?conversation_public_id={stranger}", h.w()), Some(&t))
                    .await,
                StatusCode::NOT_FOUND,
                "not_found",
            );
        }

        // People manage skills in the conversation scope too, under the skill grammar.
        reason(
            &put(
                &h,
                &t,
                json!({"path": "conversation/skills/tone", "content": "x", "conversation_public_id": c1}),
            )
            .await,
            "skill_description_required",
            "/description",
        );
        ok(&put(
            &h,
            &t,
            json!({"path": "conversation/skills/tone", "content": "Warm.", "description": "Tone.",
                   "conversation_public_id": c1}),
        )
        .await);

        // A listing without a prefix: every scope, the conversation's when it is named.
        let all = ok(&h.get(&format!("{}/memory", h.w()), Some(&t)).await);
        assert_eq!(paths(&all), ["user/u", "workspace/w"], "{}", h.dialect);
        let all = ok(&h
            .get(&format!("{}/memory?conversation_public_id={c1}", h.w()), Some(&t))
            .await);
        assert_eq!(
            paths(&all),
            [
                "conversation/notes/a",
                "conversation/skills/tone",
                "user/u",
                "workspace/w"
            ],
            "{}",
            h.dialect
        );
        let under = ok(&h
            .get(
                &format!("{}/memory?prefix=conversation/notes&conversation_public_id={c1}", h.w()),
                Some(&t),
            )
            .await);
        assert_eq!(paths(&under), ["conversation/notes/a"]);
        let empty = ok(&h
            .get(
                &format!("{}/memory?prefix=conversation/&conversation_public_id={c2}", h.w()),
                Some(&t),
            )
            .await);
        assert_eq!(paths(&empty), Vec::<&str>::new());

        // Read standing reads a conversation's documents and may not change them.
        let reader = h.member_with("reader", Standing::Read).await;
        ok(&h.get(&in_c1("conversation/notes/a"), Some(&reader)).await);
        refused(
            &put(
                &h,
                &reader,
                json!({"path": "conversation/notes/a", "content": "y", "conversation_public_id": c1}),
            )
            .await,
            StatusCode::FORBIDDEN,
            "not_authorized",
        );
        refused(
            &h.send(Method::DELETE, &in_c1("conversation/notes/a"), Some(&reader), None)
                .await,
            StatusCode::FORBIDDEN,
            "not_authorized",
        );

        let gone = ok(&h
            .send(Method::DELETE, &in_c1("conversation/notes/a"), Some(&t), None)
            .await);
        assert_eq!(
            gone,
            json!({"document": {"path": "conversation/notes/a", "lock_version": 1}})
        );
        refused(
            &h.get(&in_c1("conversation/notes/a"), Some(&t)).await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
    }
}

#[tokio::test]
async fn a_conversation_holds_256_documents() {
    for h in harnesses().await {
        let t = h.agent_token();
        let c = conversation(&h, &t, &h.w()).await;
        for i in 0..256 {
            ok(&put(
                &h,
                &t,
                json!({"path": format!("conversation/n{i}"), "content": "x", "conversation_public_id": c}),
            )
            .await);
        }
        reason(
            &put(
                &h,
                &t,
                json!({"path": "conversation/n256", "content": "x", "conversation_public_id": c}),
            )
            .await,
            "memory_full",
            "/path",
        );
        // Another conversation's scope is not full.
        let other = conversation(&h, &t, &h.w()).await;
        ok(&put(
            &h,
            &t,
            json!({"path": "conversation/n256", "content": "x", "conversation_public_id": other}),
        )
        .await);
    }
}

#[tokio::test]
async fn standing_gates_the_door() {
    for h in harnesses().await {
        let human = h.human_token();
        ok(&put(&h, &human, json!({"path": "workspace/a", "content": "x"})).await);
        // Read standing only: reads work, writes are 403.
        let member = uuid::Uuid::parse_str(h.boot["human"]["public_id"].as_str().unwrap()).unwrap();
        let member = h.kernel.store.member_by_public_id(member).await.unwrap().unwrap();
        h.kernel
            .store
            .set_standing(h.ws_id().await, member.id, Standing::Read)
            .await
            .unwrap();
        ok(&h.get(&doc_url(&h, "workspace/a"), Some(&human)).await);
        ok(&h.get(&format!("{}/memory", h.w()), Some(&human)).await);
        refused(
            &put(&h, &human, json!({"path": "workspace/a", "content": "y"})).await,
            StatusCode::FORBIDDEN,
            "not_authorized",
        );
        refused(
            &h.send(Method::DELETE, &doc_url(&h, "workspace/a"), Some(&human), None)
                .await,
            StatusCode::FORBIDDEN,
            "not_authorized",
        );
        // No standing: the workspace is concealed.
        let other = h
            .kernel
            .store
            .ensure_workspace(uuid::Uuid::now_v7(), member.account_id, "elsewhere", 1)
            .await
            .unwrap();
        let w = format!("/agent_api/v1/workspaces/{}", other.public_id);
        refused(
            &h.get(&format!("{w}/memory"), Some(&human)).await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
        refused(
            &h.get(&format!("{w}/memory/doc?path=workspace/a"), Some(&human)).await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
        refused(
            &h.json(
                Method::PUT,
                &format!("{w}/memory/doc"),
                Some(&human),
                &json!({"path": "workspace/a", "content": "y"}),
            )
            .await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
        refused(
            &h.get(&format!("{}/memory", h.w()), None).await,
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        );
    }
}

#[tokio::test]
async fn a_skill_put_through_the_door_is_assembled_listed_and_loaded() {
    let dir = tempfile::tempdir().unwrap();
    write_script(
        dir.path(),
        "skilled",
        &[
            json!({"tool_calls": [{"id": "k1", "name": "skill", "input": {"name": "style-guide"}}],
                   "expect": {"system_contains": "- skill / style-guide: House writing rules."}}),
            json!({"text": "Loaded.", "expect": {"last_result": {"call_id": "k1", "is_error": false,
                                                                "contains": "Write plainly."}}}),
        ],
    );
    for h in harnesses_with_scripts(dir.path()).await {
        let agent = h.agent_token();
        ok(&put(
            &h,
            &h.human_token(),
            json!({"path": "workspace/skills/style-guide", "content": "Write plainly.",
                   "description": "House writing rules."}),
        )
        .await);
        let preview = ok(&h
            .json(
                Method::POST,
                "/agent_api/v1/tools/assembly",
                Some(&agent),
                &json!({"default_runner_executor_public_id": null,
                        "configuration": {"kernel_tools": ["nexus.skill.load"]}}),
            )
            .await);
        assert_eq!(
            preview["skills"],
            json!([{"callable": "skill", "name": "style-guide", "description": "House writing rules.",
                    "source": "workspace"}]),
            "{}",
            h.dialect
        );
        let created = h
            .json(
                Method::POST,
                &format!("{}/runs", h.w()),
                Some(&agent),
                &json!({"run": {"approval_mode": "bypass", "steps": [{"model": {
                    "prompt": "Follow the house style.", "model": "scripted/skilled",
                    "kernel_tools": ["nexus.skill.load"]}}]}}),
            )
            .await;
        assert_eq!(
            created.status,
            StatusCode::CREATED,
            "{}",
            String::from_utf8_lossy(&created.bytes)
        );
        let run = created.json()["run"]["public_id"].as_str().unwrap().to_string();
        ok(&h
            .json(Method::POST, &format!("{}/start", h.r(&run)), Some(&agent), &json!({}))
            .await);
        h.kernel.runs().work_until_idle(50).await.unwrap();
        let body = ok(&h.get(&h.r(&run), Some(&agent)).await);
        assert_eq!(body["run"]["status"], "completed", "{} on {}", body, h.dialect);
        let call = ok(&h.get(&format!("{}/tasks/r1t0", h.r(&run)), Some(&agent)).await);
        assert_eq!(call["task"]["tool_name"], "skill", "{call}");
        assert_ne!(call["task"]["is_error"], json!(true), "{call}");
    }
}
