//! The run lock with the row the unit reads next under it, in one round trip on PostgreSQL
//! when it is the unit's first statement (`BEGIN`, the lock and the read in one simple query,
//! as the executor doors do: [`Tx::open_door`]); two statements otherwise, and on SQLite.

use super::*;

impl Tx {
    /// [`Tx::lock_run`], then [`Tx::task_by_id`] of `task_id` read under the lock.
    pub async fn lock_run_with_task(&mut self, run_id: i64, task_id: i64) -> Result<(RunRow, Option<TaskRow>)> {
        let (mut run, task) = match self {
            Tx::Postgres(t) if t.first_statement() => {
                t.begin_locking_run_with(run_id, crate::sql::TASK_BY_ID, task_id, crate::row::task)
                    .await?
            }
            _ => {
                let run = tx_dispatch!(self, lock_run(run_id))?;
                (run, tx_dispatch!(self, task_by_id(task_id))?)
            }
        };
        self.note_locked(&mut run);
        if let (Tx::Postgres(t), Some(task)) = (&mut *self, &task) {
            t.remember(task);
        }
        Ok((run, task))
    }

    /// [`Tx::lock_run`], then [`Tx::round_for_reply`] of `task_id` read under the lock.
    pub async fn lock_run_with_round(&mut self, run_id: i64, task_id: i64) -> Result<(RunRow, Option<RoundForReply>)> {
        let (mut run, round) = match self {
            Tx::Postgres(t) if t.first_statement() => {
                t.begin_locking_run_with(
                    run_id,
                    crate::sql::ROUND_FOR_REPLY,
                    task_id,
                    crate::row::round_for_reply,
                )
                .await?
            }
            _ => {
                let run = tx_dispatch!(self, lock_run(run_id))?;
                (run, tx_dispatch!(self, round_for_reply(task_id))?)
            }
        };
        self.note_locked(&mut run);
        if let (Tx::Postgres(t), Some(round)) = (&mut *self, &round) {
            t.remember(&round.task);
        }
        Ok((run, round))
    }
}

impl PgTx {
    /// The unit's first statement on PostgreSQL: `BEGIN`, the run lock and the read of `then`
    /// (`then_id`) in one simple query. An error that aborts the transaction voids the unit.
    async fn begin_locking_run_with<T: crate::frozen::HoldsTask>(
        &mut self,
        run_id: i64,
        then: &'static str,
        then_id: i64,
        decode: impl Fn(&sqlx::postgres::PgRow) -> Result<crate::frozen::Pending<T>>,
    ) -> Result<(RunRow, Option<T>)> {
        let result = Box::pin(postgres::ops::begin_locking_run_with(
            &mut self.tx,
            run_id,
            then,
            then_id,
            decode,
        ))
        .await;
        if result.as_ref().is_err_and(voids_transaction) {
            self.void = true;
        }
        result
    }
}
