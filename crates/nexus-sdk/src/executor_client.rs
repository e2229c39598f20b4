//! The executor transport-plane client.

use reqwest::Method;
use serde_json::Value;

use crate::error::Result;
use crate::http::Http;

/// An executor transport-plane client: a base URL and a transport bearer, which proves one
/// executor address at one credential epoch.
#[derive(Debug, Clone)]
pub struct ExecutorClient {
    http: Http,
}

impl ExecutorClient {
    /// A client for `base_url` sending `Authorization: Bearer <token>`.
    pub fn new(base_url: &str, token: &str) -> ExecutorClient {
        ExecutorClient::with_http_client(base_url, token, reqwest::Client::new())
    }

    /// As [`ExecutorClient::new`], over a caller-configured `reqwest` client.
    pub fn with_http_client(base_url: &str, token: &str, http: reqwest::Client) -> ExecutorClient {
        ExecutorClient {
            http: Http::new(base_url, token, http),
        }
    }

    /// The base URL, without a trailing `/`.
    pub fn base_url(&self) -> &str {
        self.http.base_url()
    }

    /// `GET /agent_api/v1/executor`:
    /// `{executor: {public_id, kind, status, display_name, credential_epoch}, measured_at}`.
    pub async fn me(&self) -> Result<Value> {
        Http::send(self.http.authed(Method::GET, "/agent_api/v1/executor")?).await
    }
}
