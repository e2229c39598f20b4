//! The executor transport-plane client (executor.md §2–§12): the executor read, the
//! announcement, the inbox with claim, claim status, extend and commit, progress frames,
//! captures and claim-scoped attachment reads.

mod inbox;
mod uploads;

use reqwest::Method;

pub use inbox::{Claim, ClaimStatus, CommitReply, InboxPage, InboxRow, RowKind};
pub use nexus_api::executors::{ExecutorDescription, ExecutorKind, ExecutorRecord};
pub use uploads::Upload;

use crate::error::Result;
use crate::http::Http;
use crate::runner::Announcement;

/// An executor transport-plane client: a base URL and a transport bearer, which proves one
/// executor address at one credential epoch.
#[derive(Debug, Clone)]
pub struct ExecutorClient {
    http: Http,
}

pub use nexus_api::inbox::{ProgressFrame, ProgressReply};

impl ExecutorClient {
    /// A client for `base_url` sending `Authorization: Bearer <token>`.
    pub fn new(base_url: &str, token: &str) -> ExecutorClient {
        ExecutorClient::with_http_client(base_url, token, crate::http::default_client())
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

    pub(crate) fn http(&self) -> &Http {
        &self.http
    }

    /// `GET /agent_api/v1/executor`:
    /// `{executor: {public_id, kind, status, display_name, credential_epoch}, measured_at}`.
    pub async fn me(&self) -> Result<ExecutorDescription> {
        Http::send(self.http.authed(Method::GET, "/agent_api/v1/executor")?).await
    }

    /// `PUT /agent_api/v1/executor/announcement` (executor.md §4): replaces the tools, the
    /// environment and the documents at once. Answers the `GET X` body.
    pub async fn announce(&self, announcement: &Announcement) -> Result<ExecutorDescription> {
        let request = self
            .http
            .authed(Method::PUT, "/agent_api/v1/executor/announcement")?
            .json(announcement);
        Http::send(request).await
    }

    /// `POST /agent_api/v1/executor/progress` with `{frame}` (executor.md §11).
    pub async fn progress(&self, frame: &ProgressFrame) -> Result<ProgressReply> {
        let request = self
            .http
            .authed(Method::POST, "/agent_api/v1/executor/progress")?
            .json(&nexus_api::inbox::Progress { frame: frame.clone() });
        Http::send(request).await
    }
}

/// Percent-encodes one path segment (a run id or a task key), keeping RFC 3986's unreserved
/// characters.
pub(crate) fn segment(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for byte in raw.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::segment;

    #[test]
    fn a_segment_keeps_unreserved_characters_and_encodes_the_rest() {
        assert_eq!(segment("step_1-a.b~"), "step_1-a.b~");
        assert_eq!(segment("a/b c?"), "a%2Fb%20c%3F");
        assert_eq!(segment("é"), "%C3%A9");
    }
}
