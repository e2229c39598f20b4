//! The request body (providers.md §6), written member by member so its bytes are exact.
//!
//! A body is written in three pieces, which the cache (`cache.rs`) keeps apart:
//! - the head, `{"model":…,"tools":[…],"messages":[` and the system message ([`open`]);
//! - one message per entry, each depending only on its entry and the upload bytes it names
//!   ([`push_entry`]);
//! - the tail, `]` and the members after `messages` ([`close`]).
//!
//! Everything is compact JSON; strings are escaped by `serde_json`, and a stored tool is
//! written by `serde_json` from its `Value`, whose member order is the stored one (the
//! workspace enables `preserve_order`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use uuid::Uuid;

use crate::config::{InstanceConfig, MaxTokensField, SystemRole};
use crate::neutral::{Entry, Part, RawToolCall, RequestOptions};
use crate::provider::{BlobReader, ProviderError};

/// The end of a body that asks for a streamed reply. `stream_options.include_usage` makes the
/// server send a last chunk with the token usage (a streamed reply has none otherwise).
const STREAM_TAIL: &[u8] = br#","stream":true,"stream_options":{"include_usage":true}}"#;
/// The end of a body that asks for one JSON reply.
const NO_STREAM_TAIL: &[u8] = br#","stream":false}"#;

/// What an instance's configuration fixes about every request it encodes.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// `{base_url}/chat/completions`.
    pub url: String,
    /// `content-type`, then `extra_headers` (sorted by name). Never the key.
    pub headers: Vec<(String, String)>,
    system_role: &'static str,
    max_tokens_field: &'static str,
    parallel_tool_calls: Option<bool>,
    streams: bool,
}

impl Layout {
    pub fn of(config: &InstanceConfig) -> Self {
        let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
        headers.extend(config.extra_headers.iter().map(|(k, v)| (k.clone(), v.clone())));
        Self {
            url: format!("{}/chat/completions", config.base_url()),
            headers,
            system_role: match config.system_role {
                SystemRole::System => "system",
                SystemRole::Developer => "developer",
            },
            max_tokens_field: match config.max_tokens_field {
                MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
                MaxTokensField::MaxTokens => "max_tokens",
            },
            parallel_tool_calls: config.parallel_tool_calls,
            streams: config.streams(),
        }
    }
}

/// Whether a body this module wrote asks for a streamed reply.
pub(crate) fn asks_to_stream(body: &[u8]) -> bool {
    body.ends_with(STREAM_TAIL)
}

/// `,"tools":[…]` for a non-empty list (empty for none): each entry exactly as stored. An entry
/// that is not `{"type":"function","function":{…}}` (a shape-5 entry such as a provider's
/// server tool) cannot be carried on this wire: `provider_error` naming it.
pub(crate) fn tools_fragment(tools: &[Value]) -> Result<Vec<u8>, ProviderError> {
    if tools.is_empty() {
        return Ok(Vec::new());
    }
    for (i, tool) in tools.iter().enumerate() {
        let is_function = tool.get("type").and_then(Value::as_str) == Some("function")
            && tool.get("function").is_some_and(Value::is_object);
        if !is_function {
            return Err(ProviderError::error(format!(
                "tools[{i}] ({}) cannot be sent on the openai wire: only {{\"type\":\"function\",\"function\":{{…}}}} entries can",
                describe_tool(tool)
            )));
        }
    }
    let mut out = Vec::with_capacity(tools.len() * 512);
    out.extend_from_slice(br#","tools":"#);
    serde_json::to_writer(&mut out, tools).map_err(|e| ProviderError::error(format!("unencodable tools: {e}")))?;
    Ok(out)
}

/// `name "x", type "y"` for an entry, from what it has (`function.name` or a top-level `name`).
fn describe_tool(tool: &Value) -> String {
    let name = tool
        .get("function")
        .and_then(|f| f.get("name"))
        .or_else(|| tool.get("name"))
        .and_then(Value::as_str);
    let kind = tool.get("type").and_then(Value::as_str);
    match (name, kind) {
        (Some(n), Some(k)) => format!("name {n:?}, type {k:?}"),
        (Some(n), None) => format!("name {n:?}, no type"),
        (None, Some(k)) => format!("type {k:?}, no name"),
        (None, None) => "no name, no type".to_string(),
    }
}

/// The head: `{"model":…` + `tools` + `,"messages":[` + the system message, if any. Returns
/// whether a message was written.
///
/// `tools_at` becomes where the tools array sits in `out` (`None` without tools).
pub(crate) fn open(
    out: &mut Vec<u8>,
    layout: &Layout,
    model: &str,
    tools: &[u8],
    system: &[String],
    tools_at: &mut Option<std::ops::Range<usize>>,
) -> bool {
    out.extend_from_slice(br#"{"model":"#);
    push_str(out, model);
    let name = br#","tools":"#.len();
    *tools_at = (!tools.is_empty()).then(|| out.len() + name..out.len() + tools.len());
    out.extend_from_slice(tools);
    out.extend_from_slice(br#","messages":["#);
    let parts: Vec<&str> = system.iter().map(String::as_str).filter(|s| !s.is_empty()).collect();
    if parts.is_empty() {
        return false;
    }
    out.extend_from_slice(br#"{"role":""#);
    out.extend_from_slice(layout.system_role.as_bytes());
    out.extend_from_slice(br#"","content":"#);
    push_str(out, &parts.join("\n\n"));
    out.push(b'}');
    true
}

/// The upload bytes a message inlined: `(upload, length)`, so a cache can check they are
/// still the ones it encoded (uploads are immutable, uploads.md).
pub(crate) type Inlined = Vec<(Uuid, usize)>;

/// Appends the message of `entry` (preceded by a comma when `*any` says one was written);
/// an empty `Attachments` entry gives none.
pub(crate) fn push_entry(
    out: &mut Vec<u8>,
    any: &mut bool,
    entry: &Entry,
    blobs: &dyn BlobReader,
    inlined: &mut Inlined,
) -> Result<(), ProviderError> {
    if matches!(entry, Entry::Attachments { parts } if parts.is_empty()) {
        return Ok(());
    }
    if *any {
        out.push(b',');
    }
    *any = true;
    match entry {
        Entry::User { parts } | Entry::Attachments { parts } => push_user(out, parts, blobs, inlined)?,
        Entry::Assistant { text, tool_calls, .. } => push_assistant(out, text.as_deref(), tool_calls),
        Entry::ToolResult { call_id, output, .. } => {
            out.extend_from_slice(br#"{"role":"tool","tool_call_id":"#);
            push_str(out, call_id);
            out.extend_from_slice(br#","content":"#);
            push_str(out, if output.trim().is_empty() { "" } else { output });
            out.push(b'}');
        }
    }
    Ok(())
}

/// The tail: `]`, the output budget, `reasoning_effort`, `parallel_tool_calls`, `stream`
/// (and `stream_options`), `}`.
pub(crate) fn close(out: &mut Vec<u8>, layout: &Layout, options: &RequestOptions) {
    out.push(b']');
    if let Some(n) = options.max_output_tokens {
        out.extend_from_slice(b",\"");
        out.extend_from_slice(layout.max_tokens_field.as_bytes());
        out.extend_from_slice(b"\":");
        out.extend_from_slice(n.to_string().as_bytes());
    }
    if let Some(effort) = &options.reasoning_effort {
        out.extend_from_slice(br#","reasoning_effort":"#);
        push_str(out, effort);
    }
    if let Some(parallel) = layout.parallel_tool_calls {
        out.extend_from_slice(if parallel {
            br#","parallel_tool_calls":true"#.as_slice()
        } else {
            br#","parallel_tool_calls":false"#.as_slice()
        });
    }
    out.extend_from_slice(if layout.streams { STREAM_TAIL } else { NO_STREAM_TAIL });
}

/// A user message: `content` is a string (text parts joined by `\n`) when every part is text,
/// else an array of `text`, `image_url` and `file` parts with the bytes inlined as data URLs.
fn push_user(
    out: &mut Vec<u8>,
    parts: &[Part],
    blobs: &dyn BlobReader,
    inlined: &mut Inlined,
) -> Result<(), ProviderError> {
    out.extend_from_slice(br#"{"role":"user","content":"#);
    if parts.iter().all(|p| matches!(p, Part::Text { .. })) {
        let text: Vec<&str> = parts.iter().filter_map(Part::as_text).collect();
        push_str(out, &text.join("\n"));
        out.push(b'}');
        return Ok(());
    }
    out.push(b'[');
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match part {
            Part::Text { text } => {
                out.extend_from_slice(br#"{"type":"text","text":"#);
                push_str(out, text);
                out.push(b'}');
            }
            Part::Image { upload, media_type } => {
                let bytes = blob(blobs, *upload, "image")?;
                out.extend_from_slice(br#"{"type":"image_url","image_url":{"url":"data:"#);
                push_str_contents(out, media_type);
                out.extend_from_slice(b";base64,");
                push_base64(out, bytes);
                out.extend_from_slice(br#""}}"#);
                inlined.push((*upload, bytes.len()));
            }
            Part::Document { upload } => {
                let bytes = blob(blobs, *upload, "PDF")?;
                out.extend_from_slice(br#"{"type":"file","file":{"filename":""#);
                out.extend_from_slice(upload.hyphenated().encode_lower(&mut Uuid::encode_buffer()).as_bytes());
                out.extend_from_slice(br#".pdf","file_data":"data:application/pdf;base64,"#);
                push_base64(out, bytes);
                out.extend_from_slice(br#""}}"#);
                inlined.push((*upload, bytes.len()));
            }
        }
    }
    out.extend_from_slice(b"]}");
    Ok(())
}

/// `{"role":"assistant","content":text|null,"tool_calls":[…]}`; `tool_calls` is omitted when
/// there are none, and then a missing text is sent as `""` (the API requires content on an
/// assistant message without calls).
fn push_assistant(out: &mut Vec<u8>, text: Option<&str>, calls: &[RawToolCall]) {
    out.extend_from_slice(br#"{"role":"assistant","content":"#);
    match text {
        Some(text) => push_str(out, text),
        None if calls.is_empty() => out.extend_from_slice(b"\"\""),
        None => out.extend_from_slice(b"null"),
    }
    if !calls.is_empty() {
        out.extend_from_slice(br#","tool_calls":["#);
        for (i, call) in calls.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(br#"{"id":"#);
            push_str(out, &call.id);
            out.extend_from_slice(br#","type":"function","function":{"name":"#);
            push_str(out, &call.name);
            out.extend_from_slice(br#","arguments":"#);
            push_str(out, &call.arguments);
            out.extend_from_slice(b"}}");
        }
        out.push(b']');
    }
    out.push(b'}');
}

/// The bytes of `upload`, or `provider_error` naming it.
fn blob<'b>(blobs: &'b dyn BlobReader, upload: Uuid, what: &str) -> Result<&'b [u8], ProviderError> {
    blobs
        .bytes(upload)
        .ok_or_else(|| ProviderError::error(format!("the bytes of upload {upload} ({what} part) are not available")))
}

/// A JSON string.
fn push_str(out: &mut Vec<u8>, s: &str) {
    serde_json::to_writer(&mut *out, s).expect("writing a string to a Vec cannot fail");
}

/// A JSON string's escaped contents, without its quotes.
fn push_str_contents(out: &mut Vec<u8>, s: &str) {
    let start = out.len();
    push_str(out, s);
    out.pop();
    out.remove(start);
}

/// Standard base64 with padding.
fn push_base64(out: &mut Vec<u8>, bytes: &[u8]) {
    let start = out.len();
    let len = base64::encoded_len(bytes.len(), true).expect("an in-memory blob's base64 length fits in usize");
    out.resize(start + len, 0);
    let written = STANDARD
        .encode_slice(bytes, &mut out[start..])
        .expect("the buffer is sized for the encoding");
    out.truncate(start + written);
}

/// A whole body, from scratch (what the cache must reproduce).
#[cfg(test)]
pub(crate) fn body(
    layout: &Layout,
    req: &crate::neutral::ModelRequest,
    blobs: &dyn BlobReader,
) -> Result<Vec<u8>, ProviderError> {
    let mut out = Vec::new();
    let tools = tools_fragment(&req.tools)?;
    let mut any = open(&mut out, layout, &req.model, &tools, &req.system, &mut None);
    let mut inlined = Vec::new();
    for entry in &req.entries {
        push_entry(&mut out, &mut any, entry, blobs, &mut inlined)?;
    }
    close(&mut out, layout, &req.options);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Kind;
    use crate::neutral::ModelRequest;
    use crate::provider::NoBlobs;
    use serde_json::json;

    fn layout() -> Layout {
        let mut config = InstanceConfig::of(Kind::Openai);
        config.stream = Some(false);
        Layout::of(&config)
    }

    #[test]
    fn every_body_is_json_and_says_whether_it_streams() {
        let mut req = ModelRequest {
            provider: "o".into(),
            model: "m\"1".into(),
            system: vec!["".into(), "a".into(), "".into(), "b".into()],
            tools_deferred: vec![],
            entries: vec![
                Entry::User { parts: vec![] },
                Entry::Attachments { parts: vec![] },
                Entry::Assistant {
                    text: None,
                    tool_calls: vec![],
                    native: None,
                },
            ],
            tools: vec![],
            options: RequestOptions::default(),
        };
        let text = body(&layout(), &req, &NoBlobs).unwrap();
        let v: Value = serde_json::from_slice(&text).unwrap();
        assert_eq!(v["model"], "m\"1");
        assert_eq!(v["messages"][0], json!({"role":"system","content":"a\n\nb"}));
        assert_eq!(v["messages"][1], json!({"role":"user","content":""}));
        assert_eq!(v["messages"][2], json!({"role":"assistant","content":""}));
        assert_eq!(
            v["messages"].as_array().unwrap().len(),
            3,
            "no empty attachments message"
        );
        assert!(!asks_to_stream(&text));
        req.system.clear();
        let mut config = InstanceConfig::of(Kind::Openai);
        config.stream = None;
        let text = body(&Layout::of(&config), &req, &NoBlobs).unwrap();
        assert!(asks_to_stream(&text));
        let v: Value = serde_json::from_slice(&text).unwrap();
        assert_eq!(v["messages"][0]["role"], "user");
    }

    #[test]
    fn escaped_contents() {
        let mut out = b"x".to_vec();
        push_str_contents(&mut out, "a\"b\n");
        assert_eq!(out, br#"xa\"b\n"#);
        let mut out = Vec::new();
        push_base64(&mut out, b"hello");
        assert_eq!(out, b"aGVsbG8=");
    }

    #[test]
    fn tool_descriptions() {
        assert_eq!(
            describe_tool(&json!({"type":"web_search","name":"ws"})),
            "name \"ws\", type \"web_search\""
        );
        assert_eq!(describe_tool(&json!({})), "no name, no type");
        assert_eq!(describe_tool(&json!({"function":{"name":"f"}})), "name \"f\", no type");
    }
}
