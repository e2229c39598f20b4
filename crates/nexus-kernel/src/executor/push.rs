//! The push channel's kernel side (executor.md §10): the frames, and the hand-offs that give
//! them to the signals seam (`crate::signals`: one channel per connected executor address),
//! after commits, as `work_available` and `work_canceled`.
//!
//! Publication is best effort and failures are swallowed: an executor with no open channel
//! simply misses the frame, and polling the HTTP inbox is always sufficient. Frames are typed
//! (`frames.rs`) and sent as JSON text, never an executable payload.

use std::collections::HashMap;

use nexus_api::inbox::RowKind;
use uuid::Uuid;

use nexus_store::prelude::*;
use nexus_store::{ExecutorStatus, TaskRow, TaskStatus};

use crate::auth::ExecutorPrincipal;
use crate::error::KernelResult;
use crate::executor::frames::PushFrame;
use crate::executor::inbox::inbox_kind;
use crate::runs::AfterCommit;
use crate::signals::Subscription;
use crate::{Executor, Kernel};

/// `{"type":"work_available","kind","run_public_id","task_key"}`.
pub fn work_available_frame(kind: &str, run: Uuid, task_key: &str) -> PushFrame {
    PushFrame::WorkAvailable {
        kind: RowKind::from(kind),
        run_public_id: run,
        task_key: task_key.to_string(),
    }
}

/// `{"type":"work_canceled","run_public_id","task_key"}`.
pub fn work_canceled_frame(run: Uuid, task_key: &str) -> PushFrame {
    PushFrame::WorkCanceled {
        run_public_id: run,
        task_key: task_key.to_string(),
    }
}

/// `{"type":"hello","executor_public_id","credential_epoch"}`: the first frame on a channel.
pub fn hello_frame(principal: &ExecutorPrincipal) -> PushFrame {
    PushFrame::Hello {
        executor_public_id: principal.executor.public_id,
        credential_epoch: principal.executor.credential_epoch,
    }
}

/// The executor holding `task` in its inbox, if any: the claimant of a claimed `dispatched`
/// row, otherwise the addressee of a row in an inbox status (kernel rows and rows of a human's
/// run have none).
pub(crate) fn inbox_holder(task: &TaskRow) -> Option<i64> {
    inbox_kind(task)?;
    match task.claimed_at {
        Some(_) => task.claimant_id.or(task.addressed_executor_id),
        None => task.addressed_executor_id,
    }
}

impl Kernel {
    /// Hand-off (plan §F): `work_available` to the addressee, after the commit that parked the
    /// row. `kind` is `tool_call`, `ask` or `approval`. Best effort.
    pub(crate) fn push_work(&self, executor_public_id: Uuid, kind: &str, run: Uuid, task_key: &str) {
        self.state
            .signals
            .push_to_executor(executor_public_id, work_available_frame(kind, run, task_key));
    }

    /// Hand-off (plan §F): `work_canceled` to the claimant, after the commit that canceled a
    /// claimed row (and to the addressee of any other inbox row that was canceled). Best effort.
    pub(crate) fn push_cancel(&self, executor_public_id: Uuid, run: Uuid, task_key: &str) {
        self.state
            .signals
            .push_to_executor(executor_public_id, work_canceled_frame(run, task_key));
    }

    /// The `work_canceled` hand-offs of a cancel in `run` (runs.md §2 stop; executor.md §10): one
    /// for each row of `before` (the rows as they stood before the cancel, in the same transaction)
    /// that sat in an executor's inbox and that `now_row` shows `canceled`. The frame goes to
    /// the claimant of a claimed row, otherwise to the row's addressee. The caller pushes the
    /// effects and publishes them after its commit.
    pub(crate) async fn work_canceled_effects<'g>(
        &self,
        run: Uuid,
        before: &[TaskRow],
        now_row: impl Fn(i64) -> Option<&'g TaskRow>,
    ) -> KernelResult<Vec<AfterCommit>> {
        let mut effects = Vec::new();
        let mut public_ids: HashMap<i64, Option<Uuid>> = HashMap::new();
        for t in before {
            let Some(executor_id) = inbox_holder(t) else { continue };
            let Some(after) = now_row(t.id) else { continue };
            if after.status != TaskStatus::Canceled || after.generation != t.generation {
                continue;
            }
            let public_id = match public_ids.get(&executor_id) {
                Some(p) => *p,
                None => {
                    let p = self.store.executor_by_id(executor_id).await?.map(|e| e.public_id);
                    public_ids.insert(executor_id, p);
                    p
                }
            };
            let Some(executor_public_id) = public_id else { continue };
            effects.push(AfterCommit::WorkCanceled {
                executor_public_id,
                run,
                task_key: t.key.clone(),
            });
        }
        Ok(effects)
    }
}

impl Executor<'_> {
    /// Opens a push channel for an authenticated executor: the receiver of its frames from now
    /// on, and the `hello` frame to send first. The executor counts as seen now (discovery's
    /// `last_seen_at` moves on every connect, not only on an announcement).
    pub async fn open_channel(&self, principal: &ExecutorPrincipal) -> (PushFrame, Subscription<PushFrame>) {
        let rx = self.state.signals.subscribe_executor(principal.executor.public_id);
        self.mark_seen(principal).await;
        (hello_frame(principal), rx)
    }

    /// The push channel closed: the executor was last seen now.
    pub async fn channel_closed(&self, principal: &ExecutorPrincipal) {
        self.mark_seen(principal).await;
    }

    /// `last_seen_at` is display only: a store failure is logged, and the channel goes on.
    async fn mark_seen(&self, principal: &ExecutorPrincipal) {
        if let Err(e) = self
            .store
            .mark_executor_seen(principal.executor.id, self.now_ms())
            .await
        {
            tracing::warn!(error = %e, "could not record the executor as seen");
        }
    }

    /// Whether an open channel's principal still authenticates: the executor active, at the
    /// credential's epoch, and the credential not revoked or expired. A channel whose principal
    /// was fenced is closed by the server at its next ping.
    pub async fn channel_still_valid(&self, principal: &ExecutorPrincipal) -> bool {
        let now = self.now_ms();
        let executor = self.store.executor_by_id(principal.executor.id).await;
        let credential = self.store.credential_by_public_id(principal.credential.public_id).await;
        match (executor, credential) {
            (Ok(Some(e)), Ok(Some(c))) => {
                e.status == ExecutorStatus::Active
                    && e.credential_epoch == c.epoch
                    && c.revoked_at.is_none()
                    && c.expires_at.is_none_or(|at| at > now)
            }
            // A store hiccup keeps the channel: push is best effort either way.
            (Err(_), _) | (_, Err(_)) => true,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nexus_store::TaskKind;

    #[test]
    fn the_inbox_holder_is_the_claimant_else_the_addressee() {
        let row = |kind, status| TaskRow {
            kind,
            status,
            addressed_executor_id: Some(7),
            ..TaskRow::default()
        };
        assert_eq!(inbox_holder(&row(TaskKind::Tool, TaskStatus::Dispatched)), Some(7));
        assert_eq!(inbox_holder(&row(TaskKind::Tool, TaskStatus::NeedsApproval)), Some(7));
        assert_eq!(inbox_holder(&row(TaskKind::Await, TaskStatus::AwaitingInput)), Some(7));
        let mut claimed = row(TaskKind::Tool, TaskStatus::Dispatched);
        claimed.claimed_at = Some(1);
        claimed.claimant_id = Some(9);
        assert_eq!(inbox_holder(&claimed), Some(9));
        // Not an inbox status, or no addressee (a kernel row, a human's approval): nobody.
        assert_eq!(inbox_holder(&row(TaskKind::Tool, TaskStatus::Running)), None);
        assert_eq!(inbox_holder(&row(TaskKind::Tool, TaskStatus::Waiting)), None);
        let mut kernel = row(TaskKind::Tool, TaskStatus::Dispatched);
        kernel.addressed_executor_id = None;
        assert_eq!(inbox_holder(&kernel), None);
    }
}
