//! `anthropic` per model round (providers.md §5): `encode` of a round's request with 60 tools,
//! plus the decode of a typical tool-use reply, after 10, 50 and 200 rounds.
//!
//! `cargo bench -p nexus-providers --bench anthropic`
//!
//! Rows:
//! - `round/<n>`: encode the request after `n` to `n + 10` rounds on an adapter that has just
//!   encoded the request before it, with the kernel's word that it continues that encode, as
//!   the kernel does from one round to the next (see `common::Chain`), then the decode of a
//!   reply;
//! - `encode_cold/<n>`: the encode of round `n`'s request on an adapter that has not seen the
//!   chain (after a restart; its tools bytes are cached).
//!
//! Before them, the per-call p50 / p90 / p99 of the `round/<n>` work is printed, and the same
//! without the word (`(compared)`: the encode compares the entries with its kept copy). The
//! target: `round/<n>` at most 100 µs p50 and flat from 10 to 200 rounds. What a timed call
//! allocates is returned, so dropping it is not timed.

mod common;

use std::cell::RefCell;

use common::Chain;
use criterion::{BatchSize, Criterion, black_box, criterion_group, criterion_main};
use nexus_providers::config::Kind;
use nexus_providers::{Anthropic, Entry, InstanceConfig, ModelRequest, NoBlobs, Provider, RawToolCall, RequestOptions};
use serde_json::{Value, json};

/// The process allocator of the `nexus` binary, so allocation costs are those of production.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How many tools every request offers.
const TOOLS: usize = 60;

/// A function tool with a schema of a realistic size.
fn tool(i: usize) -> Value {
    json!({"type":"function","function":{
        "name": format!("tool_{i}"),
        "description": format!("Tool number {i}: reads, writes or lists things in the workspace, with care for paths and limits."),
        "parameters": {"type":"object","properties":{
            "path":{"type":"string","description":"A path inside the workspace."},
            "limit":{"type":"integer","minimum":1,"maximum":1000,"description":"How many items at most."},
            "recursive":{"type":"boolean","description":"Whether to descend into folders."},
            "pattern":{"type":"string","description":"A glob the names must match."}},
            "required":["path"],"additionalProperties":false},
        "strict": i.is_multiple_of(4)}})
}

fn request(rounds: usize) -> ModelRequest {
    let mut req = ModelRequest {
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        system: vec![
            "You are a careful engineer. Use the tools; one call a round.".into(),
            "Skills available now:\n- nexus.tools.search: find a tool by name or purpose.".into(),
        ],
        entries: vec![Entry::user_text("Walk the workspace, one folder a round.")],
        tools: (0..TOOLS).map(tool).collect(),
        tools_deferred: vec![],
        options: RequestOptions {
            max_output_tokens: Some(8_192),
            reasoning_effort: None,
        },
    };
    for i in 1..=rounds {
        push_round(&mut req, i, &format!("toolu_{i}"));
    }
    req
}

/// Round `i`: the assistant's call `id` and its result.
fn push_round(req: &mut ModelRequest, i: usize, id: &str) {
    req.entries.push(Entry::Assistant {
        text: Some(format!("Listing folder {i}.")),
        tool_calls: vec![RawToolCall {
            id: id.to_string(),
            name: "tool_3".into(),
            arguments: format!(r#"{{"limit":50,"path":"src/folder_{i}"}}"#),
        }],
        native: None,
    });
    req.entries.push(Entry::ToolResult {
        call_id: id.to_string(),
        name: "tool_3".into(),
        output: format!("src/folder_{i}/a.rs\nsrc/folder_{i}/b.rs\nsrc/folder_{i}/mod.rs\n3 entries"),
        is_error: false,
    });
}

/// The first request of chain `tag` after `rounds` rounds.
fn start(rounds: usize, tag: u64) -> ModelRequest {
    let mut req = request(rounds);
    req.entries[0] = Entry::user_text(format!("Walk the workspace, one folder a round (chain {tag})."));
    req
}

/// `previous` plus round `n`, whose call id is made unique by `tag`.
fn next_round(previous: &ModelRequest, n: usize, tag: u64) -> ModelRequest {
    let mut next = previous.clone();
    push_round(&mut next, n, &format!("toolu_{n}_{tag}"));
    next
}

fn reply() -> Vec<u8> {
    json!({"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5",
        "content":[{"type":"text","text":"Listing the next folder."},
            {"type":"tool_use","id":"toolu_01","name":"tool_3","input":{"path":"src/next","limit":50}}],
        "stop_reason":"tool_use","stop_sequence":null,
        "usage":{"input_tokens":24_000,"cache_creation_input_tokens":120,"cache_read_input_tokens":23_800,"output_tokens":40}})
    .to_string()
    .into_bytes()
}

fn config() -> InstanceConfig {
    let mut c = InstanceConfig::of(Kind::Anthropic);
    c.stream = Some(true);
    c
}

/// Per-call percentiles of `round/<n>`, with the kernel's word and without it.
fn percentiles(reply: &[u8]) {
    for n in [10, 50, 100, 200] {
        for word in [true, false] {
            let warm = Anthropic::new(config());
            let mut chain = Chain::new(n, start, push_round, word);
            let label = format!("round/{n}{}", if word { "" } else { " (compared)" });
            common::percentiles(&label, &warm, &mut chain, 1_000, || {
                drop(Anthropic::decode_body(black_box(reply)).expect("decode"));
            });
        }
    }
}

fn benches(c: &mut Criterion) {
    let reply = reply();
    percentiles(&reply);
    for n in [10, 50, 200] {
        let warm = Anthropic::new(config());
        let chain = RefCell::new(Chain::new(n, start, push_round, true));
        c.bench_function(&format!("round/{n}"), |b| {
            b.iter_batched(
                || chain.borrow_mut().advance(&warm),
                |()| {
                    let enc = chain.borrow_mut().encode(&warm);
                    let reply = Anthropic::decode_body(black_box(&reply)).expect("decode");
                    (enc, reply)
                },
                BatchSize::PerIteration,
            )
        });
        let previous = request(n - 1);
        let mut tag = 0u64;
        let cold = Anthropic::new(config());
        c.bench_function(&format!("encode_cold/{n}"), |b| {
            b.iter_batched(
                || {
                    tag += 1;
                    next_round(&previous, n, tag)
                },
                |next| {
                    let enc = cold.encode(black_box(&next), &NoBlobs).expect("encode");
                    (next, enc)
                },
                BatchSize::PerIteration,
            )
        });
    }
}

criterion_group! {
    name = group;
    config = Criterion::default().sample_size(60);
    targets = benches
}
criterion_main!(group);
