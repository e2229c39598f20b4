//! The timeout sweep and the expiry rule (executor.md §13).
//!
//! The sweep selects, in id-cursor batches of 500, on non-terminal runs:
//! - parked rows whose deadline is at or before `now`, settled by the expiry rule;
//! - parks whose addressee is revoked: an unclaimed `dispatched` tool row fails with
//!   `executor_revoked`; a held approval loses its addressee (`task_readdressed {from, to:
//!   null}`) and stays approvable by members (approvals.md §4). A claimed row is left to its
//!   deadline: its claimant can no longer authenticate, so the expiry rule settles it.
//!
//! Each row is re-read under the run lock in its own transaction, which writes the change and
//! its event together; a row that had moved is idle, so nothing settles twice. A row that
//! errors is logged and skipped.
//!
//! Several nodes (PostgreSQL) divide the work rather than repeat it: the selection passes over
//! rows another transaction holds (`FOR UPDATE SKIP LOCKED`), and a row's unit takes its run's
//! lock only if it is free (`Tx::try_lock_run`), skipping the row otherwise — another node is
//! settling it, or a writer is changing the run, and the next pass looks again.

use nexus_core::codes::task_error;
use nexus_store::prelude::*;
use nexus_store::{ExecutorStatus, TaskKind, TaskStatus};
use serde_json::{Value, json};

use crate::error::KernelResult;
use crate::runs::settle::{SettleError, expiry_of};
use crate::runs::unit::Unit;
use crate::{Kernel, Runs};

/// The sweep's batch size.
pub(crate) const SWEEP_BATCH: i64 = 500;

impl Runs<'_> {
    /// One sweep pass at `now`: settles every expired park, then handles the parks of revoked
    /// addressees. Returns how many rows changed. Public so tests (and operators' tools) can
    /// drive the clock.
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
                    Err(e) if e.is_corrupt_row() => self.hold_unreadable(run_id, None).await,
                    Err(e) => tracing::warn!(run_id, task_id, error = %e, "sweep: row skipped"),
                }
            }
            if !full {
                break;
            }
        }
        Ok(settled + self.sweep_revoked(now).await?)
    }

    /// The sweep's second selection: parks whose addressee is revoked (executor.md §13).
    /// Returns how many rows changed.
    async fn sweep_revoked(&self, now: i64) -> KernelResult<usize> {
        let mut after = 0;
        let mut changed = 0;
        loop {
            let batch = self.store.revoked_parks(after, SWEEP_BATCH).await?;
            let full = batch.len() as i64 == SWEEP_BATCH;
            for (run_id, task_id) in batch {
                after = after.max(task_id);
                match self.revoked_one(run_id, task_id, now).await {
                    Ok(true) => changed += 1,
                    Ok(false) => {}
                    Err(e) if e.is_corrupt_row() => self.hold_unreadable(run_id, None).await,
                    Err(e) => tracing::warn!(run_id, task_id, error = %e, "sweep: row skipped"),
                }
            }
            if !full {
                return Ok(changed);
            }
        }
    }
}

impl Kernel {
    /// Handles one park of a revoked addressee under the run lock, after re-reading it: an
    /// unclaimed `dispatched` tool row fails `executor_revoked` (through the executor plane's
    /// single settle, so `after_settle` runs in the same transaction); a held approval has its
    /// addressee cleared with a `task_readdressed {from, to: null}` event. False: the row had
    /// moved on (claimed, settled, readdressed, or its run ended), or its run is locked by
    /// another unit (the next pass looks again).
    pub(crate) async fn revoked_one(&self, run_id: i64, task_id: i64, now: i64) -> KernelResult<bool> {
        let mut tx = self.store.begin().await?;
        let Some(mut run) = tx.try_lock_run(run_id).await?.filter(|r| !r.status.is_terminal()) else {
            tx.rollback().await?;
            return Ok(false);
        };
        let Some(mut task) = tx.task_by_id(task_id).await? else {
            tx.rollback().await?;
            return Ok(false);
        };
        // Revocation is final (a revoked executor is never re-paired), so the status read
        // outside the transaction cannot go stale.
        let addressee = match task.addressed_executor_id {
            Some(id) => self.store.executor_by_id(id).await?,
            None => None,
        };
        let Some(addressee) = addressee.filter(|e| e.status == ExecutorStatus::Revoked) else {
            tx.rollback().await?;
            return Ok(false);
        };
        let mut effects = Vec::new();
        let done = match (task.kind, task.status) {
            (TaskKind::Tool, TaskStatus::Dispatched) if task.claimed_at.is_none() => {
                let next = task.clone();
                let error = SettleError {
                    key: task_error::EXECUTOR_REVOKED.to_string(),
                    detail: Some("the addressed executor was revoked before it claimed the call".to_string()),
                };
                self.settle_park(
                    &mut Unit::of(&mut tx, &mut run, now, &mut effects),
                    &mut task,
                    next,
                    TaskStatus::Failed,
                    Some(error),
                    None,
                )
                .await?
            }
            (TaskKind::Tool, TaskStatus::NeedsApproval) => {
                let mut next = task.clone();
                next.addressed_executor_id = None;
                next.addressed_role = None;
                if tx
                    .update_task(nexus_store::TaskUpdate::new(
                        &next,
                        task.generation,
                        &[TaskStatus::NeedsApproval],
                    ))
                    .await?
                {
                    let data = json!({"from": addressee.public_id, "to": Value::Null});
                    self.emit(
                        &mut Unit::of(&mut tx, &mut run, now, &mut effects),
                        nexus_store::EventKind::TaskReaddressed,
                        Some(&task.key),
                        data,
                    )
                    .await?;
                    true
                } else {
                    false
                }
            }
            _ => false,
        };
        if !done {
            tx.rollback().await?;
            return Ok(false);
        }
        tx.commit().await?;
        self.publish(effects).await;
        Ok(true)
    }

    /// Settles one expired park under the run lock, after re-reading it. False: the row had
    /// moved on (settled, re-armed, or its run ended), or its run is locked by another unit
    /// (the next pass looks again).
    pub(crate) async fn expire_one(&self, run_id: i64, task_id: i64, now: i64) -> KernelResult<bool> {
        let mut tx = self.store.begin().await?;
        let Some(mut run) = tx.try_lock_run(run_id).await?.filter(|r| !r.status.is_terminal()) else {
            tx.rollback().await?;
            return Ok(false);
        };
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
                &mut Unit::of(&mut tx, &mut run, now, &mut effects),
                &mut task,
                rule.status,
                SettleError::new(rule.key, rule.detail),
            )
            .await?;
        tx.commit().await?;
        self.publish(effects).await;
        Ok(done)
    }
}
