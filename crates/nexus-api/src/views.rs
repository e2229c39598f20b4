//! The run's transcript and graph (runs.md §10).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::common::{CallRef, TaskKind, TaskStatus};

/// `GET R/transcript`: rounds and their tool rows in creation order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Transcript {
    /// The rows.
    pub rows: Vec<TranscriptRow>,
}

/// One transcript row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TranscriptRow {
    /// The task's key (a round gives a `user` row for its prompt and an `assistant` row).
    pub key: String,
    /// The task's kind.
    pub kind: TaskKind,
    /// `user`, `assistant` or `tool`.
    pub role: String,
    /// Whether the row is on the mainline.
    #[serde(default)]
    pub mainline: bool,
    /// The delegation call a branch row belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_of: Option<String>,
    /// The task's status.
    pub status: TaskStatus,
    /// A prompt or a reply's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The calls an assistant row made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<CallRef>>,
    /// A tool row's wire name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// A tool row's alias.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_alias: Option<String>,
    /// A tool row's title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A settled tool row's output preview.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_preview: Option<String>,
    /// Whether a settled tool row's result is an error.
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_error: bool,
    /// `visible`, `collapsed` or `hidden`.
    #[serde(default)]
    pub visibility: Option<String>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl TranscriptRow {
    /// The heading of a collapsed tool row: its title, else `Called <alias or name>`
    /// (runs.md §10). `None` for rows that are not tool rows.
    pub fn heading(&self) -> Option<String> {
        if self.role != "tool" {
            return None;
        }
        if let Some(title) = &self.title {
            return Some(title.clone());
        }
        let name = self
            .tool_alias
            .as_deref()
            .or(self.tool_name.as_deref())
            .unwrap_or("a tool");
        Some(format!("Called {name}"))
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `GET R/graph`: nodes, edges and a Mermaid flowchart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Graph {
    /// The tasks, `n0, n1, …` in creation order.
    pub nodes: Vec<GraphNode>,
    /// The dependencies.
    pub edges: Vec<GraphEdge>,
    /// The flowchart text.
    #[serde(default)]
    pub mermaid: String,
}

/// One node of the [`Graph`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct GraphNode {
    /// `n0`, `n1`, …
    pub id: String,
    /// The task's key.
    pub key: String,
    /// The task's kind.
    pub kind: TaskKind,
    /// The task's status.
    pub status: TaskStatus,
    /// Whether the task is on the mainline.
    #[serde(default)]
    pub mainline: bool,
    /// A tool node's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// A tool node's alias, when the call used one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_alias: Option<String>,
    /// A model node's `provider/model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// One edge of the [`Graph`]: `from` must settle before `to`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct GraphEdge {
    /// The dependency's node id.
    pub from: String,
    /// The dependent's node id.
    pub to: String,
    /// `after`, `reads` or `pairs`.
    pub kind: String,
}
