//! What the tests share: a config, requests, and views into an encoded body.

use std::sync::Once;

use nexus_providers::config::Kind;
use nexus_providers::{
    Anthropic, EncodedRequest, Entry, InstanceConfig, ModelRequest, NoBlobs, Provider, RawToolCall, RequestOptions,
};
use serde_json::{Value, json};

pub const KEY_ENV: &str = "NEXUS_TEST_ANTHROPIC_KEY";
pub const KEY: &str = "sk-ant-test-7f3e9c1d-never-sealed";

/// Sets the key variable once, before any test reads it.
pub fn key_env() -> String {
    static SET: Once = Once::new();
    // SAFETY: set once, by the first test that needs it, under `Once`; std's own readers are
    // synchronized with it, and nothing in these tests reads the environment through libc.
    SET.call_once(|| unsafe { std::env::set_var(KEY_ENV, KEY) });
    KEY_ENV.to_string()
}

pub fn config() -> InstanceConfig {
    let mut c = InstanceConfig::of(Kind::Anthropic);
    c.base_url = Some("http://127.0.0.1:9/".into());
    c.stream = Some(false);
    c
}

pub fn func(name: &str, strict: bool) -> Value {
    json!({"type":"function","function":{"name":name,"description":format!("The {name} tool."),
        "parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},"strict":strict}})
}

pub fn call(id: &str, name: &str, arguments: &str) -> RawToolCall {
    RawToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

pub fn result(id: &str, output: &str, is_error: bool) -> Entry {
    Entry::ToolResult {
        call_id: id.into(),
        name: "read".into(),
        output: output.into(),
        is_error,
    }
}

pub fn assistant(text: Option<&str>, calls: Vec<RawToolCall>) -> Entry {
    Entry::Assistant {
        text: text.map(String::from),
        tool_calls: calls,
        native: None,
    }
}

pub fn request(entries: Vec<Entry>) -> ModelRequest {
    ModelRequest {
        provider: "anthropic".into(),
        model: "claude-x".into(),
        system: vec!["Be brief.".into(), "Skills: none".into()],
        entries,
        tools: vec![func("read", false)],
        tools_deferred: vec![],
        options: RequestOptions {
            max_output_tokens: Some(4096),
            reasoning_effort: None,
        },
    }
}

pub fn encode(config: InstanceConfig, req: &ModelRequest) -> EncodedRequest {
    Anthropic::new(config).encode(req, &NoBlobs).unwrap()
}

pub fn body(enc: &EncodedRequest) -> &str {
    std::str::from_utf8(&enc.body).unwrap()
}

/// The bytes of the `messages` array.
pub fn messages(enc: &EncodedRequest) -> &str {
    let b = body(enc);
    let start = b.find(r#","messages":"#).unwrap() + r#","messages":"#.len();
    let end = b.rfind(r#","stream":"#).unwrap();
    let end = b[..end]
        .rfind(r#"],"thinking":{"type":"enabled""#)
        .map_or(end, |at| at + 1);
    &b[start..end]
}

/// The bytes of the `tools` array.
pub fn tools(enc: &EncodedRequest) -> &str {
    let b = body(enc);
    let start = b.find(r#","tools":"#).unwrap() + r#","tools":"#.len();
    let end = b.find(r#","system":"#).or_else(|| b.find(r#","messages":"#)).unwrap();
    &b[start..end]
}

pub const READ: &str = r#"{"name":"read","description":"The read tool.","input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}"#;
pub const CC: &str = r#","cache_control":{"type":"ephemeral"}"#;
