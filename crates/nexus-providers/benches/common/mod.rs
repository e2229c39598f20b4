//! What the per-round benchmarks share: the round they add to a history, and a chain of
//! rounds encoded one after the other as the kernel does. Each bench uses part of it.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use criterion::black_box;
use nexus_providers::{Continues, EncodedRequest, Entry, ModelRequest, NoBlobs, Provider, RawToolCall};

/// Round `i`: the assistant's `tool_search` call `id` and its result.
pub fn push_round(req: &mut ModelRequest, i: usize, id: &str) {
    req.entries.push(Entry::Assistant {
        text: Some(format!("Round {i}.")),
        tool_calls: vec![RawToolCall {
            id: id.to_string(),
            name: "tool_search".into(),
            arguments: format!(r#"{{"query":"round {i}"}}"#),
        }],
        native: None,
    });
    req.entries.push(Entry::ToolResult {
        call_id: id.to_string(),
        name: "tool_search".into(),
        output: format!(
            r#"{{"matches":[{{"name":"nexus.tools.search","description":"Search the tools offered to this round by name and description.","score":0.{i}}}],"query":"round {i}","total":1}}"#
        ),
        is_error: false,
    });
}

/// How many rounds a chain runs before it starts again.
pub const SPAN: usize = 10;

/// Round after round of one chain on one provider, as the kernel encodes them: each request
/// extends the one encoded just before it by one round (added in place, untimed) and is
/// encoded with the word that it continues that encode ([`Continues`]), as the kernel gives
/// it. Every [`SPAN`] rounds the chain starts again from `n - 1` rounds under a new first
/// message (encoded untimed too), so the measured rounds stay within `n..n + SPAN`.
pub struct Chain {
    n: usize,
    tag: u64,
    /// The request after `rounds` rounds, whose first message names the chain.
    start: fn(usize, u64) -> ModelRequest,
    /// Adds round `i` with the call id given.
    round: fn(&mut ModelRequest, usize, &str),
    current: Option<ModelRequest>,
    /// The word for the next encode: the last one's mark and entry count.
    prior: Option<Continues>,
    /// Whether the word is given (off: the encode compares, as before it existed).
    word: bool,
}

impl Chain {
    /// A chain measured at `n` rounds.
    pub fn new(
        n: usize,
        start: fn(usize, u64) -> ModelRequest,
        round: fn(&mut ModelRequest, usize, &str),
        word: bool,
    ) -> Self {
        Self {
            n,
            tag: 0,
            start,
            round,
            current: None,
            prior: None,
            word,
        }
    }

    /// Adds a round to the request `p` encoded last (or starts again).
    pub fn advance(&mut self, p: &dyn Provider) {
        let done = self.current.as_ref().map_or(usize::MAX, ModelRequest::assistant_count);
        if done >= self.n - 1 + SPAN {
            self.tag += 1;
            let start = (self.start)(self.n - 1, self.tag);
            let enc = p.encode(&start, &NoBlobs).expect("encode");
            self.prior = self.word_for(&start, &enc);
            self.current = Some(start);
        }
        let next = self.current.as_mut().expect("a chain");
        let round = next.assistant_count() + 1;
        (self.round)(next, round, &format!("call_{round}_{}", self.tag));
    }

    /// The timed part: the encode of the current request, continuing the one before.
    pub fn encode(&mut self, p: &dyn Provider) -> EncodedRequest {
        let next = self.current.as_ref().expect("a chain");
        let enc = p
            .encode_continuing(black_box(next), &NoBlobs, self.prior)
            .expect("encode");
        self.prior = self.word_for(next, &enc);
        enc
    }

    fn word_for(&self, req: &ModelRequest, enc: &EncodedRequest) -> Option<Continues> {
        enc.chain.filter(|_| self.word).map(|mark| Continues {
            mark,
            entries: req.entries.len(),
        })
    }
}

/// Per-call p50 / p90 / p99 of `calls` rounds of `chain` on `p`, each an encode plus `decode`
/// (criterion reports per-sample means, which a busy machine's preemptions inflate).
pub fn percentiles(label: &str, p: &dyn Provider, chain: &mut Chain, calls: usize, decode: impl Fn()) {
    let mut times: Vec<Duration> = (0..calls)
        .map(|_| {
            chain.advance(p);
            let start = Instant::now();
            let enc = chain.encode(p);
            decode();
            let took = start.elapsed();
            drop(enc);
            took
        })
        .collect();
    times.sort();
    let at = |q: f64| times[((calls as f64 * q) as usize).min(calls - 1)].as_secs_f64() * 1e6;
    println!(
        "{label}: per call p50 {:.1} µs, p90 {:.1} µs, p99 {:.1} µs ({calls} calls)",
        at(0.5),
        at(0.9),
        at(0.99)
    );
}
