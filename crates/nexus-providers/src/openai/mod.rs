//! `openai` (providers.md §6): Chat Completions, and every server that speaks its wire (the
//! `base_url` is configurable).
//!
//! - `encode` ([`encode`]) gives `POST {base_url}/chat/completions` with `content-type` and the
//!   instance's `extra_headers` (never the key: `http.rs` adds `Authorization: Bearer <key>` at
//!   send time). The body's members, in this order: `model`, `tools` (omitted when empty),
//!   `messages`, `max_completion_tokens` or `max_tokens` (when the request has a budget),
//!   `reasoning_effort` (when set), `parallel_tool_calls` (when configured), `stream`, and,
//!   when streaming, `stream_options: {"include_usage": true}` — without it a streamed reply
//!   carries no token usage.
//! - `send` POSTs the sealed bytes once under the per-attempt timeout and reads the reply: a
//!   server-sent event stream ([`stream`]) or one JSON completion ([`decode`]). Both give the
//!   same [`ModelReply`] for the same completion.
//!
//! **What is cached** ([`cache`]): the bytes of a `tools` list, reused while a request's tools
//! are identical member for member, and each chain's body up to the end of its last message,
//! with the SHA-256 state after it, reused while a request extends it. So a round costs the
//! new messages and a copy, not the whole history and tool list again; the bytes are exactly
//! those of an uncached encode.

mod cache;
mod decode;
mod encode;
mod stream;

use crate::config::InstanceConfig;
use crate::http::{Credential, Transport};
use crate::neutral::{ModelReply, ModelRequest};
use crate::provider::{
    BlobReader, Continues, DeltaSink, EncodedRequest, ModelCapabilities, Provider, ProviderError, SendFuture,
};

use cache::Cache;
use encode::Layout;

/// Decodes one non-streaming Chat Completions reply body (`choices[0].message`, its
/// `finish_reason` and `usage`). A body `{"error": …}` is classified like an HTTP error; any
/// other body that is not a completion is `provider_error`.
pub fn decode_completion(body: &[u8]) -> Result<ModelReply, ProviderError> {
    decode::completion(body)
}

/// Decodes one streamed Chat Completions reply whose server-sent event body is already in
/// memory, arriving in `chunks` (any split gives the same reply), exactly as `send` reads a
/// streaming response. Text deltas are dropped.
pub fn decode_event_stream(chunks: &[&[u8]]) -> Result<ModelReply, ProviderError> {
    crate::http::decode_event_body(chunks, |events| async move {
        stream::assemble(events, &crate::provider::NoDeltas).await
    })
}

/// The `openai` adapter over one configured instance.
#[derive(Debug)]
pub struct OpenAi {
    config: InstanceConfig,
    transport: Transport,
    layout: Layout,
    cache: Cache,
}

impl OpenAi {
    /// An adapter for `config` (whose `kind` is `openai`).
    pub fn new(config: InstanceConfig) -> Self {
        let credential = Credential {
            env: config.api_key_env.clone(),
            header: "authorization",
        };
        let transport = Transport::new(credential, config.request_timeout());
        let layout = Layout::of(&config);
        Self {
            config,
            transport,
            layout,
            cache: Cache::default(),
        }
    }

    async fn reply(&self, enc: &EncodedRequest, deltas: &dyn DeltaSink) -> Result<ModelReply, ProviderError> {
        let response = self.transport.post(enc).await?;
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        // The reply's content type decides; a server that sends neither kind is read as what
        // the sealed body asked for.
        let streamed = if content_type.contains("event-stream") {
            true
        } else if content_type.contains("json") {
            false
        } else {
            encode::asks_to_stream(&enc.body)
        };
        if streamed {
            stream::assemble(Transport::events(response), deltas).await
        } else {
            decode::completion(&Transport::body(response).await?)
        }
    }
}

impl Provider for OpenAi {
    fn kind(&self) -> &'static str {
        "openai"
    }

    fn capabilities(&self, model: &str) -> ModelCapabilities {
        self.config.capabilities(model)
    }

    fn encode(&self, req: &ModelRequest, blobs: &dyn BlobReader) -> Result<EncodedRequest, ProviderError> {
        self.encode_continuing(req, blobs, None)
    }

    fn encode_continuing(
        &self,
        req: &ModelRequest,
        blobs: &dyn BlobReader,
        prior: Option<Continues>,
    ) -> Result<EncodedRequest, ProviderError> {
        let (body, body_sha256, tools, chain) = self.cache.encode(&self.layout, req, blobs, prior)?;
        Ok(EncodedRequest {
            url: self.layout.url.clone(),
            headers: self.layout.headers.clone(),
            body,
            body_sha256,
            tools,
            chain,
        })
    }

    fn send<'a>(&'a self, enc: &'a EncodedRequest, deltas: &'a dyn DeltaSink) -> SendFuture<'a> {
        Box::pin(self.transport.attempt(self.reply(enc, deltas)))
    }

    fn max_attempts(&self) -> Option<u32> {
        Some(self.config.max_attempts)
    }
}
