//! PostgreSQL: a unit's first statement carries `BEGIN`, the run lock and the reads a
//! [`RunLock`] names in one simple query (led by a job's claim for a kernel tool's evaluation);
//! a seal's first statement carries the sealed request's insert too, and when the round turns
//! out not sealable (or the insert fails) the unit is rolled back and started again on a fresh
//! transaction (`PgTx::restart`), so that `Tx::lock` answers as on SQLite.

use super::*;
use crate::tx::{LockReads, Locked, RunLock};

impl PgTx {
    /// A seal ([`LockReads::Seal`] of `new`) as the unit's first statement, when the request is
    /// stored without reading its bases (each whole, or a delta on a base whose depth is given,
    /// below the snapshot depth): its insert goes out with the lock in one round trip. The
    /// locked reads with the stored request when the round is sealable; `None` when the seal is
    /// left to the plain lock: not the first statement, bases to read, or a round that turned
    /// out not sealable, sealed already by another unit (`Conflict`) or without its row
    /// (`NotFound`), after which the unit starts again with nothing held.
    pub(crate) async fn seal_leading(&mut self, run_id: i64, new: &NewSealedRequest) -> Result<Option<Locked>> {
        if !self.first_statement() {
            return Ok(None);
        }
        let Some(stored) = crate::ops::sealed::stored_without_reads(new) else {
            return Ok(None);
        };
        match self.begin_sealing(run_id, new, stored).await {
            Ok(locked) if crate::tx::sealable(&locked.run, locked.task.as_ref(), new) => Ok(Some(locked)),
            Ok(_) | Err(StoreError::Conflict(_) | StoreError::NotFound(_)) => {
                self.restart().await?;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

impl PgTx {
    /// The unit's first statement: `BEGIN`, the run lock and the reads of `lock` in one simple
    /// query, led by a job's claim with `taking_job`; what it read, and whether the claim found
    /// the job.
    pub(crate) async fn begin_locked(&mut self, taking_job: Option<i64>, lock: RunLock<'_>) -> Result<(Locked, bool)> {
        let run_id = lock.run_id;
        let id = lock.with.task_id();
        let (run, read, taken) = match lock.with {
            LockReads::Round(_) => {
                let (run, round, _, taken) = self
                    .begin_locking_run_with(
                        taking_job,
                        run_id,
                        crate::sql::ROUND_FOR_REPLY,
                        id,
                        crate::row::round_for_reply,
                        None,
                    )
                    .await?;
                let mut locked = Locked::of(run);
                locked.round = round;
                return Ok((locked, taken));
            }
            LockReads::Evaluation(_) => {
                let head = postgres::Stmt::new(crate::sql::SEARCH_HEAD_PG, vec![id.to_string()]);
                self.begin_locking_run_with(
                    taking_job,
                    run_id,
                    crate::sql::TASK_BY_ID,
                    id,
                    crate::row::task,
                    Some(head),
                )
                .await
                .map(|(run, task, head, taken)| (run, (task, head), taken))?
            }
            LockReads::Task(_) | LockReads::Seal(_) => self
                .begin_locking_run_with(taking_job, run_id, crate::sql::TASK_BY_ID, id, crate::row::task, None)
                .await
                .map(|(run, task, _, taken)| (run, (task, None), taken))?,
        };
        let mut locked = Locked::of(run);
        locked.task = read.0;
        locked.search_head = read.1.as_ref().map(crate::row::frozen_head).transpose()?;
        Ok((locked, taken))
    }

    /// The seal's first statement: `BEGIN`, the run lock, the task, and the insert of the
    /// request (`stored`: how it is stored, without reading its bases) last, in one round trip.
    /// The insert belongs to the unit; the caller restarts the unit when the round is not
    /// sealable.
    async fn begin_sealing(
        &mut self,
        run_id: i64,
        new: &NewSealedRequest,
        (record, body): (crate::ops::sealed::StoredRecord<'_>, crate::ops::sealed::StoredBody<'_>),
    ) -> Result<Locked> {
        for text in [&new.record, &new.body_sha256, &new.attempts] {
            crate::check_text(text)?;
        }
        let insert = postgres::Stmt::new(
            crate::sql::INSERT_SEALED_REQUEST_WITH_BODY_PG,
            crate::ops::sealed::sealed_insert_literals(new, &record, &body),
        );
        let (run, task, answer, _) = self
            .begin_locking_run_with(
                None,
                run_id,
                crate::sql::TASK_BY_ID,
                new.task_id,
                crate::row::task,
                Some(insert),
            )
            .await?;
        let answer = answer.ok_or_else(|| StoreError::Corrupt("a sealed request's insert answered no row".into()))?;
        use crate::row::Columns;
        let id = Columns::int(&answer, "id")?;
        let body_depth = Columns::opt_int(&answer, "body_depth")?;
        let mut locked = Locked::of(run);
        locked.task = task;
        locked.sealed = Some(crate::ops::sealed::inserted_row(new, record, body, id, body_depth));
        Ok(locked)
    }

    /// The unit's first statement on PostgreSQL: `BEGIN`, the run lock and the read of `then`
    /// (`then_id`) in one simple query. An error that aborts the transaction voids the unit.
    async fn begin_locking_run_with<T: crate::frozen::HoldsTask>(
        &mut self,
        taking_job: Option<i64>,
        run_id: i64,
        then: &'static str,
        then_id: i64,
        decode: impl Fn(&sqlx::postgres::PgRow) -> Result<crate::frozen::Pending<T>>,
        also: Option<postgres::Stmt>,
    ) -> Result<(RunRow, Option<T>, Option<sqlx::postgres::PgRow>, bool)> {
        let result = Box::pin(postgres::ops::begin_locking_run_with(
            &mut self.tx,
            taking_job,
            run_id,
            then,
            then_id,
            decode,
            also,
        ))
        .await;
        if result.as_ref().is_err_and(voids_transaction) {
            self.void = true;
        }
        result
    }

    /// Rolls the unit back and starts it again on a fresh transaction, with nothing held:
    /// what the unit did so far is gone. The old connection goes back to the pool (rolled
    /// back) before the new one is taken.
    async fn restart(&mut self) -> Result<()> {
        self.void = true;
        self.tx.reopen().await?;
        self.void = false;
        self.deferred = deferred::Deferred::default();
        self.known.clear();
        self.answerer = None;
        self.ids = None;
        Ok(())
    }
}
