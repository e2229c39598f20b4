//! Canned Anthropic Messages replies: a message (as one JSON body or as its SSE event
//! sequence) and the error bodies the adapter must classify (providers.md §5.2, §8).
//!
//! ```
//! use nexus_fake_upstream::anthropic::{self, Message};
//! use serde_json::json;
//! let msg = Message::new("claude-sonnet-4-5")
//!     .thinking("Let me look.", "sig-1")
//!     .text("Reading the file.")
//!     .tool_use("toolu_1", "read", json!({"path": "README.md"}))
//!     .usage(120, 18)
//!     .cache(100, 20);
//! let body = msg.reply();            // 200, the whole message as JSON; stop_reason "tool_use"
//! let stream = msg.stream();         // 200, message_start … message_stop
//! let broken = msg.stream_then_error(3); // three events, then an `error` event (overloaded_error)
//! let busy = anthropic::overloaded();    // 529
//! ```

use serde_json::{Value, json};

use crate::{Reply, SseFrame, split_pieces};

/// Token counts as the Messages API reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// `input_tokens` (the uncached part of the prompt).
    pub input_tokens: u64,
    /// `output_tokens`.
    pub output_tokens: u64,
    /// `cache_read_input_tokens`.
    pub cache_read_input_tokens: u64,
    /// `cache_creation_input_tokens`.
    pub cache_creation_input_tokens: u64,
}

impl Usage {
    fn to_json(self, output_tokens: u64) -> Value {
        json!({
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "output_tokens": output_tokens,
        })
    }
}

#[derive(Debug, Clone)]
enum Block {
    Text(String),
    /// `tool_use` or `server_tool_use`: the input streams as `input_json_delta` pieces.
    ToolUse {
        kind: &'static str,
        id: String,
        name: String,
        input: Value,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    /// Sent whole, in the stream too (`content_block_start` carries it, no deltas).
    Whole(Value),
}

impl Block {
    fn to_json(&self) -> Value {
        match self {
            Self::Text(text) => json!({"type": "text", "text": text}),
            Self::ToolUse { kind, id, name, input } => json!({"type": kind, "id": id, "name": name, "input": input}),
            Self::Thinking { thinking, signature } => {
                json!({"type": "thinking", "thinking": thinking, "signature": signature})
            }
            Self::Whole(block) => block.clone(),
        }
    }
}

/// An assistant message, built block by block in the order the methods are called.
#[derive(Debug, Clone)]
pub struct Message {
    id: String,
    model: String,
    blocks: Vec<Block>,
    stop_reason: Option<String>,
    usage: Usage,
    pieces: usize,
}

impl Message {
    /// An empty message from `model`, id `msg_fake_01`, usage zero.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            id: "msg_fake_01".to_owned(),
            model: model.into(),
            blocks: Vec::new(),
            stop_reason: None,
            usage: Usage::default(),
            pieces: 3,
        }
    }

    /// Sets the message id.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// Appends a `text` block.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.blocks.push(Block::Text(text.into()));
        self
    }

    /// Appends a `tool_use` block (`input` is the parsed arguments object).
    pub fn tool_use(mut self, id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        self.blocks.push(Block::ToolUse {
            kind: "tool_use",
            id: id.into(),
            name: name.into(),
            input,
        });
        self
    }

    /// Appends a `thinking` block with its signature (a native block, replayed verbatim).
    pub fn thinking(mut self, thinking: impl Into<String>, signature: impl Into<String>) -> Self {
        self.blocks.push(Block::Thinking {
            thinking: thinking.into(),
            signature: signature.into(),
        });
        self
    }

    /// Appends a `redacted_thinking` block.
    pub fn redacted_thinking(self, data: impl Into<String>) -> Self {
        self.block(json!({"type": "redacted_thinking", "data": data.into()}))
    }

    /// Appends a `server_tool_use` block, e.g. `("srvtoolu_1", "tool_search_tool_regex",
    /// json!({"query": "weather"}))` (providers.md §5.3).
    pub fn server_tool_use(mut self, id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        self.blocks.push(Block::ToolUse {
            kind: "server_tool_use",
            id: id.into(),
            name: name.into(),
            input,
        });
        self
    }

    /// Appends a `tool_search_tool_result` answering `tool_use_id`, whose
    /// `tool_search_tool_search_result` references `tool_names` (`tool_reference` entries).
    pub fn tool_search_result(self, tool_use_id: impl Into<String>, tool_names: &[&str]) -> Self {
        let references: Vec<Value> = tool_names
            .iter()
            .map(|name| json!({"type": "tool_reference", "tool_name": name}))
            .collect();
        self.block(json!({
            "type": "tool_search_tool_result",
            "tool_use_id": tool_use_id.into(),
            "content": {"type": "tool_search_tool_search_result", "tool_references": references},
        }))
    }

    /// Appends any other content block, verbatim (streamed whole in `content_block_start`).
    pub fn block(mut self, block: Value) -> Self {
        self.blocks.push(Block::Whole(block));
        self
    }

    /// Sets `stop_reason` (`end_turn`, `tool_use`, `max_tokens`, `stop_sequence`, `refusal`,
    /// …). Default: `tool_use` when the message has a `tool_use` block, else `end_turn`.
    pub fn stop_reason(mut self, reason: impl Into<String>) -> Self {
        self.stop_reason = Some(reason.into());
        self
    }

    /// Sets `input_tokens` and `output_tokens`.
    pub fn usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage.input_tokens = input_tokens;
        self.usage.output_tokens = output_tokens;
        self
    }

    /// Sets `cache_read_input_tokens` and `cache_creation_input_tokens`.
    pub fn cache(mut self, read: u64, creation: u64) -> Self {
        self.usage.cache_read_input_tokens = read;
        self.usage.cache_creation_input_tokens = creation;
        self
    }

    /// Sets all four counts at once.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// Into how many deltas (at most) a text, thinking or tool input is split when streamed;
    /// default 3.
    pub fn pieces(mut self, n: usize) -> Self {
        self.pieces = n.max(1);
        self
    }

    fn effective_stop_reason(&self) -> String {
        self.stop_reason.clone().unwrap_or_else(|| {
            let calls = self
                .blocks
                .iter()
                .any(|b| matches!(b, Block::ToolUse { kind: "tool_use", .. }));
            if calls { "tool_use" } else { "end_turn" }.to_owned()
        })
    }

    /// The message as the non-streaming API returns it.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self.blocks.iter().map(Block::to_json).collect::<Vec<_>>(),
            "stop_reason": self.effective_stop_reason(),
            "stop_sequence": null,
            "usage": self.usage.to_json(self.usage.output_tokens),
        })
    }

    /// `200` with [`Message::to_json`].
    pub fn reply(&self) -> Reply {
        Reply::json(200, &self.to_json())
    }

    /// The SSE events of the streaming API: `message_start`, `ping`, per block
    /// `content_block_start`, its deltas (`text_delta`, `input_json_delta`, `thinking_delta`
    /// then `signature_delta`) and `content_block_stop`, then `message_delta` (stop reason,
    /// output tokens) and `message_stop`. As from the API, `message_start` carries the input
    /// and cache counts with `output_tokens` at most 1, and `message_delta` the final
    /// `output_tokens`. Blocks added with [`Message::block`], redacted thinking and tool-search
    /// results come whole in their `content_block_start`, with no delta.
    pub fn events(&self) -> Vec<SseFrame> {
        let mut out = Vec::new();
        let mut push = |name: &str, data: Value| out.push(SseFrame::json(Some(name), &data));
        push(
            "message_start",
            json!({"type": "message_start", "message": {
                "id": self.id,
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": self.usage.to_json(self.usage.output_tokens.min(1)),
            }}),
        );
        push("ping", json!({"type": "ping"}));
        for (index, block) in self.blocks.iter().enumerate() {
            let delta = |delta: Value| json!({"type": "content_block_delta", "index": index, "delta": delta});
            let start = match block {
                Block::Text(_) => json!({"type": "text", "text": ""}),
                Block::ToolUse { kind, id, name, .. } => json!({"type": kind, "id": id, "name": name, "input": {}}),
                Block::Thinking { .. } => json!({"type": "thinking", "thinking": "", "signature": ""}),
                Block::Whole(block) => block.clone(),
            };
            push(
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": start}),
            );
            match block {
                Block::Text(text) => {
                    for piece in split_pieces(text, self.pieces) {
                        push(
                            "content_block_delta",
                            delta(json!({"type": "text_delta", "text": piece})),
                        );
                    }
                }
                Block::ToolUse { input, .. } => {
                    for piece in split_pieces(&input.to_string(), self.pieces) {
                        let d = json!({"type": "input_json_delta", "partial_json": piece});
                        push("content_block_delta", delta(d));
                    }
                }
                Block::Thinking { thinking, signature } => {
                    for piece in split_pieces(thinking, self.pieces) {
                        push(
                            "content_block_delta",
                            delta(json!({"type": "thinking_delta", "thinking": piece})),
                        );
                    }
                    let d = json!({"type": "signature_delta", "signature": signature});
                    push("content_block_delta", delta(d));
                }
                Block::Whole(_) => {}
            }
            push(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            );
        }
        push(
            "message_delta",
            json!({
                "type": "message_delta",
                "delta": {"stop_reason": self.effective_stop_reason(), "stop_sequence": null},
                "usage": {"output_tokens": self.usage.output_tokens},
            }),
        );
        push("message_stop", json!({"type": "message_stop"}));
        out
    }

    /// `200` streaming [`Message::events`].
    pub fn stream(&self) -> Reply {
        Reply::sse(self.events())
    }

    /// `200` streaming the first `n` of [`Message::events`], then an `error` event
    /// (`overloaded_error`), then the end of the body: the overload that arrives after a 200.
    pub fn stream_then_error(&self, n: usize) -> Reply {
        let mut events = self.events();
        events.truncate(n);
        events.push(error_event("overloaded_error", "Overloaded"));
        Reply::sse(events)
    }
}

/// `{"type":"error","error":{"type":kind,"message":message}}`.
pub fn error_json(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// An error body under `status`.
pub fn error_reply(status: u16, kind: &str, message: &str) -> Reply {
    Reply::json(status, &error_json(kind, message))
}

/// An `error` SSE event, as sent inside a stream after a 200.
pub fn error_event(kind: &str, message: &str) -> SseFrame {
    SseFrame::json(Some("error"), &error_json(kind, message))
}

/// `529` `overloaded_error` (retried: `provider_overloaded`).
pub fn overloaded() -> Reply {
    error_reply(529, "overloaded_error", "Overloaded")
}

/// `429` `rate_limit_error` (retried); add [`Reply::retry_after`] as needed.
pub fn rate_limited() -> Reply {
    error_reply(
        429,
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit",
    )
}

/// `500` `api_error` (retried).
pub fn api_error() -> Reply {
    error_reply(500, "api_error", "Internal server error")
}

/// `400` `invalid_request_error` "prompt is too long: …" (`provider_context_overflow`).
pub fn prompt_too_long() -> Reply {
    error_reply(
        400,
        "invalid_request_error",
        "prompt is too long: 208315 tokens > 200000 maximum",
    )
}

/// `404` `not_found_error` for `model` (`provider_model_unavailable`).
pub fn model_not_found(model: &str) -> Reply {
    error_reply(404, "not_found_error", &format!("model: {model}"))
}
