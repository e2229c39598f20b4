//! A Messages reply to a [`ModelReply`] (providers.md §5.2), and an upstream `error` object to
//! a [`ProviderError`] (§8). The streaming reader (`stream.rs`) assembles the same content
//! blocks and ends in the same [`reply`], so both paths give equal replies.
//!
//! - `text` blocks: their text concatenated, in order (`None` when that is empty).
//! - `tool_use` blocks: a [`RawToolCall`] whose `arguments` are the RFC 8785 canonical JSON of
//!   `input`.
//! - Every other block (`thinking`, `redacted_thinking`, `server_tool_use`,
//!   `tool_search_tool_result`, …) goes, verbatim and in order, into `native` (a JSON array;
//!   `None` when there is none), which the assistant entry stores and later requests replay.
//! - `stop_reason`: `end_turn` and `stop_sequence` → EndTurn, `tool_use` → ToolUse,
//!   `max_tokens` → OutputBudgetExhausted, `refusal` → Refused, any other word kept as Other.
//!   A reply without one is malformed.
//! - `usage`: `input_tokens`, `output_tokens`, `cache_read_input_tokens`,
//!   `cache_creation_input_tokens` (absent or `null` count as 0).

use serde::Deserialize;
use serde_json::Value;

use crate::neutral::{ModelReply, RawToolCall, StopReason, Usage};
use crate::provider::ProviderError;

/// One content block of a reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
    /// A block as the provider gave it.
    Json(Value),
    /// A streamed `tool_use` whose input deltas do not form JSON: its raw text is kept as the
    /// arguments, for the kernel to judge (a non-streaming reply always has a JSON `input`).
    RawToolUse {
        id: String,
        name: String,
        arguments: String,
    },
}

/// A malformed 2xx reply.
pub(crate) fn malformed(what: impl std::fmt::Display) -> ProviderError {
    ProviderError::error(format!("malformed reply: {what}"))
}

/// The members of a reply body that are read (the others are skipped unparsed).
#[derive(Deserialize)]
struct Body {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    content: Option<Vec<Value>>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

/// The reply of a non-streaming body: a `message` object, or an `error` object (classified as
/// a streamed `error` event is).
pub(crate) fn body(bytes: &[u8]) -> Result<ModelReply, ProviderError> {
    let body: Body = serde_json::from_slice(bytes).map_err(malformed)?;
    if body.kind.as_deref() == Some("error") {
        return Err(error_object(body.error.as_ref(), bytes));
    }
    let content = body.content.ok_or_else(|| malformed("no content array"))?;
    let mut usage = Usage::default();
    if let Some(u) = &body.usage {
        apply_usage(&mut usage, u);
    }
    reply(
        content.into_iter().map(Block::Json).collect(),
        body.stop_reason.as_deref(),
        usage,
    )
}

/// Overwrites the members of `usage` that `u` carries (a streamed `message_delta` repeats some).
pub(crate) fn apply_usage(usage: &mut Usage, u: &Value) {
    let fields: [(&str, &mut u64); 4] = [
        ("input_tokens", &mut usage.input_tokens),
        ("output_tokens", &mut usage.output_tokens),
        ("cache_read_input_tokens", &mut usage.cache_read_input_tokens),
        ("cache_creation_input_tokens", &mut usage.cache_creation_input_tokens),
    ];
    for (name, slot) in fields {
        match u.get(name) {
            Some(Value::Null) => *slot = 0,
            Some(v) => {
                if let Some(n) = v.as_u64() {
                    *slot = n;
                }
            }
            None => {}
        }
    }
}

/// The neutral stop reason of a Messages `stop_reason`.
pub(crate) fn stop_reason(word: &str) -> StopReason {
    match word {
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::OutputBudgetExhausted,
        "refusal" => StopReason::Refused,
        other => StopReason::Other(other.to_string()),
    }
}

/// The reply of a message's content blocks, stop reason and usage.
pub(crate) fn reply(blocks: Vec<Block>, stop: Option<&str>, usage: Usage) -> Result<ModelReply, ProviderError> {
    let stop = stop_reason(stop.ok_or_else(|| malformed("no stop_reason"))?);
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    let mut native = Vec::new();
    for (i, block) in blocks.into_iter().enumerate() {
        let block = match block {
            Block::RawToolUse { id, name, arguments } => {
                tool_calls.push(named(i, RawToolCall { id, name, arguments })?);
                continue;
            }
            Block::Json(block) => block,
        };
        match block.get("type").and_then(Value::as_str) {
            Some("text") => match block.get("text") {
                Some(Value::String(t)) => text.push_str(t),
                _ => return Err(malformed(format_args!("content[{i}]: a text block without text"))),
            },
            Some("tool_use") => {
                let field = |name: &str| match block.get(name) {
                    Some(Value::String(s)) => Ok(s.clone()),
                    _ => Err(malformed(format_args!("content[{i}]: a tool_use block without {name}"))),
                };
                let input = block.get("input").unwrap_or(&Value::Null);
                let arguments = serde_jcs::to_string(input).map_err(malformed)?;
                let call = RawToolCall {
                    id: field("id")?,
                    name: field("name")?,
                    arguments,
                };
                tool_calls.push(named(i, call)?);
            }
            Some(_) => native.push(block),
            None => return Err(malformed(format_args!("content[{i}]: a block without a type"))),
        }
    }
    Ok(ModelReply {
        text: (!text.is_empty()).then_some(text),
        tool_calls,
        stop,
        usage,
        native: (!native.is_empty()).then_some(Value::Array(native)),
    })
}

/// A call whose id or name is empty cannot be paired with its result: a malformed reply, as
/// an OpenAI call without them is (and whether or not its streamed input formed JSON).
fn named(i: usize, call: RawToolCall) -> Result<RawToolCall, ProviderError> {
    for (what, value) in [("id", &call.id), ("name", &call.name)] {
        if value.is_empty() {
            return Err(malformed(format_args!("content[{i}]: a tool_use block without {what}")));
        }
    }
    Ok(call)
}

/// The `error` member of an upstream `{"type":"error","error":{"type":…,"message":…}}` (a
/// streamed `error` event, or an error body with a 2xx status), classified as the HTTP status its type stands for would
/// be (§8): `overloaded_error` (529), `rate_limit_error` (429), `api_error` (500) and
/// `timeout_error` (504) → `provider_overloaded` (retried); `invalid_request_error` (400) →
/// `provider_context_overflow` when it reports a too-long prompt, else `provider_http_error`;
/// `not_found_error` (404) → `provider_model_unavailable`; `authentication_error` (401),
/// `billing_error` (402), `permission_error` (403) and `request_too_large` (413) →
/// `provider_http_error`. An unknown type is `provider_error`. `raw` (the event's data) is
/// the detail. No HTTP status is recorded: the response itself was a 2xx.
pub(crate) fn error_object(error: Option<&Value>, raw: &[u8]) -> ProviderError {
    let kind = error.and_then(|e| e.get("type")).and_then(Value::as_str).unwrap_or("");
    let status = match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => {
            let head = String::from_utf8_lossy(&raw[..raw.len().min(500)]);
            return ProviderError::error(format!("upstream error: {head}"));
        }
    };
    let mut error = ProviderError::from_http_status(status, raw);
    error.http_status = None;
    error
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::provider::keys;

    fn message(content: Value, stop: &str) -> Vec<u8> {
        json!({"id":"msg_1","type":"message","role":"assistant","model":"m","content":content,
            "stop_reason":stop,"stop_sequence":null,
            "usage":{"input_tokens":11,"cache_creation_input_tokens":3,"cache_read_input_tokens":7,"output_tokens":5}})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn every_stop_reason() {
        for (word, stop) in [
            ("end_turn", StopReason::EndTurn),
            ("stop_sequence", StopReason::EndTurn),
            ("tool_use", StopReason::ToolUse),
            ("max_tokens", StopReason::OutputBudgetExhausted),
            ("refusal", StopReason::Refused),
            ("pause_turn", StopReason::Other("pause_turn".into())),
        ] {
            let r = body(&message(json!([{"type":"text","text":"hi"}]), word)).unwrap();
            assert_eq!(r.stop, stop, "{word}");
            assert_eq!(r.text.as_deref(), Some("hi"));
        }
    }

    #[test]
    fn usage_text_calls_and_native() {
        let content = json!([
            {"type":"thinking","thinking":"hmm","signature":"sig"},
            {"type":"text","text":"a"},
            {"type":"server_tool_use","id":"srv","name":"tool_search_tool_regex","input":{"pattern":"x"}},
            {"type":"tool_search_tool_result","tool_use_id":"srv","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"x"}]}},
            {"type":"text","text":"b"},
            {"type":"tool_use","id":"t1","name":"read","input":{"z":1,"a":[true,null]}},
            {"type":"redacted_thinking","data":"xyz"}
        ]);
        let r = body(&message(content.clone(), "tool_use")).unwrap();
        assert_eq!(r.text.as_deref(), Some("ab"));
        assert_eq!(
            r.tool_calls,
            vec![RawToolCall {
                id: "t1".into(),
                name: "read".into(),
                arguments: r#"{"a":[true,null],"z":1}"#.into()
            }]
        );
        let c = content.as_array().unwrap();
        assert_eq!(r.native, Some(json!([c[0], c[2], c[3], c[6]])));
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 11,
                output_tokens: 5,
                cache_read_input_tokens: 7,
                cache_creation_input_tokens: 3
            }
        );
        let r = body(&message(json!([]), "end_turn")).unwrap();
        assert_eq!((r.text, r.native), (None, None));
    }

    #[test]
    fn malformed_bodies_are_provider_errors() {
        for bad in [
            &b"not json"[..],
            br#"{"type":"message"}"#,
            br#"{"content":[{"type":"text"}],"stop_reason":"end_turn"}"#,
            br#"{"content":[{"text":"x"}],"stop_reason":"end_turn"}"#,
            br#"{"content":[{"type":"tool_use","name":"x","input":{}}],"stop_reason":"tool_use"}"#,
            br#"{"content":[{"type":"tool_use","id":"","name":"x","input":{}}],"stop_reason":"tool_use"}"#,
            br#"{"content":[{"type":"tool_use","id":"t","name":"","input":{}}],"stop_reason":"tool_use"}"#,
            br#"{"content":[],"stop_reason":null}"#,
        ] {
            let e = body(bad).unwrap_err();
            assert_eq!(e.key, keys::PROVIDER_ERROR, "{}", String::from_utf8_lossy(bad));
            assert!(!e.is_retryable());
        }
    }

    #[test]
    fn error_objects() {
        let of = |kind: &str, message: &str| {
            let v = json!({"type":"error","error":{"type":kind,"message":message}});
            error_object(v.get("error"), v.to_string().as_bytes())
        };
        for kind in ["overloaded_error", "rate_limit_error", "api_error", "timeout_error"] {
            let e = of(kind, "busy");
            assert_eq!(e.key, keys::PROVIDER_OVERLOADED, "{kind}");
            assert!(e.is_retryable());
            assert_eq!(e.http_status, None);
        }
        assert_eq!(
            of(
                "invalid_request_error",
                "prompt is too long: 210000 tokens > 200000 maximum"
            )
            .key,
            keys::PROVIDER_CONTEXT_OVERFLOW
        );
        assert_eq!(of("invalid_request_error", "bad").key, keys::PROVIDER_HTTP_ERROR);
        assert_eq!(of("authentication_error", "no").key, keys::PROVIDER_HTTP_ERROR);
        assert_eq!(of("not_found_error", "no").key, keys::PROVIDER_MODEL_UNAVAILABLE);
        assert_eq!(of("mystery_error", "?").key, keys::PROVIDER_ERROR);
        let e = body(br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#).unwrap_err();
        assert_eq!(e.key, keys::PROVIDER_OVERLOADED);
    }
}
