//! The run engine (runs.md, issue 4): runs, tasks, rounds, the worker and the live feed.
//!
//! Lifecycle, rounds and the worker: `create.rs`, `schedule.rs`, `round.rs`, `request.rs`,
//! `worker.rs`, `events.rs` + `stream.rs`; the gate, approvals, sweep and reads: `gate.rs`,
//! `approvals.rs`, `resolution.rs` (a person resolving an await), `sweep.rs`, `read.rs`.
//! ARCHITECTURE.md ("Seams inside the kernel") names the methods the halves call each other
//! through.
//!
//! Shapes both halves read:
//! - a model task's `frozen_context` is a [`FrozenContext`] (written once, at insert; a
//!   continuation copies its round's bytes verbatim);
//! - a model task's `request_surface` is a [`RequestSurface`] (the model and instructions; a
//!   retry with `{model}` may replace it);
//! - a model task's `reply` is a [`StoredReply`], its `usage` `{input_tokens, output_tokens}`,
//!   its `content` the reply text as stored blocks;
//! - a round's chain predecessor is its `declaring_task_id` (a continuation `r{n}` is declared
//!   by the round whose calls it reads; a fan member `r{n}t{i}` by the round that made the call);
//! - a continuation round has a `round_facts` row, written by the expansion that authored it:
//!   its chain's length before it, the repeat-call rule's look-back of its predecessor, and a
//!   floor under the free round numbers (round.rs);
//! - a sealed record (`sealed_requests.record`) is `{entries, request_options}` with
//!   `request_options = {provider, model, max_output_tokens, reasoning_effort, system, tools,
//!   url, headers}`; `body_sha256`, `request_bytes`, `attempts` are columns.

// `KernelError` carries the envelope's extra members; boxing it is a crate-wide change.
#![allow(clippy::result_large_err)]

pub(crate) mod approvals;
pub(crate) mod create;
pub(crate) mod events;
pub(crate) mod gate;
pub(crate) mod read;
pub(crate) mod request;
pub(crate) mod resolution;
pub(crate) mod round;
pub(crate) mod schedule;
pub(crate) mod sealed;
pub mod stream;
pub(crate) mod sweep;
pub mod view;
pub(crate) mod worker;

use nexus_core::codes::Code;
use nexus_store::{Engine, EventRow, RunRow, Standing, TaskRow, WorkspaceRow};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::Kernel;
use crate::auth::MemberPrincipal;
use crate::error::{KernelError, KernelResult};

pub use read::RequestRead;

/// Job kinds (storage-and-scale.md §5).
pub(crate) mod job_kind {
    /// A model round: seal, call, apply. Lease 15 min, renewed while in flight.
    pub const MODEL_CALL: &str = "model_call";
    /// A kernel tool evaluation. At-most-once: the row is deleted before evaluation starts.
    pub const KERNEL_TOOL: &str = "kernel_tool";
}

/// Task kinds.
pub(crate) mod task_kind {
    pub const MODEL: &str = "model_task";
    pub const TOOL: &str = "tool_task";
    pub const AWAIT: &str = "await_task";
}

/// Task error keys the engine writes (errors-and-auth.md §4, "graph").
pub(crate) mod graph_error {
    pub const UPSTREAM_FAILED: &str = "upstream_failed";
    pub const RUN_CANCELED: &str = "run_canceled";
    pub const ROUND_EXPANSION_REFUSED: &str = "round_expansion_refused";
}

/// A settled task status (no further transition without a retry).
pub(crate) fn is_settled(status: &str) -> bool {
    matches!(
        status,
        "completed" | "failed" | "canceled" | "timed_out" | "skipped" | "uncertain"
    )
}

/// An open (live) task status: `waiting` or parked.
pub(crate) fn is_open(status: &str) -> bool {
    nexus_store::task_status::OPEN.contains(&status)
}

/// A terminal run status.
pub(crate) fn run_is_terminal(status: &str) -> bool {
    matches!(status, "completed" | "canceled")
}

/// What a transaction leaves for after its commit (storage-and-scale.md §3, §6). Losing one
/// loses no state: readers recover by polling or by resuming at a sequence.
#[derive(Debug, Clone)]
pub(crate) enum AfterCommit {
    /// A durable event row (also a trigger: the run's live feed catches up).
    Event(EventRow),
    /// The run (internal id) wrote events in the transaction: its live feed catches up.
    RunEvents(i64),
    /// A job was inserted: wake the workers.
    WakeJobs,
    /// An executor has new inbox work (`work_available` on its channel).
    #[allow(dead_code)]
    WorkAvailable {
        executor_public_id: Uuid,
        kind: &'static str,
        run: Uuid,
        task_key: String,
    },
    /// A row that sat in an executor's inbox was canceled (`work_canceled` on its channel).
    WorkCanceled {
        executor_public_id: Uuid,
        run: Uuid,
        task_key: String,
    },
}

/// The frozen context of a model task (declarations.md §8), stored in `frozen_context`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct FrozenContext {
    /// The chain root's prompt (the round's prompt entry; continuations copy it).
    pub prompt: String,
    /// Keys the prompt entry reads (`results`), as unpaired `<task_result>` envelopes.
    #[serde(default)]
    pub results: Vec<String>,
    /// Upload ids the prompt entry attaches.
    #[serde(default)]
    pub attachments: Vec<String>,
    /// The rendered, sorted declaration.
    #[serde(default)]
    pub tool_definitions: Vec<Value>,
    /// `{default_runner_executor_public_id, executors, runner_candidates}`.
    #[serde(default)]
    pub environment: Value,
    /// The skill catalog.
    #[serde(default)]
    pub skills: Vec<Value>,
    /// `{workspace_public_id, conversation_public_id, user_public_id}`.
    #[serde(default)]
    pub memory: Value,
    /// The run's approval inputs at acceptance.
    #[serde(default)]
    pub approval_mode: String,
    #[serde(default)]
    pub approval_rules: Value,
    /// The policy of this chain's tool fans.
    #[serde(default = "absorb")]
    pub fan_on_failure: String,
}

fn absorb() -> String {
    "absorb".into()
}

impl FrozenContext {
    /// Parses a stored `frozen_context`.
    pub fn of(task: &TaskRow) -> FrozenContext {
        task.frozen_context
            .as_deref()
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_default()
    }
}

/// The request surface of a model task (`request_surface`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RequestSurface {
    /// `provider/model`.
    pub model: String,
    #[serde(default)]
    pub reasoning_effort: Option<String>,
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    #[serde(default)]
    pub instructions: Option<String>,
}

impl RequestSurface {
    pub fn of(task: &TaskRow) -> RequestSurface {
        task.request_surface
            .as_deref()
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_default()
    }
}

/// A model task's stored reply (`reply`): the assistant entry plus the stop word.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredReply {
    #[serde(default)]
    pub text: Option<String>,
    /// The calls in call order, ids as stored on the fan rows (long ids replaced).
    #[serde(default)]
    pub tool_calls: Vec<nexus_providers::RawToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native: Option<Value>,
    #[serde(default)]
    pub stop: String,
}

impl StoredReply {
    pub fn of(task: &TaskRow) -> Option<StoredReply> {
        task.reply.as_deref().and_then(|s| serde_json::from_str(s).ok())
    }
}

/// `runs.md` error: a code with a message.
pub(crate) fn refuse(code: Code, message: impl Into<String>) -> KernelError {
    KernelError::new(code, message)
}

impl Kernel {
    /// The workspace the caller may reach: no standing → 404 `not_found` (the workspace is
    /// concealed); `write` required and only `read` held → 403 `not_authorized`.
    pub(crate) async fn workspace_for(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        write: bool,
    ) -> KernelResult<(WorkspaceRow, Standing)> {
        let not_found = || refuse(Code::NotFound, "no such workspace");
        let ws = self
            .store
            .workspace_by_public_id(workspace)
            .await?
            .ok_or_else(not_found)?;
        let standing = self
            .store
            .standing(ws.id, principal.member.id)
            .await?
            .ok_or_else(not_found)?;
        if write && standing < Standing::Write {
            return Err(refuse(
                Code::NotAuthorized,
                "this verb needs write standing in the workspace",
            ));
        }
        Ok((ws, standing))
    }

    /// The run `run` of workspace `ws`, or 404 `not_found`.
    pub(crate) async fn run_in(&self, ws: &WorkspaceRow, run: Uuid) -> KernelResult<RunRow> {
        self.store
            .run_by_public_id(run)
            .await?
            .filter(|r| r.workspace_id == ws.id)
            .ok_or_else(|| refuse(Code::NotFound, "no such run"))
    }
}

// ---------------------------------------------------------------------------------------------
// TEMP until helper 2: the gate / kernel tool / sweep / run projection hand-offs. Each stub is
// replaced by helper 2's function of the same name and signature (runs/gate.rs, sweep.rs,
// read.rs, tools/); delete the block when those land.
// ---------------------------------------------------------------------------------------------
