//! The neutral request and reply (providers.md §2–§3): what the kernel builds and reads,
//! independent of any provider's wire.
//!
//! Every type here is `Serialize + Deserialize`, so a request round-trips through JSON (the
//! sealed record stores `entries` this way, providers.md §4). Enums are tagged by a `"type"`
//! member in `snake_case`:
//!
//! ```json
//! {"type":"user","parts":[{"type":"text","text":"hi"}]}
//! {"type":"assistant","text":null,"tool_calls":[{"id":"c1","name":"read","arguments":"{}"}]}
//! {"type":"tool_result","call_id":"c1","name":"read","output":"ok","is_error":false}
//! {"type":"attachments","parts":[{"type":"image","upload":"0190…","media_type":"image/png"}]}
//! ```

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use uuid::Uuid;

/// One model request in neutral form (providers.md §3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The instance name (the part of the model ref before the first `/`).
    pub provider: String,
    /// The model (the rest of the ref). For `scripted` this is the script name.
    pub model: String,
    /// The system parts: `[instructions, skills block]`; empty parts are dropped by the kernel.
    #[serde(default)]
    pub system: Vec<String>,
    /// The conversation, in the order of providers.md §3.
    #[serde(default)]
    pub entries: Vec<Entry>,
    /// The projected tools list (declarations.md §10), in stored order.
    #[serde(default)]
    pub tools: Vec<Value>,
    /// The deferred entries that projection left out of `tools` (deferred omission), each in
    /// the projected form of `tools` and without `defer_loading`, in stored order. Only an
    /// adapter with provider-side tool search reads them (`anthropic` with
    /// `server_tool_search`, providers.md §5.3): it sends them after `tools` with
    /// `"defer_loading": true`. Every other adapter ignores them. Absent from the JSON (and
    /// from the canonical bytes) when empty; when present it sorts after `tools`, so the
    /// canonical body still begins with `entries`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools_deferred: Vec<Value>,
    /// Per-request options.
    #[serde(default)]
    pub options: RequestOptions,
}

impl ModelRequest {
    /// RFC 8785 canonical JSON of the request: the bytes of `serde_jcs::to_vec(self)`, written
    /// directly (see `canonical.rs`). This is exactly the `scripted` provider's encoded body, so
    /// the same request always gives the same bytes.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        crate::canonical::request(self).expect("a neutral request always serializes")
    }

    /// Decodes a request from JSON bytes (the inverse of [`ModelRequest::canonical_bytes`]).
    pub fn from_json_bytes(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }

    /// The number of [`Entry::Assistant`] entries (the `k` of `scripted`'s reply selection).
    pub fn assistant_count(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| matches!(e, Entry::Assistant { .. }))
            .count()
    }

    /// The first [`Entry::User`] entry's parts, if any.
    pub fn first_user(&self) -> Option<&[Part]> {
        self.entries.iter().find_map(|e| match e {
            Entry::User { parts } => Some(parts.as_slice()),
            _ => None,
        })
    }

    /// The last [`Entry::User`] entry's parts, if any.
    pub fn last_user(&self) -> Option<&[Part]> {
        self.entries.iter().rev().find_map(|e| match e {
            Entry::User { parts } => Some(parts.as_slice()),
            _ => None,
        })
    }

    /// The function names offered in `tools`: `function.name` for a nested function entry,
    /// else a top-level `name` (a shape-5 entry), in order.
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools
            .iter()
            .filter_map(|t| {
                t.get("function")
                    .and_then(|f| f.get("name"))
                    .or_else(|| t.get("name"))
                    .and_then(Value::as_str)
            })
            .collect()
    }
}

/// Per-request options (sealed as `request_options`, providers.md §4).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestOptions {
    /// The output budget for this request, as resolved.
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    /// The reasoning effort, as resolved.
    #[serde(default)]
    pub reasoning_effort: Option<String>,
}

/// One conversation entry (providers.md §3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    /// A user message: prompt, steer, mail, attachments.
    User {
        /// The message parts, in order.
        parts: Vec<Part>,
    },
    /// An earlier assistant reply.
    Assistant {
        /// The reply text, if any.
        #[serde(default)]
        text: Option<String>,
        /// The reply's tool calls, in call order.
        #[serde(default)]
        tool_calls: Vec<RawToolCall>,
        /// Provider blocks replayed verbatim (thinking signatures, server tool search).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        native: Option<Value>,
    },
    /// The result of one tool call (one per call, in call order: the pairing law).
    ToolResult {
        /// The call's id.
        call_id: String,
        /// The callable name the model used.
        name: String,
        /// The rendered output text.
        output: String,
        /// Whether the output is an error.
        #[serde(default)]
        is_error: bool,
    },
    /// The attachment-only message of a round.
    Attachments {
        /// The attached parts.
        parts: Vec<Part>,
    },
}

impl Entry {
    /// A user entry holding one text part.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::User {
            parts: vec![Part::text(text)],
        }
    }
}

/// One part of a user or attachments entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image upload, sent inline to capable models.
    Image {
        /// The upload's public id (bytes are never stored in the request).
        upload: Uuid,
        /// Its content type, such as `image/png`.
        media_type: String,
    },
    /// A PDF upload.
    Document {
        /// The upload's public id.
        upload: Uuid,
    },
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// The text of a text part.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text } => Some(text),
            _ => None,
        }
    }
}

/// The text parts of `parts` joined by `"\n"`.
pub fn parts_text(parts: &[Part]) -> String {
    parts.iter().filter_map(Part::as_text).collect::<Vec<_>>().join("\n")
}

/// One tool call as the model produced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawToolCall {
    /// The call id.
    pub id: String,
    /// The callable name.
    pub name: String,
    /// The raw JSON text of the arguments (may be malformed: the kernel judges it).
    pub arguments: String,
}

/// One model reply (providers.md §2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelReply {
    /// The reply text, if any.
    #[serde(default)]
    pub text: Option<String>,
    /// The tool calls, in order.
    #[serde(default)]
    pub tool_calls: Vec<RawToolCall>,
    /// Why the model stopped.
    pub stop: StopReason,
    /// Token usage.
    #[serde(default)]
    pub usage: Usage,
    /// Provider blocks the assistant entry stores and later requests replay verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native: Option<Value>,
}

/// Token usage of one reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache (Anthropic
    /// `cache_read_input_tokens`, OpenAI `prompt_tokens_details.cached_tokens`).
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the prompt cache (Anthropic `cache_creation_input_tokens`).
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
}

/// Why the model stopped. Serialized as its [`StopReason::as_str`] word.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// `end_turn`.
    EndTurn,
    /// `tool_use`.
    ToolUse,
    /// `output_budget_exhausted` (a `max_tokens` / `length` stop).
    OutputBudgetExhausted,
    /// `refused`.
    Refused,
    /// Any other provider word, kept verbatim.
    Other(String),
}

impl StopReason {
    /// The stored word: `end_turn`, `tool_use`, `output_budget_exhausted`, `refused`, or the
    /// other word verbatim.
    pub fn as_str(&self) -> &str {
        match self {
            Self::EndTurn => "end_turn",
            Self::ToolUse => "tool_use",
            Self::OutputBudgetExhausted => "output_budget_exhausted",
            Self::Refused => "refused",
            Self::Other(s) => s,
        }
    }

    /// The inverse of [`StopReason::as_str`].
    pub fn from_word(word: &str) -> Self {
        match word {
            "end_turn" => Self::EndTurn,
            "tool_use" => Self::ToolUse,
            "output_budget_exhausted" => Self::OutputBudgetExhausted,
            "refused" => Self::Refused,
            other => Self::Other(other.to_string()),
        }
    }
}

impl Serialize for StopReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let word = String::deserialize(deserializer)?;
        Ok(Self::from_word(&word))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> ModelRequest {
        ModelRequest {
            provider: "scripted".into(),
            model: "demo".into(),
            system: vec!["Be brief.".into()],
            entries: vec![
                Entry::user_text("hello"),
                Entry::Assistant {
                    text: Some("reading".into()),
                    tool_calls: vec![RawToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: r#"{"path":"a"}"#.into(),
                    }],
                    native: None,
                },
                Entry::ToolResult {
                    call_id: "c1".into(),
                    name: "read".into(),
                    output: "ok".into(),
                    is_error: false,
                },
                Entry::Attachments {
                    parts: vec![
                        Part::Image {
                            upload: Uuid::nil(),
                            media_type: "image/png".into(),
                        },
                        Part::Document { upload: Uuid::nil() },
                    ],
                },
            ],
            tools_deferred: vec![],
            tools: vec![json!({"type":"function","function":{"name":"read","strict":false}})],
            options: RequestOptions {
                max_output_tokens: Some(100),
                reasoning_effort: None,
            },
        }
    }

    #[test]
    fn request_round_trips_through_json() {
        let req = sample();
        let text = serde_json::to_string(&req).unwrap();
        let back: ModelRequest = serde_json::from_str(&text).unwrap();
        assert_eq!(back, req);
        let canon = ModelRequest::from_json_bytes(&req.canonical_bytes()).unwrap();
        assert_eq!(canon, req);
    }

    #[test]
    fn wire_shape_is_tagged() {
        let v = serde_json::to_value(sample()).unwrap();
        assert_eq!(
            v["entries"][0],
            json!({"type":"user","parts":[{"type":"text","text":"hello"}]})
        );
        assert_eq!(v["entries"][1]["type"], "assistant");
        assert!(v["entries"][1].get("native").is_none());
        assert_eq!(v["entries"][2]["type"], "tool_result");
        assert_eq!(
            v["entries"][3]["parts"][1],
            json!({"type":"document","upload":Uuid::nil()})
        );
    }

    #[test]
    fn canonical_bytes_are_sorted_and_stable() {
        let a = sample().canonical_bytes();
        assert_eq!(a, sample().canonical_bytes());
        let text = String::from_utf8(a).unwrap();
        assert!(text.starts_with(r#"{"entries":"#), "{text}");
    }

    #[test]
    fn stop_reason_words() {
        for s in [
            StopReason::EndTurn,
            StopReason::ToolUse,
            StopReason::OutputBudgetExhausted,
            StopReason::Refused,
            StopReason::Other("pause_turn".into()),
        ] {
            let v = serde_json::to_value(&s).unwrap();
            assert_eq!(v, json!(s.as_str()));
            assert_eq!(serde_json::from_value::<StopReason>(v).unwrap(), s);
        }
    }

    #[test]
    fn helpers() {
        let req = sample();
        assert_eq!(req.assistant_count(), 1);
        assert_eq!(req.tool_names(), vec!["read"]);
        assert_eq!(parts_text(req.first_user().unwrap()), "hello");
    }
}
