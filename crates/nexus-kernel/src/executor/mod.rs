//! The executor plane (executor.md, issue 5).
//!
//! File ownership (docs/dev/run-engine-plan.md §F): `announce.rs` (`PUT X/announcement`, §4),
//! `discovery.rs` (member-plane `GET /executors`, §3), `push.rs` (the per-executor channel hub
//! behind `GET X/channel`, §10, and the `push_work` / `push_cancel` hand-offs) and
//! `progress.rs` (`POST X/progress`, §11) are the executor-surface half; the inbox, claim,
//! commit and settle files are the inbox half.

// `KernelError` carries the envelope's extra members; boxing it is a crate-wide change.
#![allow(clippy::result_large_err)]

pub mod announce;
pub mod claim;
pub mod commit;
pub mod discovery;
pub mod inbox;
pub mod progress;
pub mod push;
pub mod settle;

pub use progress::{ProgressHub, ProgressOutcome};
pub use push::ChannelHub;

/// In-process state of the executor plane shared by every clone of a [`crate::Kernel`]:
/// the push channels and the progress relay. Losing it loses no state (push and progress are
/// best effort; the inbox is the record).
#[derive(Default)]
pub struct PlaneState {
    /// Per-executor push channels (`work_available`, `work_canceled`).
    pub channels: ChannelHub,
    /// Per-run ephemeral progress frames and the per-task cadence.
    pub progress: ProgressHub,
}

impl std::fmt::Debug for PlaneState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlaneState").finish_non_exhaustive()
    }
}
