//! `anthropic` per model round (providers.md §5): `encode` of a round's request with 60 tools,
//! plus the decode of a typical tool-use reply, after 10, 50 and 200 rounds.
//!
//! `cargo bench -p nexus-providers --bench anthropic`
//!
//! Rows:
//! - `round/<n>`: encode of round `n`'s request on an adapter that has just encoded round
//!   `n - 1`'s (untimed), as the kernel does from one round to the next (each measured request
//!   ends with a round of its own, so none repeats an earlier one), then the decode of a reply;
//! - `encode_cold/<n>`: the encode of round `n`'s request on an adapter that has not seen the
//!   chain (after a restart; its tools bytes are cached).
//!
//! The target: `round/<n>` at most 100 µs (median) and flat from 10 to 200 rounds. What a timed
//! call allocates is returned, so dropping it is not timed.

use criterion::{BatchSize, Criterion, black_box, criterion_group, criterion_main};
use nexus_providers::config::Kind;
use nexus_providers::{Anthropic, Entry, InstanceConfig, ModelRequest, NoBlobs, Provider, RawToolCall, RequestOptions};
use serde_json::{Value, json};

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

/// `previous` plus round `n`, whose call id is made unique by `tag`.
fn next_round(previous: &ModelRequest, n: usize, tag: u64) -> ModelRequest {
    let mut next = previous.clone();
    // The kernel projects the tools anew every round: equal values, new allocations.
    next.tools = (0..TOOLS).map(tool).collect();
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

fn benches(c: &mut Criterion) {
    let reply = reply();
    for n in [10, 50, 200] {
        let previous = request(n - 1);
        let warm = Anthropic::new(config());
        warm.encode(&previous, &NoBlobs).expect("encode");

        let mut tag = 0u64;
        c.bench_function(&format!("round/{n}"), |b| {
            b.iter_batched(
                || {
                    tag += 1;
                    drop(warm.encode(&previous, &NoBlobs).expect("encode"));
                    next_round(&previous, n, tag)
                },
                |next| {
                    let enc = warm.encode(black_box(&next), &NoBlobs).expect("encode");
                    let reply = Anthropic::decode_body(black_box(&reply)).expect("decode");
                    (next, enc, reply)
                },
                BatchSize::PerIteration,
            )
        });
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
