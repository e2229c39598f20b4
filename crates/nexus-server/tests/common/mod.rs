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
    pub _store: TestStore,
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

    /// `GET path` as `token`, asserting `200`; its JSON body.
    pub async fn get_ok_as(&self, token: &str, path: &str) -> Value {
        let r = self.get(path, Some(token)).await;
        assert_eq!(
            r.status,
            StatusCode::OK,
            "{path}: {}",
            String::from_utf8_lossy(&r.bytes)
        );
        r.json()
    }

    /// `GET path` as the bootstrap's agent, asserting `200`; its JSON body.
    pub async fn get_ok(&self, path: &str) -> Value {
        self.get_ok_as(&self.agent_token(), path).await
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
        let boot = serde_json::to_value(kernel.admin().bootstrap().await.expect("bootstrap")).unwrap();
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

// ---- the run engine: scripts, extra headers, streamed bodies -------------------------------

/// A bootstrapped harness on every available engine whose `scripted` provider reads
/// `<dir>/<name>.jsonl`, with no provider backoff. Drive the engine with
/// `h.kernel.work_until_idle(n)`.
pub async fn harnesses_with_scripts(dir: &std::path::Path) -> Vec<Harness> {
    let mut out = Vec::new();
    for store in testing::engines().await {
        let kernel = Kernel::builder(store.store.clone())
            .scripts_dir(dir)
            .provider_backoff_ms(vec![0, 0, 0])
            .build();
        let boot = serde_json::to_value(kernel.admin().bootstrap().await.expect("bootstrap")).unwrap();
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

/// Writes `<dir>/<name>.jsonl`, one JSON value a line.
pub fn write_script(dir: &std::path::Path, name: &str, lines: &[Value]) {
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(dir.join(format!("{name}.jsonl")), text.join("\n")).unwrap();
}

impl Harness {
    /// The workspace's public id.
    pub fn ws_public_id(&self) -> String {
        self.boot["workspace_public_id"].as_str().unwrap().to_string()
    }

    /// `W = /agent_api/v1/workspaces/{ws}`.
    pub fn w(&self) -> String {
        format!("/agent_api/v1/workspaces/{}", self.ws_public_id())
    }

    /// `R = W/runs/{run}`.
    pub fn r(&self, run: &str) -> String {
        format!("{}/runs/{run}", self.w())
    }

    /// `POST W/runs` with `{"run": run}` as `token`: the answer, whatever it is.
    pub async fn post_run(&self, token: &str, run: Value) -> Reply {
        let body = serde_json::json!({ "run": run });
        self.json(Method::POST, &format!("{}/runs", self.w()), Some(token), &body)
            .await
    }

    /// Creates and starts a run of `steps` as `token` (`rules`: the `approval_rules`, or null
    /// for none), drives the engine until idle, returns the run's public id.
    pub async fn start_run(&self, token: &str, mode: &str, rules: Value, steps: Value) -> String {
        let mut run = serde_json::json!({"approval_mode": mode, "steps": steps});
        if !rules.is_null() {
            run["approval_rules"] = rules;
        }
        let r = self.post_run(token, run).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
        let id = r.json()["run"]["public_id"].as_str().unwrap().to_string();
        let s = self
            .json(
                Method::POST,
                &format!("{}/start", self.r(&id)),
                Some(token),
                &serde_json::json!({}),
            )
            .await;
        assert_eq!(s.status, StatusCode::OK, "{}", s.json());
        self.kernel.runs().work_until_idle(10).await.unwrap();
        id
    }

    /// The workspace's internal id.
    pub async fn ws_id(&self) -> i64 {
        let id = uuid::Uuid::parse_str(&self.ws_public_id()).unwrap();
        nexus_store::AccountStore::workspace_by_public_id(&self.kernel.store, id)
            .await
            .unwrap()
            .unwrap()
            .id
    }

    /// Sends a JSON body (or none) with extra headers.
    pub async fn send_with(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> Reply {
        self.raw(self.request(method, path, token, body, headers)).await
    }

    /// Builds a request with optional bearer, JSON body and extra headers.
    pub fn request(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> Request<Body> {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        match body {
            Some(b) => req
                .header("content-type", "application/json")
                .body(Body::from(serde_json::to_vec(b).unwrap())),
            None => req.body(Body::empty()),
        }
        .unwrap()
    }

    /// Sends a request and returns the response unread (for streamed bodies).
    pub async fn open(&self, req: Request<Body>) -> axum::response::Response {
        self.app.clone().oneshot(req).await.unwrap()
    }
}

/// Parses SSE text into `(id, event, data)` frames (comments skipped).
pub fn frames(text: &str) -> Vec<(Option<String>, Option<String>, Value)> {
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let (mut id, mut event, mut data) = (None, None, None);
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("id:") {
                id = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("event:") {
                event = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("data:") {
                data = Some(serde_json::from_str(v.trim()).unwrap_or_else(|e| panic!("{e}: {v}")));
            }
        }
        if let Some(d) = data {
            out.push((id, event, d));
        }
    }
    out
}

/// Reads a streamed body until `pred` holds on the text read so far, or `timeout` passes.
/// Returns the text read.
pub async fn read_until(body: &mut Body, timeout: std::time::Duration, pred: impl Fn(&str) -> bool) -> String {
    use axum::body::HttpBody;
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + timeout;
    while !pred(&text) {
        let frame = tokio::time::timeout_at(
            deadline,
            std::future::poll_fn(|cx| std::pin::Pin::new(&mut *body).poll_frame(cx)),
        )
        .await;
        match frame {
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    text.push_str(&String::from_utf8_lossy(&data));
                }
            }
            Ok(Some(Err(e))) => panic!("stream error: {e}"),
            Ok(None) => break,
            Err(_) => break,
        }
    }
    text
}

// ---- members and the bootstrap runner --------------------------------------------------------

impl Harness {
    /// A new human member of the workspace with `standing`; returns its member token.
    pub async fn member_with(&self, handle: &str, standing: nexus_store::Standing) -> String {
        let created = self
            .kernel
            .admin()
            .create_member(nexus_kernel::admin::MemberSpec {
                kind: nexus_store::MemberKind::Human,
                handle: handle.into(),
                display_name: None,
                steward: None,
                standing: None,
            })
            .await
            .unwrap();
        nexus_store::AccountStore::set_standing(&self.kernel.store, self.ws_id().await, created.member.id, standing)
            .await
            .unwrap();
        created.member_token
    }

    /// The bootstrap runner's public id.
    pub fn runner_id(&self) -> String {
        self.boot["runner"]["executor_public_id"].as_str().unwrap().to_string()
    }

    /// Stores `tools` as the bootstrap runner's announcement.
    pub async fn announce_runner(&self, tools: Value) {
        let store = &self.kernel.store;
        let id = uuid::Uuid::parse_str(&self.runner_id()).unwrap();
        let runner = nexus_store::ExecutorStore::executor_by_public_id(store, id)
            .await
            .unwrap()
            .unwrap();
        let announcement = nexus_store::Announcement {
            served_tools: tools.to_string(),
            environment: "{}".into(),
            served_documents: "[]".into(),
        };
        nexus_store::ExecutorStore::put_announcement(store, runner.id, &announcement, nexus_kernel::time::now_ms())
            .await
            .unwrap();
    }
}
