//! The run engine (runs.md): runs, tasks, rounds, the worker and the live feed. One file per
//! job; data walks one way through them:
//!
//! - the doors: `create/` (create, start, stop, append; step acceptance; idempotency),
//!   `approvals.rs` (approve, deny, the held-row listing), `resolution.rs` (a person resolving
//!   an await), `recover.rs` (retry, abandon, branch cancel), `default_runner.rs` (the run's
//!   default runner);
//! - the run's rows and their shapes: `rows.rs` (the graph, rows by id, readiness, the final
//!   logical work a key names), `columns.rs` (the typed JSON columns: `Frozen`, the request
//!   surface, the stored reply, the sealed record);
//! - status changes: `settle.rs` (every task status change and the expiry rule), then
//!   `readiness.rs` (what a settle makes happen next) and `run_end.rs` (how a run ends);
//! - tool rows: `gate.rs` (addressing and the approval gate), `sweep.rs` (expired parks,
//!   revoked addressees);
//! - model rounds: `round/` (seal, call, apply, expand, chain facts), built by `request.rs`
//!   (the neutral request) from `render.rs` (what the model reads of a settled row), with
//!   `sealed.rs` (this process's copy of the entries it sealed last);
//! - effects and reads: `events.rs` + `stream.rs` (events appended in the change's
//!   transaction, published after its commit, and the live feed), `read.rs` + `view.rs` (the
//!   run, task, request, transcript, graph and event projections), `cache.rs` (the run's usage
//!   and its per-round tools digests), `worker.rs` (the job loop,
//!   lease recovery, the sweep timer).
//!
//! ARCHITECTURE.md ("Seams inside the kernel") names the methods the halves call each other
//! through. A round's chain predecessor is its `declaring_task_id` (a continuation `r{n}` is
//! declared by the round whose calls it reads; a fan member `r{n}t{i}` by the round that made
//! the call); a continuation has a `round_facts` row, written by the expansion that authored
//! it (`round/chain.rs`).

// `KernelError` carries the envelope's extra members; boxing it is a crate-wide change.
#![allow(clippy::result_large_err)]

pub(crate) mod approvals;
pub(crate) mod cache;
pub(crate) mod columns;
pub(crate) mod create;
pub(crate) mod default_runner;
pub(crate) mod events;
pub(crate) mod gate;
pub(crate) mod read;
pub(crate) mod readiness;
pub(crate) mod recover;
pub(crate) mod render;
pub(crate) mod request;
pub(crate) mod resolution;
pub(crate) mod round;
pub(crate) mod rows;
pub(crate) mod run_end;
pub(crate) mod sealed;
pub(crate) mod settle;
pub mod stream;
pub(crate) mod summary;
pub(crate) mod sweep;
pub(crate) mod unit;
pub mod view;
pub(crate) mod worker;

use nexus_core::codes::Code;
use nexus_store::prelude::*;
use nexus_store::{EventRow, RunRow, Standing, WorkspaceRow};
use uuid::Uuid;

use crate::Kernel;
use crate::auth::MemberPrincipal;
use crate::error::{KernelError, KernelResult};

pub use approvals::Deny;
pub use cache::{CacheReport, CacheRound};
pub(crate) use columns::{FrozenContext, RequestSurface, StoredReply};
pub use create::Stop;
pub use create::idempotency::Idempotent;
pub use default_runner::DefaultRunner;
pub use read::{RequestRead, RunRead, RunsQuery, TracePage};
pub use recover::Retry;
pub use resolution::Answer;

/// Task error keys the engine writes (errors-and-auth.md §4, "graph").
pub(crate) mod graph_error {
    pub const UPSTREAM_FAILED: &str = "upstream_failed";
    pub const RUN_CANCELED: &str = "run_canceled";
    pub const ROUND_EXPANSION_REFUSED: &str = "round_expansion_refused";
}

/// What a transaction leaves for after its commit (storage-and-scale.md §3, §6). Losing one
/// loses no state: readers recover by polling or by resuming at a sequence.
#[derive(Debug, Clone)]
pub(crate) enum AfterCommit {
    /// A durable event row (also a trigger: the run's live feed catches up).
    Event(EventRow),
    /// The run (internal id) wrote events in the transaction: its live feed catches up.
    RunEvents(i64),
    /// A job was inserted, or a conversation's turn may be due: wake the workers.
    WakeJobs,
    /// A kernel tool's job was inserted: wakes the workers as [`AfterCommit::WakeJobs`] does,
    /// unless the worker whose unit inserted it evaluates it at once (`worker.rs`, "handed
    /// off").
    KernelTool(KernelToolJob),
    /// The conversation (internal id) wrote feed events in the transaction: its live stream
    /// catches up.
    ConversationEvents(i64),
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

/// A `kernel_tool` job a unit of work inserted, as the worker that ran the unit evaluates it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KernelToolJob {
    pub job_id: i64,
    pub run_id: i64,
    pub task_id: i64,
    pub generation: i64,
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
