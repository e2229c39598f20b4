//! The inbox, claim, claim status, extend and commit (executor.md §6–§9).

use reqwest::Method;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::{ExecutorClient, segment};
use crate::error::Result;
use crate::http::Http;
use crate::runner::ToolResult;
use nexus_api::common::Pagination;
use nexus_api::inbox::{ClaimStatusReply, Commit, Extend, Grant, InboxTask};
pub use nexus_api::inbox::{CommitReply, RowKind};

/// One inbox row: the fields the framework acts on, and the whole row as sent.
#[derive(Debug, Clone, PartialEq)]
pub struct InboxRow {
    /// `tool_call`, `approval` or `ask`.
    pub kind: RowKind,
    /// The run the row belongs to.
    pub run_public_id: String,
    /// The row's key in that run.
    pub task_key: String,
    /// Whether the row was claimed in its current generation.
    pub claimed: bool,
    /// The row's budget in milliseconds (authored, else announced, else the kernel default).
    pub timeout_ms: Option<u64>,
    /// When the park expires (RFC 3339).
    pub deadline_at: Option<String>,
    /// The called name (tool and approval rows).
    pub tool_name: Option<String>,
    /// The tool input (tool and approval rows; `null` otherwise).
    pub tool_input: Value,
    /// The whole row as the kernel sent it.
    pub raw: Value,
}

impl<'de> Deserialize<'de> for InboxRow {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Value::deserialize(deserializer)?;
        let f = InboxTask::deserialize(&raw).map_err(serde::de::Error::custom)?;
        Ok(InboxRow {
            kind: f.kind,
            run_public_id: f.run_public_id,
            task_key: f.task_key,
            claimed: f.claimed,
            timeout_ms: f.timeout_ms,
            deadline_at: f.deadline_at,
            tool_name: f.tool_name,
            tool_input: f.tool_input,
            raw,
        })
    }
}

/// One page of `GET X/inbox`.
#[derive(Debug, Clone, PartialEq)]
pub struct InboxPage {
    /// The rows, in internal-id order.
    pub tasks: Vec<InboxRow>,
    /// The cursor of the next page; present only when this page was full.
    pub next_after: Option<String>,
}

impl<'de> Deserialize<'de> for InboxPage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// [`nexus_api::inbox::InboxList`], with each row kept whole.
        #[derive(Deserialize)]
        struct Wire {
            tasks: Vec<InboxRow>,
            #[serde(default)]
            pagination: Option<Pagination>,
        }
        let wire = Wire::deserialize(deserializer)?;
        Ok(InboxPage {
            tasks: wire.tasks,
            next_after: wire.pagination.and_then(|p| p.next_after),
        })
    }
}

/// A granted claim or extension: `{task, claim: {claim_token, deadline_at}}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// The claimed row.
    pub task: InboxRow,
    /// The token every later call on the row presents.
    pub claim_token: String,
    /// The new deadline (RFC 3339).
    pub deadline_at: String,
}

impl<'de> Deserialize<'de> for Claim {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// [`nexus_api::inbox::ClaimGrant`], with the row kept whole.
        #[derive(Deserialize)]
        struct Wire {
            task: InboxRow,
            claim: Grant,
        }
        let wire = Wire::deserialize(deserializer)?;
        Ok(Claim {
            task: wire.task,
            claim_token: wire.claim.claim_token,
            deadline_at: wire.claim.deadline_at,
        })
    }
}

/// The claim status read: `{claim: {active}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimStatus {
    /// Whether the row is still `dispatched` under this claim.
    pub active: bool,
}

impl<'de> Deserialize<'de> for ClaimStatus {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(ClaimStatus {
            active: ClaimStatusReply::deserialize(deserializer)?.claim.active,
        })
    }
}

fn item(run: &str, key: &str, verb: &str) -> String {
    format!("/agent_api/v1/executor/inbox/{}/{}/{verb}", segment(run), segment(key))
}

impl ExecutorClient {
    /// `GET X/inbox?after=&limit=`: one page of the parked rows addressed to this executor.
    /// `limit` is clamped by the kernel (default 50, at most 200).
    pub async fn inbox(&self, after: Option<&str>, limit: Option<u32>) -> Result<InboxPage> {
        let mut query: Vec<String> = Vec::new();
        if let Some(after) = after {
            query.push(format!("after={}", segment(after)));
        }
        if let Some(limit) = limit {
            query.push(format!("limit={limit}"));
        }
        let mut path = "/agent_api/v1/executor/inbox".to_owned();
        if !query.is_empty() {
            path = format!("{path}?{}", query.join("&"));
        }
        let request = self.http().authed(Method::GET, &path)?;
        Http::send(request).await
    }

    /// `POST X/inbox/{run}/{task}/claim`: a fresh token and the full budget.
    pub async fn claim(&self, run: &str, key: &str) -> Result<Claim> {
        Http::send(self.http().authed(Method::POST, &item(run, key, "claim"))?).await
    }

    /// [`ExecutorClient::claim`] with an `Idempotency-Key` (1–64 visible ASCII characters;
    /// draw a random one per claim, it is the claim's secret): repeating the same key after a
    /// failure in transport answers the same grant while the claim stands, so a claim whose
    /// answer was lost is not lost with it. Another key, or none, gets 409 `already_claimed`.
    pub async fn claim_keyed(&self, run: &str, key: &str, idempotency_key: &str) -> Result<Claim> {
        let request = self
            .http()
            .authed(Method::POST, &item(run, key, "claim"))?
            .header("Idempotency-Key", idempotency_key);
        Http::send(request).await
    }

    /// `GET X/inbox/{run}/{task}/claim` with `Claim-Token`: 409 `not_claimant` when the token
    /// is no longer the row's.
    pub async fn claim_status(&self, run: &str, key: &str, token: &str) -> Result<ClaimStatus> {
        let request = self
            .http()
            .authed(Method::GET, &item(run, key, "claim"))?
            .header("Claim-Token", token);
        Http::send(request).await
    }

    /// `POST X/inbox/{run}/{task}/extend`: the new deadline is now + `timeout_ms` (at most
    /// min(announced `timeout_ms`, 3,600,000), else 409 `extension_too_long`).
    pub async fn extend(&self, run: &str, key: &str, token: &str, timeout_ms: u64) -> Result<Claim> {
        let body = Extend {
            claim_token: token.to_string(),
            timeout_ms,
        };
        let request = self.http().authed(Method::POST, &item(run, key, "extend"))?.json(&body);
        Http::send(request).await
    }

    /// `POST X/inbox/{run}/{task}/commit` with the result envelope. A retry after a transport
    /// failure is safe under the same token: a row that already settled answers `idle`.
    pub async fn commit(&self, run: &str, key: &str, token: &str, result: &ToolResult) -> Result<CommitReply> {
        let body = Commit {
            claim_token: Some(token.to_string()),
            result: result.clone(),
        };
        let request = self.http().authed(Method::POST, &item(run, key, "commit"))?.json(&body);
        Http::send(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_row_keeps_its_raw_json_and_reads_the_fields_the_framework_needs() {
        let raw = json!({"kind": "tool_call", "run_public_id": "r", "task_key": "t", "claimed": false,
                         "timeout_ms": 60000, "tool_name": "read", "tool_input": {"path": "x"},
                         "conversation_public_id": null, "future_field": 1});
        let row: InboxRow = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(row.kind, RowKind::ToolCall);
        assert_eq!(row.timeout_ms, Some(60000));
        assert_eq!(row.tool_input, json!({"path": "x"}));
        assert_eq!(row.raw, raw);
        let ask: InboxRow =
            serde_json::from_value(json!({"kind": "ask", "run_public_id": "r", "task_key": "a", "claimed": false}))
                .unwrap();
        assert_eq!(ask.kind, RowKind::Ask);
        assert_eq!(ask.tool_input, Value::Null);
        let other: InboxRow =
            serde_json::from_value(json!({"kind": "later", "run_public_id": "r", "task_key": "a"})).unwrap();
        assert!(matches!(other.kind, RowKind::Other(_)));
    }

    #[test]
    fn a_page_reads_its_cursor_and_a_claim_its_grant() {
        let page: InboxPage = serde_json::from_value(json!({"tasks": [], "pagination": {"next_after": "c"}})).unwrap();
        assert_eq!(page.next_after.as_deref(), Some("c"));
        let page: InboxPage = serde_json::from_value(json!({"tasks": [], "pagination": {}})).unwrap();
        assert_eq!(page.next_after, None);
        let claim: Claim = serde_json::from_value(json!({
            "task": {"kind": "tool_call", "run_public_id": "r", "task_key": "t", "claimed": true},
            "claim": {"claim_token": "tok", "deadline_at": "2026-01-01T00:00:00Z"}}))
        .unwrap();
        assert_eq!(claim.claim_token, "tok");
        assert!(claim.task.claimed);
    }

    #[test]
    fn the_commit_body_is_flat_with_the_token_first() {
        let result = ToolResult::text("hi").with_title("t");
        let body = serde_json::to_value(Commit {
            claim_token: Some("tok".into()),
            result,
        })
        .unwrap();
        assert_eq!(
            body,
            json!({"claim_token": "tok", "content": [{"type": "text", "text": "hi"}],
                   "outcome": "completed", "title": "t"})
        );
    }
}
