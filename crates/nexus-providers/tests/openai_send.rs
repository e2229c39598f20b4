//! The `openai` adapter's `send` (providers.md §6, §8) against a one-shot local server: the
//! key on the wire, decoding, stream assembly and error classification. Every canned reply
//! and stream chunk decoded here is first validated against the published schema
//! (`CreateChatCompletionResponse`, `CreateChatCompletionStreamResponse`); `{"error": …}`
//! bodies and chunks are not completions, and are the only ones left unchecked.

mod support;

use std::sync::Mutex;

use nexus_providers::{
    DeltaSink, EncodedRequest, Entry, InstanceConfig, Kind, ModelReply, ModelRequest, NoBlobs, OpenAi, Provider,
    ProviderError, RawToolCall, RequestOptions, StopReason, Usage, openai,
};
use serde_json::{Value, json};
use support::one_shot::{self, Received};
use support::openai_schema::{self, REQUEST, RESPONSE, STREAM_CHUNK};

#[derive(Default)]
struct Record(Mutex<Vec<String>>);

impl DeltaSink for Record {
    fn text(&self, delta: &str) {
        self.0.lock().unwrap().push(delta.to_string());
    }
}

fn request() -> ModelRequest {
    ModelRequest {
        provider: "oai".into(),
        model: "gpt-5.4".into(),
        system: vec!["Be terse.".into()],
        entries: vec![Entry::user_text("hello")],
        tools: vec![
            json!({"type":"function","function":{"name":"read","description":"Read.","parameters":{"type":"object","properties":{}},"strict":false}}),
        ],
        tools_deferred: vec![],
        options: RequestOptions {
            max_output_tokens: Some(64),
            reasoning_effort: None,
        },
    }
}

struct Outcome {
    reply: Result<ModelReply, ProviderError>,
    received: Received,
    sent: EncodedRequest,
    deltas: Vec<String>,
}

/// Encodes [`request`] on an instance pointed at a one-shot server answering `response`, and
/// sends it.
async fn exchange(response: Vec<u8>, edit: impl FnOnce(&mut InstanceConfig)) -> Outcome {
    let (base, server) = one_shot::serve(response).await;
    let mut config = InstanceConfig::of(Kind::Openai);
    config.base_url = Some(base);
    config.request_timeout_ms = 10_000;
    edit(&mut config);
    let p = OpenAi::new(config);
    let sent = p.encode(&request(), &NoBlobs).expect("encode");
    openai_schema::assert_valid_bytes(REQUEST, &sent.body);
    let record = Record::default();
    let reply = p.send(&sent, &record).await;
    let received = server.await.expect("server");
    Outcome {
        reply,
        received,
        sent,
        deltas: record.0.into_inner().unwrap(),
    }
}

fn not_streaming(c: &mut InstanceConfig) {
    c.stream = Some(false);
}

/// A schema-valid completion.
fn completion(message: Value, finish_reason: &str, usage: Value) -> Value {
    let completion = json!({"id":"chatcmpl-1","object":"chat.completion","created":1_700_000_000,"model":"gpt-5.4",
        "choices":[{"index":0,"message":message,"finish_reason":finish_reason,"logprobs":null}],
        "usage":usage,"system_fingerprint":"fp_1"});
    openai_schema::assert_valid(RESPONSE, &completion);
    completion
}

fn usage() -> Value {
    json!({"prompt_tokens":120,"completion_tokens":18,"total_tokens":138,
        "prompt_tokens_details":{"cached_tokens":96,"audio_tokens":0},
        "completion_tokens_details":{"reasoning_tokens":0}})
}

const USAGE: Usage = Usage {
    input_tokens: 120,
    output_tokens: 18,
    cache_read_input_tokens: 96,
    cache_creation_input_tokens: 0,
};

fn text_message(text: &str) -> Value {
    json!({"role":"assistant","content":text,"refusal":null,"annotations":[]})
}

fn calls_message() -> Value {
    json!({"role":"assistant","content":null,"refusal":null,"tool_calls":[
        {"id":"call_a","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.txt\"}"}},
        {"id":"call_b","type":"function","function":{"name":"grep","arguments":"{\"q\":\"x\"}"}}]})
}

fn json_reply(body: &Value) -> Vec<u8> {
    one_shot::json(200, &body.to_string())
}

/// A schema-valid stream chunk (`usage: null`, as the API sends before the last chunk).
fn chunk(delta: Value, finish_reason: Option<&str>) -> String {
    let chunk = json!({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1_700_000_000,"model":"gpt-5.4",
        "system_fingerprint":"fp_1","choices":[{"index":0,"delta":delta,"logprobs":null,"finish_reason":finish_reason}],
        "usage":null});
    openai_schema::assert_valid(STREAM_CHUNK, &chunk);
    chunk.to_string()
}

/// The last chunk `stream_options.include_usage` asks for: no choices, the usage.
fn usage_chunk() -> String {
    let chunk = json!({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1_700_000_000,"model":"gpt-5.4",
        "choices":[],"usage":usage()});
    openai_schema::assert_valid(STREAM_CHUNK, &chunk);
    chunk.to_string()
}

fn call(id: &str, name: &str, arguments: &str) -> RawToolCall {
    RawToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

#[tokio::test]
async fn the_key_is_added_on_the_wire_only() {
    const VAR: &str = "NEXUS_OPENAI_SEND_TEST_KEY";
    const SECRET: &str = "sk-send-test-5ecret-value";
    // SAFETY: only this test sets or reads this variable, and no test here changes any other.
    unsafe { std::env::set_var(VAR, SECRET) };
    let body = completion(text_message("Hi."), "stop", usage());
    let out = exchange(json_reply(&body), |c| {
        c.api_key_env = Some(VAR.into());
        c.extra_headers.insert("x-team".into(), "blue".into());
        not_streaming(c);
    })
    .await;
    assert_eq!(out.received.request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(
        out.received.header("authorization"),
        Some(format!("Bearer {SECRET}").as_str())
    );
    assert_eq!(out.received.header("content-type"), Some("application/json"));
    assert_eq!(out.received.header("x-team"), Some("blue"));
    assert_eq!(out.received.body, out.sent.body, "the sealed bytes, unchanged");
    assert!(!format!("{:?}", out.sent).contains(SECRET));
    assert_eq!(out.reply.unwrap().text.as_deref(), Some("Hi."));
}

#[tokio::test]
async fn no_key_configured_sends_no_authorization() {
    let out = exchange(
        json_reply(&completion(text_message("ok"), "stop", usage())),
        not_streaming,
    )
    .await;
    assert_eq!(out.received.header("authorization"), None);
    assert!(out.reply.is_ok());
}

#[tokio::test]
async fn stop_reasons_text_calls_and_usage() {
    let cases = [
        (text_message("Done."), "stop", StopReason::EndTurn),
        (calls_message(), "tool_calls", StopReason::ToolUse),
        (text_message("Trunc"), "length", StopReason::OutputBudgetExhausted),
        (text_message(""), "content_filter", StopReason::Refused),
        (
            text_message("old"),
            "function_call",
            StopReason::Other("function_call".into()),
        ),
    ];
    for (message, finish, stop) in cases {
        let body = completion(message.clone(), finish, usage());
        let out = exchange(json_reply(&body), not_streaming).await;
        assert!(String::from_utf8_lossy(&out.received.body).ends_with(r#""stream":false}"#));
        let reply = out.reply.unwrap();
        assert_eq!(reply.stop, stop, "{finish}");
        assert_eq!(reply.usage, USAGE);
        assert_eq!(reply.native, None);
        assert_eq!(reply, openai::decode_completion(body.to_string().as_bytes()).unwrap());
        match finish {
            "tool_calls" => {
                assert_eq!(reply.text, None);
                assert_eq!(
                    reply.tool_calls,
                    vec![
                        call("call_a", "read", r#"{"path":"a.txt"}"#),
                        call("call_b", "grep", r#"{"q":"x"}"#)
                    ]
                );
            }
            "content_filter" => assert_eq!(reply.text, None),
            _ => assert_eq!(reply.text.as_deref(), message["content"].as_str()),
        }
    }
}

#[tokio::test]
async fn a_refusal_is_refused_with_its_text() {
    let message = json!({"role":"assistant","content":null,"refusal":"I can't help with that."});
    let body = completion(
        message,
        "stop",
        json!({"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}),
    );
    let reply = exchange(json_reply(&body), not_streaming).await.reply.unwrap();
    assert_eq!(reply.stop, StopReason::Refused);
    assert_eq!(reply.text.as_deref(), Some("I can't help with that."));
    assert_eq!(
        (
            reply.usage.input_tokens,
            reply.usage.output_tokens,
            reply.usage.cache_read_input_tokens
        ),
        (5, 7, 0)
    );
}

#[tokio::test]
async fn malformed_and_error_bodies_in_a_2xx() {
    let cases = [
        (r#"{"id":"x","object":"chat.completion"}"#, "provider_error"),
        ("<html>oops</html>", "provider_error"),
        (r#"{"choices":[{"message":{"content":7}}]}"#, "provider_error"),
        (
            r#"{"error":{"message":"The server had an error","type":"server_error","code":null}}"#,
            "provider_overloaded",
        ),
        (
            r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
            "provider_overloaded",
        ),
        (
            r#"{"error":{"message":"maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
            "provider_context_overflow",
        ),
        (
            r#"{"error":{"message":"The model `x` does not exist","code":"model_not_found"}}"#,
            "provider_model_unavailable",
        ),
        (
            r#"{"error":{"message":"Invalid 'messages'","type":"invalid_request_error"}}"#,
            "provider_error",
        ),
    ];
    for (body, key) in cases {
        let err = exchange(one_shot::json(200, body), not_streaming)
            .await
            .reply
            .unwrap_err();
        assert_eq!(err.key, key, "{body}");
        assert!(!err.is_retryable() || key == "provider_overloaded");
    }
}

#[tokio::test]
async fn non_2xx_replies_are_classified() {
    let mut limited = one_shot::json(429, r#"{"error":{"message":"slow down","type":"requests"}}"#);
    let at = limited.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    limited.splice(at..at, b"\r\nretry-after: 2".iter().copied());
    let err = exchange(limited, |_| {}).await.reply.unwrap_err();
    assert_eq!(
        (err.key, err.http_status, err.retry_after_ms),
        ("provider_overloaded", Some(429), Some(2000))
    );
    let body = r#"{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
    let err = exchange(one_shot::json(400, body), |_| {}).await.reply.unwrap_err();
    assert_eq!(err.key, "provider_context_overflow");
    let err = exchange(one_shot::json(401, r#"{"error":{}}"#), |_| {})
        .await
        .reply
        .unwrap_err();
    assert_eq!((err.key, err.http_status), ("provider_http_error", Some(401)));
}

#[tokio::test]
async fn streamed_text_reaches_the_sink_in_order() {
    let events = [
        chunk(json!({"role":"assistant","content":"","refusal":null}), None),
        chunk(json!({"content":"Hel"}), None),
        chunk(json!({"content":"lo, "}), None),
        chunk(json!({"content":"world."}), None),
        chunk(json!({}), Some("stop")),
        usage_chunk(),
    ];
    let mut data: Vec<&str> = events.iter().map(String::as_str).collect();
    data.push("[DONE]");
    let out = exchange(one_shot::sse(&data), |_| {}).await;
    assert!(
        String::from_utf8_lossy(&out.received.body)
            .ends_with(r#""stream":true,"stream_options":{"include_usage":true}}"#)
    );
    assert_eq!(out.deltas, ["Hel", "lo, ", "world."]);
    let reply = out.reply.unwrap();
    let equivalent = completion(text_message("Hello, world."), "stop", usage());
    assert_eq!(
        reply,
        openai::decode_completion(equivalent.to_string().as_bytes()).unwrap()
    );
    assert_eq!(reply.usage, USAGE);
}

#[tokio::test]
async fn streamed_parallel_tool_calls_are_assembled_by_index() {
    let piece = |index: u64, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut call = json!({"index":index,"function":{"arguments":args}});
        if let Some(id) = id {
            call["id"] = json!(id);
            call["type"] = json!("function");
        }
        if let Some(name) = name {
            call["function"]["name"] = json!(name);
        }
        chunk(json!({"tool_calls":[call]}), None)
    };
    let events = [
        chunk(json!({"role":"assistant","content":null}), None),
        piece(0, Some("call_a"), Some("read"), ""),
        piece(0, None, None, "{\"pa"),
        piece(1, Some("call_b"), Some("grep"), "{\"q\""),
        piece(0, None, None, "th\":\"a.txt\"}"),
        piece(1, None, None, ":\"x\"}"),
        chunk(json!({}), Some("tool_calls")),
        usage_chunk(),
    ];
    let mut data: Vec<&str> = events.iter().map(String::as_str).collect();
    data.push("[DONE]");
    let out = exchange(one_shot::sse(&data), |_| {}).await;
    assert!(out.deltas.is_empty());
    let reply = out.reply.unwrap();
    assert_eq!(
        reply.tool_calls,
        vec![
            call("call_a", "read", r#"{"path":"a.txt"}"#),
            call("call_b", "grep", r#"{"q":"x"}"#)
        ]
    );
    assert_eq!(reply.stop, StopReason::ToolUse);
    let equivalent = completion(calls_message(), "tool_calls", usage());
    assert_eq!(
        reply,
        openai::decode_completion(equivalent.to_string().as_bytes()).unwrap()
    );
}

#[tokio::test]
async fn a_stream_without_done_or_finish_reason_is_overloaded() {
    let events = [
        chunk(json!({"role":"assistant","content":"Hal"}), None),
        chunk(json!({"content":"f"}), None),
    ];
    let data: Vec<&str> = events.iter().map(String::as_str).collect();
    let out = exchange(one_shot::sse(&data), |_| {}).await;
    assert_eq!(out.deltas, ["Hal", "f"], "what arrived was shown");
    let err = out.reply.unwrap_err();
    assert_eq!(err.key, "provider_overloaded");
    assert!(err.is_retryable());
}

#[tokio::test]
async fn an_error_chunk_is_classified() {
    let first = chunk(json!({"role":"assistant","content":"Wor"}), None);
    let error = r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}"#;
    let out = exchange(one_shot::sse(&[&first, error, "[DONE]"]), |_| {}).await;
    assert_eq!(out.reply.unwrap_err().key, "provider_overloaded");
    let overflow =
        r#"{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
    let out = exchange(one_shot::sse(&[overflow]), |_| {}).await;
    assert_eq!(out.reply.unwrap_err().key, "provider_context_overflow");
}

#[tokio::test]
async fn the_reply_kind_follows_its_content_type() {
    // A server that ignores `stream: true` and answers with one JSON completion.
    let body = completion(text_message("plain"), "stop", usage());
    let out = exchange(json_reply(&body), |_| {}).await;
    assert!(String::from_utf8_lossy(&out.sent.body).contains(r#""stream":true"#));
    assert_eq!(out.reply.unwrap().text.as_deref(), Some("plain"));
    assert!(out.deltas.is_empty());
}

#[tokio::test]
async fn max_attempts_is_the_configured_budget() {
    let mut config = InstanceConfig::of(Kind::Openai);
    config.max_attempts = 7;
    assert_eq!(OpenAi::new(config).max_attempts(), Some(7));
    assert_eq!(OpenAi::new(InstanceConfig::of(Kind::Openai)).max_attempts(), Some(4));
}
