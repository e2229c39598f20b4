//! The executor plane (executor.md, issue 5).
//!
//! `announce.rs` (`PUT X/announcement`, §4), `discovery.rs` (member-plane `GET /executors`, §3),
//! `push.rs` (the per-executor channel hub behind `GET X/channel`, §10, and the `push_work` /
//! `push_cancel` hand-offs), `progress.rs` (`POST X/progress`, §11), and the inbox: `inbox.rs`,
//! `claim.rs` (claim, claim status, extend), `commit.rs` and `settle.rs` (the single settle).
//! ARCHITECTURE.md ("Seams inside the kernel") lists what the rest of the kernel calls here.

// `KernelError` carries the envelope's extra members; boxing it is a crate-wide change.
#![allow(clippy::result_large_err)]

pub mod announce;
pub mod claim;
pub mod commit;
pub mod discovery;
pub mod inbox;
pub mod progress;
pub mod push;

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
