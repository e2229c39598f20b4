//! The size bounds of errors-and-auth.md §5, each at the bound and one byte over, on both
//! engines, through the HTTP routes: request bodies (JSON routes and the create door), commit
//! content, content blocks and metadata, progress frames, announcement lists and environment.
//! (Uploads, declarations, instructions and memory documents have theirs in uploads.rs,
//! declarations.rs and memory_http.rs; the bounds themselves come from `nexus_core::bounds`.)

mod common;

use axum::http::{Method, StatusCode};
use common::{Harness, Reply, harnesses};
use nexus_core::{bounds, jcs};
use serde_json::{Value, json};

const X: &str = "/agent_api/v1/executor";

fn read() -> Value {
    nexus_core::registry::EffectProfile::READ.to_json()
}

/// `make(n)` for the `n` whose canonical JSON is exactly `target` bytes (`make` must grow by
/// one canonical byte per step of `n`, as ASCII padding does).
fn sized(target: usize, make: impl Fn(usize) -> Value) -> Value {
    let base = jcs::len(&make(0));
    assert!(base <= target, "the frame alone is {base} bytes");
    let v = make(target - base);
    assert_eq!(jcs::len(&v), target);
    v
}

#[track_caller]
fn refused(r: &Reply, status: StatusCode, code: &str) {
    assert_eq!(
        r.status,
        status,
        "{}",
        String::from_utf8_lossy(&r.bytes[..r.bytes.len().min(300)])
    );
    assert_eq!(r.code(), code);
}

/// A raw JSON body of exactly `len` bytes: `{"configuration":{"instructions":"…"}}` padded with
/// spaces after the object's last member, so the value is the same at every length.
fn raw_body(len: usize, doc: &str) -> Vec<u8> {
    let mut bytes = doc.as_bytes().to_vec();
    let close = bytes.pop().unwrap();
    assert!(bytes.len() < len, "the document alone is over {len}");
    bytes.resize(len - 1, b' ');
    bytes.push(close);
    bytes
}

#[tokio::test]
async fn request_bodies_at_the_bound_and_one_byte_over() {
    for h in harnesses().await {
        let token = h.agent_token();
        // JSON routes: 2 MiB.
        let doc = r#"{"configuration":{"instructions":"Be brief."}}"#;
        let path = "/agent_api/v1/profile/configuration";
        let at = raw_body(bounds::REQUEST_BODY, doc);
        let r = h
            .send(Method::PUT, path, Some(&token), Some(("application/json", at)))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.json());
        let over = raw_body(bounds::REQUEST_BODY + 1, doc);
        let r = h
            .send(Method::PUT, path, Some(&token), Some(("application/json", over)))
            .await;
        refused(&r, StatusCode::PAYLOAD_TOO_LARGE, "content_too_large");
        // The create door: 1 MiB.
        announce_read(&h).await;
        let doc = json!({"run": {"approval_mode": "bypass", "steps": [read_step(&h)]}}).to_string();
        let doc = doc.as_str();
        let path = format!("{}/runs", h.w());
        let at = raw_body(bounds::REQUEST_BODY_CREATE_APPEND, doc);
        let r = h
            .send(Method::POST, &path, Some(&token), Some(("application/json", at)))
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
        let over = raw_body(bounds::REQUEST_BODY_CREATE_APPEND + 1, doc);
        let r = h
            .send(Method::POST, &path, Some(&token), Some(("application/json", over)))
            .await;
        refused(&r, StatusCode::PAYLOAD_TOO_LARGE, "content_too_large");
    }
}

/// The bootstrap runner serves `read`.
async fn announce_read(h: &Harness) {
    h.announce_runner(json!([{"name": "read", "effect_profile": read(), "timeout_ms": 60000,
                                "description": "Read.", "input_schema": {"type": "object"}}]))
        .await;
}

/// A step `t` calling the runner's `read`.
fn read_step(h: &Harness) -> Value {
    json!({"key": "t", "tool": {"name": "read", "input": {},
           "route": {"kind": "runner", "runner_executor_public_id": h.runner_id()}}})
}

/// A run of one tool step `t` on the bootstrap runner, claimed; returns (run, claim token).
async fn claimed_row(h: &Harness) -> (String, String) {
    announce_read(h).await;
    let run = h
        .start_run(&h.human_token(), "bypass", Value::Null, json!([read_step(h)]))
        .await;
    let r = h
        .send(
            Method::POST,
            &format!("{X}/inbox/{run}/t/claim"),
            Some(&h.runner_token()),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    (run, r.json()["claim"]["claim_token"].as_str().unwrap().to_string())
}

/// `blocks` text blocks of `"a"`, the last padded so the list is `target` canonical bytes.
fn blocks(count: usize, target: usize) -> Value {
    sized(target, |pad| {
        let mut list: Vec<Value> = (0..count).map(|_| json!({"type": "text", "text": "a"})).collect();
        list[count - 1]["text"] = json!("a".repeat(pad + 1));
        Value::Array(list)
    })
}

#[tokio::test]
async fn commit_content_blocks_and_metadata_at_the_bound_and_one_byte_over() {
    for h in harnesses().await {
        let (run, token) = claimed_row(&h).await;
        let path = format!("{X}/inbox/{run}/t/commit");
        let commit = |body: Value| {
            let mut body = body;
            body["claim_token"] = json!(token);
            let path = path.clone();
            let h = &h;
            async move { h.json(Method::POST, &path, Some(&h.runner_token()), &body).await }
        };
        let small_blocks = |n: usize| Value::Array((0..n).map(|_| json!({"type": "text", "text": "a"})).collect());
        let metadata = |target: usize| sized(target, |pad| json!({"blob": "m".repeat(pad)}));
        let string = |target: usize| sized(target, |pad| json!("s".repeat(pad)));
        // One over each bound, in turn: the park stands after each refusal.
        for (body, code) in [
            (
                json!({"content": string(bounds::RESULT_CONTENT + 1)}),
                "result_too_large",
            ),
            (
                json!({"content": blocks(bounds::CONTENT_BLOCKS, bounds::RESULT_CONTENT + 1)}),
                "result_too_large",
            ),
            (
                json!({"content": small_blocks(bounds::CONTENT_BLOCKS + 1)}),
                "too_many_content_blocks",
            ),
            (
                json!({"content": "x", "metadata": metadata(bounds::ENVELOPE + 1)}),
                "metadata_too_large",
            ),
        ] {
            let r = commit(body).await;
            refused(&r, StatusCode::UNPROCESSABLE_ENTITY, code);
        }
        // A bare string at the content bound is accepted by the content check (the commit
        // goes on to the at-bound list below, so this one is checked on its own grammar).
        let at_string = string(bounds::RESULT_CONTENT);
        assert!(nexus_core::results::normalize_content(&at_string).is_ok());
        // Every bound at once, exactly: 32,768 blocks whose list is 1,048,576 canonical bytes,
        // and 65,536 bytes of metadata.
        let r = commit(
            json!({"content": blocks(bounds::CONTENT_BLOCKS, bounds::RESULT_CONTENT),
                               "metadata": metadata(bounds::ENVELOPE)}),
        )
        .await;
        assert_eq!(
            r.status,
            StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&r.bytes[..r.bytes.len().min(300)])
        );
        assert_eq!(r.json()["task"]["status"], "completed");
    }
}

#[tokio::test]
async fn a_progress_frame_at_the_bound_and_one_byte_over() {
    for h in harnesses().await {
        let (run, token) = claimed_row(&h).await;
        let progress = |frame: Value| {
            let body = json!({ "frame": frame });
            let h = &h;
            async move {
                h.json(Method::POST, &format!("{X}/progress"), Some(&h.runner_token()), &body)
                    .await
            }
        };
        let frame = |target: usize| {
            sized(
                target,
                |pad| json!({"run_public_id": run, "task_key": "t", "claim_token": token, "text_tail": "p".repeat(pad)}),
            )
        };
        let r = progress(frame(bounds::ENVELOPE + 1)).await;
        refused(&r, StatusCode::UNPROCESSABLE_ENTITY, "frame_too_large");
        let r = progress(frame(bounds::ENVELOPE)).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.json());
    }
}

#[tokio::test]
async fn announcement_lists_and_environment_at_the_bound_and_one_byte_over() {
    for h in harnesses().await {
        let put = |body: Value| {
            let h = &h;
            async move {
                h.json(
                    Method::PUT,
                    &format!("{X}/announcement"),
                    Some(&h.runner_token()),
                    &body,
                )
                .await
            }
        };
        let bound = |r: &Reply, reason: &str, path: &str| {
            refused(r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
            let e = &r.json()["error"];
            assert_eq!(
                (e["reason"].as_str(), e["path"].as_str()),
                (Some(reason), Some(path)),
                "{e}"
            );
        };
        // The environment: its canonical JSON against `executor_environment_bound`.
        let env = |target: usize| sized(target, |pad| json!({"blob": "x".repeat(pad)}));
        let r = put(json!({"tools": [], "environment": env(bounds::EXECUTOR_ENVIRONMENT + 1)})).await;
        bound(&r, "executor_environment_bound", "/environment");
        let r = put(json!({"tools": [], "environment": env(bounds::EXECUTOR_ENVIRONMENT)})).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.json());
        // The tools list: 30 tools, the last description padded.
        let tools = |target: usize| {
            sized(target, |pad| {
                let list: Vec<Value> = (0..30)
                    .map(|i| {
                        let text = if i == 29 {
                            "d".repeat(1 + pad)
                        } else {
                            "d".repeat(2_000)
                        };
                        json!({"name": format!("tool{i}"), "effect_profile": read(),
                               "description": text, "input_schema": {"type": "object"}})
                    })
                    .collect();
                Value::Array(list)
            })
        };
        let r = put(json!({"tools": tools(bounds::ENVELOPE + 1)})).await;
        bound(&r, "envelope_bound", "/tools");
        let r = put(json!({"tools": tools(bounds::ENVELOPE)})).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.json());
        // The documents list: descriptions of at most 1,024 bytes, so 64 documents, the last
        // description padded.
        let fixed = |count: usize, target: usize| {
            sized(target, |pad| {
                let list: Vec<Value> = (0..count)
                    .map(|i| {
                        let text = if i == count - 1 {
                            "y".repeat(1 + pad)
                        } else {
                            "y".repeat(1_000)
                        };
                        json!({"name": format!("d{i}"), "description": text})
                    })
                    .collect();
                Value::Array(list)
            })
        };
        let r = put(json!({"tools": [], "documents": fixed(64, bounds::ENVELOPE + 1)})).await;
        bound(&r, "envelope_bound", "/documents");
        let r = put(json!({"tools": [], "documents": fixed(64, bounds::ENVELOPE)})).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    }
}
