use std::sync::Mutex;

use serde_json::json;

use super::*;
use crate::neutral::{RawToolCall, StopReason};
use crate::provider::{NoDeltas, keys};

/// Records every delta.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl DeltaSink for Recorder {
    fn text(&self, delta: &str) {
        self.0.lock().unwrap().push(delta.to_string());
    }
}

fn ev(data: Value) -> (String, String) {
    let name = data["type"].as_str().unwrap().to_string();
    (name, data.to_string())
}

/// A streamed reply with thinking, text in two deltas, a server tool search, and a tool call
/// whose input arrives in three pieces.
fn events() -> Vec<(String, String)> {
    vec![
        ev(
            json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,
            "usage":{"input_tokens":11,"cache_creation_input_tokens":3,"cache_read_input_tokens":7,"output_tokens":1}}}),
        ),
        ev(json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}})),
        ev(json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}})),
        ev(json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"think."}})),
        ev(json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig=="}})),
        ev(json!({"type":"content_block_stop","index":0})),
        ("ping".into(), r#"{"type": "ping"}"#.into()),
        ev(json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}})),
        ev(json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello"}})),
        ev(json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":", world"}})),
        ev(json!({"type":"content_block_stop","index":1})),
        ev(
            json!({"type":"content_block_start","index":2,"content_block":{"type":"server_tool_use","id":"srv_1","name":"tool_search_tool_regex","input":{}}}),
        ),
        ev(
            json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"pattern\":\"rea"}}),
        ),
        ev(json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"d\"}"}})),
        ev(json!({"type":"content_block_stop","index":2})),
        ev(
            json!({"type":"content_block_start","index":3,"content_block":{"type":"tool_search_tool_result","tool_use_id":"srv_1",
            "content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"read"}]}}}),
        ),
        ev(json!({"type":"content_block_stop","index":3})),
        ev(
            json!({"type":"content_block_start","index":4,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}}),
        ),
        ev(json!({"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":""}})),
        ev(
            json!({"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a"}}),
        ),
        ev(
            json!({"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":".md\", \"lines\": 3}"}}),
        ),
        ev(json!({"type":"content_block_stop","index":4})),
        ev(
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}),
        ),
        ev(json!({"type":"message_stop"})),
    ]
}

/// The non-streaming body of the same message.
fn same_message_whole() -> Vec<u8> {
    json!({"id":"msg_1","type":"message","role":"assistant","model":"m","content":[
        {"type":"thinking","thinking":"Let me think.","signature":"sig=="},
        {"type":"text","text":"Hello, world"},
        {"type":"server_tool_use","id":"srv_1","name":"tool_search_tool_regex","input":{"pattern":"read"}},
        {"type":"tool_search_tool_result","tool_use_id":"srv_1",
            "content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"read"}]}},
        {"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"a.md","lines":3}}
    ],"stop_reason":"tool_use","stop_sequence":null,
    "usage":{"input_tokens":11,"cache_creation_input_tokens":3,"cache_read_input_tokens":7,"output_tokens":42}})
    .to_string()
    .into_bytes()
}

async fn run(events: Vec<(String, String)>, sink: &dyn DeltaSink) -> Result<ModelReply, ProviderError> {
    read(futures_util::stream::iter(events.into_iter().map(Ok)), sink).await
}

#[tokio::test]
async fn assembles_what_the_whole_body_gives() {
    let sink = Recorder::default();
    let reply = run(events(), &sink).await.unwrap();
    assert_eq!(*sink.0.lock().unwrap(), ["Hello", ", world"]);
    assert_eq!(reply, decode::body(&same_message_whole()).unwrap());
    assert_eq!(reply.text.as_deref(), Some("Hello, world"));
    assert_eq!(reply.stop, StopReason::ToolUse);
    assert_eq!(
        reply.tool_calls,
        vec![RawToolCall {
            id: "toolu_1".into(),
            name: "read".into(),
            arguments: r#"{"lines":3,"path":"a.md"}"#.into()
        }]
    );
    assert_eq!(reply.usage.output_tokens, 42);
    assert_eq!(reply.usage.cache_read_input_tokens, 7);
    let native = reply.native.unwrap();
    assert_eq!(
        native[0],
        json!({"type":"thinking","thinking":"Let me think.","signature":"sig=="})
    );
    assert_eq!(native[1]["input"], json!({"pattern":"read"}));
    assert_eq!(native.as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn an_error_event_is_overloaded() {
    let mut events = events()[..9].to_vec();
    events.push((
        "error".into(),
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#.into(),
    ));
    let sink = Recorder::default();
    let err = run(events, &sink).await.unwrap_err();
    assert_eq!(err.key, keys::PROVIDER_OVERLOADED);
    assert!(err.is_retryable());
    assert_eq!(*sink.0.lock().unwrap(), ["Hello"]);
    let bad = vec![(
        "error".into(),
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"no"}}"#.into(),
    )];
    assert_eq!(run(bad, &NoDeltas).await.unwrap_err().key, keys::PROVIDER_HTTP_ERROR);
}

#[tokio::test]
async fn a_truncated_stream_is_overloaded() {
    let events = events();
    let err = run(events[..events.len() - 1].to_vec(), &NoDeltas).await.unwrap_err();
    assert_eq!(err.key, keys::PROVIDER_OVERLOADED);
    assert!(err.detail.unwrap().contains("message_stop"));
    assert_eq!(run(vec![], &NoDeltas).await.unwrap_err().key, keys::PROVIDER_OVERLOADED);
    // A broken stream's own error passes through.
    let broken = futures_util::stream::iter(vec![
        Ok(events[0].clone()),
        Err(ProviderError::overloaded(Some("reply stream broke".into()), None)),
    ]);
    let err = read(broken, &NoDeltas).await.unwrap_err();
    assert_eq!(err.detail.as_deref(), Some("reply stream broke"));
}

#[tokio::test]
async fn malformed_tool_input_is_kept_raw_and_bad_events_are_errors() {
    let events = vec![
        ev(json!({"type":"message_start","message":{"usage":{"input_tokens":1,"output_tokens":1}}})),
        ev(
            json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"n","input":{}}}),
        ),
        ev(
            json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}),
        ),
        ev(json!({"type":"content_block_stop","index":0})),
        ev(json!({"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":9}})),
        ev(json!({"type":"message_stop"})),
    ];
    let reply = run(events.clone(), &NoDeltas).await.unwrap();
    assert_eq!(reply.tool_calls[0].arguments, r#"{"a":"#);
    assert_eq!(reply.stop, StopReason::OutputBudgetExhausted);
    assert_eq!(reply.usage.input_tokens, 1);
    assert_eq!(reply.usage.output_tokens, 9);

    let mut bad = events.clone();
    bad[2] = ("content_block_delta".into(), "{not json".into());
    assert_eq!(run(bad, &NoDeltas).await.unwrap_err().key, keys::PROVIDER_ERROR);
    let mut orphan = events.clone();
    orphan[2] = ev(json!({"type":"content_block_delta","index":5,"delta":{"type":"text_delta","text":"x"}}));
    assert_eq!(run(orphan, &NoDeltas).await.unwrap_err().key, keys::PROVIDER_ERROR);
    let mut no_stop = events.clone();
    no_stop.remove(4);
    assert_eq!(run(no_stop, &NoDeltas).await.unwrap_err().key, keys::PROVIDER_ERROR);
    // Found by the `provider_replies` fuzz target: a call whose input pieces do not form JSON
    // was kept raw even when its block had no name (or no id), a call nothing can pair with;
    // with JSON input the same block was already refused.
    for (id, name) in [
        (json!("t"), None),
        (json!("t"), Some(json!(""))),
        (json!(""), Some(json!("n"))),
    ] {
        let mut block = json!({"type":"tool_use","id":id,"input":{}});
        if let Some(name) = name {
            block["name"] = name;
        }
        let mut nameless = events.clone();
        nameless[1] = ev(json!({"type":"content_block_start","index":0,"content_block":block}));
        let err = run(nameless, &NoDeltas).await.unwrap_err();
        assert_eq!(err.key, keys::PROVIDER_ERROR, "{block}");
        assert!(err.detail.unwrap().contains("a tool_use block without"));
    }
}

/// The events as a `text/event-stream` body.
fn sse_body(events: &[(String, String)]) -> Vec<u8> {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect::<String>()
        .into_bytes()
}

#[tokio::test]
async fn a_body_in_memory_decodes_as_the_stream_does_however_it_is_read() {
    let mut events = events();
    // A multi-byte character, so some splits fall inside it.
    events.insert(
        10,
        ev(json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" — ✓ 日本"}})),
    );
    let streamed = run(events.clone(), &NoDeltas).await.unwrap();
    let body = sse_body(&events);
    assert_eq!(crate::Anthropic::decode_event_stream(&[&body]), Ok(streamed.clone()));
    for cut in 1..body.len() {
        let (a, b) = body.split_at(cut);
        assert_eq!(
            crate::Anthropic::decode_event_stream(&[a, b]),
            Ok(streamed.clone()),
            "cut at {cut}"
        );
    }
    let bytewise: Vec<&[u8]> = body.chunks(1).collect();
    assert_eq!(crate::Anthropic::decode_event_stream(&bytewise), Ok(streamed));
}
