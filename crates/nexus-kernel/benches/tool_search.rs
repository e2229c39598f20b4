//! `tool_search` per call over 10,000 frozen callables, through the kernel's index cache.
//!
//! The handler is driven directly, not through a run. First the byte-keyed cache alone:
//! `SearchCache::tool_search` takes the call's input and the declaring round's task id and
//! stored `frozen_context` bytes (the path of a round row without a stored digest, written
//! before migration 0006; no store reads are measured in this part; `benches/rounds.rs`
//! measures whole rounds).
//!
//! The frozen context is the declaration of `nexus-core/benches/search.rs` (19 aliases, 9,981
//! functions, every fourth routed with a served name and `defer_loading`, 500 skill catalog
//! entries) in the stored `frozen_context` shape. Timed with `Instant` per call, `limit` 5:
//!
//! - **hit, same round** (the steady state within a round): the index is cached and remembers
//!   the round's row; a call fingerprints the bytes and queries. 10,000 mixed queries of seven
//!   kinds, after 200 uncounted ones.
//! - **hit, new round** (the first call of each later round of the chain, whose row copies the
//!   frozen context): the bytes are compared in full with the cached ones, then the query. A
//!   fresh row id per call; 2,000 calls.
//! - **index in hand**: the same queries on a built `SearchIndex` (query and serialization
//!   only), to show what the hit adds (the fingerprint and the byte comparison).
//! - **miss** (the first call of a frozen context): a fresh cache each call, so the call parses
//!   the frozen context, builds the index, queries and inserts. This is also what every call
//!   cost before the cache.
//!
//! Then, on each engine (a SQLite file in WAL mode; PostgreSQL when
//! `NEXUS_TEST_DATABASE_URL` is set), the store reads around the handler, per call in a
//! transaction opened and rolled back for it, against a stored round row holding the same
//! frozen context, 200 calls after 10 uncounted:
//!
//! - **round row read** and **round row read + cache hit**: the whole round row, frozen bytes
//!   included (the path before migration 0006, and still the path of a row without a digest).
//! - **declared call: digest read + cache hit**: `SearchCache::tool_search_declared`, the
//!   kernel's real per-call path: the round's head (`id, kind, declaring_task_id,
//!   frozen_digest`, no frozen bytes), the lookup by digest, the query.
//!
//! `cargo bench -p nexus-kernel --bench tool_search`

use std::hint::black_box;
use std::time::Instant;

use nexus_core::search::SearchIndex;
use nexus_kernel::Kernel;
use nexus_kernel::tools::SearchCache;
use nexus_store::prelude::*;
use nexus_store::testing::{self, TestStore};
use nexus_store::{NewRun, NewTask, RunStatus, TaskKind, TaskStatus};
use serde_json::{Value, json};
use uuid::Uuid;

use nexus_core::fixtures::RUNNER;
const HIT_CALLS: usize = 10_000;
const NEW_ROUND_CALLS: usize = 2_000;
const MISS_CALLS: usize = 40;
const ROW_READS: usize = 200;

/// The stored `frozen_context` of a round declaring 10,000 callables.
fn frozen_context() -> String {
    let (decl, skills) = nexus_core::fixtures::search_10k();
    json!({
        "prompt": "Find the tool that reads the ledger.",
        "results": [],
        "attachments": [],
        "tool_definitions": decl,
        "environment": {"default_runner_executor_public_id": RUNNER, "executors": [], "runner_candidates": []},
        "skills": skills,
        "memory": {"workspace_public_id": "0190a000-0000-7000-8000-0000000000aa", "conversation_public_id": null,
            "user_public_id": null},
        "approval_mode": "bypass",
        "approval_rules": null,
        "fan_on_failure": "absorb"
    })
    .to_string()
}

fn queries() -> Vec<(&'static str, Value)> {
    [
        ("exact callable", "tool_07777"),
        ("one term, rare", "served_9996"),
        ("one term, common", "repository"),
        ("two terms", "ledger CALENDAR"),
        ("skill term", "quarterly"),
        ("no match", "zeppelin"),
        ("no match, two terms", "file zeppelin"),
    ]
    .into_iter()
    .map(|(k, q)| (k, json!({ "query": q })))
    .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p).ceil() as usize)
        .saturating_sub(1)
        .min(sorted.len() - 1)]
}

fn report(label: &str, qs: &[(&str, Value)], all: &mut [f64], by_kind: &mut [Vec<f64>]) {
    all.sort_by(f64::total_cmp);
    println!(
        "tool_search [{label}] {} mixed calls: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
        all.len(),
        percentile(all, 0.5),
        percentile(all, 0.99),
        all[all.len() - 1]
    );
    for (j, (kind, q)) in qs.iter().enumerate() {
        let v = &mut by_kind[j];
        v.sort_by(f64::total_cmp);
        println!(
            "  {kind:<22} {:<18} p50 {:>9.1} µs  p99 {:>9.1} µs",
            q["query"].as_str().unwrap_or(""),
            percentile(v, 0.5),
            percentile(v, 0.99)
        );
    }
}

fn handler() {
    let frozen = frozen_context();
    let qs = queries();
    println!("frozen context: {} bytes, 10,000 callables, 500 skills", frozen.len());

    // Miss: a fresh cache per call (parse + build + query + insert).
    let mut all = Vec::with_capacity(MISS_CALLS);
    let mut by_kind: Vec<Vec<f64>> = vec![Vec::new(); qs.len()];
    for k in 0..MISS_CALLS {
        let (_, input) = &qs[k % qs.len()];
        let cache = SearchCache::new();
        let t = Instant::now();
        let out = cache.tool_search(black_box(input), Some((1, black_box(&frozen))));
        let us = t.elapsed().as_secs_f64() * 1e6;
        assert!(!out.is_error);
        black_box(out);
        drop(cache);
        all.push(us);
        by_kind[k % qs.len()].push(us);
    }
    report("cache miss: parse + build + query", &qs, &mut all, &mut by_kind);

    // Hit: one shared cache, warmed.
    let cache = SearchCache::new();
    let first = cache.tool_search(&qs[0].1, Some((1, &frozen)));
    for k in 0..200 {
        black_box(cache.tool_search(&qs[k % qs.len()].1, Some((1, &frozen))));
    }
    for (label, calls, new_round) in [
        ("cache hit, same round", HIT_CALLS, false),
        ("cache hit, new round", NEW_ROUND_CALLS, true),
    ] {
        let mut all = Vec::with_capacity(calls);
        let mut by_kind: Vec<Vec<f64>> = vec![Vec::new(); qs.len()];
        for k in 0..calls {
            let (_, input) = &qs[k % qs.len()];
            let row = if new_round { 1_000 + k as i64 } else { 1 };
            let t = Instant::now();
            let out = cache.tool_search(black_box(input), Some((row, black_box(&frozen))));
            let us = t.elapsed().as_secs_f64() * 1e6;
            black_box(out);
            all.push(us);
            by_kind[k % qs.len()].push(us);
        }
        report(label, &qs, &mut all, &mut by_kind);
    }
    assert_eq!(cache.tool_search(&qs[0].1, Some((1, &frozen))), first);
    assert_eq!(cache.len(), 1);

    // Index in hand: query + serialization only.
    let mut parsed: Value = serde_json::from_str(&frozen).expect("frozen context");
    let decl = parsed["tool_definitions"]
        .as_array_mut()
        .map(std::mem::take)
        .unwrap_or_default();
    let skills = parsed["skills"].as_array_mut().map(std::mem::take).unwrap_or_default();
    let index = SearchIndex::owned(decl, skills);
    let mut all = Vec::with_capacity(HIT_CALLS);
    let mut by_kind: Vec<Vec<f64>> = vec![Vec::new(); qs.len()];
    for k in 0..HIT_CALLS {
        let (_, input) = &qs[k % qs.len()];
        let q = input["query"].as_str().unwrap_or("");
        let t = Instant::now();
        let out = index.search_text(black_box(q), 5);
        let us = t.elapsed().as_secs_f64() * 1e6;
        black_box(out);
        all.push(us);
        by_kind[k % qs.len()].push(us);
    }
    report("index in hand: query only", &qs, &mut all, &mut by_kind);
}

/// Inserts a run and a model task holding `frozen`; returns the task id.
async fn round_row(kernel: &Kernel, frozen: &str) -> i64 {
    let boot = kernel.admin().bootstrap().await.expect("bootstrap");
    let token = boot.agent.member_token.as_str();
    let agent = kernel
        .admin()
        .authenticate_member(Some(&format!("Bearer {token}")))
        .await
        .expect("authenticate");
    let ws_id = boot.workspace_public_id;
    let ws = kernel
        .store
        .workspace_by_public_id(ws_id)
        .await
        .expect("read")
        .expect("workspace");
    let mut tx = kernel.store.begin().await.expect("begin");
    let run = tx
        .insert_run(NewRun {
            public_id: Uuid::now_v7(),
            workspace_id: ws.id,
            created_by_id: agent.member.id,
            answering_member_id: agent.member.id,
            declaring_agent_id: None,
            status: RunStatus::Pending,
            hosting: nexus_store::Hosting::Standalone,
            approval_mode: nexus_store::ApprovalMode::Bypass,
            approval_rules: None,
            default_runner_id: None,
            revision: 0,
            created_at: 0,
            started_at: None,
        })
        .await
        .expect("run");
    let task = tx
        .insert_task(NewTask {
            run_id: run.id,
            key: "r0".into(),
            kind: TaskKind::Model,
            status: TaskStatus::Waiting,
            generation: 1,
            origin: nexus_store::Origin::Author,
            on_failure: nexus_store::OnFailure::Propagate,
            visibility: nexus_store::Visibility::Visible,
            frozen_context: Some(frozen.to_string()),
            ..Default::default()
        })
        .await
        .expect("task");
    tx.commit().await.expect("commit");
    task.id
}

async fn row_reads(engine: &str, ts: TestStore, frozen: &str) {
    let kernel = Kernel::new(ts.store.clone());
    let id = round_row(&kernel, frozen).await;
    let input = json!({"query": "ledger CALENDAR"});
    for with_search in [false, true] {
        let mut all = Vec::with_capacity(ROW_READS);
        for k in 0..ROW_READS + 10 {
            let t = Instant::now();
            let mut tx = kernel.store.begin().await.expect("begin");
            let row = tx.task_by_id(id).await.expect("read").expect("row");
            tx.rollback().await.expect("rollback");
            if with_search {
                let f = row.frozen_context.as_deref().expect("frozen");
                black_box(kernel.state.search_cache.tool_search(&input, Some((row.id, f))));
            }
            let us = t.elapsed().as_secs_f64() * 1e6;
            assert_eq!(row.frozen_context.as_deref().map(str::len), Some(frozen.len()));
            if k >= 10 {
                all.push(us);
            }
        }
        all.sort_by(f64::total_cmp);
        let label = if with_search {
            "round row read + cache hit (same round)"
        } else {
            "round row read"
        };
        println!(
            "{engine}: {label}, {ROW_READS} calls: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
            percentile(&all, 0.5),
            percentile(&all, 0.99),
            all[all.len() - 1]
        );
    }
    // The real per-call path: a call declared by the round row.
    let cache = &kernel.state.search_cache;
    let expect = cache.tool_search(&input, Some((id, frozen)));
    let mut all = Vec::with_capacity(ROW_READS);
    for k in 0..ROW_READS + 10 {
        let t = Instant::now();
        let mut tx = kernel.store.begin().await.expect("begin");
        let out = cache
            .tool_search_declared(&mut tx, black_box(&input), Some(id), None)
            .await
            .expect("search");
        tx.rollback().await.expect("rollback");
        let us = t.elapsed().as_secs_f64() * 1e6;
        assert_eq!(out, expect);
        if k >= 10 {
            all.push(us);
        }
    }
    all.sort_by(f64::total_cmp);
    println!(
        "{engine}: declared call: digest read + cache hit, {ROW_READS} calls: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
        percentile(&all, 0.5),
        percentile(&all, 0.99),
        all[all.len() - 1]
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    handler();
    let frozen = frozen_context();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        row_reads("sqlite (file, WAL)", testing::sqlite().await, &frozen).await;
        match testing::postgres().await {
            Some(ts) => row_reads("postgresql", ts, &frozen).await,
            None => eprintln!(
                "note: {} is not set (or PostgreSQL is unreachable); skipping PostgreSQL",
                testing::DATABASE_URL_VAR
            ),
        }
    });
}
