//! The executor plane's single settle (executor.md §9 "Settle engine", §13).
//!
//! Every settle the inbox makes — a commit, a late commit that loses to the deadline, an
//! unstorable result — is one conditional store update that expects the row's generation, its
//! current status and, for a claimed tool row, its claim token; then the
//! `task_status_changed` event and `after_settle`, all in the caller's transaction. A second
//! settle of the same park finds the row moved and is idle: a park settles at most once.

use nexus_store::{RunRow, TaskRow, Tx};
use serde_json::json;

use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::AfterCommit;
use crate::runs::sweep::expiry_of;

/// What a settle writes besides the status: the error, when the row settles failed,
/// `timed_out` or `uncertain`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SettleError {
    pub key: String,
    pub detail: Option<String>,
}

impl Kernel {
    /// Settles `task` into `to` with the columns already set on `next` (content, structured
    /// content, title, metadata, is_error). The update expects `task`'s generation and status,
    /// and `expect_token` as the stored claim token when given. Returns false (and changes
    /// nothing) when the row had moved: the caller answers idle.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn settle_park(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        task: &mut TaskRow,
        mut next: TaskRow,
        to: &str,
        error: Option<SettleError>,
        expect_token: Option<&str>,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<bool> {
        let from = task.status.clone();
        next.status = to.to_string();
        next.settled_at = Some(now);
        next.error_key = error.as_ref().map(|e| e.key.clone());
        next.error_detail = error.as_ref().and_then(|e| e.detail.clone());
        // `task` is the row as this unit of work read it under the run lock.
        let moved = tx.update_task_over(task, &next, &[from.as_str()], expect_token).await?;
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
            .append_event(run.id, "task_status_changed", Some(&next.key), &data, now)
            .await?;
        run.last_event_sequence = row.sequence;
        effects.push(AfterCommit::Event(row));
        *task = next;
        effects.extend(self.after_settle(tx, run, task, now).await?);
        Ok(true)
    }

    /// The expiry rule (runs/sweep.rs, one rule for the sweep, late commits and late
    /// resolutions) applied to an expired park: `timed_out` or `uncertain`. False when the row
    /// is not a park or had moved.
    pub(crate) async fn expire_park(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        task: &mut TaskRow,
        expect_token: Option<&str>,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<bool> {
        let Some(rule) = expiry_of(task) else {
            return Ok(false);
        };
        let next = task.clone();
        let error = SettleError {
            key: rule.key.to_string(),
            detail: rule.detail,
        };
        self.settle_park(
            tx,
            run,
            task,
            next,
            rule.status,
            Some(error),
            expect_token,
            now,
            effects,
        )
        .await
    }
}
