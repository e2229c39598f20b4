//! The transport both clients share: a base URL, a bearer and one `reqwest` client.

use reqwest::{Method, RequestBuilder, header};
use serde::de::DeserializeOwned;

use crate::error::{ApiError, Error, Result};

/// The `reqwest` client `Client::new` and `ExecutorClient::new` use: an idle pooled connection
/// is dropped after 20 s, before the server closes it at its 30 s head read timeout
/// (docs/decisions/190-read-timeouts-and-body-bounds.md), so a request never lands on a connection
/// the server is closing.
pub(crate) fn default_client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_idle_timeout(std::time::Duration::from_secs(20))
        .build()
        .unwrap_or_default()
}

/// A base URL, a bearer and a connection pool.
#[derive(Debug, Clone)]
pub(crate) struct Http {
    base: String,
    /// `None` when the token holds bytes a header cannot carry; every authed call then fails
    /// with [`Error::InvalidBearer`].
    bearer: Option<header::HeaderValue>,
    inner: reqwest::Client,
}

impl Http {
    /// Builds the transport. A trailing `/` on `base_url` is ignored.
    pub(crate) fn new(base_url: &str, token: &str, inner: reqwest::Client) -> Http {
        let bearer = header::HeaderValue::from_str(&format!("Bearer {token}"))
            .ok()
            .map(|mut value| {
                value.set_sensitive(true);
                value
            });
        Http {
            base: base_url.trim_end_matches('/').to_owned(),
            bearer,
            inner,
        }
    }

    /// The base URL, without a trailing `/`.
    pub(crate) fn base_url(&self) -> &str {
        &self.base
    }

    /// The `Authorization` value, `None` when the token cannot be a header (the push channel
    /// sends it on its own upgrade request).
    pub(crate) fn bearer(&self) -> Option<&header::HeaderValue> {
        self.bearer.as_ref()
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A request carrying the bearer.
    pub(crate) fn authed(&self, method: Method, path: &str) -> Result<RequestBuilder> {
        let bearer = self.bearer.clone().ok_or(Error::InvalidBearer)?;
        Ok(self
            .inner
            .request(method, self.url(path))
            .header(header::AUTHORIZATION, bearer)
            .header(header::ACCEPT, "application/json"))
    }

    /// A request without a credential (`/healthz`).
    pub(crate) fn anonymous(&self, method: Method, path: &str) -> RequestBuilder {
        self.inner
            .request(method, self.url(path))
            .header(header::ACCEPT, "application/json")
    }

    /// Sends `request`; a 2xx body is decoded as `T`, anything else becomes an [`ApiError`].
    pub(crate) async fn send<T: DeserializeOwned>(request: RequestBuilder) -> Result<T> {
        let response = request.send().await?;
        let status = response.status();
        let bytes = response.bytes().await?;
        if !status.is_success() {
            return Err(ApiError::from_response(status.as_u16(), &bytes).into());
        }
        Ok(serde_json::from_slice(&bytes)?)
    }
}
