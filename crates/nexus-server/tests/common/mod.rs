//! Shared harness: a fresh, bootstrapped server per engine, driven in-process with `oneshot`.

#![allow(dead_code)]

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use nexus_kernel::Kernel;
use nexus_server::{AppState, router};
use nexus_store::testing::{self, TestStore};
use serde_json::Value;
use tower::ServiceExt;

/// One engine's server, bootstrapped.
pub struct Harness {
    pub dialect: &'static str,
    pub kernel: Kernel,
    pub app: Router,
    /// The `nexus admin bootstrap --json` object.
    pub boot: Value,
    _store: TestStore,
}

/// A response, read whole.
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub bytes: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.bytes)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.bytes)))
    }

    /// The envelope's `error.code`.
    pub fn code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or_else(|| panic!("no error code in {:?}", self.json()))
            .to_string()
    }
}

impl Harness {
    pub fn agent_token(&self) -> String {
        self.boot["agent"]["member_token"].as_str().unwrap().to_string()
    }
    pub fn human_token(&self) -> String {
        self.boot["human"]["member_token"].as_str().unwrap().to_string()
    }
    pub fn runner_token(&self) -> String {
        self.boot["runner"]["transport_token"].as_str().unwrap().to_string()
    }
    pub fn agent_transport_token(&self) -> String {
        self.boot["agent"]["transport_token"].as_str().unwrap().to_string()
    }

    /// Sends a request with optional bearer and optional raw body with a content type.
    pub async fn send(&self, method: Method, path: &str, token: Option<&str>, body: Option<(&str, Vec<u8>)>) -> Reply {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let req = match body {
            Some((content_type, bytes)) => req.header("content-type", content_type).body(Body::from(bytes)),
            None => req.body(Body::empty()),
        }
        .unwrap();
        self.raw(req).await
    }

    pub async fn raw(&self, req: Request<Body>) -> Reply {
        let resp = self.app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec();
        Reply { status, headers, bytes }
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Reply {
        self.send(Method::GET, path, token, None).await
    }

    pub async fn json(&self, method: Method, path: &str, token: Option<&str>, body: &Value) -> Reply {
        self.send(
            method,
            path,
            token,
            Some(("application/json", serde_json::to_vec(body).unwrap())),
        )
        .await
    }
}

/// A bootstrapped harness on every available engine (SQLite, then PostgreSQL when configured).
pub async fn harnesses() -> Vec<Harness> {
    let mut out = Vec::new();
    for store in testing::engines().await {
        let kernel = Kernel::new(store.store.clone());
        let boot = kernel.bootstrap().await.expect("bootstrap");
        let app = router(AppState::new(kernel.clone()));
        out.push(Harness {
            dialect: store.dialect,
            kernel,
            app,
            boot,
            _store: store,
        });
    }
    out
}
