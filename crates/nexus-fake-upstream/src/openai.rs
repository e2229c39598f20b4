//! Canned OpenAI Chat Completions replies: a completion (as one `chat.completion` body or as
//! its `chat.completion.chunk` SSE sequence ending `data: [DONE]`) and the error bodies the
//! adapter must classify (providers.md §6, §8).
//!
//! Every body and chunk built here validates against `CreateChatCompletionResponse` /
//! `CreateChatCompletionStreamResponse` of `contracts/reference/openai-chat-completions.schema.json`
//! (the crate's tests check each kind).
//!
//! ```
//! use nexus_fake_upstream::openai::{self, Completion};
//! let done = Completion::new("gpt-4.1")
//!     .content("Reading the file.")
//!     .tool_call("call_1", "read", r#"{"path":"README.md"}"#)
//!     .usage(120, 18)
//!     .cached_tokens(100);
//! let body = done.reply();    // 200, finish_reason "tool_calls"
//! let stream = done.stream(); // role chunk, content pieces, tool-call pieces, finish, usage, [DONE]
//! let full = openai::context_length_exceeded(); // 400
//! ```

use serde_json::{Value, json};

use crate::{Reply, SseFrame, split_pieces};

/// Token counts as Chat Completions reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// `prompt_tokens` (cached ones included).
    pub prompt_tokens: u64,
    /// `completion_tokens`.
    pub completion_tokens: u64,
    /// `prompt_tokens_details.cached_tokens`.
    pub cached_tokens: u64,
    /// `completion_tokens_details.reasoning_tokens`.
    pub reasoning_tokens: u64,
}

impl Usage {
    fn to_json(self) -> Value {
        json!({
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": self.reasoning_tokens,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        })
    }
}

#[derive(Debug, Clone)]
struct ToolCall {
    id: String,
    name: String,
    arguments: String,
}

/// An assistant completion (one choice), built by its parts.
#[derive(Debug, Clone)]
pub struct Completion {
    id: String,
    model: String,
    created: i64,
    content: Option<String>,
    refusal: Option<String>,
    tool_calls: Vec<ToolCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    pieces: usize,
}

impl Completion {
    /// An empty completion from `model`: id `chatcmpl-fake01`, a fixed `created`, usage zero.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            id: "chatcmpl-fake01".to_owned(),
            model: model.into(),
            created: 1_767_225_600,
            content: None,
            refusal: None,
            tool_calls: Vec::new(),
            finish_reason: None,
            usage: Some(Usage::default()),
            pieces: 3,
        }
    }

    /// Sets the completion id.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// Sets `created` (Unix seconds).
    pub fn created(mut self, created: i64) -> Self {
        self.created = created;
        self
    }

    /// Sets the message `content` (otherwise `null`).
    pub fn content(mut self, text: impl Into<String>) -> Self {
        self.content = Some(text.into());
        self
    }

    /// Sets the message `refusal` (otherwise `null`); pair it with `finish_reason
    /// ("content_filter")` or `"stop"` as the test needs.
    pub fn refusal(mut self, text: impl Into<String>) -> Self {
        self.refusal = Some(text.into());
        self
    }

    /// Appends a function tool call; `arguments` is the raw text the model produced (it may
    /// be malformed JSON on purpose).
    pub fn tool_call(mut self, id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        self.tool_calls.push(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        });
        self
    }

    /// Sets `finish_reason` (`stop`, `length`, `tool_calls`, `content_filter`). Default:
    /// `tool_calls` when there are calls, else `stop`.
    pub fn finish_reason(mut self, reason: impl Into<String>) -> Self {
        self.finish_reason = Some(reason.into());
        self
    }

    /// Sets `prompt_tokens` and `completion_tokens`.
    pub fn usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        let usage = self.usage.get_or_insert_with(Usage::default);
        usage.prompt_tokens = prompt_tokens;
        usage.completion_tokens = completion_tokens;
        self
    }

    /// Sets `prompt_tokens_details.cached_tokens`.
    pub fn cached_tokens(mut self, cached: u64) -> Self {
        self.usage.get_or_insert_with(Usage::default).cached_tokens = cached;
        self
    }

    /// Sets all the counts at once.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Leaves `usage` out of the body, and the usage chunk out of the stream (as servers do
    /// when the request has no `stream_options.include_usage`).
    pub fn no_usage(mut self) -> Self {
        self.usage = None;
        self
    }

    /// Into how many chunks (at most) the content, refusal and each call's arguments are
    /// split when streamed; default 3.
    pub fn pieces(mut self, n: usize) -> Self {
        self.pieces = n.max(1);
        self
    }

    fn effective_finish_reason(&self) -> String {
        self.finish_reason.clone().unwrap_or_else(|| {
            if self.tool_calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            }
            .to_owned()
        })
    }

    /// The `chat.completion` body.
    pub fn to_json(&self) -> Value {
        let mut message = json!({"role": "assistant", "content": self.content, "refusal": self.refusal});
        if !self.tool_calls.is_empty() {
            let calls: Vec<Value> = self
                .tool_calls
                .iter()
                .map(
                    |c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}),
                )
                .collect();
            message["tool_calls"] = Value::Array(calls);
        }
        message["annotations"] = json!([]);
        let mut body = json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": message,
                "logprobs": null,
                "finish_reason": self.effective_finish_reason(),
            }],
        });
        if let Some(usage) = self.usage {
            body["usage"] = usage.to_json();
        }
        body["service_tier"] = json!("default");
        body
    }

    /// `200` with [`Completion::to_json`].
    pub fn reply(&self) -> Reply {
        Reply::json(200, &self.to_json())
    }

    fn chunk(&self, choices: Value, usage: Option<Value>) -> Value {
        let mut chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "service_tier": "default",
            "choices": choices,
        });
        // With include_usage, the API sends `usage: null` on every chunk but the last.
        if self.usage.is_some() {
            chunk["usage"] = usage.unwrap_or(Value::Null);
        }
        chunk
    }

    fn delta_chunk(&self, delta: Value, finish_reason: Option<String>) -> Value {
        let choice = json!({"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason});
        self.chunk(json!([choice]), None)
    }

    /// The `chat.completion.chunk` objects of the stream, in order: the role chunk, the content
    /// (then refusal) pieces, per call a chunk with id and name then its argument pieces, the
    /// finish chunk (empty delta), and a final usage chunk with no choices.
    pub fn chunks(&self) -> Vec<Value> {
        let mut out = Vec::new();
        let first_content = self.content.as_ref().map(|_| "");
        out.push(self.delta_chunk(
            json!({"role": "assistant", "content": first_content, "refusal": null}),
            None,
        ));
        for piece in split_pieces(self.content.as_deref().unwrap_or(""), self.pieces) {
            out.push(self.delta_chunk(json!({"content": piece}), None));
        }
        for piece in split_pieces(self.refusal.as_deref().unwrap_or(""), self.pieces) {
            out.push(self.delta_chunk(json!({"refusal": piece}), None));
        }
        for (index, call) in self.tool_calls.iter().enumerate() {
            let head = json!({"index": index, "id": call.id, "type": "function",
                              "function": {"name": call.name, "arguments": ""}});
            out.push(self.delta_chunk(json!({"tool_calls": [head]}), None));
            for piece in split_pieces(&call.arguments, self.pieces) {
                let part = json!({"index": index, "function": {"arguments": piece}});
                out.push(self.delta_chunk(json!({"tool_calls": [part]}), None));
            }
        }
        out.push(self.delta_chunk(json!({}), Some(self.effective_finish_reason())));
        if let Some(usage) = self.usage {
            out.push(self.chunk(json!([]), Some(usage.to_json())));
        }
        out
    }

    /// [`Completion::chunks`] as `data:` frames, then `data: [DONE]`.
    pub fn events(&self) -> Vec<SseFrame> {
        let mut frames: Vec<SseFrame> = self.chunks().iter().map(|c| SseFrame::json(None, c)).collect();
        frames.push(SseFrame::data("[DONE]"));
        frames
    }

    /// `200` streaming [`Completion::events`].
    pub fn stream(&self) -> Reply {
        Reply::sse(self.events())
    }
}

/// `{"error":{"message","type","param","code"}}`.
pub fn error_json(message: &str, kind: &str, param: Option<&str>, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": param, "code": code}})
}

/// An error body under `status`.
pub fn error_reply(status: u16, message: &str, kind: &str, param: Option<&str>, code: Option<&str>) -> Reply {
    Reply::json(status, &error_json(message, kind, param, code))
}

/// `400` `context_length_exceeded` (`provider_context_overflow`).
pub fn context_length_exceeded() -> Reply {
    error_reply(
        400,
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. \
         Please reduce the length of the messages.",
        "invalid_request_error",
        Some("messages"),
        Some("context_length_exceeded"),
    )
}

/// `429` `rate_limit_exceeded` (retried); add [`Reply::retry_after`] as needed.
pub fn rate_limited() -> Reply {
    error_reply(
        429,
        "Rate limit reached for requests. Please try again in 1s.",
        "requests",
        None,
        Some("rate_limit_exceeded"),
    )
}

/// `500` `server_error` (retried).
pub fn server_error() -> Reply {
    error_reply(
        500,
        "The server had an error while processing your request. Sorry about that!",
        "server_error",
        None,
        None,
    )
}

/// `404` `model_not_found` for `model` (`provider_model_unavailable`).
pub fn model_not_found(model: &str) -> Reply {
    error_reply(
        404,
        &format!("The model `{model}` does not exist or you do not have access to it."),
        "invalid_request_error",
        None,
        Some("model_not_found"),
    )
}
