//! The task read's shape (runs.md §9): the trace every task row carries, the members of its
//! kind, its park's clock, its outcome.
//!
//! Typed rather than built as `serde_json::Value` trees: a reply is written straight from it,
//! with no map per object and no hashing of every key (the commit's reply carries one of these
//! per settled task). Members serialize in declaration order, flattened parts in place; an
//! absent option is omitted unless its member says it is served as `null`.

use nexus_core::results::{self, Block};
use nexus_store::{EdgeKind, OnFailure, RunRow, TaskKind, TaskRow, TaskStatus, Visibility};
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use super::render::blocks_of;
use crate::time;

const OUTPUT_PREVIEW_CHARS: usize = 200;

/// A stored JSON column read back (`None` when absent or not JSON).
pub(crate) fn parse(text: Option<&str>) -> Option<Value> {
    text.and_then(|t| serde_json::from_str(t).ok())
}

/// The public names a run record shows, read beside its row.
pub(crate) struct RunNames {
    pub workspace_public_id: Uuid,
    pub created_by: Option<Uuid>,
    pub answering: Option<Uuid>,
    pub declaring_agent: Option<Uuid>,
    pub default_runner: Option<Uuid>,
    pub deliverable_task_key: Option<String>,
}

/// The run record every run route serves (runs.md §1): the one projection of a run row.
pub(crate) fn run_record(run: &RunRow, names: RunNames) -> nexus_api::runs::Run {
    let id = |u: Option<Uuid>| u.map(|u| u.to_string());
    nexus_api::runs::Run {
        public_id: run.public_id.to_string(),
        workspace_public_id: names.workspace_public_id.to_string(),
        status: nexus_api::common::RunStatus::from(run.status.as_str()),
        approval_mode: nexus_api::common::ApprovalMode::from(run.approval_mode),
        approval_rules: parse(run.approval_rules.as_deref()),
        hosting: serde_json::to_value(run.hosting).expect("a hosting serializes"),
        created_by: id(names.created_by),
        answering_principal: id(names.answering),
        declaring_agent: id(names.declaring_agent),
        default_runner_executor_public_id: id(names.default_runner),
        deliverable_task_key: names.deliverable_task_key,
        revision: run.revision,
        attention: run.attention.as_deref().and_then(|a| serde_json::from_str(a).ok()),
        created_at: time::iso(run.created_at),
        started_at: run.started_at.map(time::iso),
        ended_at: run.ended_at.map(time::iso),
        summary: None,
        rest: serde_json::Map::new(),
    }
}

/// The addressee of an inbox row.
#[derive(Debug, Clone, Serialize)]
pub struct AddressedTo {
    pub role: Option<String>,
    pub executor_public_id: Uuid,
}

/// The frozen Runner target of a tool row.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    pub executor_public_id: Uuid,
    pub display_name: String,
}

/// The full task read: `{task}` of `GET R/tasks/{key}`, of the commit and of the member verbs.
#[derive(Debug, Clone, Serialize)]
pub struct TaskView {
    #[serde(flatten)]
    pub trace: Trace,
    #[serde(flatten)]
    pub detail: Option<KindDetail>,
    /// Parked rows with a clock only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<i64>,
    /// Settled rows only.
    #[serde(flatten)]
    pub outcome: Option<Outcome>,
    /// Tool rows only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// The `{task}` answer of the member verbs on one row (approve, deny, resolve, retry, abandon,
/// cancel), with `idle: true` when the verb found the row already settled.
#[derive(Debug, Clone, Serialize)]
pub struct TaskReply {
    pub task: TaskView,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub idle: bool,
}

impl TaskReply {
    /// The row as the verb left it.
    pub(crate) fn of(task: TaskView) -> TaskReply {
        TaskReply { task, idle: false }
    }

    /// The row as it already stood: the verb changed nothing.
    pub(crate) fn idle(task: TaskView) -> TaskReply {
        TaskReply { task, idle: true }
    }
}

/// A row of `GET R/tasks`: the trace, and a tool row's names.
#[derive(Debug, Clone, Serialize)]
pub struct TraceRow {
    #[serde(flatten)]
    pub trace: Trace,
    #[serde(flatten)]
    pub names: Option<ToolNames>,
    /// A model row's `provider/model` (what the console's lists and timeline label it by).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// A tool row's names: `tool_name` is served as `null` when the row has none.
#[derive(Debug, Clone, Serialize)]
pub struct ToolNames {
    pub tool_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_alias: Option<String>,
}

/// What every task read carries, plus the settled error fields.
#[derive(Debug, Clone, Serialize)]
pub struct Trace {
    pub key: String,
    pub kind: TaskKind,
    pub status: TaskStatus,
    pub generation: i64,
    pub on_failure: OnFailure,
    pub visibility: Visibility,
    /// The keys of the row's `after` dependencies.
    pub after: Vec<String>,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settled_at: Option<String>,
    /// `waiting`: the dependencies not yet settled; `needs_approval`: `["approver"]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_on: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_resolution: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<TaskError>,
    /// Served only when true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

/// A settled row's `error`.
#[derive(Debug, Clone, Serialize)]
pub struct TaskError {
    pub key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// One dependency of a row: its key, the edge's kind, whether it has settled.
pub(crate) struct Dep {
    pub key: String,
    pub edge: EdgeKind,
    pub settled: bool,
}

impl Trace {
    /// The trace of `task`, whose dependencies are `deps`.
    pub(crate) fn of(task: &TaskRow, deps: &[Dep]) -> Trace {
        let keys = |keep: &dyn Fn(&Dep) -> bool| -> Vec<String> {
            deps.iter().filter(|d| keep(d)).map(|d| d.key.clone()).collect()
        };
        let waiting_on = match task.status {
            TaskStatus::Waiting => Some(keys(&|d| !d.settled)),
            TaskStatus::NeedsApproval => Some(vec!["approver".to_owned()]),
            _ => None,
        };
        let settled = task.status.is_settled();
        Trace {
            key: task.key.clone(),
            kind: task.kind,
            status: task.status,
            generation: task.generation,
            on_failure: task.on_failure,
            visibility: task.visibility,
            after: keys(&|d| d.edge == EdgeKind::After),
            created_at: time::iso(task.created_at),
            started_at: task.started_at.map(time::iso),
            settled_at: task.settled_at.map(time::iso),
            waiting_on,
            failure_resolution: task
                .failure_resolution
                .filter(|_| settled)
                .map(|r| r.as_str().to_string()),
            error: task.error_key.as_ref().filter(|_| settled).map(|key| TaskError {
                key: key.clone(),
                detail: task.error_detail.clone(),
            }),
            is_error: settled && task.is_error,
        }
    }
}

/// The members of a task read that depend on its kind, after the trace.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum KindDetail {
    Model(Box<ModelDetail>),
    Tool(Box<ToolDetail>),
    Await(Box<AwaitDetail>),
}

/// A round's members.
#[derive(Debug, Clone, Serialize)]
pub struct ModelDetail {
    pub mainline: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_of: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The calls the round declared; omitted when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<CallRef>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    pub prompt: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    pub tool_definitions: Vec<Value>,
    pub environment: Value,
    pub skills: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_bytes: Option<i64>,
}

/// `{call_id, name, task_key}` of a fan member: `name` is the model's own spelling.
#[derive(Debug, Clone, Serialize)]
pub struct CallRef {
    pub call_id: Option<String>,
    pub name: Option<String>,
    pub task_key: String,
}

impl From<CallRef> for nexus_api::common::CallRef {
    fn from(c: CallRef) -> Self {
        nexus_api::common::CallRef {
            call_id: c.call_id,
            name: c.name,
            task_key: c.task_key,
            rest: Default::default(),
        }
    }
}

impl CallRef {
    pub(crate) fn of(t: &TaskRow) -> CallRef {
        CallRef {
            call_id: t.tool_call_id.clone(),
            name: t.tool_alias.clone().or_else(|| t.tool_name.clone()),
            task_key: t.key.clone(),
        }
    }
}

/// A tool row's members.
#[derive(Debug, Clone, Serialize)]
pub struct ToolDetail {
    #[serde(flatten)]
    pub names: ToolNames,
    pub tool_input: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declaring_task_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addressed_to: Option<AddressedTo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect_profile: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_context: Option<Value>,
}

/// An await's members.
#[derive(Debug, Clone, Serialize)]
pub struct AwaitDetail {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ask: Option<AskDetail>,
}

/// An ask's choices.
#[derive(Debug, Clone, Serialize)]
pub struct AskDetail {
    pub options: Value,
    pub multi: Value,
}

/// A settled row's result: the text projection, its preview, the blocks, and the structured
/// content when the result carried one (an explicit `null` is served as `null`).
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub output_preview: String,
    pub output: String,
    pub content: Vec<Block>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
}

/// The first characters of a text projection (`output_preview`).
pub(crate) fn preview(output: &str) -> String {
    output.chars().take(OUTPUT_PREVIEW_CHARS).collect()
}

impl Outcome {
    /// The outcome of a settled row.
    pub(crate) fn of(task: &TaskRow) -> Outcome {
        let content = blocks_of(task);
        let output = results::text_projection(&content);
        Outcome {
            output_preview: preview(&output),
            output,
            content,
            structured_content: task
                .structured_present
                .then(|| parse(task.structured_content.as_deref()).unwrap_or(Value::Null)),
        }
    }
}
