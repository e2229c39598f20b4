//! The executor plane (executor.md, issue 5).
//!
//! `announce.rs` (`PUT X/announcement`, §4), `discovery.rs` (member-plane `GET /executors`, §3),
//! `frames.rs` (the frames of `GET X/channel`, §10), `push.rs` (the frames' sources and the `push_work` / `push_cancel`
//! hand-offs to the signals seam), `progress.rs` (`POST X/progress`, §11; its cadence clock in
//! `cadence.rs`), and the inbox: `inbox.rs`, `claim.rs` (claim, claim status, extend),
//! `commit.rs` and `settle.rs` (the single settle). The channels themselves are the signals
//! seam's (`crate::signals`).
//! ARCHITECTURE.md ("Seams inside the kernel") lists what the rest of the kernel calls here.

// `KernelError` carries the envelope's extra members; boxing it is a crate-wide change.
#![allow(clippy::result_large_err)]

pub mod announce;
pub mod cadence;
pub mod claim;
pub mod commit;
pub mod discovery;
pub mod frames;
pub mod inbox;
pub mod progress;
pub mod push;

pub use progress::ProgressOutcome;
