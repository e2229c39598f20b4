//! Tasks (runs.md §5, §6, §9): the task record, its sealed request, the cache report, and the
//! body of an await's resolution.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::common::{CallRef, Pagination, TaskKind, TaskStatus, Usage, present};
use crate::inbox::{Block, Outcome, ResultContent};

/// A task as `GET R/tasks/{key}` serves it (and, with fewer members, as `GET R/tasks` lists
/// it). Members that only some kinds or statuses carry are `Option`s; everything else the
/// kernel sends (`prompt`, `tool_definitions`, `approval`, `effect_profile`, `target`, …) is in
/// [`Task::rest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Task {
    /// The row's key (`s1-model-1`, `r1t0`, an authored key).
    pub key: String,
    /// The row's kind.
    pub kind: TaskKind,
    /// The row's status.
    pub status: TaskStatus,
    /// Increases by one on each retry.
    #[serde(default)]
    pub generation: i64,
    /// `propagate`, `absorb` or `halt`.
    #[serde(default)]
    pub on_failure: Option<String>,
    /// `visible`, `collapsed` or `hidden`.
    #[serde(default)]
    pub visibility: Option<String>,
    /// The keys of the row's `after` dependencies.
    #[serde(default)]
    pub after: Vec<String>,
    /// RFC 3339 creation time.
    #[serde(default)]
    pub created_at: Option<String>,
    /// RFC 3339 start time.
    #[serde(default)]
    pub started_at: Option<String>,
    /// RFC 3339 settle time.
    #[serde(default)]
    pub settled_at: Option<String>,
    /// What a waiting or held row waits on.
    #[serde(default)]
    pub waiting_on: Option<Vec<String>>,
    /// `abandoned` or `canceled`, on a settled row.
    #[serde(default)]
    pub failure_resolution: Option<String>,
    /// A settled row's error.
    #[serde(default)]
    pub error: Option<TaskError>,
    /// Whether a completed result is marked as an error.
    #[serde(default)]
    pub is_error: bool,
    /// A tool row's resolved wire name.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// A tool row's alias, as the model called it.
    #[serde(default)]
    pub tool_alias: Option<String>,
    /// A tool row's input.
    #[serde(default)]
    pub tool_input: Option<Value>,
    /// A tool row's one-line summary, when its executor sent one.
    #[serde(default)]
    pub title: Option<String>,
    /// A tool row's model-invisible metadata, when its executor sent it.
    #[serde(default)]
    pub metadata: Option<Value>,
    /// A round's model.
    #[serde(default)]
    pub model: Option<String>,
    /// Whether a round is on the mainline.
    #[serde(default)]
    pub mainline: Option<bool>,
    /// The calls a round made.
    #[serde(default)]
    pub tool_calls: Option<Vec<CallRef>>,
    /// A round's token usage.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// A parked row's deadline.
    #[serde(default)]
    pub deadline_at: Option<String>,
    /// A parked row's budget.
    #[serde(default)]
    pub timeout_ms: Option<i64>,
    /// A settled row's text projection (text blocks joined by `\n`).
    #[serde(default)]
    pub output: Option<String>,
    /// The first 200 characters of `output`.
    #[serde(default)]
    pub output_preview: Option<String>,
    /// A settled row's normalized content blocks.
    #[serde(default)]
    pub content: Option<Vec<Value>>,
    /// A settled row's structured content: `Some` exactly when one was stored (an explicit
    /// `null` is `Some(Value::Null)`).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// A settled row's `error`: `{key, detail?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TaskError {
    /// For example `approval_denied`, `tool_failed`, `run_canceled`.
    pub key: String,
    /// Free text, when given.
    #[serde(default)]
    pub detail: Option<String>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// `GET R/tasks`: trace rows in creation order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TaskPage {
    /// The rows of this page.
    pub tasks: Vec<Task>,
    /// The cursor of the next page.
    #[serde(default)]
    pub pagination: Pagination,
}

/// `GET R/tasks/{key}/request`: the sealed record of a round's current generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SealedRequest {
    /// The neutral request entries, in order.
    #[serde(default)]
    pub entries: Vec<Value>,
    /// The request options sealed with it.
    #[serde(default)]
    pub request_options: Value,
    /// SHA-256 (hex) of the provider body bytes.
    pub body_sha256: String,
    /// The provider body's length in bytes.
    #[serde(default)]
    pub request_bytes: i64,
    /// SHA-256 (hex) of the tools bytes sent, when tools were sent.
    #[serde(default)]
    pub tools_sha256: Option<String>,
    /// The send attempts.
    #[serde(default)]
    pub attempts: Vec<Value>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// `GET R/tasks/{key}/request`: `{request}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SealedEnvelope {
    /// The sealed record.
    pub request: SealedRequest,
}

/// `GET R/tasks/{key}/request?format=provider`: the exact provider body bytes and the
/// server's SHA-256 of them (the `x-body-sha256` header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderBody {
    /// The body bytes as sent to the provider.
    pub bytes: Vec<u8>,
    /// SHA-256 (hex) of `bytes`, as the server stated it.
    pub body_sha256: String,
}

/// `GET R/cache`: per model round, the digest of the tools bytes sent and the usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CacheReport {
    /// The model rounds in creation order.
    #[serde(default)]
    pub rounds: Vec<CacheRound>,
    /// How many sealed rounds sent different tools bytes than the sealed round before them.
    #[serde(default)]
    pub tools_changes: u64,
    /// The rounds' usage summed.
    #[serde(default)]
    pub usage: Usage,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// One round of a [`CacheReport`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CacheRound {
    /// The round's key.
    pub key: String,
    /// The round's status.
    pub status: TaskStatus,
    /// SHA-256 (hex) of the tools bytes sent; `None` before the seal or without tools.
    #[serde(default)]
    pub tools_sha256: Option<String>,
    /// Whether the tools bytes differ from the previous sealed round's.
    #[serde(default)]
    pub tools_changed: bool,
    /// The round's usage, once it has a reply.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// `GET R/cache`: `{cache}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CacheEnvelope {
    /// The run's cache report.
    pub cache: CacheReport,
}

/// The body of `POST R/tasks/{key}/resolution` (runs.md §6): an answer to an ask await,
/// `{resolution_token?, content?, outcome?}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Resolution {
    /// The tokened await's token (from the receipt); a tokenless ask needs none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution_token: Option<String>,
    /// The answer: a string or content blocks (executor.md §9.1); absent: an empty answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub content: Option<ResultContent>,
    /// `failed` to settle the await as a failure; `completed` (or `null`) by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
}

impl Resolution {
    /// An answer of one text.
    pub fn text(answer: impl Into<String>) -> Resolution {
        Resolution {
            content: Some(ResultContent::Text(answer.into())),
            ..Resolution::default()
        }
    }

    /// An answer of content blocks.
    pub fn blocks(blocks: Vec<Block>) -> Resolution {
        Resolution {
            content: Some(ResultContent::Blocks(blocks)),
            ..Resolution::default()
        }
    }

    /// Sends the await's resolution token.
    pub fn token(mut self, token: impl Into<String>) -> Resolution {
        self.resolution_token = Some(token.into());
        self
    }

    /// Settles the await as failed.
    pub fn failed(mut self) -> Resolution {
        self.outcome = Some(Outcome::Failed);
        self
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        serde_json::to_value(self).expect("a resolution serializes")
    }
}

/// The answer of a resolution: the task, and whether the await had already settled (`idle`:
/// this answer changed nothing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Resolved {
    /// The await after the answer.
    pub task: Task,
    /// `true` when the await was already settled.
    #[serde(default)]
    pub idle: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn structured_content_null_is_kept_apart_from_absent() {
        let base = json!({"key": "t", "kind": "tool_task", "status": "completed"});
        let absent: Task = serde_json::from_value(base.clone()).unwrap();
        assert_eq!(absent.structured_content, None);
        let mut with_null = base;
        with_null["structured_content"] = Value::Null;
        let null: Task = serde_json::from_value(with_null).unwrap();
        assert_eq!(null.structured_content, Some(Value::Null));
    }

    #[test]
    fn a_resolution_names_only_what_was_set() {
        assert_eq!(
            Resolution::text("yes").token("tok").body(),
            json!({"resolution_token": "tok", "content": "yes"})
        );
        assert_eq!(Resolution::default().failed().body(), json!({"outcome": "failed"}));
    }
}
