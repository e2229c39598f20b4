//! A served kernel (the real router and job worker on a loopback port, over each store engine)
//! and the real `rho` binary connected to it with the bootstrap runner's transport bearer.
//! The tests drive runs through the SDK's member client, as a user's program would.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nexus_sdk::member::{ApprovalMode, NewRun, Run, Step};
use nexus_sdk::{Client, RunRef, Workspace};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub const RHO: &str = env!("CARGO_BIN_EXE_rho");
const BEARER_ENV: &str = "RHO_TEST_BEARER";

/// One served kernel; the server and worker tasks are aborted on drop.
pub struct World {
    pub dialect: &'static str,
    pub base: String,
    pub member: Client,
    pub ws: String,
    pub runner_id: String,
    pub runner_token: String,
    pub kernel: nexus_kernel::Kernel,
    pub store: nexus_store::Store,
    pub dir: tempfile::TempDir,
    server: JoinHandle<std::io::Result<()>>,
    worker: JoinHandle<()>,
    _store: nexus_store::testing::TestStore,
}

impl Drop for World {
    fn drop(&mut self) {
        self.server.abort();
        self.worker.abort();
    }
}

/// A served kernel per available engine.
pub async fn worlds() -> Vec<World> {
    let mut out = Vec::new();
    for store in nexus_store::testing::engines().await {
        out.push(world(store).await);
    }
    out
}

/// A served kernel over `store`: bootstrapped, its job worker running, its `scripted` model
/// reading `<dir>/scripts`.
pub async fn world(store: nexus_store::testing::TestStore) -> World {
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::create_dir_all(dir.path().join("scripts")).unwrap();
    let kernel = nexus_kernel::Kernel::builder(store.store.clone())
        .scripts_dir(dir.path().join("scripts"))
        .blobs_dir(dir.path().join("blobs"))
        .provider_backoff_ms(vec![1, 1, 1])
        .build();
    let boot = kernel.admin().bootstrap().await.expect("bootstrap");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let base = format!("http://{}", listener.local_addr().unwrap());
    let worker = kernel.runs().spawn_worker(std::future::pending());
    let state = nexus_server::AppState::new(kernel.clone());
    let server = tokio::spawn(nexus_server::serve(listener, state, std::future::pending()));
    World {
        dialect: store.dialect,
        member: Client::new(&base, &boot.human.member_token),
        base,
        ws: boot.workspace_public_id.to_string(),
        runner_id: boot.runner.executor_public_id.to_string(),
        runner_token: boot.runner.transport_token.clone(),
        kernel,
        store: store.store.clone(),
        dir,
        server,
        worker,
        _store: store,
    }
}

/// A running `rho` process, killed on drop.
pub struct Rho {
    child: Child,
    pub config: PathBuf,
}

impl Drop for Rho {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl World {
    pub fn workspace(&self) -> Workspace {
        self.member.workspace(&self.ws)
    }

    /// Starts rho serving `root` with `extra` appended to its `rho.toml`, and waits until its
    /// announcement lists every name in `expect`.
    pub async fn rho(&self, root: &Path, extra: &str, expect: &[&str]) -> Rho {
        let config = self.dir.path().join(format!("rho-{}.toml", rand_suffix()));
        let text = format!(
            "kernel_url = \"{}\"\nbearer_env = \"{BEARER_ENV}\"\nroot = \"{}\"\n{extra}\n",
            self.base,
            root.display()
        );
        std::fs::write(&config, text).unwrap();
        let child = Command::new(RHO)
            .arg("--config")
            .arg(&config)
            .env(BEARER_ENV, &self.runner_token)
            .env("RUST_LOG", "rho=warn,nexus_sdk=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start rho");
        let rho = Rho { child, config };
        self.wait_announced(expect).await;
        rho
    }

    /// Polls discovery until the runner announces every name in `expect`.
    pub async fn wait_announced(&self, expect: &[&str]) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(info) = self.member.runner(&self.runner_id).await {
                let names: Vec<&str> = info.tool_names().collect();
                if expect.iter().all(|n| names.contains(n)) {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "{}: rho never announced {expect:?}",
                self.dialect
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Writes `scripts/<name>.jsonl`.
    pub fn script(&self, name: &str, lines: &[Value]) {
        let text: Vec<String> = lines.iter().map(Value::to_string).collect();
        std::fs::write(
            self.dir.path().join("scripts").join(format!("{name}.jsonl")),
            text.join("\n"),
        )
        .unwrap();
    }

    /// Creates and starts a run of one model step on `scripted/<script>` with every tool of
    /// this runner imported (the run's default runner, declarations.md §7), and waits until it
    /// is terminal. Keys: the step is the first round, its calls `r1t0, r1t1, …`, the next
    /// round `r1`, its calls `r2t0, …`.
    pub async fn model_run(&self, script: &str) -> (RunRef, Run) {
        let step = Step::model("go")
            .model(format!("scripted/{script}"))
            .runners([self.runner_id.clone()]);
        let created = self
            .workspace()
            .create_run(
                &NewRun::new(ApprovalMode::Bypass)
                    .default_runner(&self.runner_id)
                    .step(step),
            )
            .await
            .expect("create the run");
        let run = self.workspace().run(&created.run.public_id);
        run.start().await.expect("start the run");
        let done = settle(&run, self.dialect).await;
        if let Some(attention) = &done.attention
            && let Some(key) = &attention.task_key
        {
            let task = run.task(key).await.expect("read the failed task");
            panic!("{}: the run needs attention at {key}: {:?}", self.dialect, task.error);
        }
        (run, done)
    }
}

/// Polls `run` until it is terminal (or needs attention).
pub async fn settle(run: &RunRef, dialect: &str) -> Run {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let read = run.get().await.expect("read the run");
        if read.run.status.is_terminal() || read.run.status.as_str() == "needs_attention" {
            return read.run;
        }
        assert!(
            Instant::now() < deadline,
            "{dialect}: the run never settled: {:?}",
            read.run.status
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn rand_suffix() -> String {
    format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// Where the pinned reference MCP server is installed (`scripts/npm-install`), or `None` with
/// a loud message (a failure when `NEXUS_REQUIRE_MCP=1`).
pub fn everything_server() -> Option<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let entry = repo.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if entry.is_file() {
        return Some(entry.canonicalize().unwrap());
    }
    let message = format!(
        "the reference MCP server is not installed at {} (run scripts/npm-install)",
        entry.display()
    );
    if std::env::var("NEXUS_REQUIRE_MCP").is_ok_and(|v| v == "1") {
        panic!("{message}");
    }
    eprintln!("SKIPPED: {message}");
    None
}
