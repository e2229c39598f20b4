//! A served kernel per engine, driven by its own worker, plus the raw executor-plane calls a
//! test needs to play a runner (the runner framework is not under test here).

use std::future::Future;
use std::time::Duration;

use nexus_kernel::Kernel;
use nexus_sdk::member::{RunRef, Task};
use nexus_sdk::{Client, Error, Workspace};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// How long a test waits for the engine before failing.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// One engine's kernel, served on a loopback port with a worker; both tasks are aborted on drop.
pub struct Served {
    pub dialect: &'static str,
    pub base: String,
    pub agent: Client,
    pub human: Client,
    pub boot: Value,
    server: JoinHandle<std::io::Result<()>>,
    worker: JoinHandle<()>,
    _dirs: (TempDir, TempDir),
    _store: nexus_store::testing::TestStore,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.server.abort();
        self.worker.abort();
    }
}

impl Served {
    pub fn ws_id(&self) -> String {
        self.boot["workspace_public_id"].as_str().unwrap().to_owned()
    }

    /// The agent's view of the workspace.
    pub fn ws(&self) -> Workspace {
        self.agent.workspace(&self.ws_id())
    }

    pub fn runner_id(&self) -> String {
        self.boot["runner"]["executor_public_id"].as_str().unwrap().to_owned()
    }

    pub fn runner_token(&self) -> String {
        self.boot["runner"]["transport_token"].as_str().unwrap().to_owned()
    }

    /// Inserts a child conversation labelled `label` under `parent` through the store (the
    /// kernel does not spawn children yet); returns its id.
    pub async fn child_of(&self, parent: &str, label: &str) -> String {
        use nexus_store::prelude::*;
        let store = &self._store.store;
        let parent = store
            .conversation_by_public_id(parent.parse().unwrap())
            .await
            .unwrap()
            .expect("the parent exists");
        let mut tx = store.begin().await.unwrap();
        let child = tx
            .insert_conversation(nexus_store::NewConversation {
                public_id: uuid::Uuid::now_v7(),
                workspace_id: parent.workspace_id,
                created_by_id: parent.created_by_id,
                answering_member_id: parent.answering_member_id,
                default_runner_id: None,
                title: None,
                parent_id: Some(parent.id),
                spawn_task_id: None,
                label: Some(label.into()),
                reply_route: None,
                created_at: parent.created_at,
            })
            .await
            .unwrap();
        tx.commit().await.unwrap();
        child.public_id.to_string()
    }

    /// Stores `texts` as turns of the conversation, alternating user and assistant, through the
    /// store (turns are the kernel's turn engine's to write); returns their ids.
    pub async fn turns(&self, conversation: &str, texts: &[&str]) -> Vec<String> {
        use nexus_store::prelude::*;
        let store = &self._store.store;
        let row = store
            .conversation_by_public_id(conversation.parse().unwrap())
            .await
            .unwrap()
            .expect("the conversation exists");
        let turns = nexus_store::testing::seed_turns(store, row.id, texts, row.created_at).await;
        turns.iter().map(|t| t.public_id.to_string()).collect()
    }

    /// A raw executor-plane call as the bootstrap runner: `(status, body)`.
    pub async fn executor(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = reqwest::Client::new()
            .request(method, format!("{}/agent_api/v1/executor{path}", self.base))
            .bearer_auth(self.runner_token());
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("the server answers");
        let status = response.status().as_u16();
        let bytes = response.bytes().await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    /// Announces `echo` (a read-only tool) as the bootstrap runner.
    pub async fn announce_echo(&self) {
        let profile = nexus_core::registry::EffectProfile::READ.to_json();
        let body = json!({"tools": [{"name": "echo", "effect_profile": profile,
                                     "description": "Echo the input.", "input_schema": {"type": "object"}}]});
        let (status, reply) = self.executor(reqwest::Method::PUT, "/announcement", Some(body)).await;
        assert_eq!(status, 200, "{reply}");
    }

    /// Claims `run/key` as the runner; returns the claim token.
    pub async fn claim(&self, run: &str, key: &str) -> String {
        let (status, reply) = self
            .executor(reqwest::Method::POST, &format!("/inbox/{run}/{key}/claim"), None)
            .await;
        assert_eq!(status, 200, "{reply}");
        reply["claim"]["claim_token"].as_str().unwrap().to_owned()
    }
}

/// A served kernel on every available engine. `scripts` are written as `<name>.jsonl` for the
/// `scripted` provider (`model: "scripted/<name>"`).
pub async fn served(scripts: &[(&str, Vec<Value>)]) -> Vec<Served> {
    let mut out = Vec::new();
    for store in nexus_store::testing::engines().await {
        let (script_dir, blobs) = (TempDir::new().unwrap(), TempDir::new().unwrap());
        for (name, lines) in scripts {
            let text: Vec<String> = lines.iter().map(Value::to_string).collect();
            std::fs::write(script_dir.path().join(format!("{name}.jsonl")), text.join("\n")).unwrap();
        }
        let kernel = Kernel::builder(store.store.clone())
            .scripts_dir(script_dir.path())
            .blobs_dir(blobs.path())
            .provider_backoff_ms(vec![0, 0, 0])
            .sweep_interval_ms(50)
            .build();
        let boot = serde_json::to_value(kernel.admin().bootstrap().await.expect("bootstrap")).expect("JSON");
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(nexus_server::serve(
            listener,
            nexus_server::AppState::new(kernel.clone()),
            std::future::pending(),
        ));
        let worker = kernel.runs().spawn_worker(std::future::pending());
        let token = |who: &str| boot[who]["member_token"].as_str().unwrap().to_owned();
        out.push(Served {
            dialect: store.dialect,
            agent: Client::new(&base, &token("agent")),
            human: Client::new(&base, &token("human")),
            base,
            boot,
            server,
            worker,
            _dirs: (script_dir, blobs),
            _store: store,
        });
    }
    out
}

/// The `(status, code)` of an API refusal; panics on success or any other error.
pub fn refusal<T: std::fmt::Debug>(result: Result<T, Error>) -> (u16, String) {
    match result {
        Ok(value) => panic!("expected a refusal, got {value:?}"),
        Err(e) => {
            let api = e.api().unwrap_or_else(|| panic!("expected an API refusal, got {e}"));
            (api.status, api.code.clone())
        }
    }
}

/// Polls `probe` until it yields `Some`, failing after [`PATIENCE`].
pub async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The task `key` of `run` once `pred` holds on it.
pub async fn task_when(run: &RunRef, key: &str, pred: impl Fn(&Task) -> bool) -> Task {
    eventually(&format!("task {key}"), || async {
        let task = run.task(key).await.ok()?;
        pred(&task).then_some(task)
    })
    .await
}
