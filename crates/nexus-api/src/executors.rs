//! Runner discovery on the member plane (executor.md §3).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A runner eligible for the caller, as `GET /agent_api/v1/executors` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ExecutorInfo {
    /// The executor's id (a step's `runner_executor_public_id`).
    pub public_id: String,
    /// `runner`.
    pub kind: String,
    /// Its display name.
    #[serde(default)]
    pub display_name: String,
    /// Its lifecycle status.
    #[serde(default)]
    pub status: String,
    /// Who may use it.
    #[serde(default)]
    pub assignment_scope: String,
    /// The tool entries of its last announcement.
    #[serde(default)]
    pub served_tools: Vec<Value>,
    /// The environment of its last announcement.
    #[serde(default)]
    pub environment: Value,
    /// The documents of its last announcement.
    #[serde(default)]
    pub served_documents: Vec<Value>,
    /// `online`, `offline` or `not_yet_seen` (display only).
    #[serde(default)]
    pub presence: String,
    /// RFC 3339 time it was last seen.
    #[serde(default)]
    pub last_seen_at: Option<String>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl ExecutorInfo {
    /// The names of the tools it serves.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.served_tools
            .iter()
            .filter_map(|t| t.get("name").and_then(Value::as_str))
    }
}

/// `GET /agent_api/v1/executors`: the runners eligible for the caller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ExecutorList {
    /// The runners.
    pub executors: Vec<ExecutorInfo>,
}

/// `GET /agent_api/v1/executors/{id}`: one runner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ExecutorEnvelope {
    /// The runner.
    pub executor: ExecutorInfo,
}
