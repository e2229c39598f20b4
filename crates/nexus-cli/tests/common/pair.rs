//! Two real `nexus serve` processes on one PostgreSQL database: the harness of the two-node
//! tests (`tests/nodes.rs`) and the fault run (`tests/chaos.rs`).

use std::path::Path;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use nexus_sdk::executor_client::ExecutorClient;
use nexus_sdk::member::{ApprovalMode, NewRun, Step};
use nexus_sdk::runner::{Announcement, EffectProfile, ToolSpec};
use nexus_sdk::{Client, Workspace};
use nexus_store::testing::TestStore;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderValue, header};

use super::{Server, free_port, json_of, nexus, spawn_server_with};

/// The model lease of the nodes here: a killed node's round is taken over after this.
pub const LEASE_MS: u64 = 3_000;

/// One database, its bootstrap, and the two nodes' data dirs (each node has its own, so its
/// own `auto` node id; both hold the same scripts).
pub struct Pair {
    pub _pg: TestStore,
    pub url: String,
    pub dirs: [tempfile::TempDir; 2],
    pub member_token: String,
    pub agent_token: String,
    pub runner_token: String,
    pub runner_id: String,
    pub ws: String,
}

/// A running node.
pub struct Node {
    pub server: Server,
    pub base: String,
}

impl Pair {
    /// `None` without PostgreSQL.
    pub async fn new() -> Option<Pair> {
        let pg = nexus_store::testing::postgres().await?;
        let url = pg.url.clone();
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        for dir in &dirs {
            write_config_and_scripts(dir.path());
        }
        let d = dirs[0].path().to_str().unwrap().to_string();
        let boot = json_of(&nexus(&[
            "admin",
            "bootstrap",
            "--data-dir",
            &d,
            "--database-url",
            &url,
            "--json",
        ]));
        let s = |v: &Value| v.as_str().unwrap().to_string();
        Some(Pair {
            _pg: pg,
            url,
            dirs,
            member_token: s(&boot["human"]["member_token"]),
            agent_token: s(&boot["agent"]["member_token"]),
            runner_token: s(&boot["runner"]["transport_token"]),
            runner_id: s(&boot["runner"]["executor_public_id"]),
            ws: s(&boot["workspace_public_id"]),
        })
    }

    /// Starts node `i` (0 = A, 1 = B) with `env`, and waits until it answers.
    pub async fn start(&self, i: usize, env: &[(&str, &str)]) -> Node {
        self.start_on(i, &format!("127.0.0.1:{}", free_port()), env).await
    }

    /// Starts node `i` listening on `listen` (a restarted node keeps its address, so the
    /// clients connected to it find it again).
    pub async fn start_on(&self, i: usize, listen: &str, env: &[(&str, &str)]) -> Node {
        let dir = self.dirs[i].path().to_str().unwrap().to_string();
        let mut server = spawn_server_with(listen, &["--data-dir", &dir, "--database-url", &self.url], env);
        let base = format!("http://{listen}");
        let client = Client::new(&base, "");
        let deadline = Instant::now() + Duration::from_secs(30);
        while client.healthz().await.is_err() {
            if let Some(status) = server.child.try_wait().unwrap() {
                panic!("node {i} exited early with {status}");
            }
            assert!(Instant::now() < deadline, "node {i} did not become healthy");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Node { server, base }
    }

    pub fn workspace(&self, node: &Node) -> Workspace {
        self.workspace_at(&node.base)
    }

    /// The member's workspace through the node at `base` (which may be down).
    pub fn workspace_at(&self, base: &str) -> Workspace {
        Client::new(base, &self.member_token).workspace(&self.ws)
    }

    pub fn agent_workspace(&self, node: &Node) -> Workspace {
        Client::new(&node.base, &self.agent_token).workspace(&self.ws)
    }

    pub fn executor(&self, node: &Node) -> ExecutorClient {
        ExecutorClient::new(&node.base, &self.runner_token)
    }

    /// Announces the one tool `slow` through `node` (the runner's rows then park for it).
    pub async fn announce(&self, node: &Node) {
        let announcement = Announcement {
            tools: vec![slow_spec()],
            environment: Default::default(),
            documents: vec![],
        };
        self.executor(node).announce(&announcement).await.expect("announce");
    }

    /// A run of one `slow` call addressed to the runner, created (not started) through `ws`.
    pub async fn tool_run(&self, ws: &Workspace, timeout_ms: u64) -> String {
        let step = Step::runner_tool("slow", json!({})).timeout_ms(timeout_ms);
        let created = ws
            .create_run(
                &NewRun::new(ApprovalMode::Bypass)
                    .default_runner(&self.runner_id)
                    .step(step),
            )
            .await
            .expect("create the run");
        created.run.public_id
    }
}

pub fn slow_spec() -> ToolSpec {
    ToolSpec::new("slow", EffectProfile::READ)
        .description("Answers when it is done.")
        .input_schema(json!({"type": "object"}))
}

/// Each node's `nexus.toml` (quick sweeps, a short model lease) and the scripts:
/// `slow` (a 30 s call, then done), `brief` (a 4 s call, then done).
pub fn write_config_and_scripts(dir: &Path) {
    std::fs::write(
        dir.join("nexus.toml"),
        format!("[kernel]\nsweep_interval_ms = 200\nmodel_lease_ms = {LEASE_MS}\n"),
    )
    .unwrap();
    let scripts = dir.join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    std::fs::write(
        scripts.join("slow.jsonl"),
        json!({"delay_ms": 30000, "text": "Done at last."}).to_string(),
    )
    .unwrap();
    std::fs::write(
        scripts.join("brief.jsonl"),
        json!({"delay_ms": 4000, "text": "Done."}).to_string(),
    )
    .unwrap();
}

/// Rows of `table` in the test's schema.
pub async fn rows(pg: &TestStore, table: &str) -> i64 {
    nexus_store::testing::row_count(&pg.store, table, "TRUE").await.unwrap()
}

pub type Channel = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The runner's push channel on `node`, past its `hello`.
pub async fn channel(pair: &Pair, node: &Node) -> Channel {
    let url = format!(
        "{}/agent_api/v1/executor/channel",
        node.base.replacen("http://", "ws://", 1)
    );
    let mut request = url.into_client_request().unwrap();
    request.headers_mut().insert(
        header::AUTHORIZATION,
        HeaderValue::from_str(&format!("Bearer {}", pair.runner_token)).unwrap(),
    );
    let (mut stream, _) = tokio_tungstenite::connect_async(request)
        .await
        .expect("open the channel");
    let hello = next_frame(&mut stream, 10).await;
    assert_eq!(hello["type"], "hello", "{hello}");
    stream
}

/// The next JSON frame on a channel (panics after `secs`).
pub async fn next_frame(stream: &mut Channel, secs: u64) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let message = tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("no frame in time")
            .expect("the channel closed")
            .expect("the channel broke");
        if let Message::Text(text) = message {
            return serde_json::from_str(text.as_str()).unwrap();
        }
    }
}
