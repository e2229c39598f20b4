//! `GET /agent_api/v1/tools` (registry.md §7): the kernel tool catalog, identical for every
//! caller, with a strong ETag.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use crate::AppState;
use crate::auth::Member;

/// The serialized catalog and its strong ETag, computed once per process.
pub struct CatalogBytes {
    pub body: String,
    pub etag: String,
}

impl CatalogBytes {
    pub fn render() -> Self {
        let body = serde_json::to_string(&nexus_core::registry::catalog()).expect("the catalog serializes");
        let etag = format!("\"{}\"", &hex::encode(Sha256::digest(body.as_bytes()))[..32]);
        Self { body, etag }
    }
}

fn if_none_match_hits(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| {
            let tag = tag.trim();
            tag == "*" || tag == etag
        })
}

pub async fn list(State(state): State<AppState>, _member: Member, headers: HeaderMap) -> Response {
    let catalog = &state.catalog;
    let etag = HeaderValue::from_str(&catalog.etag).expect("an etag is a valid header");
    if if_none_match_hits(&headers, &catalog.etag) {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
    }
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
            (header::ETAG, etag),
        ],
        catalog.body.clone(),
    )
        .into_response()
}
