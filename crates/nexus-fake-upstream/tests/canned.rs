//! The canned replies say the same thing streamed and whole: folding a stream's deltas back
//! together gives the non-streaming body.

use nexus_fake_upstream::{anthropic, openai};
use serde_json::{Map, Value, json};

/// Folds Anthropic stream events into the message they describe.
fn fold_anthropic(events: &[nexus_fake_upstream::SseFrame]) -> Value {
    let mut message = Value::Null;
    let mut partial_json: Vec<String> = Vec::new();
    for frame in events {
        let data = frame.data_json().expect("every Anthropic event carries JSON");
        assert_eq!(frame.event_name(), data["type"].as_str(), "event name = data type");
        let index = data["index"].as_u64().unwrap_or(0) as usize;
        match frame.event_name().unwrap() {
            "message_start" => message = data["message"].clone(),
            "content_block_start" => {
                message["content"]
                    .as_array_mut()
                    .unwrap()
                    .push(data["content_block"].clone());
                partial_json.push(String::new());
            }
            "content_block_delta" => {
                let block = &mut message["content"][index];
                let delta = &data["delta"];
                match delta["type"].as_str().unwrap() {
                    "text_delta" => append(block, "text", &delta["text"]),
                    "thinking_delta" => append(block, "thinking", &delta["thinking"]),
                    "signature_delta" => append(block, "signature", &delta["signature"]),
                    "input_json_delta" => partial_json[index].push_str(delta["partial_json"].as_str().unwrap()),
                    other => panic!("unexpected delta {other}"),
                }
            }
            "content_block_stop" => {
                if !partial_json[index].is_empty() {
                    message["content"][index]["input"] = serde_json::from_str(&partial_json[index]).unwrap();
                }
            }
            "message_delta" => {
                message["stop_reason"] = data["delta"]["stop_reason"].clone();
                message["usage"]["output_tokens"] = data["usage"]["output_tokens"].clone();
            }
            "ping" | "message_stop" => {}
            other => panic!("unexpected event {other}"),
        }
    }
    message
}

fn append(block: &mut Value, field: &str, piece: &Value) {
    let joined = format!("{}{}", block[field].as_str().unwrap_or(""), piece.as_str().unwrap());
    block[field] = Value::String(joined);
}

#[test]
fn an_anthropic_stream_folds_into_its_message() {
    let msg = anthropic::Message::new("claude-sonnet-4-5")
        .id("msg_1")
        .thinking("Let me think about it.", "sig-abc")
        .redacted_thinking("opaque")
        .server_tool_use("srvtoolu_1", "tool_search_tool_regex", json!({"query": "weather"}))
        .tool_search_result("srvtoolu_1", &["get_weather"])
        .text("Hello, world, how are you?")
        .tool_use("toolu_1", "read", json!({"path": "README.md", "lines": [1, 2]}))
        .usage(120, 18)
        .cache(100, 20);
    let whole = msg.to_json();
    assert_eq!(whole["stop_reason"], "tool_use");
    assert_eq!(
        whole["usage"],
        json!({"input_tokens": 120, "cache_creation_input_tokens": 20, "cache_read_input_tokens": 100, "output_tokens": 18})
    );
    assert_eq!(
        whole["content"][3],
        json!({"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1",
               "content": {"type": "tool_search_tool_search_result",
                           "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}]}})
    );
    let events = msg.events();
    assert_eq!(fold_anthropic(&events), whole);

    let names: Vec<_> = events.iter().map(|f| f.event_name().unwrap()).collect();
    assert_eq!(&names[..2], ["message_start", "ping"]);
    assert_eq!(&names[names.len() - 2..], ["message_delta", "message_stop"]);
    let deltas = |kind: &str| {
        events
            .iter()
            .filter(|f| f.data_json().unwrap()["delta"]["type"] == kind)
            .count()
    };
    assert_eq!(deltas("text_delta"), 3, "text is split into pieces");
    assert_eq!(deltas("input_json_delta"), 6, "two inputs, three pieces each");
    assert_eq!(deltas("signature_delta"), 1);
}

#[test]
fn anthropic_defaults_and_errors() {
    let msg = anthropic::Message::new("m").text("Hi");
    assert_eq!(msg.to_json()["stop_reason"], "end_turn");
    assert_eq!(
        msg.clone().stop_reason("max_tokens").to_json()["stop_reason"],
        "max_tokens"
    );
    assert_eq!(fold_anthropic(&msg.events()), msg.to_json());

    let overloaded = anthropic::overloaded();
    assert_eq!(overloaded.status_code(), 529);
    let body: Value = serde_json::from_slice(overloaded.body_bytes().unwrap()).unwrap();
    assert_eq!(
        body,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );
    assert_eq!(anthropic::model_not_found("x").status_code(), 404);
    assert_eq!(anthropic::api_error().status_code(), 500);

    let broken = msg.stream_then_error(2);
    let frames = broken.frames().unwrap();
    assert_eq!(frames.len(), 3);
    assert_eq!(frames[2].event_name(), Some("error"));
    assert_eq!(frames[2].data_json().unwrap()["error"]["type"], "overloaded_error");
}

/// Folds OpenAI chunks into the completion they describe (choices[0] and usage).
fn fold_openai(chunks: &[Value]) -> (Map<String, Value>, Option<String>, Value) {
    let mut message = Map::new();
    let mut calls: Vec<Value> = Vec::new();
    let mut finish = None;
    let mut usage = Value::Null;
    for chunk in chunks {
        if !chunk["usage"].is_null() {
            usage = chunk["usage"].clone();
        }
        let Some(choice) = chunk["choices"].get(0) else {
            continue;
        };
        if let Some(reason) = choice["finish_reason"].as_str() {
            finish = Some(reason.to_owned());
        }
        for (key, value) in choice["delta"].as_object().unwrap() {
            match key.as_str() {
                "role" => {
                    message.insert("role".into(), value.clone());
                }
                "content" | "refusal" if value.is_string() => {
                    let old = message.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
                    message.insert(key.clone(), json!(old + value.as_str().unwrap()));
                }
                "content" | "refusal" => {}
                "tool_calls" => {
                    for part in value.as_array().unwrap() {
                        let i = part["index"].as_u64().unwrap() as usize;
                        if i == calls.len() {
                            calls.push(json!({"id": part["id"], "type": part["type"],
                                              "function": {"name": part["function"]["name"], "arguments": ""}}));
                        }
                        let args = calls[i]["function"]["arguments"].as_str().unwrap().to_owned();
                        calls[i]["function"]["arguments"] =
                            json!(args + part["function"]["arguments"].as_str().unwrap());
                    }
                }
                other => panic!("unexpected delta member {other}"),
            }
        }
    }
    if !calls.is_empty() {
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    (message, finish, usage)
}

#[test]
fn an_openai_stream_folds_into_its_completion() {
    let kinds = [
        openai::Completion::new("m")
            .content("Hello, world")
            .usage(10, 3)
            .cached_tokens(8),
        openai::Completion::new("m")
            .content("Two calls.")
            .tool_call("call_1", "read", r#"{"path":"a"}"#)
            .tool_call("call_2", "write", r#"{"path":"b","text":"x"}"#),
        openai::Completion::new("m")
            .refusal("No.")
            .finish_reason("content_filter")
            .no_usage(),
    ];
    for completion in kinds {
        let whole = completion.to_json();
        let (message, finish, usage) = fold_openai(&completion.chunks());
        let want = &whole["choices"][0]["message"];
        for key in ["role", "tool_calls"] {
            assert_eq!(message.get(key), want.get(key), "{key}");
        }
        for key in ["content", "refusal"] {
            assert_eq!(message.get(key).unwrap_or(&Value::Null), &want[key], "{key}");
        }
        assert_eq!(finish.as_deref(), whole["choices"][0]["finish_reason"].as_str());
        assert_eq!(usage, whole["usage"]);
    }
    let cached = openai::Completion::new("m").usage(10, 3).cached_tokens(8).to_json();
    assert_eq!(cached["usage"]["prompt_tokens_details"]["cached_tokens"], 8);
    assert_eq!(cached["usage"]["total_tokens"], 13);
    assert_eq!(cached["choices"][0]["finish_reason"], "stop");
}

#[test]
fn openai_errors() {
    let full = openai::context_length_exceeded();
    assert_eq!(full.status_code(), 400);
    let body: Value = serde_json::from_slice(full.body_bytes().unwrap()).unwrap();
    assert_eq!(body["error"]["code"], "context_length_exceeded");
    assert_eq!(openai::rate_limited().status_code(), 429);
    assert_eq!(openai::server_error().status_code(), 500);
    let missing: Value = serde_json::from_slice(openai::model_not_found("x").body_bytes().unwrap()).unwrap();
    assert_eq!(missing["error"]["code"], "model_not_found");
}
