//! The kernel suites' shared world: a fresh store per engine, a kernel whose `scripted`
//! provider reads scripts from a temp dir (provider retries 1 ms apart), bootstrapped, with the
//! bootstrap's principals and ids at hand. Each suite adds its own methods in its own
//! `impl World` block.

#![allow(dead_code)]

use nexus_kernel::{Kernel, KernelBuilder, MemberPrincipal};
use nexus_store::testing::TestStore;
use serde_json::Value;
use uuid::Uuid;

pub struct World {
    /// Keeps the store (and its SQLite directory or PostgreSQL schema) alive.
    pub ts: TestStore,
    _dir: tempfile::TempDir,
    pub scripts: std::path::PathBuf,
    pub kernel: Kernel,
    /// The bootstrap's agent and human members.
    pub agent: MemberPrincipal,
    pub human: MemberPrincipal,
    pub ws: Uuid,
    /// The bootstrap's runner and the agent's agent-application executor.
    pub runner: Uuid,
    pub agent_app: Uuid,
    /// The bootstrap runner's transport bearer (`Bearer …`).
    pub runner_transport: String,
    /// `sqlite` or `postgres`.
    pub dialect: &'static str,
}

pub async fn world(ts: TestStore) -> World {
    world_with(ts, |b, _| b).await
}

/// A world whose kernel builder is adjusted by `configure` (given the scripts dir) before it is
/// built: other providers, other settings.
pub async fn world_with(
    ts: TestStore,
    configure: impl FnOnce(KernelBuilder, &std::path::Path) -> KernelBuilder,
) -> World {
    let dir = tempfile::tempdir().unwrap();
    let scripts = dir.path().join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    let builder = Kernel::builder(ts.store.clone())
        .scripts_dir(&scripts)
        .blobs_dir(dir.path().join("blobs"))
        .provider_backoff_ms(vec![1, 1, 1]);
    let kernel = configure(builder, &scripts).build();
    let boot = serde_json::to_value(kernel.bootstrap().await.unwrap()).unwrap();
    let auth = |who: &str| format!("Bearer {}", boot[who]["member_token"].as_str().unwrap());
    let id = |v: &Value| Uuid::parse_str(v.as_str().unwrap()).unwrap();
    World {
        agent: kernel.authenticate_member(Some(&auth("agent"))).await.unwrap(),
        human: kernel.authenticate_member(Some(&auth("human"))).await.unwrap(),
        ws: id(&boot["workspace_public_id"]),
        runner: id(&boot["runner"]["executor_public_id"]),
        agent_app: id(&boot["agent"]["executor_public_id"]),
        runner_transport: format!("Bearer {}", boot["runner"]["transport_token"].as_str().unwrap()),
        dialect: ts.dialect,
        ts,
        _dir: dir,
        scripts,
        kernel,
    }
}

impl World {
    /// Writes the `scripted` provider's script `<name>.jsonl`, one JSON value a line.
    pub fn script(&self, name: &str, lines: &[Value]) {
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        std::fs::write(self.scripts.join(format!("{name}.jsonl")), text.join("\n")).unwrap();
    }
}

/// The text of a settled row's content blocks.
pub fn text_of(t: &nexus_store::TaskRow) -> String {
    let blocks: Value = serde_json::from_str(t.content.as_deref().unwrap_or("[]")).unwrap();
    blocks
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("")
}
