//! The inbox path's kernel work, without HTTP: one runner, `TASKS` started runs of one
//! runner-routed `echo` step (bypass), then a loop that claims and commits each task through
//! `Executor::claim` and `Executor::commit` (and reads an inbox page of 50 every 50 tasks, as the
//! HTTP bench's runners do), one call at a time (see `NEXUS_BENCH_CALLERS` below for more).
//!
//! This is the work the HTTP bench (`cargo bench -p nexus-server --bench inbox`) serialises
//! on SQLite's writer gate, measured alone: with one caller no unit waits and no group commit
//! forms, so every unit pays its own `COMMIT`. Reported per settled task: wall time (p50, p99,
//! mean) and process CPU time, and with `NEXUS_BENCH_STATEMENTS=1` the statements.
//!
//! Its CPU work is deterministic, which the HTTP bench's is not (eight runners interleave
//! differently each run), so under `valgrind --tool=callgrind` it counts the same
//! instructions for the same build, whatever else the machine does:
//!
//! `cargo bench -p nexus-kernel --bench settle --no-run`, then
//! `NEXUS_BENCH_TASKS=1000 valgrind --tool=callgrind --toggle-collect='settle::settle_one*' <bench binary> --bench`
//! and the collected total divided by the task count is the instructions per settled task
//! (claim + commit, their units of work and `COMMIT`s, the reads around them).
//!
//! `NEXUS_BENCH_CALLERS=<n>` (default 1, at most 64) runs `n` callers at once instead, caller
//! `c` taking every `n`th run from the `c`th, so neighbouring runs settle together as in the
//! HTTP bench: units queue for the writer gate and group commits form. With 8 callers the mean
//! time per task is the kernel's own ceiling on SQLite, the gate's pace with no HTTP around it
//! (not deterministic: not for callgrind).
//!
//! `cargo bench -p nexus-kernel --bench settle` (SQLite, file-backed; PostgreSQL too when
//! `NEXUS_TEST_DATABASE_URL` is set). `NEXUS_BENCH_TASKS=<n>`: the task count (default 2,000, at
//! most 20,000). The bench prints `settle bench: window open` / `… closed` on stderr around the
//! timed loop, marks for a profiler started disabled (`perf record -D -1 --control=fifo:ctl,ack …`:
//! write `enable` to the control FIFO at the first mark and `disable` at the second).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nexus_kernel::executor::announce;
use nexus_kernel::executor::commit::CommitRequest;
use nexus_kernel::{ExecutorPrincipal, Kernel};
use nexus_store::testing::{self, TestStore, inbox_bench};
use nexus_store::{AssignmentScope, TaskStatus};
use serde_json::json;
use uuid::Uuid;

/// The allocator the `nexus` binary serves with (crates/nexus-cli/src/main.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const DEFAULT_TASKS: usize = 2_000;
const MAX_TASKS: usize = 20_000;
/// Settled before the timed loop (not measured), to warm the statement caches.
const WARMUP: usize = 50;
const PAGE: i64 = 50;

static STATEMENTS: AtomicU64 = AtomicU64::new(0);

fn counting() -> bool {
    std::env::var("NEXUS_BENCH_STATEMENTS").is_ok_and(|v| v == "1")
}

/// `NEXUS_BENCH_CALLERS`: concurrent callers (default 1, at most 64).
fn callers_wanted() -> usize {
    std::env::var("NEXUS_BENCH_CALLERS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, 64)
}

fn tasks_wanted() -> usize {
    std::env::var("NEXUS_BENCH_TASKS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(DEFAULT_TASKS)
        .clamp(1, MAX_TASKS)
}

struct World {
    kernel: Kernel,
    runner: ExecutorPrincipal,
    /// Every started run's public id, in creation order (its one task's key is `t`).
    runs: Vec<Uuid>,
}

async fn world(ts: &TestStore, tasks: usize) -> World {
    let kernel = Kernel::new(ts.store.clone());
    let boot = kernel.admin().bootstrap().await.expect("bootstrap");
    let (row, token) = kernel
        .admin()
        .create_runner("bench-runner", AssignmentScope::AccountWide, "admin")
        .await
        .expect("create_runner");
    let runner = kernel
        .admin()
        .authenticate_executor(Some(&format!("Bearer {token}")))
        .await
        .expect("authenticate the runner");
    kernel
        .executor()
        .announce(
            &runner,
            &announce::parse(&inbox_bench::echo_announcement()).expect("a valid announcement"),
        )
        .await
        .expect("announce");
    // The announcement changed the executor row: authenticate again, as the next request would.
    let runner = kernel
        .admin()
        .authenticate_executor(Some(&format!("Bearer {token}")))
        .await
        .expect("authenticate the runner");
    let human_token = boot.human.member_token.as_str();
    let human = kernel
        .admin()
        .authenticate_member(Some(&format!("Bearer {human_token}")))
        .await
        .expect("authenticate");
    let ws = boot.workspace_public_id;
    let mut runs = Vec::with_capacity(tasks);
    for k in 0..tasks {
        let body = inbox_bench::echo_run(k, row.public_id);
        let body = kernel
            .runs()
            .create_run(&human, ws, &body, None)
            .await
            .expect("create_run")
            .fresh()
            .expect("a fresh create");
        let id = Uuid::parse_str(&body.run.public_id).expect("uuid");
        kernel.runs().start_run(&human, ws, id).await.expect("start_run");
        runs.push(id);
    }
    World { kernel, runner, runs }
}

/// One task's claim and commit, as a runner's two requests would make them. Not inlined, so
/// callgrind's `--toggle-collect` can find it.
#[inline(never)]
async fn settle_one(kernel: &Kernel, runner: &ExecutorPrincipal, run: Uuid) {
    let claim = kernel.executor().claim(runner, run, "t").await.expect("claim");
    let token = claim.claim.claim_token;
    // The body's parse is measured with the commit, as the route runs it.
    let body = CommitRequest::parse(&json!({"claim_token": token, "content": "ok"})).expect("a commit body");
    let done = kernel.executor().commit(runner, run, "t", &body).await.expect("commit");
    assert_eq!(done.task.trace.status, TaskStatus::Completed, "{done:?}");
}

struct Figures {
    engine: &'static str,
    tasks: usize,
    total: Duration,
    p50: Duration,
    p99: Duration,
    cpu: Option<Duration>,
    statements: Option<u64>,
}

/// Settles `runs` one after another (an inbox page of [`PAGE`] before every [`PAGE`]th);
/// returns each task's time.
async fn settle_share(kernel: &Kernel, runner: &ExecutorPrincipal, runs: Vec<Uuid>) -> Vec<Duration> {
    let mut times = Vec::with_capacity(runs.len());
    for (i, run) in runs.into_iter().enumerate() {
        let t0 = Instant::now();
        if i % PAGE as usize == 0 {
            let page = kernel.executor().inbox(runner, None, Some(PAGE)).await.expect("inbox");
            assert!(!page.tasks.is_empty(), "{page:?}");
        }
        settle_one(kernel, runner, run).await;
        times.push(t0.elapsed());
    }
    times
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

async fn measure(engine: &'static str, ts: TestStore, tasks: usize) -> Figures {
    let w = world(&ts, WARMUP + tasks).await;
    let (warm, timed) = w.runs.split_at(WARMUP);
    for &run in warm {
        settle_one(&w.kernel, &w.runner, run).await;
    }
    let callers = callers_wanted();
    let statements_before = STATEMENTS.load(Ordering::Relaxed);
    let cpu_before = testing::process_cpu();
    // A mark for a profiler started disabled (`perf record --control …`).
    eprintln!("settle bench: window open");
    let started = Instant::now();
    let mut times = if callers == 1 {
        settle_share(&w.kernel, &w.runner, timed.to_vec()).await
    } else {
        // Caller c takes every `callers`-th run from c, so the callers work on neighbouring
        // runs at once, as the HTTP bench's runners do.
        let mut handles = Vec::with_capacity(callers);
        for c in 0..callers {
            let share: Vec<Uuid> = timed.iter().skip(c).step_by(callers).copied().collect();
            let (kernel, runner) = (w.kernel.clone(), w.runner.clone());
            handles.push(tokio::spawn(async move { settle_share(&kernel, &runner, share).await }));
        }
        let mut times = Vec::with_capacity(tasks);
        for h in handles {
            times.extend(h.await.expect("caller"));
        }
        times
    };
    let total = started.elapsed();
    eprintln!("settle bench: window closed");
    let cpu = testing::process_cpu()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    let statements = counting().then(|| STATEMENTS.load(Ordering::Relaxed) - statements_before);
    drop(w);
    drop(ts);
    times.sort();
    Figures {
        engine,
        tasks,
        total,
        p50: pct(&times, 50.0),
        p99: pct(&times, 99.0),
        cpu,
        statements,
    }
}

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    if counting() {
        tracing::subscriber::set_global_default(testing::StatementEvents(|_: Option<&str>| {
            STATEMENTS.fetch_add(1, Ordering::Relaxed);
        }))
        .expect("the only subscriber");
    }
    let tasks = tasks_wanted();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        let mut figures = vec![measure("sqlite (file, WAL)", testing::sqlite().await, tasks).await];
        match testing::postgres().await {
            Some(ts) => figures.push(measure("postgresql", ts, tasks).await),
            None => eprintln!(
                "note: {} is not set (or PostgreSQL is unreachable); skipping PostgreSQL",
                testing::DATABASE_URL_VAR
            ),
        }
        println!();
        println!(
            "the inbox path's kernel work, {} caller(s): claim + commit per task (+ an inbox page per {PAGE} per caller)",
            callers_wanted()
        );
        println!(
            "{:<20} {:>7} {:>9} {:>12} {:>12} {:>13} {:>16} {:>11}",
            "engine", "tasks", "total s", "p50 µs", "p99 µs", "mean µs", "CPU µs/task", "stmts/task"
        );
        for f in figures {
            let per = |d: Duration| us(d / f.tasks as u32);
            println!(
                "{:<20} {:>7} {:>9.3} {:>12} {:>12} {:>13} {:>16} {:>11}",
                f.engine,
                f.tasks,
                f.total.as_secs_f64(),
                us(f.p50),
                us(f.p99),
                per(f.total),
                f.cpu.map(per).unwrap_or_else(|| "-".into()),
                f.statements
                    .map(|s| format!("{:.2}", s as f64 / f.tasks as f64))
                    .unwrap_or_else(|| "-".into()),
            );
        }
    });
}
