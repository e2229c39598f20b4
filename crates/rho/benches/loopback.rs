//! Two latencies through a served kernel and the real `rho` binary on loopback:
//! `cargo bench -p rho --bench loopback`.
//!
//! 1. **`read` dispatched → commit.** A scripted model calls `read` on a small file once a
//!    round (a different file each round, so the repeat-call rule never fires). The bench
//!    follows each run's live feed (`GET R/events/stream` through the SDK) and takes the
//!    receive time of the row's `task_status_changed` to `dispatched`, of its `task_claimed`,
//!    and of its settle: both ends travel the same path (commit → publish → SSE → client), so
//!    their difference is the kernel's dispatched → commit time. rho's push channel is on (its
//!    inbox poll is the default 5 s, so a figure in milliseconds is the push path).
//! 2. **The bridge's own overhead.** The same with the `everything_echo` tool of the pinned
//!    reference MCP server (`scripts/npm-install`). rho runs with the timing lines on
//!    (`nexus_sdk::runner::timing`: claim granted → handler → commit acknowledged;
//!    `rho::mcp::timing`: the `tools/call` round trip) and the bench parses its stderr: the
//!    overhead is the claim-granted → commit-acknowledged time minus the MCP call. Measured
//!    twice: the server untrusted (the default: echo gets the fail-closed `write` profile, so
//!    rho takes a checkpoint before each call) and trusted (echo is `read_only`).
//!
//! `NEXUS_TEST_DATABASE_URL` set adds a PostgreSQL row (empty: SQLite only);
//! `BENCH_RUNS` (default 4) runs of `BENCH_ROUNDS` (default 50) rounds are measured per
//! benchmark and engine, after one uncounted warm-up run of 10 rounds.

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use nexus_sdk::RunRef;
use nexus_sdk::member::{ApprovalMode, EventKind, Frame, NewRun, RunStatus, Step, TaskStatus};
use nexus_store::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

const BEARER_ENV: &str = "RHO_BENCH_BEARER";
const TIMING_LOG: &str = "rho=warn,nexus_sdk=warn,nexus_sdk::runner::timing=debug,rho::mcp::timing=debug";
const WARM_UP_ROUNDS: usize = 10;

/// A running rho, killed on drop; its stderr (the timing lines) is in `log`.
struct Rho {
    child: Child,
    log: PathBuf,
}

impl Drop for Rho {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl common::World {
    /// Starts rho as `name` and waits until the runner's announcement serves `tool` with the
    /// effect kind `kind` (so the previous rho's announcement is not taken for this one's).
    async fn timed_rho(&self, name: &str, root: &Path, extra: &str, tool: &str, kind: &str) -> Rho {
        let config = self.dir.path().join(format!("{name}.toml"));
        let text = format!(
            "kernel_url = \"{}\"\nbearer_env = \"{BEARER_ENV}\"\nroot = \"{}\"\n{extra}\n",
            self.base,
            root.display()
        );
        std::fs::write(&config, text).unwrap();
        let log = self.dir.path().join(format!("{name}.log"));
        let child = Command::new(common::RHO)
            .arg("--config")
            .arg(&config)
            .env(BEARER_ENV, &self.runner_token)
            .env("RUST_LOG", TIMING_LOG)
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start rho");
        let rho = Rho { child, log };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(info) = self.member.runner(&self.runner_id).await
                && info
                    .served_tools
                    .iter()
                    .any(|t| t.name == tool && serde_json::to_value(t.effect_profile.kind).is_ok_and(|k| k == kind))
            {
                return rho;
            }
            assert!(Instant::now() < deadline, "rho never announced {tool} as {kind}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// One uncounted warm-up run of [`WARM_UP_ROUNDS`], then `runs` measured runs of `rounds`.
    async fn measure(&self, name: &str, runs: usize, rounds: usize, call: impl Fn(usize) -> Value + Copy) -> Measured {
        self.timed_run(&format!("{name}-warm"), WARM_UP_ROUNDS, call).await;
        let before = loadavg();
        let mut m = Measured::default();
        for r in 0..runs {
            let (id, feeds) = self.timed_run(&format!("{name}-{r}"), rounds, call).await;
            m.ids.push(id);
            m.feeds.extend(feeds);
        }
        m.load = format!("{before} -> {}", loadavg());
        m
    }

    /// One run of a model step on `scripted/<script>` whose script makes `rounds` calls, one a
    /// round (`call(i)` gives round i's `{name, input}`), then says "done". Answers the run's id
    /// and each row's marks from the live feed.
    async fn timed_run(&self, script: &str, rounds: usize, call: impl Fn(usize) -> Value) -> (String, Feeds) {
        let mut lines: Vec<String> = (0..rounds)
            .map(|i| {
                let mut c = call(i);
                c["id"] = json!(format!("c{i}"));
                json!({"tool_calls": [c]}).to_string()
            })
            .collect();
        lines.push(json!({"text": "done"}).to_string());
        let path = self.dir.path().join("scripts").join(format!("{script}.jsonl"));
        std::fs::write(path, lines.join("\n")).unwrap();

        let step = Step::model("go")
            .model(format!("scripted/{script}"))
            .runners([self.runner_id.clone()]);
        let new = NewRun::new(ApprovalMode::Bypass)
            .default_runner(&self.runner_id)
            .step(step);
        let created = self
            .member
            .workspace(&self.ws)
            .create_run(&new)
            .await
            .expect("create the run");
        let run = self.member.workspace(&self.ws).run(&created.run.public_id);
        // Follow both feeds before starting, so every event is received live.
        let public_id = uuid::Uuid::parse_str(&created.run.public_id).unwrap();
        let run_id = self
            .store
            .run_by_public_id(public_id)
            .await
            .unwrap()
            .expect("the run row")
            .id;
        let kernel = tokio::spawn(follow_kernel(self.kernel.runs().subscribe(run_id)));
        let feed = tokio::spawn(follow_feed(run.stream(0).await.expect("open the live feed")));
        run.start().await.expect("start the run");
        let wait = |task: JoinHandle<Vec<Marks>>| async {
            tokio::time::timeout(Duration::from_secs(600), task)
                .await
                .expect("the run settles within 10 minutes")
                .expect("the feed task")
        };
        let marks = Feeds {
            kernel: wait(kernel).await,
            sse: wait(feed).await,
        };
        let done = common::settle(&run, self.dialect).await;
        assert_eq!(done.status.as_str(), "completed", "{}: {done:?}", self.dialect);
        check_tasks(&run, rounds).await;
        (created.run.public_id, marks)
    }
}

/// The measured runs: their ids, their rows' marks, and the load average around them.
#[derive(Default)]
struct Measured {
    ids: Vec<String>,
    feeds: Feeds,
    load: String,
}

/// The tool rows' marks on the kernel's in-process feed and on the SSE live feed.
#[derive(Default)]
struct Feeds {
    kernel: Vec<Marks>,
    sse: Vec<Marks>,
}

impl Feeds {
    fn extend(&mut self, other: Feeds) {
        self.kernel.extend(other.kernel);
        self.sse.extend(other.sse);
    }
}

/// A tool row's receive times on one feed.
#[derive(Debug, Default, Clone)]
struct Marks {
    dispatched: Option<Instant>,
    claimed: Option<Instant>,
    settled: Option<Instant>,
}

/// The rows' marks on one feed, stamped as each event arrives.
#[derive(Default)]
struct Rows(HashMap<String, Marks>);

impl Rows {
    /// Stamps one event received at `now`; answers whether the run ended.
    fn see(&mut self, now: Instant, kind: &EventKind, key: Option<&str>, data: &Value) -> bool {
        let to = &data["to"];
        match kind {
            EventKind::RunStatusChanged => {
                return RunStatus::deserialize(to).is_ok_and(|s| s.is_terminal());
            }
            EventKind::TaskClaimed => {
                if let Some(key) = key {
                    self.0.entry(key.to_owned()).or_default().claimed.get_or_insert(now);
                }
            }
            EventKind::TaskStatusChanged => {
                let (Some(key), Ok(to)) = (key, TaskStatus::deserialize(to)) else {
                    return false;
                };
                let marks = self.0.entry(key.to_owned()).or_default();
                if to.as_str() == "dispatched" {
                    marks.dispatched.get_or_insert(now);
                } else if to.is_settled() {
                    marks.settled.get_or_insert(now);
                }
            }
            _ => {}
        }
        false
    }

    /// Only tool rows are dispatched; the model rounds run in the kernel.
    fn tools(self) -> Vec<Marks> {
        self.0.into_values().filter(|m| m.dispatched.is_some()).collect()
    }
}

/// Reads the run's live feed (`GET R/events/stream`) until the run is terminal.
async fn follow_feed(mut feed: nexus_sdk::member::EventStream) -> Vec<Marks> {
    let mut rows = Rows::default();
    while let Some(frame) = feed.next().await {
        let now = Instant::now();
        if let Ok(Frame::Event(event)) = frame
            && rows.see(now, &event.kind, event.task_key.as_deref(), &event.data)
        {
            break;
        }
    }
    rows.tools()
}

/// Reads the kernel's in-process feed of the run (what the SSE route relays, as each commit
/// publishes it) until the run is terminal.
async fn follow_kernel(mut feed: nexus_kernel::signals::Subscription<nexus_store::EventRow>) -> Vec<Marks> {
    let mut rows = Rows::default();
    while let Ok(row) = feed.recv().await {
        let now = Instant::now();
        let kind = EventKind::deserialize(Value::String(row.kind.as_str().to_string())).expect("an event type");
        let data: Value = serde_json::from_str(&row.data).unwrap_or_default();
        if rows.see(now, &kind, row.task_key.as_deref(), &data) {
            break;
        }
    }
    rows.tools()
}

/// Every timed row completed without an error result (a benchmark of failures measures
/// nothing).
async fn check_tasks(run: &RunRef, rounds: usize) {
    for round in 1..=rounds {
        let task = run.task(&format!("r{round}t0")).await.expect("read a tool row");
        assert_eq!(task.status.as_str(), "completed", "r{round}t0: {task:?}");
        assert!(!task.is_error, "r{round}t0 answered an error: {:?}", task.output);
    }
}

/// One `key=value` timing line of rho's stderr on `target`.
fn timing_lines(log: &Path, target: &str) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let marker = format!(" {target}: ");
    text.lines()
        .filter_map(|line| line.split_once(&marker).map(|(_, rest)| rest))
        .map(|rest| {
            rest.split_whitespace()
                .filter_map(|pair| pair.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.trim_matches('"').to_owned()))
                .collect()
        })
        .collect()
}

fn field(line: &HashMap<String, String>, name: &str) -> u64 {
    line.get(name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("a timing line without {name}: {line:?}"))
}

/// Samples in microseconds, summarized.
struct Stats(Vec<u64>);

impl Stats {
    fn of(mut samples: Vec<u64>) -> Stats {
        samples.sort_unstable();
        Stats(samples)
    }

    /// The nearest-rank percentile.
    fn pct(&self, p: f64) -> f64 {
        let n = self.0.len();
        let rank = ((p * n as f64).ceil() as usize).clamp(1, n);
        self.0[rank - 1] as f64 / 1000.0
    }

    fn print(&self, label: &str) {
        if self.0.is_empty() {
            println!("  {label:<46} no samples");
            return;
        }
        let mean = self.0.iter().sum::<u64>() as f64 / self.0.len() as f64 / 1000.0;
        println!(
            "  {label:<46} n={:<4} p50 {:>7.3} ms  p99 {:>7.3} ms  mean {:>7.3} ms  min {:>7.3}  max {:>7.3}",
            self.0.len(),
            self.pct(0.50),
            self.pct(0.99),
            mean,
            self.pct(0.0),
            self.pct(1.0),
        );
    }
}

fn span(from: Option<Instant>, to: Option<Instant>) -> Option<u64> {
    Some(to?.saturating_duration_since(from?).as_micros() as u64)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Each feed's three spans over the measured runs' rows.
fn print_feeds(feeds: &Feeds) {
    for (name, marks) in [("kernel feed", &feeds.kernel), ("SSE feed", &feeds.sse)] {
        let pick = |f: &dyn Fn(&Marks) -> Option<u64>| Stats::of(marks.iter().filter_map(f).collect());
        pick(&|m| span(m.dispatched, m.settled)).print(&format!("dispatched -> commit ({name})"));
        pick(&|m| span(m.dispatched, m.claimed)).print("  dispatched -> claimed (push, inbox, claim)");
        pick(&|m| span(m.claimed, m.settled)).print("  claimed -> commit (handler, commit)");
    }
}

fn print_sdk(lines: &[HashMap<String, String>]) {
    for (name, label) in [
        ("inbox_us", "rho: poll start -> claim sent"),
        ("claim_us", "rho: claim sent -> granted"),
        ("queue_us", "rho: granted -> handler start"),
        ("handler_us", "rho: handler"),
        ("commit_us", "rho: commit sent -> acknowledged"),
        ("total_us", "rho: granted -> commit acknowledged"),
    ] {
        Stats::of(lines.iter().map(|l| field(l, name)).collect()).print(label);
    }
    // The runner's side of dispatched -> commit: from the poll the push started (the push
    // leaves right after the dispatching commit) to the acknowledged commit.
    let whole = |l: &HashMap<String, String>| field(l, "inbox_us") + field(l, "claim_us") + field(l, "total_us");
    Stats::of(lines.iter().map(whole).collect()).print("rho: poll start -> commit acknowledged");
}

async fn bench_read(served: &common::World, runs: usize, rounds: usize) {
    let root = tempfile::tempdir().unwrap();
    let files = rounds.max(WARM_UP_ROUNDS);
    for i in 0..files {
        let text = format!("line {i}: a small file for the loopback benchmark\n").repeat(8);
        std::fs::write(root.path().join(format!("f{i}.txt")), text).unwrap();
    }
    let rho = served.timed_rho("rho-read", root.path(), "", "read", "read_only").await;
    let read = |i: usize| json!({"name": "read", "input": {"path": format!("f{i}.txt")}});
    let m = served.measure("read", runs, rounds, read).await;
    let log = rho.log.clone();
    drop(rho);
    println!(
        "read of a {}-byte file, {} ({runs} runs x {rounds} rounds; load {}):",
        std::fs::metadata(root.path().join("f0.txt")).unwrap().len(),
        served.dialect,
        m.load,
    );
    print_feeds(&m.feeds);
    let measured = timing_lines(&log, "nexus_sdk::runner::timing")
        .into_iter()
        .filter(|l| l.get("run").is_some_and(|r| m.ids.contains(r)))
        .collect::<Vec<_>>();
    print_sdk(&measured);
}

/// The echo benchmark with the server untrusted (the fail-closed `write` profile: rho takes a
/// checkpoint before each call, executor.md §14) or trusted (echo's hints make it
/// `read_only`: no checkpoint).
async fn bench_echo(served: &common::World, runs: usize, rounds: usize, trusted: bool) {
    let Some(entry) = common::everything_server() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let extra = format!(
        "[[mcp]]\nname = \"everything\"\ncommand = \"node\"\nargs = [\"{}\", \"stdio\"]\ntrusted = {trusted}\n",
        entry.display()
    );
    let (name, kind) = if trusted {
        ("echo-trusted", "read_only")
    } else {
        ("echo", "write")
    };
    let rho = served
        .timed_rho(name, root.path(), &extra, "everything_echo", kind)
        .await;
    let echo = |i: usize| json!({"name": "everything_echo", "input": {"message": format!("echo {i}")}});
    let m = served.measure(name, runs, rounds, echo).await;
    let log = rho.log.clone();
    drop(rho);
    // The MCP lines carry no run: the calls are sequential, so the i-th MCP line belongs to the
    // i-th SDK line of the whole log; the measured runs' lines are then picked by run.
    let mcp = timing_lines(&log, "rho::mcp::timing");
    let sdk = timing_lines(&log, "nexus_sdk::runner::timing");
    assert_eq!(mcp.len(), sdk.len(), "one MCP line per committed echo call");
    let pairs: Vec<_> = sdk
        .iter()
        .zip(&mcp)
        .filter(|(s, _)| s.get("run").is_some_and(|r| m.ids.contains(r)))
        .collect();
    println!(
        "MCP echo, {}, {} ({runs} runs x {rounds} rounds; load {}):",
        if trusted {
            "trusted: read_only, no checkpoint"
        } else {
            "untrusted: write, checkpoint first"
        },
        served.dialect,
        m.load
    );
    print_feeds(&m.feeds);
    let measured: Vec<HashMap<String, String>> = pairs.iter().map(|(s, _)| (*s).clone()).collect();
    print_sdk(&measured);
    let call = |(_, m): &(&HashMap<String, String>, &HashMap<String, String>)| field(m, "call_us");
    Stats::of(pairs.iter().map(call).collect()).print("rho: MCP tools/call round trip");
    let overhead = |(s, m): &(&HashMap<String, String>, &HashMap<String, String>)| {
        field(s, "total_us").saturating_sub(field(m, "call_us"))
    };
    Stats::of(pairs.iter().map(overhead).collect()).print("bridge overhead: granted -> ack minus MCP");
    let local = |(s, m): &(&HashMap<String, String>, &HashMap<String, String>)| {
        field(s, "total_us").saturating_sub(field(s, "commit_us") + field(m, "call_us"))
    };
    Stats::of(pairs.iter().map(local).collect()).print("  of which rho-local (less the commit's HTTP)");
}

#[tokio::main]
async fn main() {
    let runs = env_usize("BENCH_RUNS", 4);
    let rounds = env_usize("BENCH_ROUNDS", 50);
    for served in common::worlds().await {
        bench_read(&served, runs, rounds).await;
        bench_echo(&served, runs, rounds, false).await;
        bench_echo(&served, runs, rounds, true).await;
    }
}
