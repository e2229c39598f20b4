//! The member-plane client.

use reqwest::Method;
use serde_json::Value;

use crate::error::Result;
use crate::http::Http;
use crate::member::Workspace;
use nexus_api::assembly::{AssemblyPreview, AssemblyRequest};
use nexus_api::catalog::Catalog;
use nexus_api::profile::{Configuration, Profile, PutConfiguration};

/// A member-plane client: a base URL (`http://127.0.0.1:7420`) and a member bearer.
#[derive(Debug, Clone)]
pub struct Client {
    pub(crate) http: Http,
}

impl Client {
    /// A client for `base_url` sending `Authorization: Bearer <token>`.
    pub fn new(base_url: &str, token: &str) -> Client {
        Client::with_http_client(base_url, token, crate::http::default_client())
    }

    /// As [`Client::new`], over a caller-configured `reqwest` client (timeouts, proxies).
    pub fn with_http_client(base_url: &str, token: &str, http: reqwest::Client) -> Client {
        Client {
            http: Http::new(base_url, token, http),
        }
    }

    /// The base URL, without a trailing `/`.
    pub fn base_url(&self) -> &str {
        self.http.base_url()
    }

    /// The routes of workspace `ws_public_id` (nothing is sent): runs, approvals, memory.
    pub fn workspace(&self, ws_public_id: &str) -> Workspace {
        Workspace::new(self.http.clone(), ws_public_id)
    }

    /// `GET /healthz` (no credential): `{"status":"ok"}` once the server is serving.
    pub async fn healthz(&self) -> Result<Value> {
        Http::send(self.http.anonymous(Method::GET, "/healthz")).await
    }

    /// `GET /agent_api/v1/tools`: the kernel tool catalog.
    pub async fn tools(&self) -> Result<Catalog> {
        Http::send(self.http.authed(Method::GET, "/agent_api/v1/tools")?).await
    }

    /// `GET /agent_api/v1/profile`: `{member, credential, configuration?, measured_at}`.
    pub async fn profile(&self) -> Result<Profile> {
        Http::send(self.http.authed(Method::GET, "/agent_api/v1/profile")?).await
    }

    /// `PUT /agent_api/v1/profile/configuration` with body `{"configuration": configuration}`.
    /// A whole replacement: an omitted field is cleared. Returns the profile read.
    pub async fn put_configuration(&self, configuration: &Configuration) -> Result<Profile> {
        let body = PutConfiguration {
            configuration: configuration.clone(),
        };
        let request = self
            .http
            .authed(Method::PUT, "/agent_api/v1/profile/configuration")?
            .json(&body);
        Http::send(request).await
    }

    /// `POST /agent_api/v1/tools/assembly`: the read-only assembly preview. `body` is
    /// `{default_runner_executor_public_id, configuration?, tool_names?}`; the answer is
    /// `{tool_definitions, environment, skills}`.
    pub async fn assembly(&self, body: &AssemblyRequest) -> Result<AssemblyPreview> {
        let request = self
            .http
            .authed(Method::POST, "/agent_api/v1/tools/assembly")?
            .json(body);
        Http::send(request).await
    }
}
