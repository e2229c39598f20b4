//! Kernel overhead per round: a scripted model that calls one kernel tool (`tool_search`, a
//! distinct query each round, so the repeat_call_loop rule never fires) per round, for 4 runs ×
//! 250 rounds = 1,000 rounds, on SQLite (file-backed, WAL: the embedded default) and PostgreSQL.
//!
//! A round is the work that advances the chain by one round: the model call job (seal,
//! scripted send, reply application, expansion, the kernel tool's readiness and its job) with
//! the kernel tool evaluation it hands off (evaluation, settle, the continuation's readiness
//! and its model job). The engine is driven with `Runs::work_once`, one job per pass (one
//! chain at a time), and a round is timed with `Instant` from the end of the previous pass to
//! the end of its own.
//! Each `work_once` also runs one sweep pass and a receipt purge, so that figure is an upper
//! bound on the serve loop (which sweeps on a timer); the same measurement is repeated on a
//! fresh store with `Runs::run_jobs_once` (jobs only).
//!
//! `cargo bench -p nexus-kernel --bench rounds`
//! `NEXUS_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test cargo bench -p nexus-kernel --bench rounds`
//! (PostgreSQL is skipped with a note when the variable is unset.)
//!
//! `NEXUS_BENCH_NODES=2` (PostgreSQL) adds the serve loop's figure: 4 runs at once worked by
//! the real worker (`spawn_worker`) of one node, then of two nodes over the same database (two
//! kernels, each with its own store), as rounds/s and CPU per round.
//!
//! `NEXUS_BENCH_PREFILL_TASKS=<n>` measures a store that has grown: after the warm-up run, `n`
//! settled tasks (each after the one before) are added to it and the statistics brought up to
//! date (`nexus_store::testing::prefill_tasks`), so the figures show whether a round's cost
//! grows with the tasks every earlier run left behind.
//!
//! `NEXUS_BENCH_STATEMENTS=1` also counts the store's statements (the SQLite engine's
//! `nexus_store::SQLITE_STATEMENT_TARGET` events and sqlx's `sqlx::query` events on PostgreSQL,
//! through a counting `tracing` subscriber) and reports them per round; the counting itself
//! costs time, so take timings from a run without it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nexus_kernel::{Kernel, MemberPrincipal};
use nexus_store::prelude::*;
use nexus_store::testing::{self, TestStore};
use nexus_store::{RunStatus, TaskStatus};
use serde_json::json;
use uuid::Uuid;

/// Replies per run: 249 rounds calling `tool_search`, then one final text reply (the chain's
/// 250th round), inside the 256-round limit.
const ROUNDS_PER_RUN: usize = 250;
const RUNS: usize = 4;
/// A short run first, not measured, to warm the statement caches and the file system.
const WARMUP_ROUNDS: usize = 20;

struct World {
    ts: TestStore,
    dir: tempfile::TempDir,
    kernel: Kernel,
    agent: MemberPrincipal,
    ws: Uuid,
}

async fn world(ts: TestStore) -> World {
    let dir = tempfile::tempdir().expect("temp dir");
    let scripts = dir.path().join("scripts");
    std::fs::create_dir_all(&scripts).expect("scripts dir");
    write_script(&scripts, "warmup", WARMUP_ROUNDS);
    write_script(&scripts, "rounds", ROUNDS_PER_RUN);
    let kernel = node_kernel(ts.store.clone(), &scripts);
    let boot = kernel.admin().bootstrap().await.expect("bootstrap");
    let token = boot.agent.member_token.as_str();
    let agent = kernel
        .admin()
        .authenticate_member(Some(&format!("Bearer {token}")))
        .await
        .expect("authenticate");
    let ws = boot.workspace_public_id;
    World {
        ts,
        dir,
        kernel,
        agent,
        ws,
    }
}

/// A kernel over `store` that reads its scripted replies from `scripts`.
fn node_kernel(store: nexus_store::Store, scripts: &std::path::Path) -> Kernel {
    Kernel::builder(store)
        .scripts_dir(scripts)
        .provider_backoff_ms(vec![0, 0, 0])
        .build()
}

/// `rounds - 1` replies each calling `tool_search` with its own query, then a text reply.
fn write_script(dir: &std::path::Path, name: &str, rounds: usize) {
    let mut lines: Vec<String> = (1..rounds)
        .map(|i| {
            json!({"text": format!("Round {i}."), "tool_calls": [
                {"id": format!("c{i}"), "name": "tool_search", "input": {"query": format!("round {i}")}}
            ]})
            .to_string()
        })
        .collect();
    lines.push(json!({"text": "All done."}).to_string());
    std::fs::write(dir.join(format!("{name}.jsonl")), lines.join("\n")).expect("write script");
}

impl World {
    /// Creates and starts one run on `scripted/<script>`; returns its public id.
    async fn start(&self, script: &str) -> Uuid {
        let body = json!({"run": {
            "approval_mode": "bypass",
            "steps": [{"model": {
                "prompt": "Search the tools, one query a round.",
                "model": format!("scripted/{script}"),
                "kernel_tools": ["nexus.tools.search"],
            }}],
        }});
        let body = self
            .kernel
            .runs()
            .create_run(&self.agent, self.ws, &body, None)
            .await
            .expect("create_run")
            .fresh()
            .expect("a fresh create");
        let id = Uuid::parse_str(&body.run.public_id).expect("uuid");
        self.kernel
            .runs()
            .start_run(&self.agent, self.ws, id)
            .await
            .expect("start_run");
        id
    }

    /// Drives one run to its end, one job per pass; returns each round's wall time.
    async fn drive(&self, id: Uuid, rounds: usize, sweep: bool) -> Vec<Duration> {
        // One pass a round: round k's model call job, with the kernel tool its reply made,
        // which the worker evaluates at once (`worker.rs`, "handed off"). A round ends when
        // its pass returns.
        let mut bounds = Vec::with_capacity(rounds + 1);
        bounds.push(Instant::now());
        let mut passes = 0usize;
        loop {
            let n = if sweep {
                self.kernel.runs().work_once().await.expect("work_once")
            } else {
                self.kernel.runs().run_jobs_once().await.expect("run_jobs_once")
            };
            if n == 0 {
                break;
            }
            assert_eq!(n, 1, "one chain runs one job per pass");
            bounds.push(Instant::now());
            passes += 1;
        }
        assert_eq!(passes, rounds, "passes for {rounds} rounds");
        assert_eq!(bounds.len(), rounds + 1);
        let times: Vec<Duration> = bounds.windows(2).map(|w| w[1] - w[0]).collect();
        self.check(id, rounds).await;
        times
    }

    /// The run completed with every round and every tool row completed.
    async fn check(&self, id: Uuid, rounds: usize) {
        let store = &self.kernel.store;
        let run = store.run_by_public_id(id).await.expect("run").expect("run row");
        assert_eq!(run.status, RunStatus::Completed, "run {id}");
        let tasks = store.tasks_of_run(run.id, 0, 10_000).await.expect("tasks");
        assert_eq!(
            tasks.len(),
            1 + 2 * (rounds - 1),
            "one model row + (tool, continuation) per call round"
        );
        for t in &tasks {
            assert_eq!(
                t.status,
                TaskStatus::Completed,
                "{} {:?} {:?}",
                t.key,
                t.error_key,
                t.error_detail
            );
        }
    }
}

struct Figures {
    engine: &'static str,
    /// Driven with `work_once` (a sweep pass and a receipt purge after every job) rather than
    /// `run_jobs_once` (jobs only, as the serve loop between its timed sweeps).
    sweep: bool,
    rounds: usize,
    total: Duration,
    p50: Duration,
    p99: Duration,
    max: Duration,
    /// Rounds 1–25 of every run (short histories).
    early_p50: Duration,
    /// Rounds 226–250 of every run (the longest histories).
    late_p50: Duration,
    /// Process CPU time over the timed rounds.
    cpu: Option<Duration>,
    /// Store statements over the timed rounds (when counting).
    statements: Option<u64>,
}

/// Statements the store ran (see the module docs), when counting.
static STATEMENTS: AtomicU64 = AtomicU64::new(0);

/// `NEXUS_BENCH_PREFILL_TASKS` (see the module docs).
fn prefill() -> Option<u64> {
    std::env::var("NEXUS_BENCH_PREFILL_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
}

fn counting() -> bool {
    std::env::var("NEXUS_BENCH_STATEMENTS").is_ok_and(|v| v == "1")
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

async fn measure(engine: &'static str, ts: TestStore, sweep: bool) -> Figures {
    let w = world(ts).await;
    let warm = w.start("warmup").await;
    w.drive(warm, WARMUP_ROUNDS, sweep).await;
    if let Some(n) = prefill() {
        testing::prefill_tasks(&w.ts.store, n).await.expect("prefill tasks");
    }

    let mut all = Vec::with_capacity(RUNS * ROUNDS_PER_RUN);
    let mut per_run = Vec::new();
    let started = Instant::now();
    let cpu_before = testing::process_cpu();
    let statements_before = STATEMENTS.load(Ordering::Relaxed);
    for _ in 0..RUNS {
        let id = w.start("rounds").await;
        let times = w.drive(id, ROUNDS_PER_RUN, sweep).await;
        per_run.push(times.clone());
        all.extend(times);
    }
    let total = started.elapsed();
    let statements = counting().then(|| STATEMENTS.load(Ordering::Relaxed) - statements_before);
    let cpu = testing::process_cpu()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    let mut sorted = all.clone();
    sorted.sort();
    let decile = |tail: bool| {
        let mut d: Vec<Duration> = per_run
            .iter()
            .flat_map(|r| {
                let n = ROUNDS_PER_RUN / 10;
                if tail { &r[r.len() - n..] } else { &r[..n] }.iter().copied()
            })
            .collect();
        d.sort();
        pct(&d, 50.0)
    };
    Figures {
        sweep,
        engine,
        rounds: all.len(),
        total,
        p50: pct(&sorted, 50.0),
        p99: pct(&sorted, 99.0),
        max: *sorted.last().unwrap(),
        early_p50: decile(false),
        late_p50: decile(true),
        cpu,
        statements,
    }
}

/// The serve loop's figure (`NEXUS_BENCH_NODES=<n>`, PostgreSQL): [`CHAINS`] runs at once,
/// worked by the real worker (`Runs::spawn_worker`: signals, batched dequeue, jobs spawned
/// concurrently) of `nodes` kernels, each over its own store (connection pool and listening
/// connection) on the same database, as `nodes` `nexus serve` processes would be.
struct Serve {
    nodes: usize,
    rounds: usize,
    wall: Duration,
    cpu: Option<Duration>,
}

/// Chains worked at once by the serve-loop figure.
const CHAINS: usize = 4;

async fn measure_serve(ts: TestStore, nodes: usize) -> Serve {
    let w = world(ts).await;
    let scripts = w.dir.path().join("scripts");
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut kernels = vec![w.kernel.clone()];
    for _ in 1..nodes {
        let store = nexus_store::Store::open(&nexus_store::StoreOptions::new(w.ts.url.clone()))
            .await
            .expect("open another node's store");
        kernels.push(node_kernel(store, &scripts));
    }
    let mut workers = Vec::new();
    for k in &kernels {
        let mut rx = stop_rx.clone();
        workers.push(k.runs().spawn_worker(async move {
            let _ = rx.wait_for(|v| *v).await;
        }));
    }
    let started = Instant::now();
    let cpu_before = testing::process_cpu();
    let mut ids = Vec::with_capacity(CHAINS);
    for _ in 0..CHAINS {
        ids.push(w.start("rounds").await);
    }
    let give_up = Instant::now() + Duration::from_secs(600);
    for &id in &ids {
        loop {
            let run = w.kernel.store.run_by_public_id(id).await.expect("run").expect("row");
            if run.status == RunStatus::Completed {
                break;
            }
            assert!(Instant::now() < give_up, "run {id} stalled at {:?}", run.status);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let wall = started.elapsed();
    let cpu = testing::process_cpu()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    let _ = stop_tx.send(true);
    for worker in workers {
        let _ = worker.await;
    }
    for &id in &ids {
        w.check(id, ROUNDS_PER_RUN).await;
    }
    drop(kernels);
    Serve {
        nodes,
        rounds: CHAINS * ROUNDS_PER_RUN,
        wall,
        cpu,
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    if counting() {
        tracing::subscriber::set_global_default(testing::StatementEvents(|_: Option<&str>| {
            STATEMENTS.fetch_add(1, Ordering::Relaxed);
        }))
        .expect("the only subscriber");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        let mut figures = Vec::new();
        for sweep in [true, false] {
            figures.push(measure("sqlite (file, WAL)", testing::sqlite().await, sweep).await);
        }
        for sweep in [true, false] {
            match testing::postgres().await {
                Some(ts) => figures.push(measure("postgresql", ts, sweep).await),
                None => {
                    eprintln!(
                        "note: {} is not set (or PostgreSQL is unreachable); skipping PostgreSQL",
                        testing::DATABASE_URL_VAR
                    );
                    break;
                }
            }
        }
        println!();
        println!(
            "kernel overhead per round: {RUNS} runs x {ROUNDS_PER_RUN} rounds = {} rounds, one tool_search call a round, one job a pass",
            RUNS * ROUNDS_PER_RUN
        );
        println!("driver: work_once = jobs + a sweep pass and receipt purge per pass; jobs = run_jobs_once (no sweep)");
        if let Some(n) = prefill() {
            println!("store grown first: {n} settled tasks added after the warm-up run (NEXUS_BENCH_PREFILL_TASKS)");
        }
        println!(
            "sqlite synchronous = {} ({}=full|normal)",
            testing::sqlite_synchronous().pragma(),
            testing::SQLITE_SYNCHRONOUS_VAR
        );
        println!(
            "{:<20} {:<9} {:>7} {:>9} {:>10} {:>9} {:>9} {:>9} {:>13} {:>14} {:>15} {:>14}",
            "engine",
            "driver",
            "rounds",
            "total s",
            "rounds/s",
            "p50 ms",
            "p99 ms",
            "max ms",
            "r1-25 p50 ms",
            "r226+ p50 ms",
            "cpu ms/round",
            "stmts/round"
        );
        for f in &figures {
            println!(
                "{:<20} {:<9} {:>7} {:>9.3} {:>10.1} {:>9} {:>9} {:>9} {:>13} {:>14} {:>15} {:>14}",
                f.engine,
                if f.sweep { "work_once" } else { "jobs" },
                f.rounds,
                f.total.as_secs_f64(),
                f.rounds as f64 / f.total.as_secs_f64(),
                ms(f.p50),
                ms(f.p99),
                ms(f.max),
                ms(f.early_p50),
                ms(f.late_p50),
                f.cpu.map_or_else(|| "-".into(), |c| ms(c / f.rounds as u32)),
                f.statements
                    .map_or_else(|| "-".into(), |n| format!("{:.1}", n as f64 / f.rounds as f64)),
            );
        }
        let nodes = testing::bench_nodes();
        if nodes > 1 {
            let mut serve = Vec::new();
            for n in [1, nodes] {
                match testing::postgres().await {
                    Some(ts) => serve.push(measure_serve(ts, n).await),
                    None => break,
                }
            }
            println!();
            println!(
                "serve loop on PostgreSQL: {CHAINS} runs x {ROUNDS_PER_RUN} rounds at once, the real worker of each node (NEXUS_BENCH_NODES={nodes})"
            );
            println!(
                "{:<6} {:>7} {:>9} {:>10} {:>22} {:>15}",
                "nodes", "rounds", "wall s", "rounds/s", "ms per round per run", "cpu ms/round"
            );
            for f in &serve {
                println!(
                    "{:<6} {:>7} {:>9.3} {:>10.1} {:>22} {:>15}",
                    f.nodes,
                    f.rounds,
                    f.wall.as_secs_f64(),
                    f.rounds as f64 / f.wall.as_secs_f64(),
                    ms(f.wall * CHAINS as u32 / f.rounds as u32),
                    f.cpu.map_or_else(|| "-".into(), |c| ms(c / f.rounds as u32)),
                );
            }
        }
        if let Some(sqlite) = figures.first() {
            let target = Duration::from_millis(2);
            println!(
                "target: p50 under 2 ms per round on SQLite (work_once): {}",
                if sqlite.p50 < target { "met" } else { "NOT met" }
            );
        }
    });
}
