//! The upload state a kernel holds ([`UploadState`]): its blob store and the reaper's clock.

use std::sync::Arc;
use std::sync::atomic::AtomicI64;

use super::blobs::Blobs;

/// The upload state a kernel holds: its blob store and the reaper's clock.
#[derive(Debug)]
pub struct UploadState {
    pub blobs: Arc<dyn Blobs>,
    /// When the reaper last ran (Unix ms; 0 = never in this process).
    pub(crate) last_reap_ms: AtomicI64,
}

impl UploadState {
    pub fn new(blobs: Arc<dyn Blobs>) -> Self {
        Self {
            blobs,
            last_reap_ms: AtomicI64::new(0),
        }
    }
}
