//! The one settle path (runs.md §5, executor.md §9 "Settle engine", §13): every task status
//! change goes through this file.
//!
//! - [`Kernel::transition`] (and [`Kernel::transition_via`]): a conditional update on the row's
//!   generation and current status plus its `task_status_changed` event, in the caller's
//!   transaction; the other columns the caller set ride in the same statement.
//! - [`Kernel::settle_with_error`], [`Kernel::settle_with`] and [`Kernel::fail`]: a settle
//!   that writes an error (the last two also run `after_settle`).
//! - [`Kernel::settle_park`] and [`Kernel::expire_park`]: the executor plane's settle of a
//!   park (a commit, a late commit, an unstorable result, a revoked addressee), which also
//!   expects the claim token of a claimed row; [`expiry_of`] is the expiry rule, shared by the
//!   sweep, late commits and late resolutions.
//! - [`Kernel::reopen`]: a settled row back to `waiting` (a retry's new generation, or a row
//!   the retried one had skipped).
//!
//! A second settle of the same row finds it moved and is idle: a park settles at most once.
//! Callers: the commit (executor/commit.rs), the resolution, the sweep, the gate and the
//! kernel tools, the round (runs/round/), readiness (skips), the run end (cancels) and the
//! adjudication verbs (runs/recover.rs).

use nexus_core::codes::task_error;
use nexus_core::registry::EffectProfile;
use nexus_store::{RunRow, TaskKind, TaskRow, TaskStatus, Tx};
use serde_json::json;

use super::AfterCommit;
use super::unit::Unit;
use crate::Kernel;
use crate::error::KernelResult;

/// What a settle writes besides the status: the error, when the row settles failed,
/// `timed_out` or `uncertain`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SettleError {
    pub key: String,
    pub detail: Option<String>,
}

impl SettleError {
    pub fn new(key: &str, detail: Option<String>) -> SettleError {
        SettleError {
            key: key.to_string(),
            detail,
        }
    }
}

/// How an expired park settles: `(status, error.key, error.detail)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expiry {
    pub status: TaskStatus,
    pub key: &'static str,
    pub detail: Option<String>,
}

/// The expiry rule, shared by the sweep, late commits and late resolutions. `None` when the
/// row is not parked (model rows never park).
pub(crate) fn expiry_of(task: &TaskRow) -> Option<Expiry> {
    if !task.status.is_parked() {
        return None;
    }
    let of = |status, key| {
        Some(Expiry {
            status,
            key,
            detail: None,
        })
    };
    match task.kind {
        TaskKind::Await => of(TaskStatus::TimedOut, "await_timeout"),
        TaskKind::Tool => {
            if task.status == TaskStatus::NeedsApproval {
                return of(TaskStatus::TimedOut, task_error::APPROVAL_EXPIRED);
            }
            // Kernel-run rows (`running`) and rows never claimed time out plainly.
            if task.status == TaskStatus::Running || task.claimed_at.is_none() {
                return of(TaskStatus::TimedOut, task_error::TOOL_TIMEOUT);
            }
            let replayable = task
                .effect_profile
                .as_deref()
                .and_then(|t| serde_json::from_str(t).ok())
                .and_then(|v| EffectProfile::parse(&v).ok())
                .is_some_and(|p| p.is_replayable());
            if replayable {
                of(TaskStatus::TimedOut, task_error::TOOL_TIMEOUT)
            } else {
                Some(Expiry {
                    status: TaskStatus::Uncertain,
                    key: task_error::TOOL_UNCERTAIN,
                    detail: Some("the claim expired without a result; the effect may have happened".to_string()),
                })
            }
        }
        TaskKind::Model => None,
    }
}

impl Kernel {
    /// The single way a task changes status: a conditional update on (generation, current
    /// status) plus its `task_status_changed {from, to, generation, error?}` event, in `tx`.
    /// Other columns the caller changed on `task` (error, content, reply…) are written in the
    /// same statement. Returns false (and leaves `task` as it was) when the row was not in the
    /// expected state (idle).
    pub(crate) async fn transition(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        task: &mut TaskRow,
        to: TaskStatus,
        now: i64,
    ) -> KernelResult<bool> {
        self.transition_via(tx, run, task, None, to, now).await
    }

    /// [`Kernel::transition`] through an intermediate status: `from → via → to` in one
    /// conditional update (the row is never seen at `via` outside the transaction), with both
    /// `task_status_changed` events, in order.
    pub(crate) async fn transition_via(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        task: &mut TaskRow,
        via: Option<TaskStatus>,
        to: TaskStatus,
        now: i64,
    ) -> KernelResult<bool> {
        let from = task.status;
        let mut next = task.clone();
        next.status = to;
        if to.is_settled() || via.is_some_and(TaskStatus::is_settled) {
            next.settled_at = Some(now);
        }
        if (to == TaskStatus::Running || via == Some(TaskStatus::Running)) && next.started_at.is_none() {
            next.started_at = Some(now);
        }
        if !tx
            .update_task(nexus_store::TaskUpdate::new(&next, task.generation, &[from]))
            .await?
        {
            return Ok(false);
        }
        let hops = match via {
            Some(via) => vec![(from, via), (via, to)],
            None => vec![(from, to)],
        };
        for (hop_from, hop_to) in hops {
            let mut data = json!({"from": hop_from, "to": hop_to, "generation": next.generation});
            if hop_to.is_settled()
                && let Some(key) = &next.error_key
            {
                let mut error = json!({"key": key});
                if let Some(detail) = &next.error_detail {
                    error["detail"] = json!(detail);
                }
                data["error"] = error;
            }
            let row = tx
                .append_event(
                    run.id,
                    nexus_store::EventKind::TaskStatusChanged,
                    Some(&next.key),
                    &data,
                    now,
                )
                .await?;
            run.last_event_sequence = row.sequence;
        }
        *task = next;
        Ok(true)
    }

    /// Sets `error` and settles `task` into `to` (`failed`, `canceled`, `skipped`, …).
    pub(crate) async fn settle_with_error(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        task: &mut TaskRow,
        to: TaskStatus,
        error: SettleError,
        now: i64,
    ) -> KernelResult<bool> {
        let before = (task.error_key.clone(), task.error_detail.clone());
        task.error_key = Some(error.key);
        task.error_detail = error.detail;
        let done = self.transition(tx, run, task, to, now).await?;
        if !done {
            (task.error_key, task.error_detail) = before;
        }
        Ok(done)
    }

    /// Settles a row `failed` with `key`/`detail` (from any open status), then runs the
    /// scheduling consequences.
    pub(crate) async fn fail(&self, u: &mut Unit<'_>, task: &mut TaskRow, error: SettleError) -> KernelResult<bool> {
        self.settle_with(u, task, TaskStatus::Failed, error).await
    }

    /// Settles a row into `status` (`failed | timed_out | uncertain`) with an error, clearing
    /// its park, then calls `after_settle`. Returns false when the row had moved (idle).
    pub(crate) async fn settle_with(
        &self,
        u: &mut Unit<'_>,
        task: &mut TaskRow,
        status: TaskStatus,
        error: SettleError,
    ) -> KernelResult<bool> {
        task.error_key = Some(error.key);
        task.error_detail = error.detail;
        task.settled_at = Some(u.now);
        if !self.transition(u.tx, u.run, task, status, u.now).await? {
            return Ok(false);
        }
        u.effects.extend(self.after_settle(u.tx, u.run, task, u.now).await?);
        Ok(true)
    }

    /// Settles `task` into `to` with the columns already set on `next` (content, structured
    /// content, title, metadata, is_error). The update expects `task`'s generation and status,
    /// and `expect_token` as the stored claim token when given. Returns false (and changes
    /// nothing) when the row had moved: the caller answers idle.
    pub(crate) async fn settle_park(
        &self,
        u: &mut Unit<'_>,
        task: &mut TaskRow,
        mut next: TaskRow,
        to: TaskStatus,
        error: Option<SettleError>,
        expect_token: Option<&str>,
    ) -> KernelResult<bool> {
        let Unit { tx, run, now, effects } = u;
        let now = *now;
        let from = task.status;
        next.status = to;
        next.settled_at = Some(now);
        next.error_key = error.as_ref().map(|e| e.key.clone());
        next.error_detail = error.as_ref().and_then(|e| e.detail.clone());
        // `task` is the row as this unit of work read it under the run lock.
        let moved = tx
            .update_task(nexus_store::TaskUpdate::new(&next, task.generation, &[from]).with_claim_token(expect_token))
            .await?;
        if !moved {
            return Ok(false);
        }
        let mut data = json!({"from": from, "to": to, "generation": next.generation});
        if let Some(e) = &error {
            let mut err = json!({"key": e.key});
            if let Some(d) = &e.detail {
                err["detail"] = json!(d);
            }
            data["error"] = err;
        }
        let row = tx
            .append_event(
                run.id,
                nexus_store::EventKind::TaskStatusChanged,
                Some(&next.key),
                &data,
                now,
            )
            .await?;
        run.last_event_sequence = row.sequence;
        effects.push(AfterCommit::Event(row));
        *task = next;
        effects.extend(self.after_settle(tx, run, task, now).await?);
        Ok(true)
    }

    /// Reopens a settled row into `waiting` (runs.md §5, §6 retry), clearing what its last
    /// ending wrote (error, result, reply, claim, park, approval). `retry`: the row starts a
    /// new generation (a retried candidate); otherwise it keeps its generation (a row skipped
    /// because of the retried one: it never started). Returns false when the row had moved.
    pub(crate) async fn reopen(&self, u: &mut Unit<'_>, task: &mut TaskRow, retry: bool) -> KernelResult<bool> {
        let from = task.status;
        let next = TaskRow {
            status: TaskStatus::Waiting,
            generation: task.generation + i64::from(retry),
            error_key: None,
            error_detail: None,
            content: None,
            structured_present: false,
            structured_content: None,
            is_error: false,
            title: None,
            metadata: None,
            approval: None,
            claim_token: None,
            claimed_at: None,
            claimant_id: None,
            await_started_at: None,
            deadline_at: None,
            usage: None,
            reply: None,
            started_at: None,
            settled_at: None,
            ..task.clone()
        };
        if !u
            .tx
            .update_task(nexus_store::TaskUpdate::new(&next, task.generation, &[from]))
            .await?
        {
            return Ok(false);
        }
        let data = json!({"from": from, "to": TaskStatus::Waiting, "generation": next.generation});
        self.emit(u, nexus_store::EventKind::TaskStatusChanged, Some(&next.key), data)
            .await?;
        *task = next;
        Ok(true)
    }

    /// The expiry rule (runs/sweep.rs, one rule for the sweep, late commits and late
    /// resolutions) applied to an expired park: `timed_out` or `uncertain`. False when the row
    /// is not a park or had moved.
    pub(crate) async fn expire_park(
        &self,
        u: &mut Unit<'_>,
        task: &mut TaskRow,
        expect_token: Option<&str>,
    ) -> KernelResult<bool> {
        let Some(rule) = expiry_of(task) else {
            return Ok(false);
        };
        let next = task.clone();
        let error = SettleError {
            key: rule.key.to_string(),
            detail: rule.detail,
        };
        self.settle_park(u, task, next, rule.status, Some(error), expect_token)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nexus_core::registry::EffectProfile;

    fn row(kind: TaskKind, status: TaskStatus) -> TaskRow {
        TaskRow {
            kind,
            status,
            ..TaskRow::default()
        }
    }

    #[test]
    fn the_expiry_rule() {
        let e = expiry_of(&row(TaskKind::Tool, TaskStatus::NeedsApproval)).unwrap();
        assert_eq!((e.status, e.key), (TaskStatus::TimedOut, "approval_expired"));
        let e = expiry_of(&row(TaskKind::Tool, TaskStatus::Running)).unwrap();
        assert_eq!((e.status, e.key), (TaskStatus::TimedOut, "tool_timeout"));
        let e = expiry_of(&row(TaskKind::Tool, TaskStatus::Dispatched)).unwrap();
        assert_eq!((e.status, e.key), (TaskStatus::TimedOut, "tool_timeout"));
        let e = expiry_of(&row(TaskKind::Await, TaskStatus::AwaitingInput)).unwrap();
        assert_eq!((e.status, e.key), (TaskStatus::TimedOut, "await_timeout"));
        let mut claimed = row(TaskKind::Tool, TaskStatus::Dispatched);
        claimed.claimed_at = Some(1);
        let e = expiry_of(&claimed).unwrap();
        assert_eq!((e.status, e.key), (TaskStatus::Uncertain, "tool_uncertain"));
        assert!(e.detail.unwrap().contains("may have happened"));
        claimed.effect_profile = Some(EffectProfile::READ.to_json().to_string());
        let e = expiry_of(&claimed).unwrap();
        assert_eq!((e.status, e.key), (TaskStatus::TimedOut, "tool_timeout"));
        assert_eq!(expiry_of(&row(TaskKind::Tool, TaskStatus::Completed)), None);
        assert_eq!(expiry_of(&row(TaskKind::Model, TaskStatus::Running)), None);
    }
}
