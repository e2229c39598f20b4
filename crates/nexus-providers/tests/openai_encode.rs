//! The `openai` encoder (providers.md §6): the exact bytes it seals. Every body encoded here is
//! also validated against the published `CreateChatCompletionRequest` schema.

mod support;

use std::collections::HashMap;

use nexus_providers::config::{MaxTokensField, SystemRole};
use nexus_providers::{
    BlobReader, EncodedRequest, Entry, InstanceConfig, Kind, ModelRequest, NoBlobs, OpenAi, Part, Provider,
    ProviderError, RawToolCall, RequestOptions,
};
use serde_json::{Value, json};
use support::openai_schema::{self, REQUEST};
use uuid::Uuid;

fn config() -> InstanceConfig {
    let mut config = InstanceConfig::of(Kind::Openai);
    config.base_url = Some("http://upstream.test/v1/".into());
    config
}

fn provider(edit: impl FnOnce(&mut InstanceConfig)) -> OpenAi {
    let mut config = config();
    edit(&mut config);
    OpenAi::new(config)
}

/// A function tool whose members are deliberately not in alphabetical order.
fn read_tool() -> Value {
    json!({"type":"function","function":{"name":"read","description":"Read a file.",
        "parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},"strict":false}})
}

fn tool(name: &str) -> Value {
    json!({"type":"function","function":{"name":name,"description":format!("The {name} tool."),
        "parameters":{"type":"object","properties":{"z":{"type":"integer","minimum":0.5},"a":{"type":"string"}},"additionalProperties":false},
        "strict":false}})
}

fn call(id: &str, name: &str, arguments: &str) -> RawToolCall {
    RawToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

fn result(call_id: &str, output: &str) -> Entry {
    Entry::ToolResult {
        call_id: call_id.into(),
        name: "read".into(),
        output: output.into(),
        is_error: false,
    }
}

fn request(entries: Vec<Entry>) -> ModelRequest {
    ModelRequest {
        provider: "oai".into(),
        model: "gpt-5.4".into(),
        system: vec!["Be terse.".into(), "".into(), "Skills: none.".into()],
        entries,
        tools: vec![read_tool()],
        tools_deferred: vec![],
        options: RequestOptions {
            max_output_tokens: Some(256),
            reasoning_effort: Some("low".into()),
        },
    }
}

/// Encodes, checks the body against the published schema, and returns it as text.
#[track_caller]
fn encode(p: &OpenAi, req: &ModelRequest, blobs: &dyn BlobReader) -> String {
    let enc = p.encode(req, blobs).expect("encode");
    openai_schema::assert_valid_bytes(REQUEST, &enc.body);
    String::from_utf8(enc.body).expect("utf-8")
}

fn encode_err(p: &OpenAi, req: &ModelRequest, blobs: &dyn BlobReader) -> ProviderError {
    p.encode(req, blobs).expect_err("encode fails")
}

fn first_round() -> Vec<Entry> {
    vec![
        Entry::user_text("hello"),
        Entry::Assistant {
            text: Some("Reading.".into()),
            tool_calls: vec![call("c1", "read", r#"{"path":"a"}"#)],
            native: None,
        },
        result("c1", "ok"),
    ]
}

#[test]
fn the_body_is_exact_member_for_member() {
    let p = provider(|c| c.parallel_tool_calls = Some(false));
    let enc = p.encode(&request(first_round()), &NoBlobs).unwrap();
    assert_eq!(enc.url, "http://upstream.test/v1/chat/completions");
    assert_eq!(
        enc.headers,
        vec![("content-type".to_string(), "application/json".to_string())]
    );
    let expected = concat!(
        r#"{"model":"gpt-5.4","#,
        r#""tools":[{"type":"function","function":{"name":"read","description":"Read a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},"strict":false}}],"#,
        r#""messages":[{"role":"system","content":"Be terse.\n\nSkills: none."},"#,
        r#"{"role":"user","content":"hello"},"#,
        r#"{"role":"assistant","content":"Reading.","tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]},"#,
        r#"{"role":"tool","tool_call_id":"c1","content":"ok"}],"#,
        r#""max_completion_tokens":256,"reasoning_effort":"low","parallel_tool_calls":false,"#,
        r#""stream":true,"stream_options":{"include_usage":true}}"#
    );
    assert_eq!(String::from_utf8(enc.body.clone()).unwrap(), expected);
    openai_schema::assert_valid_bytes(REQUEST, &enc.body);
    // The tools range is the tools array exactly.
    let tools = enc.tools_bytes().expect("a tools range");
    assert!(expected.contains(&format!(
        r#""tools":{},"messages""#,
        std::str::from_utf8(tools).unwrap()
    )));
    assert!(tools.starts_with(b"[{") && tools.ends_with(b"}]"));
    let range = enc.tools.clone().unwrap();
    let digest_of_the_body =
        EncodedRequest::new(enc.url.clone(), enc.headers.clone(), enc.body.clone()).with_tools(range);
    assert_eq!(enc, digest_of_the_body);

    // Not streaming, no budget, no effort, parallel calls not configured, no tools, no system.
    let p = provider(|c| c.stream = Some(false));
    let mut req = request(vec![Entry::user_text("hello")]);
    req.options = RequestOptions::default();
    req.tools.clear();
    req.system.clear();
    assert_eq!(
        encode(&p, &req, &NoBlobs),
        r#"{"model":"gpt-5.4","messages":[{"role":"user","content":"hello"}],"stream":false}"#
    );
}

#[test]
fn extra_headers_follow_the_content_type_and_the_base_url_defaults() {
    let mut config = InstanceConfig::of(Kind::Openai);
    config.extra_headers.insert("x-b".into(), "2".into());
    config
        .extra_headers
        .insert("OpenAI-Organization".into(), "org-1".into());
    let enc = OpenAi::new(config).encode(&request(vec![]), &NoBlobs);
    // An empty `messages` is not a valid request for the published schema, but it encodes.
    let enc = enc.unwrap();
    assert_eq!(enc.url, "https://api.openai.com/v1/chat/completions");
    let names: Vec<&str> = enc.headers.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["content-type", "OpenAI-Organization", "x-b"]);
}

/// Byte `tools` segment of a body: from `"tools":` up to `,"messages":`.
fn tools_segment(body: &str) -> &str {
    let start = body.find(r#""tools":"#).expect("tools") + r#""tools":"#.len();
    let end = body.find(r#","messages":"#).expect("messages");
    &body[start..end]
}

#[test]
fn tools_bytes_are_identical_across_growing_requests() {
    let p = provider(|_| {});
    let tools: Vec<Value> = ["read", "write", "tool_search"].map(tool).into();
    let mut entries = vec![Entry::user_text("go")];
    let mut segments = Vec::new();
    for round in 1..=3 {
        let mut req = request(entries.clone());
        req.tools = tools.clone();
        let body = encode(&p, &req, &NoBlobs);
        segments.push(tools_segment(&body).to_string());
        // The same request on a provider that has encoded nothing gives the same bytes.
        assert_eq!(body, encode(&provider(|_| {}), &req, &NoBlobs), "round {round}");
        let id = format!("c{round}");
        entries.push(Entry::Assistant {
            text: None,
            tool_calls: vec![call(&id, "read", "{}")],
            native: None,
        });
        entries.push(result(&id, &format!("round {round}")));
    }
    assert_eq!(segments[0], segments[1]);
    assert_eq!(segments[1], segments[2]);
    // Exactly as stored: member order kept (`z` before `a`), `strict:false` present.
    assert!(segments[0].starts_with(
        r#"[{"type":"function","function":{"name":"read","description":"The read tool.","parameters":{"type":"object","properties":{"z":{"type":"integer","minimum":0.5},"a":{"type":"string"}},"additionalProperties":false},"strict":false}},"#
    ), "{}", segments[0]);
    assert_eq!(segments[0].matches(r#""strict":false"#).count(), 3);
    assert_eq!(segments[0], serde_json::to_string(&tools).unwrap());
}

#[test]
fn a_changed_tools_list_changes_the_bytes() {
    let p = provider(|_| {});
    let mut req = request(vec![Entry::user_text("go")]);
    let before = encode(&p, &req, &NoBlobs);
    req.tools[0]["function"]["strict"] = json!(true);
    let after = encode(&p, &req, &NoBlobs);
    assert!(tools_segment(&after).contains(r#""strict":true"#));
    assert_eq!(before.replace(r#""strict":false"#, r#""strict":true"#), after);
    // The same members in another order are other bytes.
    req.tools[0] = json!({"function":{"name":"read"},"type":"function"});
    assert!(
        tools_segment(&encode(&p, &req, &NoBlobs)).starts_with(r#"[{"function":{"name":"read"},"type":"function"}"#)
    );
}

#[test]
fn a_shape_5_entry_is_refused_by_name() {
    let p = provider(|_| {});
    let mut req = request(vec![Entry::user_text("go")]);
    req.tools
        .push(json!({"type":"web_search_20250305","name":"web_search","max_uses":3}));
    let err = encode_err(&p, &req, &NoBlobs);
    assert_eq!(err.key, "provider_error");
    let detail = err.detail.unwrap();
    assert!(detail.contains("tools[1]"), "{detail}");
    assert!(detail.contains("\"web_search\""), "{detail}");
    assert!(detail.contains("web_search_20250305"), "{detail}");
    // A nameless one is named by its type and place.
    req.tools = vec![read_tool(), read_tool(), json!({"type":"web_search"})];
    let detail = encode_err(&p, &req, &NoBlobs).detail.unwrap();
    assert!(
        detail.contains("tools[2]") && detail.contains("\"web_search\""),
        "{detail}"
    );
}

#[test]
fn max_tokens_field_and_system_role() {
    let req = request(vec![Entry::user_text("hi")]);
    let default = encode(&provider(|_| {}), &req, &NoBlobs);
    assert!(default.contains(r#","max_completion_tokens":256,"#), "{default}");
    assert!(!default.contains(r#""max_tokens""#));
    assert!(default.contains(r#"{"role":"system","content":"Be terse.\n\nSkills: none."}"#));

    let p = provider(|c| {
        c.max_tokens_field = MaxTokensField::MaxTokens;
        c.system_role = SystemRole::Developer;
    });
    let other = encode(&p, &req, &NoBlobs);
    assert!(
        other.contains(r#"],"max_tokens":256,"reasoning_effort":"low","stream":true"#),
        "{other}"
    );
    assert!(!other.contains("max_completion_tokens"));
    assert!(other.contains(r#""messages":[{"role":"developer","content":"Be terse.\n\nSkills: none."}"#));
    assert!(!other.contains(r#""role":"system""#));

    let mut none = req.clone();
    none.options.max_output_tokens = None;
    none.system = vec![String::new()];
    let body = encode(&p, &none, &NoBlobs);
    assert!(!body.contains("max_tokens") && !body.contains("developer"), "{body}");
    assert!(body.contains(r#""messages":[{"role":"user","content":"hi"}],"reasoning_effort""#));
}

#[test]
fn parallel_tool_calls_only_when_configured() {
    let req = request(vec![Entry::user_text("hi")]);
    assert!(!encode(&provider(|_| {}), &req, &NoBlobs).contains("parallel_tool_calls"));
    let body = encode(&provider(|c| c.parallel_tool_calls = Some(true)), &req, &NoBlobs);
    assert!(
        body.contains(r#""reasoning_effort":"low","parallel_tool_calls":true,"stream":true"#),
        "{body}"
    );
}

const PNG: Uuid = Uuid::from_u128(0x0190e3f2_7c4b_7a10_8f00_0123456789ab);
const PDF: Uuid = Uuid::from_u128(0x0190e3f2_7c4b_7a10_8f00_0000000000aa);

fn blobs() -> HashMap<Uuid, Vec<u8>> {
    HashMap::from([(PNG, b"\x89PNG\r\n".to_vec()), (PDF, b"%PDF-1.7".to_vec())])
}

#[test]
fn text_only_users_are_strings_others_are_parts() {
    let p = provider(|c| c.stream = Some(false));
    let req = request(vec![Entry::User {
        parts: vec![Part::text("line one"), Part::text("line two")],
    }]);
    assert!(encode(&p, &req, &NoBlobs).contains(r#"{"role":"user","content":"line one\nline two"}"#));

    let req = request(vec![Entry::User {
        parts: vec![
            Part::text("look:"),
            Part::Image {
                upload: PNG,
                media_type: "image/png".into(),
            },
            Part::Document { upload: PDF },
        ],
    }]);
    let body = encode(&p, &req, &blobs());
    let expected = concat!(
        r#"{"role":"user","content":[{"type":"text","text":"look:"},"#,
        r#"{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0K"}},"#,
        r#"{"type":"file","file":{"filename":"0190e3f2-7c4b-7a10-8f00-0000000000aa.pdf","file_data":"data:application/pdf;base64,JVBERi0xLjc="}}]}"#
    );
    assert!(body.contains(expected), "{body}");
}

#[test]
fn a_missing_upload_is_named() {
    let p = provider(|_| {});
    for part in [
        Part::Image {
            upload: PNG,
            media_type: "image/png".into(),
        },
        Part::Document { upload: PNG },
    ] {
        let req = request(vec![Entry::user_text("hi"), Entry::Attachments { parts: vec![part] }]);
        let err = encode_err(&p, &req, &NoBlobs);
        assert_eq!(err.key, "provider_error");
        assert!(err.detail.unwrap().contains(&PNG.to_string()));
    }
}

#[test]
fn tool_messages_follow_call_order_then_attachments() {
    let p = provider(|_| {});
    let mut entries = vec![Entry::user_text("read both")];
    entries.push(Entry::Assistant {
        text: None,
        tool_calls: vec![
            call("c_b", "read", r#"{"path":"b"}"#),
            call("c_a", "read", r#"{"path":"a"}"#),
        ],
        native: None,
    });
    entries.push(result("c_b", "B"));
    entries.push(result("c_a", " \n\t"));
    entries.push(Entry::Attachments {
        parts: vec![Part::Image {
            upload: PNG,
            media_type: "image/png".into(),
        }],
    });
    entries.push(Entry::user_text("steer: hurry"));
    let body = encode(&p, &request(entries), &blobs());
    let expected = concat!(
        r#"{"role":"assistant","content":null,"tool_calls":["#,
        r#"{"id":"c_b","type":"function","function":{"name":"read","arguments":"{\"path\":\"b\"}"}},"#,
        r#"{"id":"c_a","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]},"#,
        r#"{"role":"tool","tool_call_id":"c_b","content":"B"},"#,
        r#"{"role":"tool","tool_call_id":"c_a","content":""},"#,
        r#"{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0K"}}]},"#,
        r#"{"role":"user","content":"steer: hurry"}],"#
    );
    assert!(body.contains(expected), "{body}");
}

#[test]
fn assistant_text_and_raw_arguments_are_kept() {
    let p = provider(|_| {});
    let entries = vec![
        Entry::user_text("x"),
        Entry::Assistant {
            text: Some("I'll call it.".into()),
            tool_calls: vec![call("c1", "read", "{not json")],
            native: Some(json!({"ignored": true})),
        },
        result("c1", "bad arguments"),
        Entry::Assistant {
            text: Some("done".into()),
            tool_calls: vec![],
            native: None,
        },
    ];
    let body = encode(&p, &request(entries), &NoBlobs);
    assert!(body.contains(
        r#"{"role":"assistant","content":"I'll call it.","tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{not json"}}]}"#
    ));
    assert!(
        body.contains(r#"{"role":"assistant","content":"done"}"#),
        "no empty tool_calls: {body}"
    );
    assert!(!body.contains("ignored"));
}

#[test]
fn the_key_is_never_encoded() {
    const VAR: &str = "NEXUS_OPENAI_ENCODE_TEST_KEY";
    const SECRET: &str = "sk-encode-test-5ecret-value";
    // SAFETY: this test binary reads and writes no other variable of this name, and nothing
    // else in it changes the environment.
    unsafe { std::env::set_var(VAR, SECRET) };
    let p = provider(|c| {
        c.api_key_env = Some(VAR.into());
        c.extra_headers.insert("x-team".into(), "blue".into());
    });
    let enc = p.encode(&request(first_round()), &blobs()).unwrap();
    assert!(!enc.url.contains(SECRET));
    for (name, value) in &enc.headers {
        assert!(!name.eq_ignore_ascii_case("authorization"), "{name}");
        assert!(!value.contains(SECRET) && !value.contains("Bearer"), "{name}: {value}");
    }
    assert!(!String::from_utf8_lossy(&enc.body).contains(SECRET));
    assert!(!format!("{enc:?}").contains(SECRET));
}

/// The bytes of a long chain, encoded round by round on one provider, are those a provider
/// that encoded nothing before gives (the caches change no byte).
#[test]
fn reuse_changes_no_byte() {
    let warm = provider(|_| {});
    let mut req = request(vec![Entry::user_text("go")]);
    req.tools = (0..20).map(|i| tool(&format!("t{i}"))).collect();
    for i in 0..30 {
        let enc = warm.encode(&req, &blobs()).unwrap();
        let cold = provider(|_| {}).encode(&req, &blobs()).unwrap();
        assert_eq!(enc, cold, "round {i}");
        let id = format!("c{i}");
        req.entries.push(Entry::Assistant {
            text: (i % 3 == 0).then(|| format!("round {i}")),
            tool_calls: vec![call(&id, "t1", &format!(r#"{{"i":{i}}}"#))],
            native: None,
        });
        req.entries.push(result(&id, &format!("out {i}")));
        if i % 10 == 5 {
            req.entries.push(Entry::Attachments {
                parts: vec![Part::Document { upload: PDF }],
            });
        }
    }
    openai_schema::assert_valid_bytes(REQUEST, &warm.encode(&req, &blobs()).unwrap().body);
}

/// The oracle bites: bodies this adapter must never send are refused by the schema.
#[test]
fn the_schema_refuses_wrong_bodies() {
    let wrong = [
        json!({"model":"m","messages":[]}),
        json!({"model":"m","messages":[{"role":"tool","content":"x"}]}),
        json!({"model":"m","messages":[{"role":"user","content":[]}]}),
        json!({"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search","name":"w"}]}),
        json!({"model":"m","messages":[{"role":"user","content":"x"}],"stream":"yes"}),
        json!({"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}),
        json!({"model":"m","messages":[{"role":"user","content":"x"}],"reasoning_effort":"extreme"}),
    ];
    for body in wrong {
        assert!(!openai_schema::errors(REQUEST, &body).is_empty(), "{body}");
    }
    let ok = json!({"model":"m","messages":[{"role":"user","content":"x"}]});
    assert_eq!(openai_schema::errors(REQUEST, &ok), Vec::<String>::new());
}
