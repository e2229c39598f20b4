//! `openai` per model round (providers.md §6): `encode` of a round's request plus the decode of
//! its reply, with 60 function tools and one `tool_search` call and its result per round.
//!
//! `cargo bench -p nexus-providers --bench openai`
//!
//! Rows:
//! - `round/<n>`: encode the request after `n` to `n + 10` rounds on a provider that has just
//!   encoded the request before it, as the kernel does from one round to the next (see
//!   [`Chain`]), then decode a canned completion (`openai::decode_completion`). Target:
//!   ≤100 µs median, flat from 10 to 200 rounds.
//! - `encode_cold/<n>`: the first encode on a fresh provider (after a restart).
//!
//! Before them, the per-call p50 / p90 / p99 of the `round/<n>` work is printed (the target
//! is a per-call p50; criterion's figures are means per sample).
//!
//! What a timed call allocates is returned, so dropping it is not timed.

mod common;

use std::cell::RefCell;
use std::time::{Duration, Instant};

use common::push_round;
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

/// Round after round of one chain on one provider, as the kernel encodes them: each request
/// extends the one encoded just before it by one round (added in place, untimed). Every
/// `SPAN` rounds the chain starts again from `n - 1` rounds under a new first message
/// (encoded untimed too), so the measured rounds stay within `n..n + SPAN`.
struct Chain {
    n: usize,
    tag: u64,
    current: Option<ModelRequest>,
}

const SPAN: usize = 10;

impl Chain {
    fn new(n: usize) -> Self {
        Self {
            n,
            tag: 0,
            current: None,
        }
    }

    /// Adds a round to the request `p` encoded last (or starts again).
    fn advance(&mut self, p: &OpenAi) {
        let done = self.current.as_ref().map_or(usize::MAX, ModelRequest::assistant_count);
        if done >= self.n - 1 + SPAN {
            self.tag += 1;
            let mut start = request(self.n - 1);
            start.entries[0] = Entry::user_text(format!("Search the tools, one query a round (chain {}).", self.tag));
            drop(p.encode(&start, &NoBlobs).expect("encode"));
            self.current = Some(start);
        }
        let next = self.current.as_mut().expect("a chain");
        let round = next.assistant_count() + 1;
        push_round(next, round, &format!("call_{round}_{}", self.tag));
    }
}

/// Per-call percentiles of `round/<n>` (criterion reports per-sample means, which a busy
/// machine's preemptions inflate): `CALLS` timed rounds of one chain, printed first.
fn percentiles(reply: &[u8]) {
    const CALLS: usize = 1_000;
    for n in [10, 50, 100, 200] {
        let warm = OpenAi::new(InstanceConfig::of(Kind::Openai));
        let mut chain = Chain::new(n);
        let mut times: Vec<Duration> = (0..CALLS)
            .map(|_| {
                chain.advance(&warm);
                let next = chain.current.as_ref().expect("a chain");
                let start = Instant::now();
                let enc = warm.encode(black_box(next), &NoBlobs).expect("encode");
                let reply = openai::decode_completion(black_box(reply)).expect("decode");
                let took = start.elapsed();
                drop((enc, reply));
                took
            })
            .collect();
        times.sort();
        let at = |q: f64| times[((CALLS as f64 * q) as usize).min(CALLS - 1)].as_secs_f64() * 1e6;
        println!(
            "round/{n}: per call p50 {:.1} µs, p90 {:.1} µs, p99 {:.1} µs ({CALLS} calls)",
            at(0.5),
            at(0.9),
            at(0.99)
        );
    }
}

fn benches(c: &mut Criterion) {
    let reply = reply();
    percentiles(&reply);
    for n in [10, 50, 100, 200] {
        let warm = OpenAi::new(InstanceConfig::of(Kind::Openai));
        let chain = RefCell::new(Chain::new(n));
        c.bench_function(&format!("round/{n}"), |b| {
            b.iter_batched(
                || chain.borrow_mut().advance(&warm),
                |()| {
                    let chain = chain.borrow();
                    let next = chain.current.as_ref().expect("a chain");
                    let enc = warm.encode(black_box(next), &NoBlobs).expect("encode");
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
