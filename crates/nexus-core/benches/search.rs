//! `tool_search` benchmark: a 10,000-entry frozen declaration (functions, routed entries with
//! served names, a few aliases, 500 skill catalog entries), queries of four kinds. Criterion
//! gives each kind's per-query time over a prebuilt index; a custom loop of 2,000 mixed queries
//! timed with `Instant` prints p50/p99 per query, both over a prebuilt index and with the index
//! built per call (what the kernel handler does today).
//!
//! `cargo bench -p nexus-core --bench search`

use std::time::Instant;

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use nexus_core::search::SearchIndex;
use serde_json::Value;

use nexus_core::fixtures::search_10k as declaration;

/// (kind, query): exact callable, one term (few matches), two terms, no match, one term that
/// matches thousands (limit hit at once).
fn queries() -> Vec<(&'static str, String)> {
    vec![
        ("exact callable", "tool_07777".into()),
        ("one term, rare", "served_9996".into()),
        ("one term, common", "repository".into()),
        ("two terms", "ledger CALENDAR".into()),
        ("skill term", "quarterly".into()),
        ("no match", "zeppelin".into()),
        ("no match, two terms", "file zeppelin".into()),
    ]
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p).ceil() as usize)
        .saturating_sub(1)
        .min(sorted.len() - 1)]
}

fn custom_loop(decl: &[Value], skills: &[Value]) {
    let qs = queries();
    let idx = SearchIndex::new(decl, skills);
    let t = Instant::now();
    let builds = 20;
    for _ in 0..builds {
        black_box(SearchIndex::new(black_box(decl), black_box(skills)));
    }
    let build_ms = t.elapsed().as_secs_f64() * 1e3 / builds as f64;
    for (label, per_call) in [("prebuilt index", false), ("index built per call", true)] {
        let n = if per_call { 200 } else { 2_000 };
        let mut all = Vec::with_capacity(n);
        let mut by_kind: Vec<Vec<f64>> = vec![Vec::new(); qs.len()];
        for k in 0..n {
            let (_, q) = &qs[k % qs.len()];
            let t = Instant::now();
            if per_call {
                let i = SearchIndex::new(decl, skills);
                black_box(i.search(black_box(q), 5));
            } else {
                black_box(idx.search(black_box(q), 5));
            }
            let us = t.elapsed().as_secs_f64() * 1e6;
            all.push(us);
            by_kind[k % qs.len()].push(us);
        }
        all.sort_by(f64::total_cmp);
        println!(
            "search [{label}] {n} mixed queries: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
            percentile(&all, 0.5),
            percentile(&all, 0.99),
            all[all.len() - 1]
        );
        for (j, (kind, q)) in qs.iter().enumerate() {
            let v = &mut by_kind[j];
            v.sort_by(f64::total_cmp);
            println!(
                "  {kind:<22} {q:<18} p50 {:>8.1} µs  p99 {:>8.1} µs",
                percentile(v, 0.5),
                percentile(v, 0.99)
            );
        }
    }
    println!(
        "SearchIndex::new over {} entries + {} skills: {build_ms:.2} ms mean",
        decl.len(),
        skills.len()
    );
}

fn bench(c: &mut Criterion) {
    let (decl, skills) = declaration();
    custom_loop(&decl, &skills);
    let idx = SearchIndex::new(&decl, &skills);
    for (kind, q) in queries() {
        c.bench_function(&format!("tool_search 10k: {kind}"), |b| {
            b.iter(|| idx.search(black_box(&q), 5))
        });
    }
    c.bench_function("tool_search 10k: SearchIndex::new", |b| {
        b.iter(|| SearchIndex::new(black_box(&decl), black_box(&skills)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
