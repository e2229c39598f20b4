//! The `Provider` trait and what crosses it (providers.md §2, §8).

use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use uuid::Uuid;

use crate::neutral::{ModelReply, ModelRequest};

/// The future [`Provider::send`] returns (boxed so the trait stays object-safe).
pub type SendFuture<'a> = Pin<Box<dyn Future<Output = Result<ModelReply, ProviderError>> + Send + 'a>>;

/// Upload bytes an encoder may inline (image and PDF parts, providers.md §5.1, §6). The kernel
/// reads the bytes of every upload a request names before encoding, so `encode` stays pure.
pub trait BlobReader: Sync {
    /// The bytes of `upload`, if known.
    fn bytes(&self, upload: Uuid) -> Option<&[u8]>;
}

/// A [`BlobReader`] that knows no upload (requests without media parts).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoBlobs;

impl BlobReader for NoBlobs {
    fn bytes(&self, _upload: Uuid) -> Option<&[u8]> {
        None
    }
}

impl BlobReader for std::collections::HashMap<Uuid, Vec<u8>> {
    fn bytes(&self, upload: Uuid) -> Option<&[u8]> {
        self.get(&upload).map(Vec::as_slice)
    }
}

/// Where a streaming reply's text goes while it arrives (the run's `model_delta` frames,
/// runs.md §11). Deltas are never stored: the reply [`Provider::send`] returns is the record.
pub trait DeltaSink: Send + Sync {
    /// One piece of assistant text, in arrival order.
    fn text(&self, delta: &str);
}

/// A [`DeltaSink`] that drops every delta.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoDeltas;

impl DeltaSink for NoDeltas {
    fn text(&self, _delta: &str) {}
}

/// One model adapter. The kernel holds it as `Arc<dyn Provider>` and never branches on `kind`.
pub trait Provider: Send + Sync + 'static {
    /// `"anthropic"`, `"openai"` or `"scripted"`.
    fn kind(&self) -> &'static str;

    /// What `model` accepts: window, output budget, inline media types, tools.
    fn capabilities(&self, model: &str) -> ModelCapabilities;

    /// Encodes `req` into the exact bytes that will be sent. Pure and deterministic: the same
    /// request and blobs always give the same bytes. Never adds secrets (`send` does).
    fn encode(&self, req: &ModelRequest, blobs: &dyn BlobReader) -> Result<EncodedRequest, ProviderError>;

    /// [`Provider::encode`] of a request that continues an earlier one, on the caller's word
    /// (`prior`, see [`Continues`]): the same bytes, but an adapter that kept the earlier
    /// encode's work may resume from it without comparing the earlier entries with what it
    /// kept. The default ignores `prior`.
    fn encode_continuing(
        &self,
        req: &ModelRequest,
        blobs: &dyn BlobReader,
        prior: Option<Continues>,
    ) -> Result<EncodedRequest, ProviderError> {
        let _ = prior;
        self.encode(req, blobs)
    }

    /// Sends the sealed bytes once (the kernel retries per [`ProviderError::is_retryable`]),
    /// adding the key read from the environment now. A streaming reply's text goes to
    /// `deltas` as it arrives. Dropping the future aborts the request (a run's stop).
    fn send<'a>(&'a self, enc: &'a EncodedRequest, deltas: &'a dyn DeltaSink) -> SendFuture<'a>;

    /// The attempt budget configured for this instance (`max_attempts`), if any; the kernel's
    /// default applies otherwise.
    fn max_attempts(&self) -> Option<u32> {
        None
    }
}

/// The identity of one encode ([`EncodedRequest::chain`]), unique within the process: what a
/// caller hands back in [`Continues`] when its next request extends that encode's entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChainMark(u64);

impl ChainMark {
    /// A mark no earlier encode of this process was given.
    pub(crate) fn fresh() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// The caller's word that a request continues an earlier one: its first `entries` entries are
/// exactly, in order, the entries of the request whose encode was marked `mark`. The kernel
/// gives it for a round whose request starts from its predecessor's sealed entries (kept in
/// memory with the predecessor's mark). An adapter resumes from the work it kept for `mark`
/// only if that work covers at most `entries` entries and its head (model, tools, system) is
/// this request's; otherwise it compares as without the word. A wrong word gives a body that
/// is not this request's encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Continues {
    /// The earlier encode.
    pub mark: ChainMark,
    /// How many leading entries of the request are that encode's entries.
    pub entries: usize,
}

/// What one model accepts (providers.md §2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelCapabilities {
    /// The context window in tokens.
    pub context_window: u32,
    /// The largest output budget in tokens.
    pub max_output_tokens: u32,
    /// The media types sent inline (others become index lines, runs.md §8).
    pub media: BTreeSet<String>,
    /// Whether the model takes a tools list.
    pub tools: bool,
    /// Whether the model supports provider-side tool search (providers.md §5.3).
    pub native_tool_search: bool,
}

impl ModelCapabilities {
    /// Whether `content_type` is sent inline to this model.
    pub fn accepts_media(&self, content_type: &str) -> bool {
        self.media.contains(content_type)
    }
}

/// What an HTTP adapter's encoder gives: the body, its SHA-256, where the tools array sits in it
/// (see [`EncodedRequest::tools`]) and the mark of the kept work (see [`Continues`]).
pub(crate) type BodyParts = (Vec<u8>, [u8; 32], Option<std::ops::Range<usize>>, Option<ChainMark>);

/// The exact request a provider sends (sealed before the first attempt, providers.md §4). Two
/// are equal when they send the same thing: the adapter's [`ChainMark`] is not compared.
#[derive(Debug, Clone)]
pub struct EncodedRequest {
    /// Where the request goes.
    pub url: String,
    /// Headers, with no secrets.
    pub headers: Vec<(String, String)>,
    /// The exact body bytes.
    pub body: Vec<u8>,
    /// SHA-256 of `body`.
    pub body_sha256: [u8; 32],
    /// Where the tools bytes sit inside `body` (`None` when no tools were offered): the
    /// per-round cache report compares their digest from round to round.
    pub tools: Option<std::ops::Range<usize>>,
    /// This encode's mark, when the adapter kept work a continuation can resume from (see
    /// [`Continues`]).
    pub chain: Option<ChainMark>,
}

impl PartialEq for EncodedRequest {
    fn eq(&self, other: &Self) -> bool {
        self.url == other.url
            && self.headers == other.headers
            && self.body_sha256 == other.body_sha256
            && self.body == other.body
            && self.tools == other.tools
    }
}

impl Eq for EncodedRequest {}

impl EncodedRequest {
    /// Builds a request, computing `body_sha256` from `body`.
    pub fn new(url: impl Into<String>, headers: Vec<(String, String)>, body: Vec<u8>) -> Self {
        let body_sha256 = Sha256::digest(&body).into();
        Self {
            url: url.into(),
            headers,
            body,
            body_sha256,
            tools: None,
            chain: None,
        }
    }

    /// Records where the tools bytes sit inside the body.
    pub fn with_tools(mut self, range: std::ops::Range<usize>) -> Self {
        debug_assert!(range.end <= self.body.len());
        self.tools = Some(range);
        self
    }

    /// The tools bytes, when tools were offered.
    pub fn tools_bytes(&self) -> Option<&[u8]> {
        self.tools.clone().and_then(|r| self.body.get(r))
    }

    /// SHA-256 (lowercase hex) of the tools bytes, when tools were offered.
    pub fn tools_sha256_hex(&self) -> Option<String> {
        self.tools_bytes().map(|b| hex::encode(Sha256::digest(b)))
    }

    /// `body_sha256` as lowercase hex (the stored form).
    pub fn body_sha256_hex(&self) -> String {
        hex::encode(self.body_sha256)
    }
}

/// The model error keys of errors-and-auth.md §4 that a provider may report (providers.md §8).
pub mod keys {
    /// 429/5xx/529, overloaded, connect or read timeout. Retried.
    pub const PROVIDER_OVERLOADED: &str = "provider_overloaded";
    /// Any other non-2xx. Not retried.
    pub const PROVIDER_HTTP_ERROR: &str = "provider_http_error";
    /// 400 reporting the context is too long. Not retried.
    pub const PROVIDER_CONTEXT_OVERFLOW: &str = "provider_context_overflow";
    /// A malformed 2xx body, an encoding failure or a script failure. Not retried.
    pub const PROVIDER_ERROR: &str = "provider_error";
    /// 404 for the model. Not retried.
    pub const PROVIDER_MODEL_UNAVAILABLE: &str = "provider_model_unavailable";
    /// Every key above.
    pub const ALL: [&str; 5] = [
        PROVIDER_OVERLOADED,
        PROVIDER_HTTP_ERROR,
        PROVIDER_CONTEXT_OVERFLOW,
        PROVIDER_ERROR,
        PROVIDER_MODEL_UNAVAILABLE,
    ];
}

/// A failed encode or send: the task's `error.key`, its detail and the HTTP status if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderError {
    /// One of [`keys::ALL`].
    pub key: &'static str,
    /// Human-readable detail (for script failures, a stable word such as `script_exhausted`).
    pub detail: Option<String>,
    /// The upstream HTTP status, when there was one.
    pub http_status: Option<u16>,
    /// How long the upstream asked to wait before the next attempt (`retry-after-ms`, then
    /// `retry-after`), capped at [`MAX_RETRY_AFTER_MS`].
    pub retry_after_ms: Option<u64>,
    /// `false` when the upstream said `x-should-retry: false`: the error is final even if its
    /// key is retryable. `true` when it said `x-should-retry: true`.
    pub should_retry: Option<bool>,
}

/// The longest `retry-after` honoured (providers.md §8: up to 60 s).
pub const MAX_RETRY_AFTER_MS: u64 = 60_000;

impl ProviderError {
    fn of(key: &'static str, detail: Option<String>, http_status: Option<u16>) -> Self {
        Self {
            key,
            detail,
            http_status,
            retry_after_ms: None,
            should_retry: None,
        }
    }

    /// `provider_overloaded` (retried).
    pub fn overloaded(detail: Option<String>, http_status: Option<u16>) -> Self {
        Self::of(keys::PROVIDER_OVERLOADED, detail, http_status)
    }

    /// `provider_http_error`, detail = the status and the first 500 bytes of the body.
    pub fn http_error(status: u16, body: &[u8]) -> Self {
        let head = String::from_utf8_lossy(&body[..body.len().min(500)]);
        Self::of(
            keys::PROVIDER_HTTP_ERROR,
            Some(format!("{status} {head}")),
            Some(status),
        )
    }

    /// `provider_context_overflow`.
    pub fn context_overflow(detail: Option<String>, http_status: Option<u16>) -> Self {
        Self::of(keys::PROVIDER_CONTEXT_OVERFLOW, detail, http_status)
    }

    /// `provider_error` (malformed body, encoding failure, script failure).
    pub fn error(detail: impl Into<String>) -> Self {
        Self::of(keys::PROVIDER_ERROR, Some(detail.into()), None)
    }

    /// `provider_model_unavailable`.
    pub fn model_unavailable(detail: Option<String>, http_status: Option<u16>) -> Self {
        Self::of(keys::PROVIDER_MODEL_UNAVAILABLE, detail, http_status)
    }

    /// An error with a key given as text; `None` when `key` is not one of [`keys::ALL`].
    pub fn from_key(key: &str, detail: Option<String>, http_status: Option<u16>) -> Option<Self> {
        let key = keys::ALL.into_iter().find(|k| *k == key)?;
        Some(Self::of(key, detail, http_status))
    }

    /// Classifies a non-2xx response per providers.md §8: 429/500/502/503/504/529 →
    /// overloaded; 400 whose body reports a too-long context → context overflow; 404 → model
    /// unavailable; anything else → http error.
    pub fn from_http_status(status: u16, body: &[u8]) -> Self {
        let head = String::from_utf8_lossy(&body[..body.len().min(500)]).into_owned();
        match status {
            429 | 500 | 502 | 503 | 504 | 529 => Self::overloaded(Some(head), Some(status)),
            400 if head.contains("prompt is too long") || head.contains("context_length_exceeded") => {
                Self::context_overflow(Some(head), Some(status))
            }
            404 => Self::model_unavailable(Some(head), Some(status)),
            _ => Self::http_error(status, body),
        }
    }

    /// Whether the kernel retries this error (providers.md §8: only `provider_overloaded`,
    /// and never when the upstream said `x-should-retry: false`).
    pub fn is_retryable(&self) -> bool {
        self.key == keys::PROVIDER_OVERLOADED && self.should_retry != Some(false)
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key)?;
        if let Some(status) = self.http_status {
            write!(f, " (HTTP {status})")?;
        }
        if let Some(detail) = &self.detail {
            write!(f, ": {detail}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ProviderError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha_is_of_the_body() {
        let e = EncodedRequest::new("x", vec![], b"abc".to_vec());
        assert_eq!(
            e.body_sha256_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn constructors_and_retry() {
        assert!(ProviderError::overloaded(None, Some(529)).is_retryable());
        for e in [
            ProviderError::http_error(418, b"teapot"),
            ProviderError::context_overflow(None, Some(400)),
            ProviderError::error("x"),
            ProviderError::model_unavailable(None, Some(404)),
        ] {
            assert!(!e.is_retryable(), "{e}");
        }
        assert_eq!(
            ProviderError::http_error(418, b"teapot").detail.as_deref(),
            Some("418 teapot")
        );
        let long = vec![b'a'; 900];
        assert_eq!(ProviderError::http_error(418, &long).detail.unwrap().len(), 504);
        assert_eq!(ProviderError::from_key("nope", None, None), None);
        assert_eq!(
            ProviderError::from_key("provider_overloaded", None, Some(503)).unwrap(),
            ProviderError::overloaded(None, Some(503))
        );
    }

    #[test]
    fn http_classification() {
        for s in [429, 500, 502, 503, 504, 529] {
            assert_eq!(ProviderError::from_http_status(s, b"").key, keys::PROVIDER_OVERLOADED);
        }
        assert_eq!(
            ProviderError::from_http_status(400, b"prompt is too long: 300000 tokens").key,
            keys::PROVIDER_CONTEXT_OVERFLOW
        );
        assert_eq!(
            ProviderError::from_http_status(400, b"bad").key,
            keys::PROVIDER_HTTP_ERROR
        );
        assert_eq!(
            ProviderError::from_http_status(404, b"").key,
            keys::PROVIDER_MODEL_UNAVAILABLE
        );
    }

    #[test]
    fn trait_is_object_safe() {
        fn _takes(_: &dyn Provider) {}
    }
}
