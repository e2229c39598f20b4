//! The providers' reply decoders (providers.md §5, §6, §8). Input: the first byte picks the
//! decoder and how a stream is cut into reads; the rest is the reply body.
//!
//! - OpenAI Chat Completions: one JSON completion, or a server-sent event stream.
//! - Anthropic Messages: one JSON body, or a server-sent event stream.
//!
//! Properties: no panic; a decoded reply's calls all have an id and a name; a stream gives the
//! same reply (or error) however its bytes are split into reads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nexus_providers::{Anthropic, ModelReply, openai, provider::ProviderError};

fn chunks(body: &[u8], seed: u8) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = body;
    let mut step = seed as usize;
    while !rest.is_empty() {
        let take = (step % 11 + 1).min(rest.len());
        out.push(&rest[..take]);
        rest = &rest[take..];
        step = step.wrapping_mul(17).wrapping_add(seed as usize + 3);
    }
    out
}

fn check(reply: &Result<ModelReply, ProviderError>) {
    if let Ok(reply) = reply {
        for call in &reply.tool_calls {
            assert!(!call.id.is_empty() && !call.name.is_empty(), "{call:?}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    match selector % 4 {
        0 => check(&openai::decode_completion(body)),
        1 => check(&Anthropic::decode_body(body)),
        2 => {
            let whole = openai::decode_event_stream(&[body]);
            check(&whole);
            assert_eq!(openai::decode_event_stream(&chunks(body, selector)), whole, "reads changed the reply");
        }
        _ => {
            let whole = Anthropic::decode_event_stream(&[body]);
            check(&whole);
            assert_eq!(Anthropic::decode_event_stream(&chunks(body, selector)), whole, "reads changed the reply");
        }
    }
});
