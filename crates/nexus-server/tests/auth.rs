//! Credentials on the two planes (errors-and-auth.md §2), route by route in depth; the whole
//! route × bearer matrix, generated from the route table, is `matrix.rs`.

mod common;

use axum::http::StatusCode;
use common::{Reply, harnesses};

fn assert_identical_401(reply: &Reply, what: &str, dialect: &str) {
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{what} on {dialect}");
    assert_eq!(
        reply.headers.get("www-authenticate").map(|v| v.to_str().unwrap()),
        Some("Bearer realm=\"Nexus\""),
        "{what} on {dialect}"
    );
    assert_eq!(
        String::from_utf8_lossy(&reply.bytes),
        r#"{"error":{"code":"unauthorized","message":"authentication required"}}"#,
        "{what} on {dialect}"
    );
}

/// (label, token) pairs that must all fail on a route of `plane_token`'s plane.
fn failing_tokens(plane_token: &str, other_plane_token: &str) -> Vec<(&'static str, Option<String>)> {
    let (id, _) = nexus_kernel::credentials::parse_bearer(plane_token).unwrap();
    vec![
        ("none", None),
        ("malformed", Some("not-a-nexus-token".into())),
        ("malformed prefix", Some(format!("nexus-v2-{id}.secret"))),
        (
            "unknown id",
            Some(format!("nexus-v1-{}.{}", nexus_kernel::time::new_id(), "x".repeat(43))),
        ),
        (
            "known id, wrong secret",
            Some(format!("nexus-v1-{id}.{}", "y".repeat(43))),
        ),
        ("wrong plane", Some(other_plane_token.to_string())),
        ("empty bearer", Some(String::new())),
    ]
}

#[tokio::test]
async fn member_plane_matrix() {
    for h in harnesses().await {
        let good = h.human_token();
        assert_eq!(h.get("/agent_api/v1/profile", Some(&good)).await.status, StatusCode::OK);
        for (label, token) in failing_tokens(&good, &h.runner_token()) {
            let reply = h.get("/agent_api/v1/profile", token.as_deref()).await;
            assert_identical_401(&reply, label, h.dialect);
            let reply = h.get("/agent_api/v1/tools", token.as_deref()).await;
            assert_identical_401(&reply, label, h.dialect);
        }
        // revoked
        h.kernel.admin().revoke_token(&good).await.unwrap();
        assert_identical_401(&h.get("/agent_api/v1/profile", Some(&good)).await, "revoked", h.dialect);
        // another member's token still works
        assert_eq!(
            h.get("/agent_api/v1/profile", Some(&h.agent_token())).await.status,
            StatusCode::OK
        );
    }
}

#[tokio::test]
async fn transport_plane_matrix() {
    for h in harnesses().await {
        let good = h.runner_token();
        let ok = h.get("/agent_api/v1/executor", Some(&good)).await;
        assert_eq!(ok.status, StatusCode::OK, "{}", h.dialect);
        assert_eq!(ok.json()["executor"]["kind"], "runner");
        for (label, token) in failing_tokens(&good, &h.human_token()) {
            assert_identical_401(
                &h.get("/agent_api/v1/executor", token.as_deref()).await,
                label,
                h.dialect,
            );
        }
        // A transport token never reaches member routes either.
        assert_identical_401(
            &h.get("/agent_api/v1/profile", Some(&good)).await,
            "transport on member",
            h.dialect,
        );

        // fenced: re-pairing advances the epoch; the old bearer dies, the new one works.
        let runner_id = h.boot["runner"]["executor_public_id"].as_str().unwrap().to_string();
        let (executor, fresh) = h.kernel.admin().repair_executor(&runner_id).await.unwrap();
        assert_eq!(executor.credential_epoch, 1);
        assert_identical_401(&h.get("/agent_api/v1/executor", Some(&good)).await, "fenced", h.dialect);
        let ok = h.get("/agent_api/v1/executor", Some(&fresh)).await;
        assert_eq!(ok.status, StatusCode::OK);
        assert_eq!(ok.json()["executor"]["credential_epoch"], 1);

        // revoked token
        h.kernel.admin().revoke_token(&fresh).await.unwrap();
        assert_identical_401(
            &h.get("/agent_api/v1/executor", Some(&fresh)).await,
            "revoked",
            h.dialect,
        );

        // revoked executor: even a freshly minted token for it fails
        let app_token = h.agent_transport_token();
        assert_eq!(
            h.get("/agent_api/v1/executor", Some(&app_token)).await.status,
            StatusCode::OK
        );
        let app_id = h.boot["agent"]["executor_public_id"].as_str().unwrap().to_string();
        h.kernel.admin().revoke_executor(&app_id).await.unwrap();
        assert_identical_401(
            &h.get("/agent_api/v1/executor", Some(&app_token)).await,
            "revoked executor",
            h.dialect,
        );
    }
}

#[tokio::test]
async fn token_scheme_is_accepted() {
    for h in harnesses().await {
        let req = axum::http::Request::builder()
            .uri("/agent_api/v1/profile")
            .header("authorization", format!("Token {}", h.human_token()))
            .body(axum::body::Body::empty())
            .unwrap();
        assert_eq!(h.raw(req).await.status, StatusCode::OK);
    }
}

#[tokio::test]
async fn self_reads_have_their_shapes() {
    for h in harnesses().await {
        let human = h.get("/agent_api/v1/profile", Some(&h.human_token())).await.json();
        assert_eq!(human["member"]["kind"], "human");
        assert_eq!(human["member"]["public_id"], h.boot["human"]["public_id"]);
        assert_eq!(
            human["credential"],
            serde_json::json!({"plane": "member", "expires_at": null})
        );
        assert!(human.get("configuration").is_none(), "humans have no configuration");
        let measured = human["measured_at"].as_str().unwrap();
        assert!(measured.len() == 20 && measured.ends_with('Z'), "{measured}");

        let agent = h.get("/agent_api/v1/profile", Some(&h.agent_token())).await.json();
        assert_eq!(agent["member"]["kind"], "agent");
        assert_eq!(agent["configuration"]["tool_definitions"], serde_json::json!([]));
        assert_eq!(agent["configuration"]["approval_mode"], serde_json::Value::Null);

        let exec = h
            .get("/agent_api/v1/executor", Some(&h.agent_transport_token()))
            .await
            .json();
        assert_eq!(exec["executor"]["kind"], "agent_application");
        assert_eq!(exec["executor"]["public_id"], h.boot["agent"]["executor_public_id"]);
        assert_eq!(exec["executor"]["status"], "active");
        assert_eq!(exec["executor"]["credential_epoch"], 0);
    }
}

#[tokio::test]
async fn expired_credentials_get_the_same_401() {
    use nexus_store::prelude::*;
    use nexus_store::{NewCredential, Plane};
    for h in harnesses().await {
        let human_id = uuid::Uuid::parse_str(h.boot["human"]["public_id"].as_str().unwrap()).unwrap();
        let human = h.kernel.store.member_by_public_id(human_id).await.unwrap().unwrap();
        let now = nexus_kernel::time::now_ms();
        let mut tokens = Vec::new();
        for expires_at in [now - 1_000, now + 3_600_000] {
            let minted = nexus_kernel::credentials::mint();
            h.kernel
                .store
                .insert_credential(NewCredential {
                    public_id: minted.public_id,
                    plane: Plane::Member,
                    member_id: Some(human.id),
                    executor_id: None,
                    epoch: 0,
                    secret_sha256: minted.secret_sha256,
                    expires_at: Some(expires_at),
                    now,
                })
                .await
                .unwrap();
            tokens.push(minted.token);
        }
        assert_identical_401(
            &h.get("/agent_api/v1/profile", Some(&tokens[0])).await,
            "expired",
            h.dialect,
        );
        let live = h.get("/agent_api/v1/profile", Some(&tokens[1])).await;
        assert_eq!(live.status, StatusCode::OK, "an unexpired credential works");
        let expires = live.json()["credential"]["expires_at"].as_str().unwrap().to_string();
        assert!(expires.ends_with('Z') && expires.len() == 20, "{expires}");
    }
}
