//! The wire both HTTP adapters share (providers.md §8): one POST of the sealed bytes with the
//! key added at send time, the classification of a failed attempt (status, `retry-after-ms`,
//! `retry-after`, `x-should-retry`), the per-attempt timeout and bounded body reads, and the
//! server-sent events of a streaming reply.
//!
//! Architecture Invariant: a key is read from the environment here, at send time, and goes
//! only into the outgoing request's headers — never into an [`EncodedRequest`], a log or an
//! error detail.

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::provider::{EncodedRequest, MAX_RETRY_AFTER_MS, ProviderError};

/// The largest reply body read (a larger one is `provider_error`).
pub(crate) const MAX_REPLY_BYTES: usize = 32 * 1024 * 1024;
/// How much of an error body is read to classify it (the detail keeps the first 500 bytes).
const MAX_ERROR_BYTES: usize = 64 * 1024;

/// Where the key comes from and how it is sent.
#[derive(Debug, Clone)]
pub(crate) struct Credential {
    /// The environment variable holding the key (`api_key_env`), if the instance has one.
    pub env: Option<String>,
    /// The header carrying it: `x-api-key` (the key as is) or `authorization` (`Bearer <key>`).
    pub header: &'static str,
}

impl Credential {
    /// The secret header, read from the environment now. A configured variable that is unset
    /// at send time is `provider_error` `missing_credential` (acceptance checks it too).
    fn header(&self) -> Result<Option<(HeaderName, HeaderValue)>, ProviderError> {
        let Some(var) = &self.env else {
            return Ok(None);
        };
        let key =
            std::env::var(var).map_err(|_| ProviderError::error(format!("missing_credential: {var} is not set")))?;
        let text = if self.header == "authorization" {
            format!("Bearer {key}")
        } else {
            key
        };
        let mut value = HeaderValue::from_str(&text)
            .map_err(|_| ProviderError::error(format!("the key in {var} is not a valid header value")))?;
        value.set_sensitive(true);
        Ok(Some((HeaderName::from_static(self.header), value)))
    }
}

/// One instance's HTTP client.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    client: reqwest::Client,
    credential: Credential,
    timeout: Duration,
}

impl Transport {
    /// A client for one instance; `timeout` bounds each attempt (`request_timeout_ms`).
    pub fn new(credential: Credential, timeout: Duration) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(timeout.min(Duration::from_secs(30)))
            .build()
            .expect("a client with default TLS roots builds");
        Self {
            client,
            credential,
            timeout,
        }
    }

    /// Runs one attempt under the per-attempt timeout: a timeout is `provider_overloaded`.
    pub async fn attempt<T>(&self, fut: impl Future<Output = Result<T, ProviderError>>) -> Result<T, ProviderError> {
        match tokio::time::timeout(self.timeout, fut).await {
            Ok(result) => result,
            Err(_) => Err(ProviderError::overloaded(
                Some(format!("no complete reply within {} ms", self.timeout.as_millis())),
                None,
            )),
        }
    }

    /// POSTs the sealed bytes with their headers plus the key. A 2xx response is returned for
    /// the adapter to read; anything else is classified (providers.md §8).
    pub async fn post(&self, enc: &EncodedRequest) -> Result<reqwest::Response, ProviderError> {
        let mut headers = HeaderMap::with_capacity(enc.headers.len() + 1);
        for (name, value) in &enc.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ProviderError::error(format!("invalid header name {name:?}")))?;
            let value = HeaderValue::from_str(value)
                .map_err(|_| ProviderError::error(format!("invalid value for header {name}")))?;
            headers.append(name, value);
        }
        if let Some((name, value)) = self.credential.header()? {
            headers.insert(name, value);
        }
        let response = self
            .client
            .post(&enc.url)
            .headers(headers)
            .body(enc.body.clone())
            .send()
            .await
            .map_err(|e| ProviderError::overloaded(Some(transport_detail(&e)), None))?;
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(response);
        }
        let retry_after_ms = retry_after_ms(response.headers(), std::time::SystemTime::now());
        let should_retry = match response.headers().get("x-should-retry").map(HeaderValue::as_bytes) {
            Some(b"true") => Some(true),
            Some(b"false") => Some(false),
            _ => None,
        };
        let body = read_head(response, MAX_ERROR_BYTES).await;
        let mut error = ProviderError::from_http_status(status, &body);
        error.retry_after_ms = retry_after_ms;
        error.should_retry = should_retry;
        Err(error)
    }

    /// A whole (non-streaming) reply body, bounded by [`MAX_REPLY_BYTES`].
    pub async fn body(response: reqwest::Response) -> Result<Vec<u8>, ProviderError> {
        read_bounded(response, MAX_REPLY_BYTES).await
    }

    /// The server-sent events of a streaming reply: `(event name, data)` pairs. A broken
    /// stream is `provider_overloaded` (a read failure), as a timeout is.
    pub fn events(response: reqwest::Response) -> impl Stream<Item = Result<(String, String), ProviderError>> {
        events_of(response.bytes_stream())
    }
}

/// The `(event name, data)` pairs of a server-sent event byte stream (how [`Transport::events`]
/// reads a response, and how [`decode_event_body`] reads bytes already in memory).
fn events_of<S, B, E>(bytes: S) -> impl Stream<Item = Result<(String, String), ProviderError>>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    bytes.eventsource().map(|item| match item {
        Ok(event) => Ok((event.event, event.data)),
        Err(e) => Err(ProviderError::overloaded(
            Some(format!("reply stream broke: {e}")),
            None,
        )),
    })
}

/// Runs a streamed-reply reader over an event stream body already in memory, arriving in
/// `chunks` (as a response's reads would split it). Nothing waits: every chunk is ready.
pub(crate) fn decode_event_body<'a, F, Fut>(chunks: &'a [&'a [u8]], read: F) -> Result<crate::ModelReply, ProviderError>
where
    F: FnOnce(std::pin::Pin<Box<dyn Stream<Item = Result<(String, String), ProviderError>> + 'a>>) -> Fut,
    Fut: std::future::Future<Output = Result<crate::ModelReply, ProviderError>>,
{
    let bytes = futures_util::stream::iter(chunks.iter().map(|c| Ok::<_, std::convert::Infallible>(*c)));
    let future = std::pin::pin!(read(Box::pin(events_of(bytes))));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.poll(&mut cx) {
        std::task::Poll::Ready(reply) => reply,
        // The stream is in memory and the readers await nothing else.
        std::task::Poll::Pending => unreachable!("an in-memory event stream is always ready"),
    }
}

/// Reads at most `limit` bytes of a body; more is `provider_error`.
async fn read_bounded(response: reqwest::Response, limit: usize) -> Result<Vec<u8>, ProviderError> {
    let mut out = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| ProviderError::overloaded(Some(transport_detail(&e)), None))?;
        if out.len() + chunk.len() > limit {
            return Err(ProviderError::error(format!("the reply exceeds {limit} bytes")));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// The first `limit` bytes of an error body (what a broken read leaves is kept); the rest is
/// never read.
async fn read_head(response: reqwest::Response, limit: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        let room = limit - out.len();
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if out.len() == limit {
            break;
        }
    }
    out
}

/// A transport failure in words, without the URL's query or any header.
fn transport_detail(e: &reqwest::Error) -> String {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "transport failure"
    };
    match e.url() {
        Some(url) => format!("{what}: {}{}", url.origin().ascii_serialization(), url.path()),
        None => what.to_string(),
    }
}

/// The wait an upstream asked for: `retry-after-ms` (milliseconds), else `retry-after` (whole
/// seconds or an HTTP date), capped at [`MAX_RETRY_AFTER_MS`]. Unparseable values are ignored.
pub(crate) fn retry_after_ms(headers: &HeaderMap, now: std::time::SystemTime) -> Option<u64> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    let ms = if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        (ms.is_finite() && ms >= 0.0).then_some(ms as u64)
    } else {
        let value = text("retry-after")?;
        match value.parse::<u64>() {
            Ok(seconds) => Some(seconds.saturating_mul(1000)),
            Err(_) => {
                let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
                let now = chrono::DateTime::<chrono::Utc>::from(now);
                Some((at.timestamp_millis() - now.timestamp_millis()).max(0) as u64)
            }
        }
    }?;
    Some(ms.min(MAX_RETRY_AFTER_MS))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn retry_after_forms() {
        let now = std::time::UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(retry_after_ms(&headers(&[]), now), None);
        assert_eq!(retry_after_ms(&headers(&[("retry-after", "3")]), now), Some(3000));
        assert_eq!(retry_after_ms(&headers(&[("retry-after-ms", "250")]), now), Some(250));
        // retry-after-ms wins over retry-after.
        assert_eq!(
            retry_after_ms(&headers(&[("retry-after-ms", "250"), ("retry-after", "9")]), now),
            Some(250)
        );
        assert_eq!(
            retry_after_ms(&headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:42 GMT")]), now),
            Some(5000)
        );
        assert_eq!(retry_after_ms(&headers(&[("retry-after", "600")]), now), Some(60_000));
        assert_eq!(retry_after_ms(&headers(&[("retry-after", "soon")]), now), None);
    }
}
