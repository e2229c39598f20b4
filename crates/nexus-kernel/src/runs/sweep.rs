//! The timeout sweep and the expiry rule (executor.md §13).
//!
//! The sweep selects parked rows whose deadline is at or before `now` on non-terminal runs,
//! in id-cursor batches of 500, re-reads each under the run lock in its own transaction, and
//! settles it by the expiry rule. A row that errors is logged and skipped.

use nexus_core::codes::task_error;
use nexus_core::registry::EffectProfile;
use nexus_store::{Engine, TaskRow};

use crate::Kernel;
use crate::error::KernelResult;

/// The sweep's batch size.
pub(crate) const SWEEP_BATCH: i64 = 500;

/// Statuses a parked row sits in.
pub(crate) const PARKED: [&str; 4] = ["needs_approval", "running", "dispatched", "awaiting_input"];

/// How an expired park settles: `(status, error.key, error.detail)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expiry {
    pub status: &'static str,
    pub key: &'static str,
    pub detail: Option<String>,
}

/// The expiry rule, shared by the sweep, late commits and late resolutions. `None` when the
/// row is not parked (model rows never park).
pub(crate) fn expiry_of(task: &TaskRow) -> Option<Expiry> {
    if !PARKED.contains(&task.status.as_str()) {
        return None;
    }
    let of = |status, key| {
        Some(Expiry {
            status,
            key,
            detail: None,
        })
    };
    match task.kind.as_str() {
        "await_task" => of("timed_out", "await_timeout"),
        "tool_task" => {
            if task.status == "needs_approval" {
                return of("timed_out", task_error::APPROVAL_EXPIRED);
            }
            // Kernel-run rows (`running`) and rows never claimed time out plainly.
            if task.status == "running" || task.claimed_at.is_none() {
                return of("timed_out", task_error::TOOL_TIMEOUT);
            }
            let replayable = task
                .effect_profile
                .as_deref()
                .and_then(|t| serde_json::from_str(t).ok())
                .and_then(|v| EffectProfile::parse(&v).ok())
                .is_some_and(|p| p.is_replayable());
            if replayable {
                of("timed_out", task_error::TOOL_TIMEOUT)
            } else {
                Some(Expiry {
                    status: "uncertain",
                    key: task_error::TOOL_UNCERTAIN,
                    detail: Some("the claim expired without a result; the effect may have happened".to_string()),
                })
            }
        }
        _ => None,
    }
}

impl Kernel {
    /// One sweep pass at `now`: settles every expired park. Returns how many rows settled.
    /// Public so tests (and operators' tools) can drive the clock.
    pub async fn sweep_once(&self, now: i64) -> KernelResult<usize> {
        let mut after = 0;
        let mut settled = 0;
        loop {
            let batch = self.store.expired_parks(now, after, SWEEP_BATCH).await?;
            let full = batch.len() as i64 == SWEEP_BATCH;
            for (run_id, task_id) in batch {
                after = after.max(task_id);
                match self.expire_one(run_id, task_id, now).await {
                    Ok(true) => settled += 1,
                    Ok(false) => {}
                    Err(e) => tracing::warn!(run_id, task_id, error = %e, "sweep: row skipped"),
                }
            }
            if !full {
                return Ok(settled);
            }
        }
    }

    /// Settles one expired park under the run lock, after re-reading it. False: the row had
    /// moved on (settled, re-armed, or its run ended).
    pub(crate) async fn expire_one(&self, run_id: i64, task_id: i64, now: i64) -> KernelResult<bool> {
        let mut tx = self.store.begin().await?;
        let mut run = tx.lock_run(run_id).await?;
        if matches!(run.status.as_str(), "completed" | "canceled") {
            tx.rollback().await?;
            return Ok(false);
        }
        let Some(mut task) = tx.task_by_id(task_id).await? else {
            tx.rollback().await?;
            return Ok(false);
        };
        let expired = task.deadline_at.is_some_and(|d| d <= now);
        let Some(rule) = expiry_of(&task).filter(|_| expired) else {
            tx.rollback().await?;
            return Ok(false);
        };
        let mut effects = Vec::new();
        let done = self
            .settle_with(
                &mut tx,
                &mut run,
                &mut task,
                rule.status,
                rule.key,
                rule.detail,
                now,
                &mut effects,
            )
            .await?;
        tx.commit().await?;
        self.publish(effects).await;
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nexus_core::registry::EffectProfile;

    fn row(kind: &str, status: &str) -> TaskRow {
        TaskRow {
            kind: kind.into(),
            status: status.into(),
            ..TaskRow::default()
        }
    }

    #[test]
    fn the_expiry_rule() {
        let e = expiry_of(&row("tool_task", "needs_approval")).unwrap();
        assert_eq!((e.status, e.key), ("timed_out", "approval_expired"));
        let e = expiry_of(&row("tool_task", "running")).unwrap();
        assert_eq!((e.status, e.key), ("timed_out", "tool_timeout"));
        let e = expiry_of(&row("tool_task", "dispatched")).unwrap();
        assert_eq!((e.status, e.key), ("timed_out", "tool_timeout"));
        let e = expiry_of(&row("await_task", "awaiting_input")).unwrap();
        assert_eq!((e.status, e.key), ("timed_out", "await_timeout"));
        let mut claimed = row("tool_task", "dispatched");
        claimed.claimed_at = Some(1);
        let e = expiry_of(&claimed).unwrap();
        assert_eq!((e.status, e.key), ("uncertain", "tool_uncertain"));
        assert!(e.detail.unwrap().contains("may have happened"));
        claimed.effect_profile = Some(EffectProfile::READ.to_json().to_string());
        let e = expiry_of(&claimed).unwrap();
        assert_eq!((e.status, e.key), ("timed_out", "tool_timeout"));
        assert_eq!(expiry_of(&row("tool_task", "completed")), None);
        assert_eq!(expiry_of(&row("model_task", "running")), None);
    }
}
