//! How a run ends (runs.md §1, §2, §6): quiescence, adjudication candidates, halts, a drained
//! cancel, and the stop that cancels live rows.

use nexus_store::{OnFailure, RunRow, RunStatus, TaskEndRow, TaskKind, TaskRow, TaskStatus, Tx};
use serde_json::json;

use super::rows::{Graph, Prefetched};
use super::{AfterCommit, graph_error};
use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::settle::SettleError;
use crate::runs::unit::Unit;

/// An adjudication candidate (runs.md §6).
pub(crate) fn is_candidate(t: &TaskRow) -> bool {
    EndView::from(t).is_candidate()
}

/// What the run's end reads of one row, borrowed from a whole row or from a [`TaskEndRow`]
/// (the narrow read a settle makes when its neighbourhood went quiet).
#[derive(Clone, Copy)]
struct EndView<'a> {
    id: i64,
    key: &'a str,
    status: TaskStatus,
    on_failure: OnFailure,
    resolved: bool,
}

/// The same five fields of a whole row and of an end row.
macro_rules! end_view_from {
    ($row:ty) => {
        impl<'a> From<&'a $row> for EndView<'a> {
            fn from(t: &'a $row) -> Self {
                Self {
                    id: t.id,
                    key: &t.key,
                    status: t.status,
                    on_failure: t.on_failure,
                    resolved: t.failure_resolution.is_some(),
                }
            }
        }
    };
}
end_view_from!(TaskRow);
end_view_from!(TaskEndRow);

impl EndView<'_> {
    fn is_candidate(&self) -> bool {
        let failed = matches!(
            self.status,
            TaskStatus::Failed | TaskStatus::TimedOut | TaskStatus::Uncertain
        );
        failed && !self.resolved && self.on_failure != OnFailure::Absorb
    }
}

/// How a run ends, decided from its rows (runs.md §1, §6).
#[derive(Debug, PartialEq, Eq)]
enum RunEnd {
    /// Not quiescent, or not a status that ends.
    Stays,
    /// A drained cancel.
    Canceled,
    /// A halt failure, or an unadjudicated failure without a completed deliverable: the key of
    /// the row that needs attention.
    Attention(String),
    Completed,
}

/// The run's end from `rows`, every row of the run in id order (walked a few times, never
/// collected).
fn run_end<'a>(run: &RunRow, rows: impl Iterator<Item = EndView<'a>> + Clone) -> RunEnd {
    if rows.clone().any(|t| t.status.is_open()) {
        return RunEnd::Stays;
    }
    match run.status {
        RunStatus::Canceling => RunEnd::Canceled,
        RunStatus::Running => {
            let mut candidates = rows.clone().filter(|t| t.is_candidate());
            let first = candidates.clone().next();
            let halt = candidates.find(|t| t.on_failure == OnFailure::Halt);
            let deliverable_completed = run
                .deliverable_task_id
                .and_then(|id| rows.clone().find(|t| t.id == id))
                .is_some_and(|t| t.status == TaskStatus::Completed);
            match (halt, deliverable_completed) {
                (Some(h), _) => RunEnd::Attention(h.key.to_string()),
                (None, false) => first.map_or(RunEnd::Completed, |t| RunEnd::Attention(t.key.to_string())),
                (None, true) => RunEnd::Completed,
            }
        }
        _ => RunEnd::Stays,
    }
}

impl Kernel {
    /// Ends the run when it is quiescent (runs.md §1, §6), or finishes a cancel when drained.
    pub(crate) async fn check_run_end(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        g: &Graph,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        let end = run_end(run, g.tasks.iter().map(EndView::from));
        self.end_run(tx, run, end, now, effects).await
    }

    /// Writes what [`run_end`] decided.
    async fn end_run(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        end: RunEnd,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        match end {
            RunEnd::Stays => Ok(()),
            RunEnd::Canceled => {
                self.set_run_status(tx, run, RunStatus::Canceled, None, now, effects)
                    .await
            }
            RunEnd::Attention(key) => {
                run.attention = Some(json!({"reason": "halt_failure", "task_key": key}).to_string());
                self.set_run_status(tx, run, RunStatus::NeedsAttention, Some("halt_failure"), now, effects)
                    .await
            }
            RunEnd::Completed => {
                self.set_run_status(tx, run, RunStatus::Completed, None, now, effects)
                    .await
            }
        }
    }

    /// [`Self::check_run_end`] after a cascade over a neighbourhood `g` (not the whole run):
    /// an open row in `g` is an open row of the run, so the run is not quiescent and nothing
    /// more is read; otherwise one read answers whether the run has gone quiet, with its rows
    /// (`prefetched` when the unit read it already, with nothing written since).
    pub(crate) async fn end_if_quiescent(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        g: &Graph,
        now: i64,
        effects: &mut Vec<AfterCommit>,
        prefetched: Prefetched,
    ) -> KernelResult<()> {
        if g.tasks.iter().any(|t| t.status.is_open()) {
            return Ok(());
        }
        let quiet = match prefetched {
            Some(quiet) => quiet,
            None => tx.tasks_if_quiescent(run.id).await?,
        };
        let Some(rows) = quiet else {
            return Ok(());
        };
        // The run's end reads rows only (statuses, failure policy, the deliverable).
        let end = run_end(run, rows.iter().map(EndView::from));
        self.end_run(tx, run, end, now, effects).await
    }

    /// Writes a run status change and its `run_status_changed {from, to, reason?}` event.
    pub(crate) async fn set_run_status(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        to: RunStatus,
        reason: Option<&str>,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        let from = std::mem::replace(&mut run.status, to);
        match to {
            RunStatus::Running if run.started_at.is_none() => run.started_at = Some(now),
            RunStatus::Completed | RunStatus::Canceled => run.ended_at = Some(now),
            _ => {}
        }
        if to != RunStatus::NeedsAttention {
            run.attention = None;
        }
        let mut data = json!({"from": from, "to": to});
        if let Some(r) = reason {
            data["reason"] = json!(r);
        }
        // The event first: on SQLite the run's update then writes the unit's event sequence
        // with it, instead of a separate write before the commit (nexus-store's tx.rs).
        self.emit(
            &mut Unit::of(tx, run, now, effects),
            nexus_store::EventKind::RunStatusChanged,
            None,
            data,
        )
        .await?;
        tx.update_run(run).await?;
        // A hosted run's end ends its turn (runs.md §12).
        if matches!(to, RunStatus::Completed | RunStatus::Canceled)
            && crate::conversations::hosting::Hosting::of(&run.hosting).is_some()
        {
            self.conversations().end_hosted_turn(tx, run, now, effects).await?;
        }
        Ok(())
    }

    /// Cancels the run's live rows (runs.md §2 stop): every open row when `force`, otherwise
    /// the rows nobody is working on yet (`waiting`, `needs_approval`, `awaiting_input`).
    pub(crate) async fn cancel_live(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        g: &mut Graph,
        force: bool,
        now: i64,
    ) -> KernelResult<()> {
        let live: Vec<TaskRow> = g
            .tasks
            .iter()
            .filter(|t| t.status.is_open())
            .filter(|t| {
                force
                    || matches!(
                        t.status,
                        TaskStatus::Waiting | TaskStatus::NeedsApproval | TaskStatus::AwaitingInput
                    )
            })
            .cloned()
            .collect();
        for mut t in live {
            let was_running_model = t.kind == TaskKind::Model && t.status == TaskStatus::Running;
            if self
                .settle_with_error(
                    tx,
                    run,
                    &mut t,
                    TaskStatus::Canceled,
                    SettleError::new(graph_error::RUN_CANCELED, None),
                    now,
                )
                .await?
            {
                g.put(&t);
                if was_running_model {
                    self.state.signals.abort_model_call(t.id);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: i64, key: &str, status: TaskStatus, on_failure: &str) -> TaskEndRow {
        TaskEndRow {
            id,
            key: key.into(),
            status,
            on_failure: OnFailure::parse(on_failure).unwrap(),
            failure_resolution: None,
        }
    }

    fn end(status: RunStatus, deliverable: Option<i64>, rows: &[TaskEndRow]) -> RunEnd {
        let run = RunRow {
            status,
            deliverable_task_id: deliverable,
            ..RunRow::default()
        };
        run_end(&run, rows.iter().map(EndView::from))
    }

    /// The run's end (runs.md §1, §6) from the rows it reads.
    #[test]
    fn the_run_end_rule() {
        let done = row(1, "a", TaskStatus::Completed, "propagate");
        let failed = row(2, "b", TaskStatus::Failed, "propagate");
        let halted = row(3, "c", TaskStatus::TimedOut, "halt");
        let absorbed = row(4, "d", TaskStatus::Failed, "absorb");
        // An open row keeps the run as it is, whatever else.
        let open = row(5, "e", TaskStatus::Dispatched, "propagate");
        assert_eq!(
            end(RunStatus::Running, None, &[done.clone(), open.clone()]),
            RunEnd::Stays
        );
        assert_eq!(end(RunStatus::Canceling, None, &[open]), RunEnd::Stays);
        assert_eq!(
            end(RunStatus::Canceling, None, std::slice::from_ref(&done)),
            RunEnd::Canceled
        );
        assert_eq!(
            end(RunStatus::Completed, None, std::slice::from_ref(&done)),
            RunEnd::Stays
        );
        assert_eq!(
            end(RunStatus::Running, Some(1), std::slice::from_ref(&done)),
            RunEnd::Completed
        );
        assert_eq!(
            end(RunStatus::Running, None, &[done.clone(), absorbed.clone()]),
            RunEnd::Completed
        );
        // An unadjudicated failure needs attention unless the deliverable completed; the first
        // candidate in id order is named.
        assert_eq!(
            end(
                RunStatus::Running,
                None,
                &[done.clone(), failed.clone(), absorbed.clone()]
            ),
            RunEnd::Attention("b".into())
        );
        assert_eq!(
            end(RunStatus::Running, Some(1), &[done.clone(), failed.clone()]),
            RunEnd::Completed
        );
        // A halt failure needs attention even then, and is named before earlier candidates.
        assert_eq!(
            end(RunStatus::Running, Some(1), &[done.clone(), failed.clone(), halted]),
            RunEnd::Attention("c".into())
        );
        // A resolved failure is no candidate.
        let mut resolved = failed;
        resolved.failure_resolution = Some(nexus_store::FailureResolution::Accepted);
        assert_eq!(end(RunStatus::Running, None, &[done, resolved]), RunEnd::Completed);
    }
}
