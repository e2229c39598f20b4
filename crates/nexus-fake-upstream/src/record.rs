//! What the server saw: every request as it arrived, what became of its reply, and the
//! requests that no expectation matched.

use std::time::{Instant, SystemTime};

use axum::body::Bytes;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::Route;

/// One request as the server received it, recorded before it is answered (so a request whose
/// client went away mid-reply is still here).
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// Position in arrival order, from 0 (the index [`crate::FakeUpstream::requests`] uses).
    pub index: usize,
    /// The route the path belongs to; `None` for a path or method the server does not serve.
    pub route: Option<Route>,
    /// `POST`, …
    pub method: String,
    /// The path without the query, e.g. `/v1/messages` or `/v1/chat/completions`.
    pub path: String,
    /// The query string, without `?`, when there is one.
    pub query: Option<String>,
    /// Every header in the order received: lowercase name, value (non-UTF-8 bytes replaced).
    pub headers: Vec<(String, String)>,
    /// The exact body bytes.
    pub body: Bytes,
    /// When the request head arrived (for measuring retry backoff between attempts).
    pub at: Instant,
    /// The same moment on the wall clock.
    pub received_at: SystemTime,
    /// The index, within its route's list, of the expectation that answered it; `None` when
    /// nothing matched (see [`Mismatch`]).
    pub answered_by: Option<usize>,
    /// What has become of the reply so far.
    pub outcome: Outcome,
}

impl RecordedRequest {
    /// The first value of header `name` (any case), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON (member order preserved).
    pub fn try_json(&self) -> serde_json::Result<Value> {
        serde_json::from_slice(&self.body)
    }

    /// The body parsed as JSON; panics, naming the request, when it is not JSON.
    pub fn json(&self) -> Value {
        self.try_json()
            .unwrap_or_else(|e| panic!("request #{} {} body is not JSON: {e}", self.index, self.path))
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// SHA-256 of the exact body bytes.
    pub fn sha256(&self) -> [u8; 32] {
        Sha256::digest(&self.body).into()
    }

    /// SHA-256 of the exact body bytes as lowercase hex (compare with a sealed `body_sha256`).
    pub fn sha256_hex(&self) -> String {
        hex::encode(self.sha256())
    }
}

/// What became of the reply to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Still being answered: a delay, a stream in progress, or a hang.
    Pending,
    /// The whole reply was handed to the connection (mismatch replies included).
    Completed,
    /// The client went away before the reply was over: a dropped call, a client timeout, a
    /// stop that cancelled the in-flight request.
    Abandoned,
    /// The server cut the reply on purpose: [`crate::Reply::abort_after`], or shutdown while a
    /// reply was still pending.
    Cut,
}

/// A request that no expectation matched. The server answered it `500` (or `404` for a path it
/// does not serve) with the same explanation as text.
#[derive(Debug, Clone)]
pub struct Mismatch {
    /// The request's [`RecordedRequest::index`].
    pub request: usize,
    /// `POST /v1/messages`, …
    pub target: String,
    /// Why: one line per expectation of the route (or why the path is not served).
    pub reasons: Vec<String>,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no expectation matched request #{} {}", self.request, self.target)?;
        for reason in &self.reasons {
            write!(f, "\n  {reason}")?;
        }
        Ok(())
    }
}
