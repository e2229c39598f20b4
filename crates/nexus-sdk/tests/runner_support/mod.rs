//! Shared by the runner framework tests: a real server per engine that can be killed and
//! restarted on the same port over the same store, and the member calls the tests drive runs
//! with.
//!
//! Each server instance runs in its own tokio runtime with its own store pool, so a kill
//! (`Runtime::shutdown_timeout`) drops every task, connection and pool of that instance at
//! once, as a `kill -9` of the process would; the restart opens the store again.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use nexus_kernel::Kernel;
use nexus_sdk::runner::{EffectProfile, ToolSpec};
use nexus_store::{Store, StoreOptions};
use serde_json::{Value, json};

/// How long a test waits for a condition before failing.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// The statuses of a settled task.
pub const SETTLED: [&str; 6] = ["completed", "failed", "canceled", "timed_out", "skipped", "uncertain"];

/// One engine's store, bootstrapped, and the server serving it.
pub struct Live {
    pub dialect: &'static str,
    pub base: String,
    pub boot: Value,
    options: StoreOptions,
    blobs: PathBuf,
    addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
    http: reqwest::Client,
    _blobs_dir: tempfile::TempDir,
    _store: nexus_store::testing::TestStore,
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A served, bootstrapped kernel on every available engine.
pub async fn lives() -> Vec<Live> {
    let mut out = Vec::new();
    for store in nexus_store::testing::engines().await {
        let boot = serde_json::to_value(
            Kernel::new(store.store.clone())
                .admin()
                .bootstrap()
                .await
                .expect("bootstrap"),
        )
        .expect("JSON");
        let options = StoreOptions {
            single_node_lock: false,
            ..store.options()
        };
        let blobs_dir = tempfile::tempdir().expect("a blobs dir");
        let mut live = Live {
            dialect: store.dialect,
            base: String::new(),
            boot,
            options,
            blobs: blobs_dir.path().to_path_buf(),
            addr: "127.0.0.1:0".parse().unwrap(),
            runtime: None,
            http: reqwest::Client::new(),
            _blobs_dir: blobs_dir,
            _store: store,
        };
        live.start();
        out.push(live);
    }
    out
}

impl Live {
    /// Starts a server instance on `self.addr` (a fresh port the first time).
    fn start(&mut self) {
        assert!(self.runtime.is_none(), "already serving");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a server runtime");
        let listener = {
            let _entered = runtime.enter();
            bind(self.addr)
        };
        self.addr = listener.local_addr().unwrap();
        self.base = format!("http://{}", self.addr);
        let (options, blobs) = (self.options.clone(), self.blobs.clone());
        runtime.spawn(async move {
            let store = Store::open(&options).await.expect("open the store");
            let kernel = Kernel::builder(store).blobs_dir(blobs).sweep_interval_ms(100).build();
            let _worker = kernel.runs().spawn_worker(std::future::pending());
            let state = nexus_server::AppState::new(kernel);
            let _ = nexus_server::serve(listener, state, std::future::pending()).await;
        });
        self.runtime = Some(runtime);
    }

    /// Kills the server: every task, connection and pool of the instance is dropped at once.
    pub fn kill(&mut self) {
        let runtime = self.runtime.take().expect("serving");
        std::thread::spawn(move || runtime.shutdown_timeout(Duration::from_secs(10)))
            .join()
            .unwrap();
    }

    /// A new server instance on the same port over the same store.
    pub async fn restart(&mut self) {
        self.start();
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while self.get_raw("/healthz", None).await.is_err() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the restarted server never answered"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn runner_token(&self) -> String {
        self.boot["runner"]["transport_token"].as_str().unwrap().to_owned()
    }

    pub fn runner_id(&self) -> String {
        self.boot["runner"]["executor_public_id"].as_str().unwrap().to_owned()
    }

    fn human_token(&self) -> String {
        self.boot["human"]["member_token"].as_str().unwrap().to_owned()
    }

    fn w(&self) -> String {
        format!(
            "/agent_api/v1/workspaces/{}",
            self.boot["workspace_public_id"].as_str().unwrap()
        )
    }

    async fn get_raw(&self, path: &str, token: Option<&str>) -> reqwest::Result<reqwest::Response> {
        let mut request = self.http.get(format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send().await
    }

    /// A member call as the human; asserts a 2xx and returns the JSON body.
    pub async fn member(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .bearer_auth(self.human_token());
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("the server answers");
        let status = response.status();
        let text = response.text().await.unwrap();
        assert!(status.is_success(), "{method} {path}: {status} {text}");
        serde_json::from_str(&text).unwrap()
    }

    /// Creates and starts a run of one runner-routed tool step `t` (approval bypass).
    pub async fn tool_run(&self, tool: &str, input: Value) -> String {
        let step = json!({"key": "t", "tool": {"name": tool, "input": input,
            "route": {"kind": "runner", "runner_executor_public_id": self.runner_id()}}});
        let run = json!({"run": {"approval_mode": "bypass", "steps": [step]}});
        let created = self
            .member(reqwest::Method::POST, &format!("{}/runs", self.w()), Some(run))
            .await;
        let id = created["run"]["public_id"].as_str().unwrap().to_owned();
        self.member(
            reqwest::Method::POST,
            &format!("{}/runs/{id}/start", self.w()),
            Some(json!({})),
        )
        .await;
        id
    }

    /// `GET R/tasks/t`.
    pub async fn task(&self, run: &str) -> Value {
        let path = format!("{}/runs/{run}/tasks/t", self.w());
        self.member(reqwest::Method::GET, &path, None).await["task"].clone()
    }

    /// `POST R/stop` with `force`.
    pub async fn stop(&self, run: &str, force: bool) {
        let path = format!("{}/runs/{run}/stop", self.w());
        self.member(reqwest::Method::POST, &path, Some(json!({"force": force})))
            .await;
    }

    /// The run's durable events of `kind`.
    pub async fn events(&self, run: &str, kind: &str) -> Vec<Value> {
        let path = format!("{}/runs/{run}/events?limit=500", self.w());
        let body = self.member(reqwest::Method::GET, &path, None).await;
        body["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == kind)
            .cloned()
            .collect()
    }

    /// Waits until the runner's announcement serves `tool` (runs created before would fail
    /// `tool_not_served`).
    pub async fn wait_served(&self, tool: &str) {
        let path = format!("/agent_api/v1/executors/{}", self.runner_id());
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let body = self.member(reqwest::Method::GET, &path, None).await;
            let served = body["executor"]["served_tools"]
                .as_array()
                .is_some_and(|tools| tools.iter().any(|t| t["name"] == tool));
            if served {
                return;
            }
            assert!(tokio::time::Instant::now() < deadline, "{tool} was never announced");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Uploads `bytes` as the human (`POST /agent_api/v1/uploads`) and returns its id.
    pub async fn upload(&self, bytes: &[u8], filename: &str) -> String {
        let part = reqwest::multipart::Part::bytes(bytes.to_vec()).file_name(filename.to_owned());
        let response = self
            .http
            .post(format!("{}/agent_api/v1/uploads", self.base))
            .bearer_auth(self.human_token())
            .multipart(reqwest::multipart::Form::new().part("upload[file]", part))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), reqwest::StatusCode::CREATED);
        let body: Value = response.json().await.unwrap();
        body["upload"]["public_id"].as_str().unwrap().to_owned()
    }

    /// The bytes of an upload, read as the human (`GET /agent_api/v1/uploads/{id}/bytes`).
    pub async fn upload_bytes(&self, id: &str) -> Vec<u8> {
        let path = format!("/agent_api/v1/uploads/{id}/bytes");
        let response = self.get_raw(&path, Some(&self.human_token())).await.unwrap();
        assert!(response.status().is_success(), "{}", response.status());
        response.bytes().await.unwrap().to_vec()
    }

    /// Waits until the task `t` of `run` leaves `dispatched` (and `waiting`), then returns it.
    pub async fn settled(&self, run: &str) -> Value {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let task = self.task(run).await;
            let status = task["status"].as_str().unwrap_or_default();
            if SETTLED.contains(&status) {
                return task;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the task never settled on {}: {task}",
                self.dialect
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

/// A loopback listener on `addr`, with `SO_REUSEADDR` so a restart rebinds the port the killed
/// instance held (its closed connections linger in `TIME_WAIT`).
fn bind(addr: SocketAddr) -> tokio::net::TcpListener {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_reuseaddr(true).unwrap();
        match socket.bind(addr).and_then(|()| socket.listen(1024)) {
            Ok(listener) => return listener,
            Err(e) => {
                assert!(std::time::Instant::now() < deadline, "cannot bind {addr}: {e}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// A READ tool any model could call.
pub fn read_tool(name: &str) -> ToolSpec {
    ToolSpec::new(name, EffectProfile::READ)
        .description("A test tool.")
        .input_schema(json!({"type": "object"}))
}

/// Waits until `condition` holds.
pub async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !condition() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
