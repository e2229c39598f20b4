//! The JSON body extractor: a wrong content type is 415, an oversized body 413, a body that is
//! not UTF-8 JSON or not an object 400 `bad_request` — never a 500 and never axum's plain text.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::header;
use nexus_core::codes::Code;
use serde_json::Value;

use crate::edges::{self, Timeouts};
use crate::error::ApiError;

/// A JSON object body, parsed with member order kept.
#[derive(Debug)]
pub struct JsonObject(pub Value);

fn is_json_content_type(value: &str) -> bool {
    let essence = value.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
        || (essence.len() > 5
            && essence[..essence.len() - 5].contains('/')
            && essence.to_ascii_lowercase().ends_with("+json"))
}

/// Reads the whole body within the route's limit and the body read timeout: a declared
/// `Content-Length` over the limit is 413 `content_too_large` before a byte is read, a body
/// that grows past it is cut there, and one that does not arrive in time is refused.
async fn read_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    edges::declared_over(&req)?;
    let limit = req.extensions().get::<Timeouts>().copied().unwrap_or_default().body;
    edges::read_within(limit, async {
        Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(Code::ContentTooLarge, "the request body exceeds its size bound")
            } else {
                ApiError::new(Code::BadRequest, "the request body could not be read")
            }
        })
    })
    .await
}

/// Parses raw bytes as a JSON object body.
pub fn parse_object(bytes: &[u8]) -> Result<Value, ApiError> {
    let text =
        std::str::from_utf8(bytes).map_err(|_| ApiError::new(Code::BadRequest, "the body is not valid UTF-8"))?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| ApiError::new(Code::BadRequest, format!("the body is not valid JSON: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::new(Code::BadRequest, "the body must be a JSON object"));
    }
    Ok(value)
}

impl<S: Send + Sync> FromRequest<S> for JsonObject {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !is_json_content_type(content_type) {
            return Err(ApiError::new(
                Code::UnsupportedMediaType,
                "this route takes a JSON body: send Content-Type: application/json",
            ));
        }
        let bytes = read_bytes(req, state).await?;
        Ok(JsonObject(parse_object(&bytes)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types() {
        assert!(is_json_content_type("application/json"));
        assert!(is_json_content_type("application/json; charset=utf-8"));
        assert!(is_json_content_type("Application/JSON"));
        assert!(is_json_content_type("application/merge-patch+json"));
        assert!(!is_json_content_type("text/plain"));
        assert!(!is_json_content_type(""));
        assert!(!is_json_content_type("+json"));
    }

    #[test]
    fn object_bodies_only() {
        assert!(parse_object(b"{}").is_ok());
        for bad in [&b"[]"[..], b"1", b"{", b"\xff\xfe", b""] {
            assert_eq!(parse_object(bad).unwrap_err().0.code, Code::BadRequest);
        }
    }
}

/// A JSON object body that may be omitted entirely (an empty body reads as `{}`), for verbs
/// whose body is optional (`start`, `stop`, `approve`, `deny`).
#[derive(Debug)]
pub struct OptionalJsonObject(pub Value);

impl<S: Send + Sync> FromRequest<S> for OptionalJsonObject {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let has_type = req.headers().contains_key(header::CONTENT_TYPE);
        let length_zero = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() == "0");
        if !has_type {
            let bytes = read_bytes(req, state).await?;
            if bytes.is_empty() {
                return Ok(OptionalJsonObject(Value::Object(Default::default())));
            }
            return Err(ApiError::new(
                Code::UnsupportedMediaType,
                "this route takes a JSON body: send Content-Type: application/json",
            ));
        }
        if length_zero {
            return Ok(OptionalJsonObject(Value::Object(Default::default())));
        }
        Ok(OptionalJsonObject(JsonObject::from_request(req, state).await?.0))
    }
}
