//! Parsing of the error envelope (errors-and-auth.md §1), as a pure function.

use nexus_sdk::{ApiError, Error};
use serde_json::json;

#[test]
fn the_uniform_401() {
    let body = br#"{"error":{"code":"unauthorized","message":"authentication required"}}"#;
    let e = ApiError::from_response(401, body);
    assert_eq!(e.status, 401);
    assert_eq!(e.code, "unauthorized");
    assert_eq!(e.message, "authentication required");
    assert!(e.is_unauthorized());
    assert_eq!(
        e.body,
        json!({"error":{"code":"unauthorized","message":"authentication required"}})
    );
    assert_eq!(e.to_string(), "401 unauthorized: authentication required");
}

#[test]
fn extra_fields_stay_readable() {
    let body = json!({"error":{"code":"validation_failed","message":"no",
        "reason":"kernel_tool_redefined","path":"/configuration/tool_definitions/0"}});
    let e = ApiError::from_response(422, body.to_string().as_bytes());
    assert_eq!(e.code, "validation_failed");
    assert_eq!(e.reason(), Some("kernel_tool_redefined"));
    assert_eq!(e.path(), Some("/configuration/tool_definitions/0"));
    assert_eq!(e.detail(), None);

    let body = json!({"error":{"code":"tool_not_declared","message":"x","detail":"grep"}});
    let e = ApiError::from_response(422, body.to_string().as_bytes());
    assert_eq!(e.detail(), Some("grep"));
}

#[test]
fn an_unknown_code_is_kept_verbatim() {
    let body = br#"{"error":{"code":"brand_new_refusal","message":"later kernel","extra":1}}"#;
    let e = ApiError::from_response(409, body);
    assert_eq!(e.status, 409);
    assert_eq!(e.code, "brand_new_refusal");
    assert_eq!(e.field("extra"), Some(&json!(1)));
}

#[test]
fn a_missing_message_reads_empty() {
    let e = ApiError::from_response(404, br#"{"error":{"code":"not_found"}}"#);
    assert_eq!(e.code, "not_found");
    assert_eq!(e.message, "");
}

#[test]
fn a_body_that_is_not_an_envelope() {
    let e = ApiError::from_response(502, b"<html>Bad Gateway</html>\n");
    assert_eq!(e.code, ApiError::UNPARSED);
    assert_eq!(e.message, "<html>Bad Gateway</html>");
    assert_eq!(e.body, json!("<html>Bad Gateway</html>\n"));

    let e = ApiError::from_response(503, b"");
    assert_eq!(e.code, ApiError::UNPARSED);
    assert_eq!(e.body, serde_json::Value::Null);

    let e = ApiError::from_response(500, br#"{"oops":true}"#);
    assert_eq!(e.code, ApiError::UNPARSED);
    assert_eq!(e.body, json!({"oops": true}));
}

#[test]
fn the_sdk_error_exposes_the_refusal() {
    let api = ApiError::from_response(403, br#"{"error":{"code":"not_agent","message":"m"}}"#);
    let error: Error = api.clone().into();
    assert_eq!(error.api(), Some(&api));
}
