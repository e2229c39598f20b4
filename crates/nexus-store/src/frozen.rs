//! The process's cache of frozen contexts, by digest, and the task rows decoded before their
//! frozen context is known.
//!
//! A frozen context is stored once per distinct content under its digest, the SHA-256 of its
//! bytes (`frozen_contexts`, migration 0014). The task reads return the row's digest, not the body:
//! the body is taken from this cache, and read from `frozen_contexts` only when the process has not
//! seen it yet. A digest names one content for ever, in every database, so a kept body is always
//! the right one: nothing here is invalidated, whoever writes what. The reads it saves were the
//! dearest of a PostgreSQL round (docs/decisions/122-frozen-contexts-stored-once.md: each task read
//! fetched and decompressed the body's out-of-line chunks).
//!
//! Architecture Invariant: a decoded task row ([`Pending`]) reaches a caller only through
//! `resolve_frozen` (`ops/tasks.rs`), which fills the body from the cache or the table.
//!
//! The cache holds at most [`CAPACITY_BYTES`] of bodies; a full cache drops its oldest bodies
//! first (a round's body is read again by the round's continuation soon after it is written).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::model::{RoundForReply, RunInAccount, RunRow, TaskRow};

/// The most bytes of bodies kept (a declaration renders to at most about 1 MiB).
pub(crate) const CAPACITY_BYTES: usize = 64 << 20;

#[derive(Default)]
struct Kept {
    bodies: HashMap<String, Arc<str>>,
    /// Digests in the order they were kept, oldest first.
    order: VecDeque<String>,
    bytes: usize,
}

static KEPT: Mutex<Option<Kept>> = Mutex::new(None);

fn kept() -> MutexGuard<'static, Option<Kept>> {
    // A panic while the lock was held leaves at worst a body missing from the map; every kept
    // body is still the one its digest names.
    KEPT.lock().unwrap_or_else(|e| e.into_inner())
}

/// The kept body of `digest`.
pub(crate) fn get(digest: &str) -> Option<Arc<str>> {
    kept().as_ref()?.bodies.get(digest).cloned()
}

/// Keeps `body` under `digest` (its SHA-256: the caller read or computed it beside the body).
/// A body larger than a quarter of the capacity is not kept.
pub(crate) fn keep(digest: &str, body: &str) {
    if body.len() > CAPACITY_BYTES / 4 {
        return;
    }
    let mut guard = kept();
    let kept = guard.get_or_insert_with(Kept::default);
    if kept.bodies.contains_key(digest) {
        return;
    }
    while kept.bytes + body.len() > CAPACITY_BYTES {
        let Some(oldest) = kept.order.pop_front() else { break };
        if let Some(gone) = kept.bodies.remove(&oldest) {
            kept.bytes -= gone.len();
        }
    }
    kept.bytes += body.len();
    kept.order.push_back(digest.to_owned());
    kept.bodies.insert(digest.to_owned(), Arc::from(body));
}

/// Forgets every kept body, so the next reads take the table's path (the tests of that path).
#[cfg(any(test, feature = "testing"))]
pub fn forget_all() {
    *kept() = None;
}

/// How many bodies and bytes are kept.
#[cfg(any(test, feature = "testing"))]
pub fn kept_size() -> (usize, usize) {
    kept().as_ref().map_or((0, 0), |k| (k.bodies.len(), k.bytes))
}

/// A decoded value whose task row's frozen context is not filled yet: the row's digest, which
/// `resolve_frozen` looks up in the cache, then in `frozen_contexts`.
#[must_use = "a task row's frozen context is filled by `resolve_frozen`"]
#[derive(Debug)]
pub(crate) struct Pending<T> {
    pub(crate) value: T,
    /// The digest of the value's task row (`None`: no frozen context to fill).
    pub(crate) digest: Option<String>,
}

impl<T> Pending<T> {
    /// A value with no frozen context to fill.
    pub(crate) fn ready(value: T) -> Self {
        Pending { value, digest: None }
    }

    /// The value as read, by a read that selected no frozen context (`NULL AS frozen_digest`).
    pub(crate) fn without_frozen(self) -> T {
        debug_assert!(self.digest.is_none(), "a read without frozen contexts found a digest");
        self.value
    }

    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> Pending<U> {
        Pending {
            value: f(self.value),
            digest: self.digest,
        }
    }
}

/// A value with at most one task row whose frozen context [`Pending`] may fill.
pub(crate) trait HoldsTask {
    fn frozen_slot(&mut self) -> Option<&mut Option<String>>;
}

impl HoldsTask for TaskRow {
    fn frozen_slot(&mut self) -> Option<&mut Option<String>> {
        Some(&mut self.frozen_context)
    }
}

impl HoldsTask for (TaskRow, RunRow) {
    fn frozen_slot(&mut self) -> Option<&mut Option<String>> {
        Some(&mut self.0.frozen_context)
    }
}

impl HoldsTask for RoundForReply {
    fn frozen_slot(&mut self) -> Option<&mut Option<String>> {
        Some(&mut self.task.frozen_context)
    }
}

impl HoldsTask for (RunInAccount, Option<TaskRow>) {
    fn frozen_slot(&mut self) -> Option<&mut Option<String>> {
        self.1.as_mut().map(|t| &mut t.frozen_context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_bodies_by_digest_and_drops_the_oldest_when_full() {
        forget_all();
        keep("a", "alpha");
        keep("a", "ignored: the digest already names its body");
        assert_eq!(get("a").as_deref(), Some("alpha"));
        assert_eq!(kept_size(), (1, 5));
        // Filling past the capacity drops the oldest first.
        let quarter = "x".repeat(CAPACITY_BYTES / 4);
        for d in ["q1", "q2", "q3", "q4"] {
            keep(d, &quarter);
        }
        assert_eq!(get("a"), None, "the oldest body went first");
        assert!(get("q4").is_some() && get("q2").is_some());
        assert!(kept_size().1 <= CAPACITY_BYTES);
        // Too large to keep.
        keep("big", &"y".repeat(CAPACITY_BYTES / 4 + 1));
        assert_eq!(get("big"), None);
        forget_all();
        assert_eq!(kept_size(), (0, 0));
    }
}
