//! Runner discovery on the member plane (executor.md §3).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::types::Rest;
use super::wire::{self, Route, V1};

/// A runner eligible for the caller, as `GET /agent_api/v1/executors` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    pub rest: Rest,
}

impl ExecutorInfo {
    /// The names of the tools it serves.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.served_tools
            .iter()
            .filter_map(|t| t.get("name").and_then(Value::as_str))
    }
}

#[derive(Deserialize)]
pub(crate) struct ExecutorList {
    pub(crate) executors: Vec<ExecutorInfo>,
}

#[derive(Deserialize)]
pub(crate) struct ExecutorEnvelope {
    pub(crate) executor: ExecutorInfo,
}

impl crate::Client {
    /// `GET /agent_api/v1/executors?kind=runner`: the runners eligible for the caller.
    pub async fn runners(&self) -> crate::Result<Vec<ExecutorInfo>> {
        let route = Route::new(V1).lit("executors").query("kind", Some("runner"));
        let list: ExecutorList = wire::get(&self.http, &route).await?;
        Ok(list.executors)
    }

    /// `GET /agent_api/v1/executors/{id}`: one eligible runner (404 `not_found` for an
    /// unknown, ineligible or agent_application id).
    pub async fn runner(&self, executor_public_id: &str) -> crate::Result<ExecutorInfo> {
        let route = Route::new(V1).lit("executors").seg(executor_public_id);
        let read: ExecutorEnvelope = wire::get(&self.http, &route).await?;
        Ok(read.executor)
    }
}
