//! The kernel suites' shared world: a fresh store per engine, a kernel whose `scripted`
//! provider reads scripts from a temp dir (provider retries 1 ms apart), bootstrapped, with the
//! bootstrap's principals and ids at hand, and the reads and writes every suite makes of it
//! (create and start a run, drive the engine, read its rows, announce the runner's tools).
//! Each suite adds only its own methods, in its own `impl World` block.

#![allow(dead_code)]

use std::ops::Deref;

use nexus_kernel::admin::MemberSpec;
use nexus_kernel::runs::RequestRead;
use nexus_kernel::{ExecutorPrincipal, Kernel, KernelBuilder, MemberPrincipal};
use nexus_store::prelude::*;
use nexus_store::testing::TestStore;
use nexus_store::{Announcement, EventRow, MemberKind, RunRow, RunStatus, Standing, TaskKind, TaskRow, TaskStatus};
use serde_json::{Value, json};
use uuid::Uuid;

/// The most passes [`World::drive`] works before it gives up on the engine going idle.
pub const DRIVE_PASSES: usize = 400;

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
    let boot = serde_json::to_value(kernel.admin().bootstrap().await.unwrap()).unwrap();
    let auth = |who: &str| format!("Bearer {}", boot[who]["member_token"].as_str().unwrap());
    let id = |v: &Value| Uuid::parse_str(v.as_str().unwrap()).unwrap();
    World {
        agent: kernel.admin().authenticate_member(Some(&auth("agent"))).await.unwrap(),
        human: kernel.admin().authenticate_member(Some(&auth("human"))).await.unwrap(),
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
    /// Works the engine until a pass runs no job (at most [`DRIVE_PASSES`]).
    pub async fn drive(&self) {
        self.kernel.runs().work_until_idle(DRIVE_PASSES).await.unwrap();
    }

    /// Creates the run `run` as `who` (a fresh create): its id and the create's reply.
    pub async fn create_as(&self, who: &MemberPrincipal, run: Value) -> (Uuid, Value) {
        let body = self
            .kernel
            .runs()
            .create_run(who, self.ws, &json!({ "run": run }), None)
            .await
            .unwrap()
            .fresh()
            .expect("a fresh create");
        let id = Uuid::parse_str(&body.run.public_id).unwrap();
        (id, serde_json::to_value(&body).unwrap())
    }

    /// Creates the run `run` as the agent: its id and the create's reply.
    pub async fn create(&self, run: Value) -> (Uuid, Value) {
        self.create_as(&self.agent, run).await
    }

    /// Creates and starts the run `run` as `who`, then drives the engine.
    pub async fn start_as(&self, who: &MemberPrincipal, run: Value) -> Uuid {
        let (id, _) = self.create_as(who, run).await;
        self.kernel.runs().start_run(who, self.ws, id).await.unwrap();
        self.drive().await;
        id
    }

    /// Creates and starts the run `run` as the agent, then drives the engine.
    pub async fn start(&self, run: Value) -> Uuid {
        self.start_as(&self.agent, run).await
    }

    pub async fn run_row(&self, id: Uuid) -> RunRow {
        self.kernel.store.run_by_public_id(id).await.unwrap().unwrap()
    }

    /// The run's stored rows (the first 10,000).
    pub async fn tasks(&self, id: Uuid) -> Vec<TaskRow> {
        let run = self.run_row(id).await;
        self.kernel.store.tasks_of_run(run.id, 0, 10_000).await.unwrap()
    }

    /// The run's stored row `key` (it must exist).
    pub async fn task(&self, id: Uuid, key: &str) -> TaskRow {
        self.maybe_task(id, key)
            .await
            .unwrap_or_else(|| panic!("no task {key}"))
    }

    pub async fn maybe_task(&self, id: Uuid, key: &str) -> Option<TaskRow> {
        let run = self.run_row(id).await;
        self.kernel.store.task_by_key(run.id, key).await.unwrap()
    }

    /// The task `key` as the agent reads it through the door (`get_task`'s `task`).
    pub async fn task_read(&self, id: Uuid, key: &str) -> Value {
        serde_json::to_value(
            self.kernel
                .runs()
                .get_task(&self.agent, self.ws, id, key)
                .await
                .unwrap(),
        )
        .unwrap()["task"]
            .clone()
    }

    /// The run's events (the first 5,000).
    pub async fn events(&self, id: Uuid) -> Vec<EventRow> {
        let run = self.run_row(id).await;
        self.kernel.store.events_after(run.id, 0, 5000).await.unwrap()
    }

    /// The stored sealed request of the round `key`: its record and the provider bytes.
    pub async fn sealed_row(&self, id: Uuid, key: &str) -> (Value, Vec<u8>) {
        let t = self.task(id, key).await;
        let s = self
            .kernel
            .store
            .sealed_request(t.id, t.generation)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{key} is not sealed"));
        (serde_json::from_str(&s.record).unwrap(), s.body)
    }

    /// The sealed request of the round `key` as the agent reads it through the door.
    pub async fn request_read(&self, id: Uuid, key: &str) -> Value {
        let RequestRead::Json(v) = self
            .kernel
            .runs()
            .get_request(&self.agent, self.ws, id, key, false)
            .await
            .unwrap()
        else {
            panic!("a JSON read");
        };
        v["request"].clone()
    }

    /// The internal id of the executor `public`.
    pub async fn executor_id(&self, public: Uuid) -> i64 {
        self.kernel
            .store
            .executor_by_public_id(public)
            .await
            .unwrap()
            .unwrap()
            .id
    }

    /// The bootstrap runner announces `tools` (served tools) in `environment`.
    pub async fn announce(&self, tools: Value, environment: Value) {
        let runner = self.executor_id(self.runner).await;
        self.kernel
            .store
            .put_announcement(
                runner,
                &Announcement {
                    served_tools: tools.to_string(),
                    environment: environment.to_string(),
                    served_documents: "[]".into(),
                },
                nexus_kernel::time::now_ms(),
            )
            .await
            .unwrap();
    }

    /// A declared function `callable` routed to the bootstrap runner's tool `served`.
    pub fn routed(&self, callable: &str, served: &str) -> Value {
        json!({"type": "function",
               "function": {"name": callable, "description": format!("{served} on the runner"), "parameters": {"type": "object"}},
               "route": {"kind": "runner", "runner_executor_public_id": self.runner.to_string(), "tool_name": served}})
    }

    /// A new human member `handle` (with `standing`), signed in.
    pub async fn member(&self, handle: &str, standing: Option<Standing>) -> MemberPrincipal {
        let m = self
            .kernel
            .admin()
            .create_member(MemberSpec {
                kind: MemberKind::Human,
                handle: handle.into(),
                display_name: None,
                steward: None,
                standing,
            })
            .await
            .unwrap();
        self.kernel
            .admin()
            .authenticate_member(Some(&format!("Bearer {}", m.member_token)))
            .await
            .unwrap()
    }

    /// The bootstrap runner signed in through its transport bearer (as of its announcement).
    pub async fn runner_principal(&self) -> ExecutorPrincipal {
        self.kernel
            .admin()
            .authenticate_executor(Some(&self.runner_transport))
            .await
            .unwrap()
    }

    /// A bypass run of one model step (script `name`, `prompt`, declaring `kernel_tools`) that
    /// makes `calls` one a round, then answers: driven to its end, which must be `completed`
    /// with every call's row completed. Returns the calls' rows.
    pub async fn call_rounds(
        &self,
        name: &str,
        prompt: &str,
        kernel_tools: &[&str],
        calls: &[(&str, Value)],
    ) -> Vec<TaskRow> {
        let mut lines: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (tool, input))| json!({"tool_calls": [{"id": format!("c{i}"), "name": tool, "input": input}]}))
            .collect();
        lines.push(json!({"text": "Done."}));
        self.script(name, &lines);
        let id = self
            .start(json!({"approval_mode": "bypass", "steps": [{"model": {
                "prompt": prompt, "model": format!("scripted/{name}"), "kernel_tools": kernel_tools}}]}))
            .await;
        let tools: Vec<TaskRow> = self
            .tasks(id)
            .await
            .into_iter()
            .filter(|t| t.kind == TaskKind::Tool)
            .collect();
        assert_eq!(tools.len(), calls.len(), "on {}", self.dialect);
        for t in &tools {
            assert_eq!(
                t.status,
                TaskStatus::Completed,
                "{} on {}: {:?}",
                t.key,
                self.dialect,
                t.error_key
            );
        }
        assert_eq!(
            self.run_row(id).await.status,
            RunStatus::Completed,
            "on {}",
            self.dialect
        );
        tools
    }

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

/// The one tool the runner serves in the media suites: `shot`, a read that takes a screenshot.
pub fn shot_tools() -> Value {
    json!([{"name": "shot", "effect_profile": nexus_core::registry::EffectProfile::READ.to_json(),
            "description": "Take a screenshot.", "input_schema": {"type": "object"}}])
}

/// A world whose bootstrap runner has announced `tools` (in an empty environment) and is
/// signed in: the suites that play the runner's side of the executor plane.
pub struct RunnerWorld {
    pub world: World,
    /// The bootstrap runner, signed in after its announcement.
    pub runner: ExecutorPrincipal,
}

impl Deref for RunnerWorld {
    type Target = World;
    fn deref(&self) -> &World {
        &self.world
    }
}

pub async fn runner_world(ts: TestStore, tools: Value) -> RunnerWorld {
    let world = world(ts).await;
    world.announce(tools, json!({})).await;
    let runner = world.runner_principal().await;
    RunnerWorld { world, runner }
}
