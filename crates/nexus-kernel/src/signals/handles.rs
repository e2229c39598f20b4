//! The listening ends of a signal, shared by every implementation: a [`Subscription`] (a run's
//! feed, an executor's channel, a run's progress) and an in-flight model call's [`Abort`].

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{Notify, broadcast};

/// A listener's end of a signal: a run's feed, an executor's channel, a run's progress. Items
/// sent before it was opened are not seen; a listener that falls behind the buffer loses the
/// oldest (`Lagged`) and recovers from the record (the event log, the inbox).
pub struct Subscription<T> {
    rx: broadcast::Receiver<T>,
}

/// Why [`Subscription::recv`] gave no item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvError {
    /// The listener fell behind and lost this many items.
    Lagged(u64),
    /// No more items will come.
    Closed,
}

/// Why [`Subscription::try_recv`] gave no item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryRecvError {
    /// Nothing waiting now.
    Empty,
    /// The listener fell behind and lost this many items.
    Lagged(u64),
    /// No more items will come.
    Closed,
}

impl<T: Clone> Subscription<T> {
    pub(super) fn new(rx: broadcast::Receiver<T>) -> Self {
        Self { rx }
    }

    /// The next item (cancel safe: an item is lost only if it was returned).
    pub async fn recv(&mut self) -> Result<T, RecvError> {
        self.rx.recv().await.map_err(|e| match e {
            broadcast::error::RecvError::Lagged(n) => RecvError::Lagged(n),
            broadcast::error::RecvError::Closed => RecvError::Closed,
        })
    }

    /// The next item if one is waiting.
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        self.rx.try_recv().map_err(|e| match e {
            broadcast::error::TryRecvError::Empty => TryRecvError::Empty,
            broadcast::error::TryRecvError::Lagged(n) => TryRecvError::Lagged(n),
            broadcast::error::TryRecvError::Closed => TryRecvError::Closed,
        })
    }
}

impl<T> std::fmt::Debug for Subscription<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription").finish_non_exhaustive()
    }
}

/// An in-flight model call's abort: [`Abort::notified`] resolves once the call is aborted.
#[derive(Debug)]
pub struct Abort(pub(super) Arc<Notify>);

impl Abort {
    /// Resolves when the call is aborted (at once if the abort came before this wait).
    pub async fn notified(&self) {
        self.0.notified().await
    }
}

/// An ephemeral frame of a run's live feed (runs.md §11): no id, never stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Ephemeral {
    /// The SSE event name: [`Ephemeral::EXECUTOR_PROGRESS`] or [`Ephemeral::MODEL_DELTA`].
    pub kind: &'static str,
    /// The frame's data.
    pub data: Value,
}

impl Ephemeral {
    /// A runner's progress frame (executor.md §11).
    pub const EXECUTOR_PROGRESS: &'static str = "executor_progress";
    /// A streamed text delta of a model reply (runs.md §11).
    pub const MODEL_DELTA: &'static str = "model_delta";

    /// The kind named `name`, when it is one (a frame relayed from another node).
    pub fn kind_named(name: &str) -> Option<&'static str> {
        [Self::EXECUTOR_PROGRESS, Self::MODEL_DELTA]
            .into_iter()
            .find(|k| *k == name)
    }
}
