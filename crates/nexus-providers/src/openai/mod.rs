//! `openai` (providers.md §6). UNDER CONSTRUCTION: the encoder and decoder land next.

use crate::config::InstanceConfig;
use crate::http::{Credential, Transport};
use crate::neutral::ModelRequest;
use crate::provider::{BlobReader, DeltaSink, EncodedRequest, ModelCapabilities, Provider, ProviderError, SendFuture};

/// The `openai` adapter over one configured instance.
#[derive(Debug)]
pub struct OpenAi {
    config: InstanceConfig,
    transport: Transport,
}

impl OpenAi {
    /// An adapter for `config` (whose `kind` is `openai`).
    pub fn new(config: InstanceConfig) -> Self {
        let credential = Credential {
            env: config.api_key_env.clone(),
            header: "authorization",
        };
        let transport = Transport::new(credential, config.request_timeout());
        Self { config, transport }
    }
}

impl Provider for OpenAi {
    fn kind(&self) -> &'static str {
        "openai"
    }

    fn capabilities(&self, model: &str) -> ModelCapabilities {
        self.config.capabilities(model)
    }

    fn encode(&self, _req: &ModelRequest, _blobs: &dyn BlobReader) -> Result<EncodedRequest, ProviderError> {
        Err(ProviderError::error("the openai encoder is not built yet"))
    }

    fn send<'a>(&'a self, _enc: &'a EncodedRequest, _deltas: &'a dyn DeltaSink) -> SendFuture<'a> {
        let _ = &self.transport;
        Box::pin(async { Err(ProviderError::error("the openai adapter is not built yet")) })
    }

    fn max_attempts(&self) -> Option<u32> {
        Some(self.config.max_attempts)
    }
}
