//! `openai` per model round (providers.md §6): `encode` of a round's request plus the decode of
//! its reply, with 60 function tools and one `tool_search` call and its result per round.
//!
//! `cargo bench -p nexus-providers --bench openai`
//!
//! Rows:
//! - `round/<n>`: encode the request after `n` to `n + 10` rounds on a provider that has just
//!   encoded the request before it, with the kernel's word that it continues that encode, as
//!   the kernel does from one round to the next (see `common::Chain`), then decode a canned
//!   completion (`openai::decode_completion`). Target: ≤100 µs median, flat from 10 to 200
//!   rounds.
//! - `encode_cold/<n>`: the first encode on a fresh provider (after a restart).
//!
//! Before them, the per-call p50 / p90 / p99 of the `round/<n>` work is printed (the target
//! is a per-call p50; criterion's figures are means per sample), and the same without the
//! word (`(compared)`: the encode compares the entries with its kept copy).
//!
//! What a timed call allocates is returned, so dropping it is not timed.

mod common;

use std::cell::RefCell;
use std::time::Duration;

use common::{Chain, push_round};
use criterion::{BatchSize, Criterion, black_box, criterion_group, criterion_main};
use nexus_providers::{Entry, InstanceConfig, Kind, ModelRequest, NoBlobs, OpenAi, Provider, RequestOptions, openai};
use serde_json::{Value, json};

/// The process allocator of the `nexus` binary, so allocation costs are those of production.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TOOLS: usize = 60;

fn tool(i: usize) -> Value {
    json!({"type":"function","function":{
        "name": format!("tool_{i:02}"),
        "description": format!("Tool number {i}: does one precise thing to the workspace and reports what it did, with enough words to be a realistic description."),
        "parameters":{"type":"object","properties":{
            "path":{"type":"string","description":"A path relative to the workspace root."},
            "query":{"type":"string","description":"What to look for."},
            "limit":{"type":"integer","minimum":1,"maximum":50},
            "recursive":{"type":"boolean"}},
            "required":["path"],"additionalProperties":false},
        "strict":false}})
}

/// The request of the round after `rounds` rounds.
fn request(rounds: usize) -> ModelRequest {
    let mut req = ModelRequest {
        provider: "oai".into(),
        model: "gpt-5.4".into(),
        system: vec![
            "Search the tools, one query a round.".into(),
            "Skills available now:\n- nexus.tools.search: find a tool by name or purpose.".into(),
        ],
        entries: vec![Entry::user_text("Search the tools, one query a round.")],
        tools_deferred: vec![],
        tools: (0..TOOLS).map(tool).collect(),
        options: RequestOptions {
            max_output_tokens: Some(8_192),
            reasoning_effort: Some("low".into()),
        },
    };
    for i in 1..=rounds {
        push_round(&mut req, i, &format!("call_{i}"));
    }
    req
}

/// A reply like the rounds': text, one call, usage.
fn reply() -> Vec<u8> {
    json!({"id":"chatcmpl-1","object":"chat.completion","created":1_700_000_000,"model":"gpt-5.4",
        "choices":[{"index":0,"finish_reason":"tool_calls","logprobs":null,"message":{"role":"assistant",
            "content":"Searching again.","refusal":null,"tool_calls":[{"id":"call_x","type":"function",
            "function":{"name":"tool_search","arguments":"{\"query\":\"round x\"}"}}]}}],
        "usage":{"prompt_tokens":51234,"completion_tokens":18,"total_tokens":51252,
            "prompt_tokens_details":{"cached_tokens":51200,"audio_tokens":0},
            "completion_tokens_details":{"reasoning_tokens":0}}})
    .to_string()
    .into_bytes()
}

/// The first request of chain `tag` after `rounds` rounds.
fn start(rounds: usize, tag: u64) -> ModelRequest {
    let mut req = request(rounds);
    req.entries[0] = Entry::user_text(format!("Search the tools, one query a round (chain {tag})."));
    req
}

/// Per-call percentiles of `round/<n>`, with the kernel's word and without it (the encode
/// compares the entries: a predecessor sealed by another process).
fn percentiles(reply: &[u8]) {
    for n in [10, 50, 100, 200] {
        for word in [true, false] {
            let warm = OpenAi::new(InstanceConfig::of(Kind::Openai));
            let mut chain = Chain::new(n, start, push_round, word);
            let label = format!("round/{n}{}", if word { "" } else { " (compared)" });
            common::percentiles(&label, &warm, &mut chain, 1_000, || {
                drop(openai::decode_completion(black_box(reply)).expect("decode"));
            });
        }
    }
}

fn benches(c: &mut Criterion) {
    let reply = reply();
    percentiles(&reply);
    for n in [10, 50, 100, 200] {
        let warm = OpenAi::new(InstanceConfig::of(Kind::Openai));
        let chain = RefCell::new(Chain::new(n, start, push_round, true));
        c.bench_function(&format!("round/{n}"), |b| {
            b.iter_batched(
                || chain.borrow_mut().advance(&warm),
                |()| {
                    let enc = chain.borrow_mut().encode(&warm);
                    let reply = openai::decode_completion(black_box(&reply)).expect("decode");
                    (enc, reply)
                },
                BatchSize::PerIteration,
            )
        });
        let req = request(n);
        c.bench_function(&format!("encode_cold/{n}"), |b| {
            b.iter_batched(
                || OpenAi::new(InstanceConfig::of(Kind::Openai)),
                |p| {
                    let enc = p.encode(black_box(&req), &NoBlobs).expect("encode");
                    (p, enc)
                },
                BatchSize::PerIteration,
            )
        });
    }
}

criterion_group! {
    name = openai_rounds;
    config = Criterion::default()
        .sample_size(60)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = benches
}
criterion_main!(openai_rounds);
