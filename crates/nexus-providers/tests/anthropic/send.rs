//! `send` against a one-shot local server (providers.md §5.2, §8).

use std::sync::Mutex;

use nexus_providers::{
    Anthropic, DeltaSink, Entry, ModelReply, NoBlobs, NoDeltas, Provider, ProviderError, StopReason,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::*;

/// Serves one connection with `response`; yields the request bytes it read.
async fn serve_once(response: Vec<u8>) -> (String, tokio::task::JoinHandle<Vec<u8>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let accepted = tokio::time::timeout(std::time::Duration::from_secs(20), listener.accept());
        let (mut socket, _) = accepted.await.expect("a request within 20 s").unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let n = socket.read(&mut buf).await.unwrap();
            request.extend_from_slice(&buf[..n]);
            if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().unwrap());
                if request.len() >= end + 4 + length {
                    break;
                }
            }
            if n == 0 {
                break;
            }
        }
        socket.write_all(&response).await.unwrap();
        socket.shutdown().await.ok();
        request
    });
    (base, task)
}

fn http(status: &str, headers: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\n{headers}connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn sse(events: &[Value]) -> Vec<u8> {
    let mut out = String::from("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n");
    for e in events {
        out.push_str(&format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()));
    }
    out.into_bytes()
}

fn provider_at(base: &str, stream: bool) -> Anthropic {
    let mut c = config();
    c.base_url = Some(base.into());
    c.stream = Some(stream);
    c.api_key_env = Some(key_env());
    c.request_timeout_ms = 10_000;
    Anthropic::new(c)
}

#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl DeltaSink for Recorder {
    fn text(&self, delta: &str) {
        self.0.lock().unwrap().push(delta.into());
    }
}

#[tokio::test]
async fn send_posts_the_sealed_bytes_with_the_key_and_decodes_the_body() {
    let reply = json!({"id":"msg","type":"message","role":"assistant","model":"claude-x",
        "content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"a"}}],
        "stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":4,"cache_read_input_tokens":16,"cache_creation_input_tokens":0}});
    let (base, server) = serve_once(http("200 OK", "content-type: application/json\r\n", &reply.to_string())).await;
    let p = provider_at(&base, false);
    let enc = p.encode(&request(vec![Entry::user_text("hi")]), &NoBlobs).unwrap();
    let got = p.send(&enc, &NoDeltas).await.unwrap();
    assert_eq!(got.text.as_deref(), Some("Reading."));
    assert_eq!(got.stop, StopReason::ToolUse);
    assert_eq!(got.tool_calls, vec![call("toolu_1", "read", r#"{"path":"a"}"#)]);
    assert_eq!(got.usage.cache_read_input_tokens, 16);

    let seen = server.await.unwrap();
    let split = seen.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&seen[..split]).to_ascii_lowercase();
    assert!(head.starts_with("post /v1/messages http/1.1"), "{head}");
    assert!(head.contains(&format!("x-api-key: {}", KEY.to_ascii_lowercase())));
    assert!(head.contains("anthropic-version: 2023-06-01"));
    assert_eq!(&seen[split + 4..], &enc.body[..], "the sealed bytes, exactly");
}

/// Serves `response` to one streaming `send` of a small request; its result and deltas.
async fn send_streamed(response: Vec<u8>) -> (Result<ModelReply, ProviderError>, Vec<String>) {
    let (base, server) = serve_once(response).await;
    let p = provider_at(&base, true);
    let enc = p.encode(&request(vec![Entry::user_text("hi")]), &NoBlobs).unwrap();
    assert!(body(&enc).ends_with(r#","stream":true}"#));
    let sink = Recorder::default();
    let got = p.send(&enc, &sink).await;
    let seen = server.await.unwrap();
    assert!(seen.ends_with(&enc.body), "the sealed bytes were sent");
    (got, sink.0.into_inner().unwrap())
}

#[tokio::test]
async fn send_assembles_a_stream_and_reports_deltas() {
    let events = [
        json!({"type":"message_start","message":{"usage":{"input_tokens":9,"output_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}),
        json!({"type":"ping"}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}),
        json!({"type":"message_stop"}),
    ];
    let (got, deltas) = send_streamed(sse(&events)).await;
    let got = got.unwrap();
    assert_eq!(deltas, ["Hel", "lo"]);
    assert_eq!(got.text.as_deref(), Some("Hello"));
    assert_eq!(got.stop, StopReason::EndTurn);
    assert_eq!((got.usage.input_tokens, got.usage.output_tokens), (9, 2));

    // The same stream cut before message_stop: overloaded, retried.
    let (got, deltas) = send_streamed(sse(&events[..6])).await;
    let err = got.unwrap_err();
    assert_eq!(err.key, "provider_overloaded");
    assert!(err.is_retryable());
    assert!(err.detail.unwrap().contains("message_stop"));
    assert_eq!(deltas, ["Hel", "lo"]);

    // An error event mid-stream.
    let mut broken = events[..3].to_vec();
    broken.push(json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}));
    let err = send_streamed(sse(&broken)).await.0.unwrap_err();
    assert_eq!(err.key, "provider_overloaded");
    assert!(err.detail.unwrap().contains("overloaded_error"));
}

#[tokio::test]
async fn send_classifies_failures() {
    let cases = [
        (
            http(
                "529 Overloaded",
                "retry-after: 3\r\n",
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            ),
            "provider_overloaded",
            Some(3000),
        ),
        (
            http(
                "400 Bad Request",
                "",
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 201000 tokens"}}"#,
            ),
            "provider_context_overflow",
            None,
        ),
        (http("404 Not Found", "", "{}"), "provider_model_unavailable", None),
        (
            http("200 OK", "content-type: application/json\r\n", "{\"content\":"),
            "provider_error",
            None,
        ),
    ];
    for (response, key, retry_after) in cases {
        let (base, server) = serve_once(response).await;
        let p = provider_at(&base, false);
        let enc = p.encode(&request(vec![Entry::user_text("hi")]), &NoBlobs).unwrap();
        let err = p.send(&enc, &NoDeltas).await.unwrap_err();
        assert_eq!(err.key, key);
        assert_eq!(err.retry_after_ms, retry_after);
        server.await.unwrap();
    }
}
