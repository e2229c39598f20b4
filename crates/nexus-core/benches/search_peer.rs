//! `tool_search` over the peer's corpus: the 10,000 tools and 1,000 queries that
//! `../shared/bench/peers/bm25_toolsearch.py` generates (seed 20261201), copied into
//! `benches/data/`, timed the way that script times its own index (the
//! peer's README, section 2).
//!
//! What is timed, beside what the peer times:
//! - **build**: [`SearchIndex::new`] over the 10,000 entries, once, then four more times for a
//!   median (the peer: `tokenize` then `BM25Okapi(docs)`, once per process; our build folds the
//!   text, which is the peer's tokenizing and indexing together);
//! - **tool_search**: [`SearchIndex::search_text`] with `limit` 10, one timed call per query, the
//!   JSON text the kernel hands the model (the peer: `get_scores` plus a top-10 selection);
//! - **every match**: [`SearchIndex::count`], the number of entries holding every term (the
//!   peer's substring filter, which keeps every entry where each term is a substring of its name
//!   and description). Both match the same way, so the mean hit count must equal the peer's
//!   `substring_mean_hits` (114.6): the bench prints it as the check.
//!
//! Each query is timed once with `Instant`, in file order, as the peer does; percentiles are
//! nearest-rank, as the peer's `pctl`. The ranking differs: `tool_search` returns matches in
//! declaration order (kernel-tools.md §11), BM25 by score, so the top-1 checksum is not
//! comparable. The declaration here is about 3.8 MB, beyond the 1 MiB a stored declaration may
//! hold: it measures the index, not an accepted declaration.
//!
//! `cargo bench -p nexus-core --bench search_peer`

use std::fs;
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use nexus_core::search::SearchIndex;
use serde_json::{Map, Value, json};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/data");
/// The peer's `TOP_K`, and a `limit` `tool_search` accepts (1 – 20).
const LIMIT: usize = 10;
const BUILDS: usize = 5;

fn lines(name: &str) -> Vec<Value> {
    let path = Path::new(DATA).join(name);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}. The file is a copy of ../shared/bench/peers/{name}, which \
             `python3 bm25_toolsearch.py --outdir crates/nexus-core/benches/data` writes again.",
            path.display()
        )
    });
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// A corpus line `{name, description, params}` as a declared function whose parameters are
/// the listed names, each a string.
fn entry(tool: &Value) -> Value {
    let mut properties = Map::new();
    for p in tool["params"].as_array().expect("params") {
        properties.insert(p.as_str().expect("param").to_string(), json!({"type": "string"}));
    }
    json!({"type": "function", "function": {
        "name": tool["name"], "description": tool["description"],
        "parameters": {"type": "object", "properties": properties},
    }})
}

/// The peer's `pctl`: nearest rank, `round(p / 100 · n + 0.5) − 1`, clamped.
fn pctl(sorted: &[f64], p: f64) -> f64 {
    let rank = (p / 100.0 * sorted.len() as f64 + 0.5).round() as usize;
    sorted[rank.saturating_sub(1).min(sorted.len() - 1)]
}

fn report(label: &str, mut ms: Vec<f64>) {
    let mean = ms.iter().sum::<f64>() / ms.len() as f64;
    ms.sort_by(f64::total_cmp);
    println!(
        "  {label:<28} p50 {:.4} ms  p99 {:.4} ms  mean {:.4} ms  max {:.4} ms",
        pctl(&ms, 50.0),
        pctl(&ms, 99.0),
        mean,
        ms[ms.len() - 1]
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    let corpus = lines("toolsearch_corpus.jsonl");
    let queries: Vec<String> = lines("toolsearch_queries.jsonl")
        .iter()
        .map(|q| {
            let terms: Vec<&str> = q["terms"]
                .as_array()
                .expect("terms")
                .iter()
                .map(|t| t.as_str().expect("term"))
                .collect();
            terms.join(" ")
        })
        .collect();
    let declaration: Vec<Value> = corpus.iter().map(entry).collect();

    let mut builds = Vec::with_capacity(BUILDS);
    let mut index = None;
    for _ in 0..BUILDS {
        let t = Instant::now();
        let built = SearchIndex::new(black_box(&declaration), &[]);
        builds.push(t.elapsed().as_secs_f64() * 1e3);
        index = Some(built);
    }
    let index = index.expect("built");
    assert_eq!(index.len(), corpus.len());

    let mut searched = Vec::with_capacity(queries.len());
    let mut returned = 0usize;
    for q in &queries {
        let t = Instant::now();
        let text = index.search_text(black_box(q), LIMIT);
        searched.push(t.elapsed().as_secs_f64() * 1e3);
        returned += black_box(text).matches(r#""definition":"#).count();
    }

    let mut counted = Vec::with_capacity(queries.len());
    let mut hits = 0usize;
    for q in &queries {
        let t = Instant::now();
        let n = index.count(black_box(q));
        counted.push(t.elapsed().as_secs_f64() * 1e3);
        hits += n;
    }

    let first = builds[0];
    builds.sort_by(f64::total_cmp);
    println!(
        "tool_search over the peer corpus: {} tools, {} queries, limit {LIMIT}",
        corpus.len(),
        queries.len()
    );
    println!(
        "  build (SearchIndex::new)     first {first:.1} ms, median of {BUILDS} {:.1} ms [{:.1} – {:.1}]",
        builds[BUILDS / 2],
        builds[0],
        builds[BUILDS - 1]
    );
    report("tool_search, limit 10", searched);
    report("every match (count)", counted);
    println!(
        "  mean hits per query {:.2} (the peer's substring filter: 114.6); entries returned {returned}",
        hits as f64 / queries.len() as f64
    );
}
