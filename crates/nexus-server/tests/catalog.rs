//! `GET /agent_api/v1/tools`: the served catalog is the registry's, matches the contract pack,
//! carries a strong ETag, and needs a member credential.

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::harnesses;

#[tokio::test]
async fn served_catalog_is_the_registry_render() {
    for h in harnesses().await {
        let reply = h.get("/agent_api/v1/tools", Some(&h.agent_token())).await;
        assert_eq!(reply.status, StatusCode::OK);
        let served = reply.json();
        assert_eq!(served, nexus_core::registry::catalog());
        let tools = served["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 19);
        let keys: Vec<&str> = tools[0].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["canonical_name", "name", "effect_profile", "definition", "template"]
        );
        // identical for every caller
        let other = h.get("/agent_api/v1/tools", Some(&h.human_token())).await;
        assert_eq!(other.bytes, reply.bytes);
    }
}

#[tokio::test]
async fn served_delegate_task_equals_the_contract_pack_entry() {
    let pack_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../contracts/nexus/v1/tools.json");
    let pack: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(pack_path).unwrap()).unwrap();
    let fixture = &pack["valid_listing_fixture"]["tools"];
    assert_eq!(fixture.as_array().unwrap().len(), 1);
    for h in harnesses().await {
        let served = h.get("/agent_api/v1/tools", Some(&h.agent_token())).await.json();
        let entry = served["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["canonical_name"] == "nexus.graph.delegate_task")
            .unwrap();
        assert_eq!(entry, &fixture[0]);
        // byte-identical too, member order included
        assert_eq!(
            serde_json::to_string(entry).unwrap(),
            serde_json::to_string(&fixture[0]).unwrap()
        );
    }
}

#[tokio::test]
async fn etag_and_if_none_match() {
    for h in harnesses().await {
        let reply = h.get("/agent_api/v1/tools", Some(&h.agent_token())).await;
        let etag = reply.headers.get("etag").unwrap().to_str().unwrap().to_string();
        assert!(
            etag.starts_with('"') && etag.ends_with('"') && !etag.starts_with("W/"),
            "{etag}"
        );
        let req = Request::builder()
            .uri("/agent_api/v1/tools")
            .header("authorization", format!("Bearer {}", h.agent_token()))
            .header("if-none-match", &etag)
            .body(Body::empty())
            .unwrap();
        let not_modified = h.raw(req).await;
        assert_eq!(not_modified.status, StatusCode::NOT_MODIFIED);
        assert!(not_modified.bytes.is_empty());
        let req = Request::builder()
            .uri("/agent_api/v1/tools")
            .header("authorization", format!("Bearer {}", h.agent_token()))
            .header("if-none-match", "\"something-else\"")
            .body(Body::empty())
            .unwrap();
        assert_eq!(h.raw(req).await.status, StatusCode::OK);
        // 401 before 304: an unauthenticated conditional request learns nothing.
        let req = Request::builder()
            .uri("/agent_api/v1/tools")
            .header("if-none-match", &etag)
            .body(Body::empty())
            .unwrap();
        assert_eq!(h.raw(req).await.status, StatusCode::UNAUTHORIZED);
    }
}

#[tokio::test]
async fn healthz_needs_no_credential() {
    for h in harnesses().await {
        let reply = h.get("/healthz", None).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.json(), serde_json::json!({"status": "ok"}));
    }
}

#[tokio::test]
async fn unknown_routes_and_methods_get_the_envelope() {
    for h in harnesses().await {
        let reply = h.get("/agent_api/v1/nope", None).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND);
        assert_eq!(reply.code(), "not_found");
        let reply = h
            .send(axum::http::Method::DELETE, "/agent_api/v1/tools", None, None)
            .await;
        assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(reply.code(), "method_not_allowed");
    }
}
