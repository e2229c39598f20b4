//! The published schema as oracle: every kind of canned OpenAI reply and every chunk of its
//! stream validates against `CreateChatCompletionResponse` / `CreateChatCompletionStreamResponse`
//! of `contracts/reference/openai-chat-completions.schema.json`.

use nexus_fake_upstream::openai::{Completion, Usage};
use nexus_fake_upstream::schema::{RESPONSE, STREAM_CHUNK, errors};
use serde_json::{Value, json};

#[track_caller]
fn assert_valid(name: &str, instance: &Value, what: &str) {
    let errors = errors(name, instance);
    assert!(
        errors.is_empty(),
        "{what} fails the schema:\n  {}\n{instance:#}",
        errors.join("\n  ")
    );
}

/// Every kind of reply the helpers build.
fn kinds() -> Vec<(&'static str, Completion)> {
    vec![
        ("empty", Completion::new("gpt-4.1")),
        ("text", Completion::new("gpt-4.1").content("Hello, world").usage(12, 3)),
        (
            "one call",
            Completion::new("gpt-4.1").tool_call("call_1", "read", r#"{"path":"README.md"}"#),
        ),
        (
            "text and two calls, cached",
            Completion::new("gpt-4.1")
                .content("Reading both.")
                .tool_call("call_1", "read", r#"{"path":"a"}"#)
                .tool_call("call_2", "read", r#"{"path":"b"}"#)
                .usage(1200, 40)
                .cached_tokens(1024),
        ),
        (
            "malformed arguments",
            Completion::new("m").tool_call("call_1", "read", r#"{"path": "#),
        ),
        ("empty arguments", Completion::new("m").tool_call("call_1", "now", "")),
        ("length", Completion::new("m").content("Cut sh").finish_reason("length")),
        (
            "refusal",
            Completion::new("m")
                .refusal("I can't help with that.")
                .finish_reason("content_filter"),
        ),
        ("no usage", Completion::new("m").content("Hi").no_usage()),
        (
            "all counts",
            Completion::new("o3").content("Thought.").with_usage(Usage {
                prompt_tokens: 50,
                completion_tokens: 400,
                cached_tokens: 32,
                reasoning_tokens: 350,
            }),
        ),
        (
            "one piece",
            Completion::new("m")
                .content("Hello")
                .tool_call("c", "f", "{}")
                .pieces(1),
        ),
    ]
}

#[test]
fn every_canned_completion_validates() {
    let validator = RESPONSE;
    for (what, completion) in kinds() {
        assert_valid(validator, &completion.to_json(), what);
        let reply = completion.reply();
        let body: Value = serde_json::from_slice(reply.body_bytes().unwrap()).unwrap();
        assert_eq!(body, completion.to_json(), "{what}: the reply sends to_json");
    }
}

#[test]
fn every_canned_stream_chunk_validates() {
    let validator = STREAM_CHUNK;
    for (what, completion) in kinds() {
        let chunks = completion.chunks();
        for (i, chunk) in chunks.iter().enumerate() {
            assert_valid(validator, chunk, &format!("{what}: chunk {i}"));
        }
        // The frames carry exactly these chunks, then [DONE].
        let frames = completion.events();
        let (done, data) = frames.split_last().unwrap();
        assert_eq!(done.data_text(), "[DONE]");
        let sent: Vec<Value> = data.iter().map(|f| f.data_json().unwrap()).collect();
        assert_eq!(sent, chunks, "{what}");
    }
}

#[test]
fn the_oracle_is_not_vacuous() {
    let response = RESPONSE;
    let stream = STREAM_CHUNK;
    let good = Completion::new("m").content("Hi").tool_call("c", "f", "{}");

    let mut body = good.to_json();
    body["choices"][0].as_object_mut().unwrap().remove("logprobs");
    assert!(!errors(response, &body).is_empty(), "logprobs is required");
    let mut body = good.to_json();
    body["choices"][0]["finish_reason"] = json!("done");
    assert!(!errors(response, &body).is_empty(), "finish_reason is an enum");
    let mut body = good.to_json();
    body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = json!({});
    assert!(!errors(response, &body).is_empty(), "arguments is a string");

    let mut chunk = good.chunks()[0].clone();
    chunk["object"] = json!("chat.completion");
    assert!(!errors(stream, &chunk).is_empty(), "a chunk is chat.completion.chunk");
    assert!(
        !errors(stream, &good.to_json()).is_empty(),
        "a whole completion is not a chunk"
    );
}
