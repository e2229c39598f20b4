//! The kernel's own time per round with a real adapter (issue 23): the same run — a model that
//! calls `tool_search` with a distinct query each round, 100 rounds — on `scripted` and on
//! `anthropic` against the local fake upstream (`nexus-fake-upstream`, loopback HTTP, canned
//! JSON replies), SQLite, driven one job per pass with `Runs::run_jobs_once`, in alternating
//! sittings (scripted, anthropic, scripted, anthropic, …).
//!
//! A round's wall time with `anthropic` includes the upstream's part: the loopback HTTP
//! exchange and the fake server's work. That part is measured on its own in the same sitting —
//! the same reply fetched by a bare `reqwest` POST of a body of the same size — and subtracted
//! to give the kernel's own time per round. Reported: p50 per round for each, and the ratio
//! kernel-own(anthropic) / scripted (target: at most 1.3).
//!
//! `cargo bench -p nexus-kernel --bench upstream`

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use nexus_fake_upstream::{Expectation, FakeUpstream, Route, anthropic};
use nexus_kernel::{Kernel, MemberPrincipal};
use nexus_providers::{InstanceConfig, Kind, Providers};
use nexus_store::testing;
use serde_json::json;
use uuid::Uuid;

const ROUNDS: usize = 100;
const SITTINGS: usize = 3;

struct World {
    _ts: testing::TestStore,
    _dir: tempfile::TempDir,
    kernel: Kernel,
    agent: MemberPrincipal,
    ws: Uuid,
}

async fn world(upstream: &FakeUpstream) -> World {
    let ts = testing::sqlite().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let scripts = dir.path().join("scripts");
    std::fs::create_dir_all(&scripts).expect("scripts dir");
    let lines: Vec<String> = (1..=ROUNDS).map(|i| reply_json(i).to_string()).collect();
    std::fs::write(scripts.join("rounds.jsonl"), lines.join("\n")).expect("script");
    let mut config = InstanceConfig::of(Kind::Anthropic);
    config.base_url = Some(upstream.base_url());
    config.stream = Some(false);
    let providers = Providers::from_config(scripts.clone(), &BTreeMap::from([("anthropic".to_string(), config)]));
    let kernel = Kernel::builder(ts.store.clone())
        .providers(providers)
        .blobs_dir(dir.path().join("blobs"))
        .provider_backoff_ms(vec![0, 0, 0])
        .build();
    let boot = kernel.admin().bootstrap().await.expect("bootstrap");
    let token = boot.agent.member_token.as_str();
    let agent = kernel
        .admin()
        .authenticate_member(Some(&format!("Bearer {token}")))
        .await
        .expect("authenticate");
    let ws = boot.workspace_public_id;
    World {
        _ts: ts,
        _dir: dir,
        kernel,
        agent,
        ws,
    }
}

/// Round `i`'s scripted line: a `tool_search` call, or the final text.
fn reply_json(i: usize) -> serde_json::Value {
    if i < ROUNDS {
        json!({"text": format!("Round {i}."), "tool_calls": [
            {"id": format!("c{i}"), "name": "tool_search", "input": {"query": format!("round {i}")}}]})
    } else {
        json!({"text": "All done."})
    }
}

/// Round `i`'s Anthropic reply: the same content.
fn reply_message(i: usize) -> anthropic::Message {
    let m = anthropic::Message::new("bench").usage(100, 10);
    if i < ROUNDS {
        m.text(format!("Round {i}."))
            .tool_use(format!("c{i}"), "tool_search", json!({"query": format!("round {i}")}))
    } else {
        m.text("All done.")
    }
}

impl World {
    async fn run(&self, model: &str) -> Vec<Duration> {
        let body = json!({"run": {"approval_mode": "bypass", "steps": [{"model": {
            "prompt": "Search the tools, one query a round.", "model": model,
            "kernel_tools": ["nexus.tools.search"]}}]}});
        let created = self
            .kernel
            .runs()
            .create_run(&self.agent, self.ws, &body, None)
            .await
            .expect("create")
            .fresh()
            .expect("a fresh create");
        let id = Uuid::parse_str(&created.run.public_id).expect("uuid");
        self.kernel
            .runs()
            .start_run(&self.agent, self.ws, id)
            .await
            .expect("start");
        let mut bounds = vec![Instant::now()];
        let mut passes = 0usize;
        loop {
            let n = self.kernel.runs().run_jobs_once().await.expect("run_jobs_once");
            if n == 0 {
                break;
            }
            passes += 1;
            if passes.is_multiple_of(2) {
                bounds.push(Instant::now());
            }
        }
        bounds.push(Instant::now());
        assert_eq!(passes, 2 * ROUNDS - 1, "{model}: every round ran");
        bounds.windows(2).map(|w| w[1] - w[0]).collect()
    }
}

fn p50(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The upstream's part of a round: a bare POST of `size` bytes answered with a canned reply.
async fn bare_exchange(upstream: &FakeUpstream, size: usize, n: usize) -> Duration {
    let client = reqwest::Client::new();
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        upstream.expect(Route::Messages, Expectation::any(reply_message(i + 1).reply()));
        let body = vec![b' '; size];
        let t = Instant::now();
        let r = client
            .post(format!("{}/v1/messages", upstream.base_url()))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("post");
        let _ = r.bytes().await.expect("body");
        times.push(t.elapsed());
    }
    p50(times)
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let upstream = FakeUpstream::start().await;
        let w = world(&upstream).await;
        // Warm both paths once.
        for i in 1..=ROUNDS {
            upstream.expect(Route::Messages, Expectation::any(reply_message(i).reply()));
        }
        w.run("anthropic/bench").await;
        w.run("scripted/rounds").await;
        let mut scripted = Vec::new();
        let mut anthro = Vec::new();
        let mut bare = Vec::new();
        for _ in 0..SITTINGS {
            scripted.extend(w.run("scripted/rounds").await);
            for i in 1..=ROUNDS {
                upstream.expect(Route::Messages, Expectation::any(reply_message(i).reply()));
            }
            let before = upstream.requests().len();
            anthro.extend(w.run("anthropic/bench").await);
            let sent = upstream.requests();
            let mean = sent[before..].iter().map(|r| r.body.len()).sum::<usize>() / (sent.len() - before);
            bare.push(bare_exchange(&upstream, mean, ROUNDS).await);
        }
        let (s, a, b) = (p50(scripted), p50(anthro), p50(bare));
        let own = a.saturating_sub(b);
        println!("rounds per sitting: {ROUNDS}, sittings: {SITTINGS} (alternating), SQLite");
        println!("scripted             p50 per round: {s:?}");
        println!("anthropic (loopback) p50 per round: {a:?}");
        println!("upstream exchange    p50:           {b:?}");
        println!("anthropic kernel-own p50 per round: {own:?}");
        println!(
            "ratio kernel-own / scripted:        {:.2}",
            own.as_secs_f64() / s.as_secs_f64()
        );
    });
}
