//! The kernel's in-process state, shared by every clone of a [`Kernel`](crate::Kernel): the
//! signals, the caches and the upload state. Losing it loses no state of record (the store
//! is the record; a cache miss reads it, a lost signal is recovered by polling).
//!
//! This file, like every file defining a type the kernel holds (`settings.rs`, `signals/`, `clock.rs`,
//! `runs/sealed.rs`, `tools/search_cache.rs`, `uploads/state.rs`, `executor/cadence.rs`),
//! names no `Kernel`: state apart from behaviour, so the kernel's files import these one way.

use std::sync::Mutex;

use crate::clock::Clock;
use crate::executor::cadence::ProgressCadence;
use crate::runs::sealed::SealedCache;
use crate::signals::Signals;
use crate::tools::SearchCache;
use crate::uploads::UploadState;

/// What a kernel holds in memory besides its settings.
pub struct KernelState {
    /// What reaches other parts of the system when state changes (live feeds, job wake-ups,
    /// push frames, progress, model-call aborts).
    pub signals: Signals,
    /// Where now comes from: the process clock (SQLite) or the database's (PostgreSQL).
    pub clock: Clock,
    /// The entries of the rounds this process sealed last, so a continuation's request starts
    /// from them without re-reading and re-parsing its predecessor's sealed record.
    pub(crate) sealed: Mutex<SealedCache>,
    /// Built `tool_search` indexes, keyed by the exact frozen context bytes (bounded, LRU).
    pub search_cache: SearchCache,
    /// Uploads and captures: the blob store (uploads.md) and the reaper's clock.
    pub uploads: UploadState,
    /// The per-task clock that thins progress frames (executor.md §11).
    pub(crate) progress_cadence: ProgressCadence,
}

impl KernelState {
    /// Fresh state over `signals`, `clock` and `uploads`: empty caches.
    pub fn new(signals: Signals, clock: Clock, uploads: UploadState) -> Self {
        Self {
            signals,
            clock,
            sealed: Mutex::new(SealedCache::default()),
            search_cache: SearchCache::new(),
            uploads,
            progress_cadence: ProgressCadence::default(),
        }
    }
}

impl std::fmt::Debug for KernelState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelState")
            .field("signals", &self.signals)
            .field("clock", &self.clock)
            .field("uploads", &self.uploads)
            .finish_non_exhaustive()
    }
}
