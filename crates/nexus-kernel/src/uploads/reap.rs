//! The blob reaper (uploads.md §5): unbound uploads and captures are reclaimed 24 h after
//! creation, hourly. A blob goes only when no descriptor references it.

use std::sync::atomic::Ordering;

use crate::Uploads;
use crate::error::KernelResult;
use crate::uploads::io_error;

/// How old an unbound upload must be to be reclaimed.
pub const UNBOUND_LIFETIME_MS: i64 = 24 * 60 * 60 * 1000;
/// How often the reaper runs.
pub const REAP_INTERVAL_MS: i64 = 60 * 60 * 1000;

impl Uploads<'_> {
    /// Deletes unbound uploads created at or before `now - 24 h`, and the blobs no descriptor
    /// references any more. Returns how many uploads were reclaimed.
    ///
    /// One transaction: the blob rows are deleted and their bytes removed before the commit,
    /// so an ingest of the same digest (which inserts its blob row first) waits for it and
    /// then writes the bytes afresh.
    pub async fn reap_uploads(&self, now: i64) -> KernelResult<u64> {
        let mut tx = self.store.begin().await?;
        let mut shas = tx.delete_unbound_uploads(now - UNBOUND_LIFETIME_MS).await?;
        let reclaimed = shas.len() as u64;
        shas.sort();
        shas.dedup();
        for sha in &shas {
            if tx.delete_orphan_blob(sha).await? {
                self.state.uploads.blobs.delete(sha).await.map_err(io_error)?;
            }
        }
        tx.commit().await?;
        if reclaimed > 0 {
            tracing::info!(reclaimed, blobs = shas.len(), "reaped unbound uploads");
        }
        Ok(reclaimed)
    }

    /// [`Kernel::reap_uploads`] at most once per hour per process (the sweep pass calls it).
    pub async fn reap_uploads_if_due(&self, now: i64) -> KernelResult<u64> {
        let last = self.state.uploads.last_reap_ms.load(Ordering::Relaxed);
        if last != 0 && now - last < REAP_INTERVAL_MS {
            return Ok(0);
        }
        if self
            .state
            .uploads
            .last_reap_ms
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return Ok(0);
        }
        self.reap_uploads(now).await
    }
}
