//! `anthropic`: the Messages API (providers.md §5).
//!
//! - `encode` (`encode.rs`, `tools.rs`, `messages.rs`) gives `POST {base_url}/v1/messages` with
//!   `content-type: application/json`, `anthropic-version: 2023-06-01`, `anthropic-beta` when
//!   `beta_headers` is set, then `extra_headers` (in name order), and never the key: `send` adds
//!   `x-api-key`, read from `api_key_env` at that moment (`http.rs`).
//! - `send` posts the sealed bytes once, under the per-attempt timeout, and reads the reply:
//!   server-sent events when the response is `text/event-stream` (`stream.rs`, text deltas
//!   going to the [`DeltaSink`] as they arrive), else a JSON body (`decode.rs`). Both give the
//!   same [`crate::ModelReply`] for the same message.
//! - Server-side tool search (§5.3) applies when the instance sets `server_tool_search` and the
//!   model's capabilities say `native_tool_search`. It reads the deferred entries from
//!   [`ModelRequest::tools_deferred`], which the kernel fills; the provider's own beta header, if
//!   it needs one, goes in `beta_headers`.

mod decode;
mod encode;
mod json;
mod messages;
mod stream;
mod tools;

use crate::config::InstanceConfig;
use crate::http::{Credential, Transport};
use crate::neutral::ModelRequest;
use crate::provider::{
    BlobReader, Continues, DeltaSink, EncodedRequest, ModelCapabilities, Provider, ProviderError, SendFuture,
};
use encode::Encoder;

/// The `anthropic-version` sent with every request.
pub const API_VERSION: &str = "2023-06-01";

/// The `anthropic` adapter over one configured instance.
#[derive(Debug)]
pub struct Anthropic {
    config: InstanceConfig,
    transport: Transport,
    url: String,
    headers: Vec<(String, String)>,
    encoder: Encoder,
}

impl Anthropic {
    /// An adapter for `config` (whose `kind` is `anthropic`).
    pub fn new(config: InstanceConfig) -> Self {
        let credential = Credential {
            env: config.api_key_env.clone(),
            header: "x-api-key",
        };
        let transport = Transport::new(credential, config.request_timeout());
        let mut headers = vec![
            ("content-type".to_string(), "application/json".to_string()),
            ("anthropic-version".to_string(), API_VERSION.to_string()),
        ];
        if let Some(beta) = config.beta_headers.as_deref().filter(|b| !b.trim().is_empty()) {
            headers.push(("anthropic-beta".to_string(), beta.to_string()));
        }
        headers.extend(config.extra_headers.iter().map(|(k, v)| (k.clone(), v.clone())));
        Self {
            url: format!("{}/v1/messages", config.base_url()),
            config,
            transport,
            headers,
            encoder: Encoder::default(),
        }
    }
}

impl Anthropic {
    /// The reply of a non-streaming Messages body (what `send` does with a JSON response): a
    /// malformed body is `provider_error`, an `error` object is classified (providers.md §8).
    pub fn decode_body(body: &[u8]) -> Result<crate::ModelReply, ProviderError> {
        decode::body(body)
    }

    /// The reply of a streamed Messages body already in memory, arriving in `chunks` (any
    /// split gives the same reply), exactly as `send` reads a `text/event-stream` response.
    /// Text deltas are dropped.
    pub fn decode_event_stream(chunks: &[&[u8]]) -> Result<crate::ModelReply, ProviderError> {
        crate::http::decode_event_body(chunks, |events| async move {
            stream::read(events, &crate::provider::NoDeltas).await
        })
    }
}

impl Provider for Anthropic {
    fn kind(&self) -> &'static str {
        "anthropic"
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
        let (body, body_sha256, tools, chain) = self.encoder.body(req, blobs, &self.config, prior)?;
        Ok(EncodedRequest {
            url: self.url.clone(),
            headers: self.headers.clone(),
            body,
            body_sha256,
            tools,
            chain,
        })
    }

    fn send<'a>(&'a self, enc: &'a EncodedRequest, deltas: &'a dyn DeltaSink) -> SendFuture<'a> {
        Box::pin(self.transport.attempt(async move {
            let response = self.transport.post(enc).await?;
            let streamed = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
            if streamed {
                stream::read(Transport::events(response), deltas).await
            } else {
                Self::decode_body(&Transport::body(response).await?)
            }
        }))
    }

    fn max_attempts(&self) -> Option<u32> {
        Some(self.config.max_attempts)
    }
}
