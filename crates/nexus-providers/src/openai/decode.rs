//! A non-streaming reply (providers.md §6), and what a streamed one shares with it: the stop
//! words, the usage and the classification of an `{"error": …}` body.
//!
//! `choices[0].message` gives the reply: `content` → text, `tool_calls` → [`RawToolCall`]s with
//! the model's raw `arguments`, `finish_reason` → [`StopReason`] (`stop` → end_turn,
//! `tool_calls` → tool_use, `length` → output_budget_exhausted, `content_filter` → refused,
//! any other word kept). A `refusal` (structured outputs) is a refused reply whose text is the
//! refusal when there is no content. A missing `finish_reason` (some compatible servers) is
//! tool_use when there are calls, else end_turn. A call without an id (its result could not
//! be paired with it) or without a name is `provider_error`. Usage: `prompt_tokens` → input,
//! `completion_tokens` → output, `prompt_tokens_details.cached_tokens` → cache reads and
//! `prompt_tokens_details.cache_write_tokens` → cache writes.

use serde::Deserialize;
use serde_json::Value;

use crate::neutral::{ModelReply, RawToolCall, StopReason, Usage};
use crate::provider::ProviderError;

/// A completion, as far as it is read.
#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<Message>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCall>>,
}

#[derive(Deserialize)]
struct ToolCall {
    id: String,
    function: Function,
}

#[derive(Deserialize)]
struct Function {
    name: String,
    #[serde(default)]
    arguments: String,
}

/// `usage` of a completion or of a stream's last chunk.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
    #[serde(default)]
    cache_write_tokens: Option<u64>,
}

impl WireUsage {
    pub(super) fn neutral(self) -> Usage {
        let details = self.prompt_tokens_details.unwrap_or_default();
        Usage {
            input_tokens: self.prompt_tokens.unwrap_or(0),
            output_tokens: self.completion_tokens.unwrap_or(0),
            cache_read_input_tokens: details.cached_tokens.unwrap_or(0),
            cache_creation_input_tokens: details.cache_write_tokens.unwrap_or(0),
        }
    }
}

/// Decodes a whole reply body.
pub(super) fn completion(body: &[u8]) -> Result<ModelReply, ProviderError> {
    let completion: Completion = serde_json::from_slice(body).map_err(|e| malformed(&e.to_string(), body))?;
    if let Some(error) = completion.error.filter(|e| !e.is_null()) {
        return Err(classify_error(&error));
    }
    let choice = completion
        .choices
        .and_then(|c| c.into_iter().next())
        .ok_or_else(|| malformed("no choices", body))?;
    let message = choice
        .message
        .ok_or_else(|| malformed("choices[0] has no message", body))?;
    let calls = message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .map(|c| RawToolCall {
            id: c.id,
            name: c.function.name,
            arguments: c.function.arguments,
        })
        .collect::<Vec<_>>();
    if let Some(why) = incomplete_call(&calls) {
        return Err(malformed(&why, body));
    }
    Ok(reply(
        message.content,
        message.refusal,
        calls,
        choice.finish_reason.as_deref(),
        completion.usage.unwrap_or_default().neutral(),
    ))
}

/// Why a call cannot be used (no id to pair its result with, or no name), if so.
pub(super) fn incomplete_call(calls: &[RawToolCall]) -> Option<String> {
    calls.iter().enumerate().find_map(|(i, c)| {
        if c.id.is_empty() {
            Some(format!("tool call {i} has no id"))
        } else if c.name.is_empty() {
            Some(format!("tool call {i} ({}) has no name", c.id))
        } else {
            None
        }
    })
}

/// The reply from its read parts (shared with the stream assembler, so both agree).
pub(super) fn reply(
    content: Option<String>,
    refusal: Option<String>,
    tool_calls: Vec<RawToolCall>,
    finish_reason: Option<&str>,
    usage: Usage,
) -> ModelReply {
    let refusal = refusal.filter(|r| !r.is_empty());
    let mut stop = match finish_reason {
        Some("stop") => StopReason::EndTurn,
        Some("tool_calls") => StopReason::ToolUse,
        Some("length") => StopReason::OutputBudgetExhausted,
        Some("content_filter") => StopReason::Refused,
        Some(other) => StopReason::Other(other.to_string()),
        None if tool_calls.is_empty() => StopReason::EndTurn,
        None => StopReason::ToolUse,
    };
    if refusal.is_some() && stop == StopReason::EndTurn {
        stop = StopReason::Refused;
    }
    let text = content.filter(|c| !c.is_empty()).or(refusal);
    ModelReply {
        text,
        tool_calls,
        stop,
        usage,
        native: None,
    }
}

/// Classifies the `error` object of a 2xx body or of a stream chunk, as its HTTP status would
/// be (providers.md §8): a context that is too long → context overflow; a server, overload or
/// rate error (by type, code or an HTTP status in `code`/`status`) → overloaded; an unknown
/// model → model unavailable; anything else → `provider_error`. The detail is the object's
/// first 500 bytes.
pub(super) fn classify_error(error: &Value) -> ProviderError {
    let error = match error.get("error") {
        Some(inner) if inner.is_object() => inner,
        _ => error,
    };
    let text = error.to_string();
    let detail = format!("upstream error: {}", head(&text, 500));
    let word = |k: &str| error.get(k).and_then(Value::as_str).unwrap_or("").to_ascii_lowercase();
    let status = ["code", "status"].iter().find_map(|k| match error.get(*k) {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.parse::<u64>().ok(),
        _ => None,
    });
    let (kind, code) = (word("type"), word("code"));
    let words = [kind.as_str(), code.as_str()];
    let message = word("message");
    if words.contains(&"context_length_exceeded") || message.contains("maximum context length") {
        return ProviderError::context_overflow(Some(detail), None);
    }
    let overloaded = [
        "server_error",
        "rate_limit_exceeded",
        "rate_limit_error",
        "overloaded",
        "overloaded_error",
        "service_unavailable",
        "internal_error",
        "timeout",
    ];
    if words.iter().any(|w| overloaded.contains(w)) || matches!(status, Some(429 | 500 | 502 | 503 | 504 | 529)) {
        return ProviderError::overloaded(Some(detail), None);
    }
    if words.contains(&"model_not_found") || status == Some(404) {
        return ProviderError::model_unavailable(Some(detail), None);
    }
    ProviderError::error(detail)
}

/// `provider_error` for a body that is not a completion, with the body's head.
pub(super) fn malformed(why: &str, body: &[u8]) -> ProviderError {
    let body = String::from_utf8_lossy(body);
    ProviderError::error(format!(
        "malformed_reply: {why}; the body begins {:?}",
        head(&body, 200)
    ))
}

/// At most `max` bytes of `s`, cut at a character boundary.
fn head(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::keys;
    use serde_json::json;

    #[test]
    fn error_objects() {
        let key = |v: Value| classify_error(&v).key;
        assert_eq!(
            key(json!({"error":{"message":"m","type":"invalid_request_error","code":"context_length_exceeded"}})),
            keys::PROVIDER_CONTEXT_OVERFLOW
        );
        assert_eq!(
            key(json!({"message":"This model's maximum context length is 8192 tokens"})),
            keys::PROVIDER_CONTEXT_OVERFLOW
        );
        assert_eq!(key(json!({"error":{"type":"server_error"}})), keys::PROVIDER_OVERLOADED);
        assert_eq!(key(json!({"code":"rate_limit_exceeded"})), keys::PROVIDER_OVERLOADED);
        assert_eq!(key(json!({"message":"busy","code":503})), keys::PROVIDER_OVERLOADED);
        assert_eq!(key(json!({"code":"model_not_found"})), keys::PROVIDER_MODEL_UNAVAILABLE);
        assert_eq!(key(json!({"type":"invalid_request_error"})), keys::PROVIDER_ERROR);
        assert_eq!(key(json!("just text")), keys::PROVIDER_ERROR);
        let long = classify_error(&json!({"message":"é".repeat(400)}));
        assert!(long.detail.unwrap().len() <= 500 + "upstream error: ".len());
    }

    #[test]
    fn refusals_and_missing_finish_reasons() {
        let r = reply(None, Some("no".into()), vec![], Some("stop"), Usage::default());
        assert_eq!((r.text.as_deref(), r.stop), (Some("no"), StopReason::Refused));
        let r = reply(Some(String::new()), None, vec![], None, Usage::default());
        assert_eq!((r.text, r.stop), (None, StopReason::EndTurn));
        let call = RawToolCall {
            id: "c".into(),
            name: "n".into(),
            arguments: "{}".into(),
        };
        assert_eq!(
            reply(None, None, vec![call], None, Usage::default()).stop,
            StopReason::ToolUse
        );
        assert_eq!(
            reply(None, None, vec![], Some("function_call"), Usage::default()).stop,
            StopReason::Other("function_call".into())
        );
    }

    #[test]
    fn malformed_bodies() {
        for body in [
            &b"not json"[..],
            b"{}",
            b"{\"choices\":[]}",
            b"{\"choices\":[{}]}",
            b"[1]",
        ] {
            assert_eq!(completion(body).unwrap_err().key, keys::PROVIDER_ERROR, "{body:?}");
        }
    }
}
