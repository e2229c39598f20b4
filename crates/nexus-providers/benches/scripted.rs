//! `scripted` per model round (providers.md §7): `encode` and `send` for a 1-round and a
//! 1,000-round history, one `tool_search` call and its result per round, like the kernel's
//! per-round benchmark (`cargo bench -p nexus-kernel --bench rounds`).
//!
//! `cargo bench -p nexus-providers --bench scripted`
//!
//! A history of `n` rounds is the prompt followed by `n` (assistant, tool result) pairs; the
//! script has a line per round, so every request is answered. Rows:
//! - `encode/<n>`: the encode of round `n`'s request on a provider that has just encoded round
//!   `n - 1`'s (untimed), as the kernel does from one round to the next (each measured request
//!   ends with a round of its own, so none repeats an earlier one);
//! - `encode_cold/<n>`: the first encode on a fresh provider (after a restart);
//! - `send/<n>`: `send` of the bytes the same provider has just encoded (the kernel's case);
//! - `send_cold/<n>`: `send` of those bytes on a fresh provider (a resend after a restart).
//!
//! What a timed call allocates is returned, so dropping it is not timed.

mod common;

use std::path::Path;

use common::push_round;
use criterion::{BatchSize, Criterion, black_box, criterion_group, criterion_main};
use nexus_providers::{Entry, ModelRequest, NoBlobs, NoDeltas, Provider, RequestOptions, Scripted};
use serde_json::json;

/// The longest history measured, and the script's length.
const ROUNDS: usize = 1_000;

fn write_script(dir: &Path) {
    let mut lines: Vec<String> = (1..=ROUNDS + 1)
        .map(|i| {
            json!({"text": format!("Round {i}."), "tool_calls": [
                {"id": format!("c{i}"), "name": "tool_search", "input": {"query": format!("round {i}")}}
            ]})
            .to_string()
        })
        .collect();
    lines.push(json!({"text": "All done."}).to_string());
    std::fs::write(dir.join("rounds.jsonl"), lines.join("\n")).expect("write script");
}

/// The request of the round after `rounds` rounds.
fn request(rounds: usize) -> ModelRequest {
    let mut req = ModelRequest {
        provider: "scripted".into(),
        model: "rounds".into(),
        system: vec![
            "Search the tools, one query a round.".into(),
            "Skills available now:\n- nexus.tools.search: find a tool by name or purpose.".into(),
        ],
        entries: vec![Entry::user_text("Search the tools, one query a round.")],
        tools_deferred: vec![],
        tools: vec![json!({"type":"function","function":{
            "name":"tool_search",
            "description":"Search the tools offered to this round by name and description.",
            "parameters":{"type":"object","properties":{
                "query":{"type":"string","description":"What to look for."},
                "limit":{"type":"integer","minimum":1,"maximum":50}},
                "required":["query"],"additionalProperties":false},
            "strict":true}})],
        options: RequestOptions {
            max_output_tokens: Some(8_192),
            reasoning_effort: None,
        },
    };
    for i in 1..=rounds {
        push_round(&mut req, i, &format!("c{i}"));
    }
    req
}

/// `previous` (the request after `n - 1` rounds) and round `n`, whose call id is made unique
/// by `tag`: each measured encode is a round no request before it ended with.
fn next_round(previous: &ModelRequest, n: usize, tag: u64) -> ModelRequest {
    let mut next = previous.clone();
    push_round(&mut next, n, &format!("c{n}-{tag}"));
    next
}

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    write_script(dir.path());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // Scripts are written before the rounds that read them; once a file is older than a
    // couple of seconds, an unchanged `stat` proves its text unchanged.
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    for n in [1, ROUNDS] {
        let previous = request(n - 1);
        let req = request(n);
        let warm = Scripted::new(dir.path());
        // A first pass so the page cache and any provider state are warm.
        warm.encode(&previous, &NoBlobs).expect("encode");
        let enc = warm.encode(&req, &NoBlobs).expect("encode");
        rt.block_on(warm.send(&enc, &NoDeltas)).expect("send");

        let mut tag = 0u64;
        c.bench_function(&format!("encode/{n}"), |b| {
            b.iter_batched(
                || {
                    tag += 1;
                    // Sealed and stored long before the next round: its bytes are freed.
                    drop(warm.encode(&previous, &NoBlobs).expect("encode"));
                    next_round(&previous, n, tag)
                },
                |next| {
                    let enc = warm.encode(black_box(&next), &NoBlobs).expect("encode");
                    (next, enc)
                },
                BatchSize::PerIteration,
            )
        });
        c.bench_function(&format!("encode_cold/{n}"), |b| {
            b.iter_batched(
                || Scripted::new(dir.path()),
                |p| {
                    let enc = p.encode(black_box(&req), &NoBlobs).expect("encode");
                    (p, enc)
                },
                BatchSize::PerIteration,
            )
        });
        let enc = warm.encode(&req, &NoBlobs).expect("encode");
        c.bench_function(&format!("send/{n}"), |b| {
            b.iter(|| rt.block_on(warm.send(black_box(&enc), &NoDeltas)).expect("send"))
        });
        c.bench_function(&format!("send_cold/{n}"), |b| {
            b.iter_batched(
                || Scripted::new(dir.path()),
                |p| {
                    let reply = rt.block_on(p.send(black_box(&enc), &NoDeltas)).expect("send");
                    (p, reply)
                },
                BatchSize::PerIteration,
            )
        });
    }
}

criterion_group!(scripted, benches);
criterion_main!(scripted);
