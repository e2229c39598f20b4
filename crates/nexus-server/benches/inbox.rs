//! Inbox throughput over HTTP on loopback: the real server (`nexus_server::serve`) in-process
//! on `127.0.0.1:0` with the kernel worker running, 8 runners each announcing a tool `echo`,
//! and `TASKS` started runs of one runner-routed `echo` step (bypass), spread round-robin over
//! the runners. Then 8 concurrent reqwest clients (one per runner, each its own connection
//! pool) loop `GET X/inbox?limit=50` → for each unclaimed row `POST …/claim` → `POST …/commit`
//! `{"claim_token", "content": "ok"}` until each has settled its share. Each client reads what
//! a runner needs of a reply (the rows' addresses, the claim token, the commit's status) into
//! typed structs: the clients share the process, and so the machine's two cores, with the
//! server.
//!
//! Reported: settled tasks/s over the timed window (first inbox read to last commit, all
//! clients) and the claim→commit latency per task (claim request sent to commit response
//! read) p50/p99, on SQLite (file-backed, in a temp dir) and PostgreSQL (when
//! `NEXUS_TEST_DATABASE_URL` is set; the server's store is opened with `nexus serve`'s options),
//! and the process's CPU time per settled task over the window (every thread, the clients'
//! included; steadier than wall time on a machine whose pace drifts).
//! Also the whole machine's CPU split over the window (`/proc/stat`: user, system, idle,
//! iowait, steal), which tells a slow sitting's machine from a slower build.
//! On SQLite also the writer gate's use over the window (`Store::writer_gate_use`): the time it
//! was held (by units of work and by group members running their group's `COMMIT`) against the
//! window's length, per unit, and the units per `COMMIT`. Near 100 %, the one-writer rule bounds
//! the figure; well under it, the CPU does.
//!
//! `cargo bench -p nexus-server --bench inbox`
//! `NEXUS_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test cargo bench -p nexus-server --bench inbox`
//! A claim or commit answered 503 (`unavailable`: the store busy) is retried after 2 ms, as a
//! runner would; the retries are counted and printed.
//!
//! `NEXUS_BENCH_NODES=2` (PostgreSQL only) runs the PostgreSQL figure once more on two nodes
//! over the same database: two servers in this process, each with its own store (connection
//! pool and listening connection), kernel worker and loopback port, the runners split between
//! them. Reported as `pg×2`.
//!
//! `NEXUS_BENCH_TASKS=<n>` overrides the task count (default 2,000, at most 20,000).
//!
//! `NEXUS_BENCH_STATEMENTS=1` also tallies the store's statements over the timed window (the
//! SQLite engine's per-statement `tracing` events, sqlx's on PostgreSQL) and prints them per
//! settled task, most frequent first. The tally costs time of its own: its figures are not
//! throughput figures.
//!
//! After the window, the same number of clients send two bare `GET /healthz` per task (no
//! store, no credential) and the pace is printed as the "HTTP floor": what the exchanges alone
//! allow on this machine, an upper bound for the inbox figure.
//!
//! `NEXUS_BENCH_SQL_FLOOR=1` (PostgreSQL) settles the window's rows by SQL alone instead, two
//! simple queries a task with the kernel's writes and reads (`inbox/floor.rs`): what the
//! database allows this machine for that work, without the kernel, HTTP or round trips.
//! `NEXUS_BENCH_SQL_FLOOR=updates`: the row's claim and settle updates alone, the raw loop's
//! shape on the `tasks` table; `silent`: the kernel's shape without its notice; `noseq` and
//! `lean`: smaller write sets the kernel does not have (the floor's module doc says which), to
//! measure what such a change to the spec would buy.
//!
//! `inbox bench: window open` / `… closed` on stderr mark the timed window for a profiler
//! started disabled (`perf record -D -1 --control=fifo:ctl,ack …`: write `enable` to the
//! control FIFO at the first mark and `disable` at the second).

#[path = "inbox/floor.rs"]
mod floor;

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nexus_kernel::Kernel;
use nexus_server::AppState;
use nexus_store::AssignmentScope;
use nexus_store::testing::{self, TestStore, inbox_bench};
use serde_json::json;
use uuid::Uuid;

/// The allocator the `nexus` binary serves with (crates/nexus-cli/src/main.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const RUNNERS: usize = 8;
const DEFAULT_TASKS: usize = 2_000;
const MAX_TASKS: usize = 20_000;
const X: &str = "/agent_api/v1/executor";

struct Outcome {
    settled: usize,
    window: Duration,
    latencies: Vec<Duration>,
    setup: Duration,
    /// This process's CPU time (every thread: server, kernel, store and the clients) over the
    /// window, when procfs tells it.
    cpu: Option<Duration>,
    /// The whole machine's CPU time over the window by where it went (idle and steal say how
    /// much of the two cores the process could not use), when procfs tells it.
    machine: Option<testing::MachineCpu>,
    /// The same 8 clients' pace through two bare `GET /healthz` per task (no store, no auth):
    /// what the HTTP exchanges alone cost on this machine.
    http_floor: Duration,
    /// SQLite: the writer gate's use over the window (held time, units, `COMMIT`s).
    gate: Option<nexus_store::GateUse>,
}

/// Statement texts seen while [`TALLYING`], with their counts.
static TALLY: Mutex<Option<HashMap<String, u64>>> = Mutex::new(None);
/// Set over the timed window when `NEXUS_BENCH_STATEMENTS=1`.
static TALLYING: AtomicBool = AtomicBool::new(false);

/// Tallies one statement event while [`TALLYING`].
fn tally(text: Option<&str>) {
    if !TALLYING.load(Ordering::Relaxed) {
        return;
    }
    let mut tally = TALLY.lock().expect("tally");
    *tally
        .get_or_insert_with(HashMap::new)
        .entry(text.unwrap_or("(no text)").to_string())
        .or_default() += 1;
}

fn tallying() -> bool {
    std::env::var("NEXUS_BENCH_STATEMENTS").is_ok_and(|v| v == "1")
}

fn print_tally(engine: &str, settled: usize) {
    let Some(tally) = TALLY.lock().expect("tally").take() else {
        return;
    };
    let total: u64 = tally.values().sum();
    println!(
        "{engine:<10} statements in the window: {total} = {:.2} per settled task",
        total as f64 / settled.max(1) as f64
    );
    let mut rows: Vec<_> = tally.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    for (text, n) in rows {
        let short: String = text.chars().take(150).collect();
        println!("  {:>6.2} {short}", n as f64 / settled.max(1) as f64);
    }
}

/// `NEXUS_BENCH_SQL_FLOOR=1` (or `updates`, `silent`, `noseq`, `lean`): PostgreSQL's window settles the rows by
/// SQL alone (`inbox/floor.rs`).
fn sql_floor() -> Option<floor::Shape> {
    match std::env::var("NEXUS_BENCH_SQL_FLOOR").ok()?.as_str() {
        "1" => Some(floor::Shape::Kernel),
        "updates" => Some(floor::Shape::Updates),
        "silent" => Some(floor::Shape::Silent),
        "noseq" => Some(floor::Shape::NoSeq),
        "lean" => Some(floor::Shape::Lean),
        _ => None,
    }
}

fn tasks_wanted() -> usize {
    std::env::var("NEXUS_BENCH_TASKS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(DEFAULT_TASKS)
        .clamp(RUNNERS, MAX_TASKS)
}

/// The store the server runs on: SQLite as the harness opened it; PostgreSQL opened again
/// with the server's own options (`StoreOptions::new`: a pool of 20, `nexus serve`'s default),
/// not the harness's pool of 5 sized for many tests at once, which would queue 8 runners'
/// requests for a connection.
async fn server_store(ts: &TestStore) -> nexus_store::Store {
    if ts.sqlite_path().is_some() {
        return ts.store.clone();
    }
    nexus_store::Store::open(&nexus_store::StoreOptions::new(ts.url.clone()))
        .await
        .expect("open the PostgreSQL store with the server's options")
}

/// One `nexus serve` node in this process: its own store (pool and listening connection), its
/// kernel with its worker, and its HTTP server on a loopback port.
struct Node {
    store: nexus_store::Store,
    kernel: Kernel,
    base: String,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    worker: tokio::task::JoinHandle<()>,
}

async fn start_node(store: nexus_store::Store, stop_rx: &tokio::sync::watch::Receiver<bool>) -> Node {
    let pending = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|v| *v).await;
    };
    let kernel = Kernel::new(store.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let server = tokio::spawn(nexus_server::serve(
        listener,
        AppState::new(kernel.clone()),
        pending(stop_rx.clone()),
    ));
    let worker = kernel.runs().spawn_worker(pending(stop_rx.clone()));
    Node {
        store,
        kernel,
        base: format!("http://{addr}"),
        server,
        worker,
    }
}

async fn bench(ts: TestStore, tasks: usize, node_count: usize) -> Outcome {
    let setup_start = Instant::now();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut nodes = Vec::with_capacity(node_count);
    for _ in 0..node_count {
        nodes.push(start_node(server_store(&ts).await, &stop_rx).await);
    }
    let kernel = nodes[0].kernel.clone();
    let store = nodes[0].store.clone();
    let boot = kernel.admin().bootstrap().await.expect("bootstrap");

    // Runners, each announcing `echo` over HTTP with its own transport token.
    let mut runners = Vec::with_capacity(RUNNERS);
    for j in 0..RUNNERS {
        let (row, token) = kernel
            .admin()
            .create_runner(&format!("bench-runner-{j}"), AssignmentScope::AccountWide, "admin")
            .await
            .expect("create_runner");
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(1)
            .build()
            .expect("client");
        let base = &nodes[j % node_count].base;
        let r = client
            .put(format!("{base}{X}/announcement"))
            .bearer_auth(&token)
            .json(&inbox_bench::echo_announcement())
            .send()
            .await
            .expect("announce");
        let status = r.status();
        assert!(
            status.is_success(),
            "announce: {status} {}",
            r.text().await.unwrap_or_default()
        );
        runners.push((row.public_id, token, client, base.clone()));
    }

    // The runs: one runner-routed echo step each, round-robin over the runners.
    let human_token = boot.human.member_token.as_str();
    let human = kernel
        .admin()
        .authenticate_member(Some(&format!("Bearer {human_token}")))
        .await
        .expect("authenticate");
    let ws = boot.workspace_public_id;
    for k in 0..tasks {
        let runner = runners[k % RUNNERS].0;
        let body = inbox_bench::echo_run(k, runner);
        let body = kernel
            .runs()
            .create_run(&human, ws, &body, None)
            .await
            .expect("create_run")
            .fresh()
            .expect("a fresh create");
        let id = Uuid::parse_str(&body.run.public_id).expect("uuid");
        kernel.runs().start_run(&human, ws, id).await.expect("start_run");
    }
    let setup = setup_start.elapsed();

    // The timed window: 8 clients, one per runner.
    TALLYING.store(tallying(), Ordering::Relaxed);
    // A mark for a profiler started disabled (`perf record --control …`), so
    // that it samples the window alone.
    eprintln!("inbox bench: window open");
    let gate_start = store.writer_gate_use();
    let cpu_start = testing::process_cpu();
    let machine_start = testing::MachineCpu::now();
    let start = Instant::now();
    let mut latencies = Vec::with_capacity(tasks);
    if let Some(shape) = sql_floor().filter(|_| ts.sqlite_path().is_none()) {
        latencies = floor::run(&ts, RUNNERS, shape).await;
    } else {
        let mut handles = Vec::with_capacity(RUNNERS);
        for (j, (_, token, client, base)) in runners.into_iter().enumerate() {
            let share = tasks / RUNNERS + usize::from(j < tasks % RUNNERS);
            handles.push(tokio::spawn(
                async move { runner_loop(&client, &base, &token, share).await },
            ));
        }
        for h in handles {
            latencies.extend(h.await.expect("runner task"));
        }
    }
    let settled = latencies.len();
    let window = start.elapsed();
    let gate = store
        .writer_gate_use()
        .zip(gate_start)
        .map(|(end, start)| nexus_store::GateUse {
            held: end.held.saturating_sub(start.held),
            units: end.units - start.units,
            commits: end.commits - start.commits,
        });
    eprintln!("inbox bench: window closed");
    let cpu = testing::process_cpu()
        .zip(cpu_start)
        .map(|(end, start)| end.saturating_sub(start));
    let machine = testing::MachineCpu::now()
        .zip(machine_start)
        .map(|(end, start)| end.since(start));
    TALLYING.store(false, Ordering::Relaxed);
    let http_floor = http_floor(&nodes[0].base, tasks).await;

    let _ = stop_tx.send(true);
    drop(kernel); // the servers' stores before the harness drops the schema under them
    drop(store);
    for node in nodes {
        let _ = node.worker.await;
        let _ = node.server.await;
    }
    drop(ts);
    Outcome {
        settled,
        window,
        latencies,
        setup,
        cpu,
        machine,
        http_floor,
        gate,
    }
}

/// 8 clients, each sending two `GET /healthz` per task of its share, one after another: the
/// window over all of them.
async fn http_floor(base: &str, tasks: usize) -> Duration {
    let start = Instant::now();
    let mut handles = Vec::with_capacity(RUNNERS);
    for j in 0..RUNNERS {
        let share = tasks / RUNNERS + usize::from(j < tasks % RUNNERS);
        let url = format!("{base}/healthz");
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(1)
            .build()
            .expect("client");
        handles.push(tokio::spawn(async move {
            for _ in 0..2 * share {
                let r = client.get(&url).send().await.expect("healthz");
                assert!(r.status().is_success());
                r.bytes().await.expect("healthz body");
            }
        }));
    }
    for h in handles {
        h.await.expect("floor client");
    }
    start.elapsed()
}

/// What a runner reads of an inbox page: each row's address and whether it is claimed (the
/// rest of the reply is skipped, not built).
#[derive(serde::Deserialize)]
struct Page {
    tasks: Vec<PageRow>,
}

#[derive(serde::Deserialize)]
struct PageRow {
    run_public_id: String,
    task_key: String,
    claimed: bool,
}

/// What a runner reads of a claim's reply: the token.
#[derive(serde::Deserialize)]
struct ClaimReply {
    claim: ClaimGrant,
}

#[derive(serde::Deserialize)]
struct ClaimGrant {
    claim_token: String,
}

/// Settles `share` tasks for one runner; returns each task's claim→commit latency.
async fn runner_loop(client: &reqwest::Client, base: &str, token: &str, share: usize) -> Vec<Duration> {
    let mut out = Vec::with_capacity(share);
    let give_up = Instant::now() + Duration::from_secs(600);
    while out.len() < share {
        assert!(Instant::now() < give_up, "runner stalled at {}/{share}", out.len());
        let page: Page = client
            .get(format!("{base}{X}/inbox?limit=50"))
            .bearer_auth(token)
            .send()
            .await
            .expect("inbox")
            .json()
            .await
            .expect("inbox JSON");
        let open: Vec<&PageRow> = page.tasks.iter().filter(|r| !r.claimed).collect();
        if open.is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        }
        for row in open {
            let (run, key) = (&row.run_public_id, &row.task_key);
            let t0 = Instant::now();
            let claim_url = format!("{base}{X}/inbox/{run}/{key}/claim");
            let r = retrying(|| client.post(&claim_url).bearer_auth(token)).await;
            if !r.status().is_success() {
                continue;
            }
            let claim: ClaimReply = r.json().await.expect("claim JSON");
            let claim_token = claim.claim.claim_token;
            let commit_url = format!("{base}{X}/inbox/{run}/{key}/commit");
            let commit_body = json!({"claim_token": claim_token, "content": "ok"});
            let r = retrying(|| client.post(&commit_url).bearer_auth(token).json(&commit_body)).await;
            let status = r.status();
            let body = r.bytes().await.expect("commit body");
            assert!(
                status.is_success(),
                "commit: {status} {}",
                String::from_utf8_lossy(&body)
            );
            out.push(t0.elapsed());
        }
    }
    out
}

/// 503 answers (the store busy) retried, as a runner would, after 2 ms; counted in `RETRIES`.
static RETRIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

async fn retrying(build: impl Fn() -> reqwest::RequestBuilder) -> reqwest::Response {
    loop {
        let r = build().send().await.expect("request");
        if r.status() != reqwest::StatusCode::SERVICE_UNAVAILABLE {
            return r;
        }
        RETRIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn report(engine: &str, o: &mut Outcome) {
    print_tally(engine, o.settled);
    o.latencies.sort();
    let rate = o.settled as f64 / o.window.as_secs_f64();
    println!(
        "{engine:<10} settled {} tasks in {:.2} s = {rate:.1} tasks/s; claim→commit p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (setup {:.1} s); 503 retries {}",
        o.settled,
        o.window.as_secs_f64(),
        pct(&o.latencies, 0.50).as_secs_f64() * 1e3,
        pct(&o.latencies, 0.99).as_secs_f64() * 1e3,
        o.latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
        o.setup.as_secs_f64(),
        RETRIES.swap(0, std::sync::atomic::Ordering::Relaxed),
    );
    if let Some(cpu) = o.cpu {
        println!(
            "{engine:<10} process CPU over the window: {:.2} s = {:.0} µs per settled task ({:.2} cores busy)",
            cpu.as_secs_f64(),
            cpu.as_secs_f64() * 1e6 / o.settled.max(1) as f64,
            cpu.as_secs_f64() / o.window.as_secs_f64(),
        );
    }
    if let Some(machine) = o.machine {
        println!("{engine:<10} the machine over the window: {}", machine.shares());
    }
    if let Some(gate) = o.gate {
        println!(
            "{engine:<10} writer gate held {:.2} s of the window ({:.1} %) for {} units of work, {:.1} µs per unit; {} COMMITs ({:.2} units each)",
            gate.held.as_secs_f64(),
            100.0 * gate.held.as_secs_f64() / o.window.as_secs_f64(),
            gate.units,
            gate.held.as_secs_f64() * 1e6 / gate.units.max(1) as f64,
            gate.commits,
            gate.units as f64 / gate.commits.max(1) as f64,
        );
    }
    println!(
        "{engine:<10} HTTP floor: {} tasks' worth of exchanges (2 × GET /healthz each) in {:.2} s = {:.1} tasks/s",
        o.settled,
        o.http_floor.as_secs_f64(),
        o.settled as f64 / o.http_floor.as_secs_f64(),
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a `cargo test --benches` run passes nothing to run here.
    if tallying() {
        tracing::subscriber::set_global_default(testing::StatementEvents(tally)).expect("the tally subscriber");
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let tasks = tasks_wanted();
    println!(
        "inbox bench: {RUNNERS} runners × HTTP loopback, {tasks} single-call tool tasks; load average before: {}",
        load_average()
    );
    println!("command: cargo bench -p nexus-server --bench inbox (NEXUS_BENCH_TASKS={tasks})");
    println!(
        "sqlite synchronous = {} ({}=full|normal)",
        testing::sqlite_synchronous().pragma(),
        testing::SQLITE_SYNCHRONOUS_VAR
    );
    rt.block_on(async {
        let mut o = bench(testing::sqlite().await, tasks, 1).await;
        report("sqlite", &mut o);
        println!("load average: {}", load_average());
        match testing::postgres().await {
            Some(ts) => {
                let mut o = bench(ts, tasks, 1).await;
                report("postgresql", &mut o);
                println!("load average: {}", load_average());
                let nodes = testing::bench_nodes();
                if nodes > 1 {
                    let ts = testing::postgres().await.expect("the PostgreSQL test store again");
                    let mut o = bench(ts, tasks, nodes).await;
                    report(&format!("pg×{nodes}"), &mut o);
                    println!("load average: {}", load_average());
                }
            }
            None => println!("postgresql skipped: NEXUS_TEST_DATABASE_URL is not set"),
        }
    });
}
