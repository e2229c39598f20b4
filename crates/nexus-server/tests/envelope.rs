//! The JSON body extractor on `PUT /agent_api/v1/profile/configuration` (and the assembly
//! route, which shares it): every refusal is the envelope `{"error":{"code","message"}}` with
//! the status of errors-and-auth.md §3 and §5 — never a 500 and never axum's plain text.

mod common;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::{Harness, Reply, harnesses};
use serde_json::{Value, json};

const PUT_PATH: &str = "/agent_api/v1/profile/configuration";
const ASSEMBLY_PATH: &str = "/agent_api/v1/tools/assembly";
/// The request body bound of JSON routes (errors-and-auth.md §5).
const REQUEST_BODY: usize = 2_097_152;

/// Asserts the envelope: exactly `{"error":{"code","message"}}`, a non-empty message.
fn assert_envelope(reply: &Reply, status: StatusCode, code: &str, what: &str) {
    assert_eq!(
        reply.status,
        status,
        "{what}: {}",
        String::from_utf8_lossy(&reply.bytes[..reply.bytes.len().min(400)])
    );
    assert_eq!(
        reply.headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("application/json"),
        "{what}: the envelope is JSON"
    );
    let body = reply.json();
    let outer: Vec<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(outer, ["error"], "{what}: {body}");
    let inner = body["error"].as_object().unwrap();
    let keys: Vec<&str> = inner.keys().map(String::as_str).collect();
    assert_eq!(keys, ["code", "message"], "{what}: {body}");
    assert_eq!(inner["code"], json!(code), "{what}: {body}");
    assert!(
        inner["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{what}: {body}"
    );
}

/// A request with the agent's bearer and an optional content type (no header when `None`).
async fn send(h: &Harness, method: Method, path: &str, content_type: Option<&str>, bytes: Vec<u8>) -> Reply {
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {}", h.agent_token()));
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    h.raw(req.body(Body::from(bytes)).unwrap()).await
}

async fn put(h: &Harness, content_type: Option<&str>, bytes: impl Into<Vec<u8>>) -> Reply {
    send(h, Method::PUT, PUT_PATH, content_type, bytes.into()).await
}

fn valid_body() -> Vec<u8> {
    serde_json::to_vec(&json!({"configuration": {"instructions": "Be brief."}})).unwrap()
}

#[tokio::test]
async fn a_valid_body_is_accepted_with_any_json_content_type() {
    for h in harnesses().await {
        for ct in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON",
        ] {
            let reply = put(&h, Some(ct), valid_body()).await;
            assert_eq!(reply.status, StatusCode::OK, "{ct} on {}", h.dialect);
            assert_eq!(
                reply.json()["configuration"]["instructions"],
                json!("Be brief."),
                "{ct}"
            );
        }
    }
}

#[tokio::test]
async fn malformed_json_is_bad_request() {
    for h in harnesses().await {
        for (what, bytes) in [
            ("truncated", &b"{\"configuration\":"[..]),
            ("trailing garbage", b"{\"configuration\":{}} x"),
            ("single quotes", b"{'configuration':{}}"),
            ("empty body", b""),
            ("bare word", b"configuration"),
            ("NUL after the object", b"{\"configuration\":{}}\x00"),
        ] {
            let reply = put(&h, Some("application/json"), bytes).await;
            assert_envelope(&reply, StatusCode::BAD_REQUEST, "bad_request", what);
        }
        // Nesting past the parser's depth limit is a 400 too, not a crash.
        let deep = format!("{{\"configuration\":{}{}}}", "[".repeat(10_000), "]".repeat(10_000));
        let reply = put(&h, Some("application/json"), deep.into_bytes()).await;
        assert_envelope(&reply, StatusCode::BAD_REQUEST, "bad_request", "deep nesting");
    }
}

#[tokio::test]
async fn a_body_that_is_not_an_object_is_bad_request() {
    for h in harnesses().await {
        for (what, bytes) in [
            ("array", &b"[{\"configuration\":{}}]"[..]),
            ("empty array", b"[]"),
            ("number", b"42"),
            ("string", b"\"configuration\""),
            ("null", b"null"),
            ("true", b"true"),
        ] {
            let reply = put(&h, Some("application/json"), bytes).await;
            assert_envelope(&reply, StatusCode::BAD_REQUEST, "bad_request", what);
        }
    }
}

#[tokio::test]
async fn invalid_utf8_is_bad_request() {
    for h in harnesses().await {
        for (what, bytes) in [
            (
                "lone 0xff in a string",
                &b"{\"configuration\":{\"instructions\":\"\xff\"}}"[..],
            ),
            (
                "overlong encoding",
                b"{\"configuration\":{\"instructions\":\"\xc0\xaf\"}}",
            ),
            (
                "truncated sequence",
                b"{\"configuration\":{\"instructions\":\"\xe2\x82\"}}",
            ),
            ("utf-16 bom", b"\xff\xfe{\x00}\x00"),
        ] {
            let reply = put(&h, Some("application/json"), bytes).await;
            assert_envelope(&reply, StatusCode::BAD_REQUEST, "bad_request", what);
        }
    }
}

#[tokio::test]
async fn a_non_json_content_type_is_unsupported_media_type() {
    for h in harnesses().await {
        for (what, ct) in [
            ("text/plain", Some("text/plain")),
            ("text/plain with charset", Some("text/plain; charset=utf-8")),
            ("form", Some("application/x-www-form-urlencoded")),
            ("json as a parameter only", Some("text/plain; type=application/json")),
            ("missing", None),
        ] {
            // The body itself is valid JSON: only the content type is wrong.
            let reply = put(&h, ct, valid_body()).await;
            assert_envelope(
                &reply,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                what,
            );
        }
        // And the configuration was not written.
        let profile = h.get("/agent_api/v1/profile", Some(&h.agent_token())).await.json();
        assert_eq!(profile["configuration"]["instructions"], Value::Null, "{}", h.dialect);
    }
}

#[tokio::test]
async fn a_body_over_two_mib_is_content_too_large() {
    for h in harnesses().await {
        // A syntactically valid object whose size passes the bound by one byte.
        let prefix = b"{\"configuration\":{\"instructions\":\"";
        let suffix = b"\"}}";
        let fill = REQUEST_BODY + 1 - prefix.len() - suffix.len();
        let mut bytes = prefix.to_vec();
        bytes.extend(std::iter::repeat_n(b'a', fill));
        bytes.extend_from_slice(suffix);
        assert_eq!(bytes.len(), REQUEST_BODY + 1);
        let reply = put(&h, Some("application/json"), bytes.clone()).await;
        assert_envelope(
            &reply,
            StatusCode::PAYLOAD_TOO_LARGE,
            "content_too_large",
            "over by one",
        );

        // With an honest Content-Length header too.
        let req = Request::builder()
            .method(Method::PUT)
            .uri(PUT_PATH)
            .header("authorization", format!("Bearer {}", h.agent_token()))
            .header("content-type", "application/json")
            .header("content-length", bytes.len().to_string())
            .body(Body::from(bytes))
            .unwrap();
        let reply = h.raw(req).await;
        assert_envelope(
            &reply,
            StatusCode::PAYLOAD_TOO_LARGE,
            "content_too_large",
            "with content-length",
        );

        // Exactly at the bound the body is read; it then fails on its content (instructions
        // over 65,536 bytes), not on its size.
        let mut bytes = prefix.to_vec();
        bytes.extend(std::iter::repeat_n(b'a', fill - 1));
        bytes.extend_from_slice(suffix);
        assert_eq!(bytes.len(), REQUEST_BODY);
        let reply = put(&h, Some("application/json"), bytes).await;
        assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", h.dialect);
        assert_eq!(reply.code(), "validation_failed");
    }
}

/// (what, content type, body, status, code).
type Case = (&'static str, Option<&'static str>, Vec<u8>, StatusCode, &'static str);

#[tokio::test]
async fn the_assembly_route_shares_the_extractor() {
    for h in harnesses().await {
        let cases: [Case; 5] = [
            (
                "malformed",
                Some("application/json"),
                b"{".to_vec(),
                StatusCode::BAD_REQUEST,
                "bad_request",
            ),
            (
                "array",
                Some("application/json"),
                b"[]".to_vec(),
                StatusCode::BAD_REQUEST,
                "bad_request",
            ),
            (
                "utf-8",
                Some("application/json"),
                b"{\"\xff\":1}".to_vec(),
                StatusCode::BAD_REQUEST,
                "bad_request",
            ),
            (
                "text/plain",
                Some("text/plain"),
                b"{\"default_runner_executor_public_id\":null}".to_vec(),
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
            ),
            (
                "too large",
                Some("application/json"),
                vec![b' '; REQUEST_BODY + 1],
                StatusCode::PAYLOAD_TOO_LARGE,
                "content_too_large",
            ),
        ];
        for (what, ct, bytes, status, code) in cases {
            let reply = send(&h, Method::POST, ASSEMBLY_PATH, ct, bytes).await;
            assert_envelope(&reply, status, code, what);
        }
    }
}
