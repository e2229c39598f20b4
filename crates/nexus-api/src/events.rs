//! Durable events (runs.md §11): the event record and its pages.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::common::{RunStatus, TaskStatus, open_words};
use crate::tasks::TaskError;

open_words! {
    /// A durable event's type (runs.md §11).
    pub enum EventKind {
        /// `{from, to, reason?}`.
        RunStatusChanged = "run_status_changed",
        /// `{keys, origin, revision?}`.
        TasksAppended = "tasks_appended",
        /// `{from, to, generation, error?}`.
        TaskStatusChanged = "task_status_changed",
        /// `{executor_public_id, deadline_at}`.
        TaskClaimed = "task_claimed",
        /// `{deadline_at, by, timeout_ms}`.
        TaskDeadlineExtended = "task_deadline_extended",
        /// `{decision, origin, decided_by}`.
        ApprovalDecided = "approval_decided",
        /// `{reason, task_key}`.
        AttentionRequired = "attention_required",
        /// `{reason, task_key}`.
        AttentionResolved = "attention_resolved",
        /// `{from, to}`.
        TaskReaddressed = "task_readdressed",
        /// `{from, to}`.
        DefaultRunnerChanged = "default_runner_changed",
    }
}

/// One durable event: `{sequence, type, at, run_public_id, task_key?, data}`. `sequence`
/// starts at 1 for each run and has no gaps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Event {
    /// The event's position in its run.
    pub sequence: i64,
    /// The event's type.
    #[serde(rename = "type")]
    pub kind: EventKind,
    /// RFC 3339 time of the change.
    pub at: String,
    /// The same time in milliseconds since the Unix epoch (`at` is whole seconds; the
    /// console's timeline needs the milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<i64>,
    /// The run.
    pub run_public_id: String,
    /// The task the event is about, when it is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_key: Option<String>,
    /// The type's payload.
    #[serde(default)]
    pub data: Value,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// The data of a `run_status_changed` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunStatusChange {
    /// The status left (absent at creation).
    #[serde(default)]
    pub from: Option<RunStatus>,
    /// The status entered.
    pub to: RunStatus,
    /// Why, when the kernel says.
    #[serde(default)]
    pub reason: Option<String>,
}

/// The data of a `task_status_changed` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TaskStatusChange {
    /// The status left (absent at creation).
    #[serde(default)]
    pub from: Option<TaskStatus>,
    /// The status entered.
    pub to: TaskStatus,
    /// The row's generation.
    #[serde(default)]
    pub generation: i64,
    /// The error of a failed settle.
    #[serde(default)]
    pub error: Option<TaskError>,
}

impl Event {
    /// The data decoded as `T`.
    pub fn data_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(&self.data)
    }

    /// The change of a `run_status_changed` event.
    pub fn run_status_change(&self) -> Option<RunStatusChange> {
        (self.kind == EventKind::RunStatusChanged)
            .then(|| self.data_as().ok())
            .flatten()
    }

    /// The change of a `task_status_changed` event.
    pub fn task_status_change(&self) -> Option<TaskStatusChange> {
        (self.kind == EventKind::TaskStatusChanged)
            .then(|| self.data_as().ok())
            .flatten()
    }
}

/// `GET R/events`: one page of events and the cursor after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct EventPage {
    /// The events, in sequence order.
    pub events: Vec<Event>,
    /// The last sequence of this page (the `after` given when the page is empty).
    pub next_after: i64,
}
