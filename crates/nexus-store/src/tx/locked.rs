//! The run lock with the row the unit reads next under it, in one round trip on PostgreSQL
//! when it is the unit's first statement (`BEGIN`, the lock and the read in one simple query,
//! as the executor doors do: [`Tx::open_door`]); two statements otherwise, and on SQLite.

use super::*;

impl Tx {
    /// [`Tx::lock_run`], then [`Tx::task_by_id`] of `task_id` read under the lock.
    pub async fn lock_run_with_task(&mut self, run_id: i64, task_id: i64) -> Result<(RunRow, Option<TaskRow>)> {
        let (mut run, task) = match self {
            Tx::Postgres(t) if t.first_statement() => {
                let (run, task, _, _) = t
                    .begin_locking_run_with(None, run_id, crate::sql::TASK_BY_ID, task_id, crate::row::task, None)
                    .await?;
                (run, task)
            }
            _ => {
                let run = tx_dispatch!(self, lock_run(run_id))?;
                (run, tx_dispatch!(self, task_by_id(task_id))?)
            }
        };
        self.note_locked_with(&mut run, task.as_ref());
        Ok((run, task))
    }

    /// [`Tx::lock_run_with_task`] for a kernel tool's evaluation, with the head of the row that
    /// declared the task when the task is a `tool_search` call (what its search reads first),
    /// read after the lock. On PostgreSQL, as the unit's first statement, the head goes out in
    /// the same round trip; otherwise, and on SQLite, the head is `None`: not read here, left
    /// to the caller.
    pub async fn lock_run_with_task_and_search_head(&mut self, run_id: i64, task_id: i64) -> Result<EvaluationLock> {
        let (mut run, task, search_head) = match self {
            Tx::Postgres(t) if t.first_statement() => {
                let (lock, _) = t.begin_evaluation(None, run_id, task_id).await?;
                (lock.run, lock.task, lock.search_head)
            }
            _ => {
                let run = tx_dispatch!(self, lock_run(run_id))?;
                (run, tx_dispatch!(self, task_by_id(task_id))?, None)
            }
        };
        self.note_locked_with(&mut run, task.as_ref());
        Ok(EvaluationLock { run, task, search_head })
    }

    /// A `kernel_tool` job's claim and its evaluation's lock (`Store::take_kernel_job`): on
    /// PostgreSQL, the delete of job `job_id` in a transaction of its own, then this unit's
    /// `BEGIN` and [`Tx::lock_run_with_task_and_search_head`], in one round trip. `None` when
    /// the job was gone; the unit then holds the run lock, and the caller rolls it back.
    pub(crate) async fn take_job_locking_run(
        &mut self,
        job_id: i64,
        run_id: i64,
        task_id: i64,
    ) -> Result<Option<EvaluationLock>> {
        let Tx::Postgres(t) = self else {
            return Err(StoreError::Config("a job's claim with a unit is PostgreSQL's".into()));
        };
        if !t.first_statement() {
            return Err(StoreError::Config("a job's claim leads its unit".into()));
        }
        let (mut lock, taken) = t.begin_evaluation(Some(job_id), run_id, task_id).await?;
        self.note_locked_with(&mut lock.run, lock.task.as_ref());
        Ok(taken.then_some(lock))
    }

    /// [`Tx::lock_run`], then [`Tx::round_for_reply`] of `task_id` read under the lock.
    pub async fn lock_run_with_round(&mut self, run_id: i64, task_id: i64) -> Result<(RunRow, Option<RoundForReply>)> {
        let (mut run, round) = match self {
            Tx::Postgres(t) if t.first_statement() => {
                let (run, round, _, _) = t
                    .begin_locking_run_with(
                        None,
                        run_id,
                        crate::sql::ROUND_FOR_REPLY,
                        task_id,
                        crate::row::round_for_reply,
                        None,
                    )
                    .await?;
                (run, round)
            }
            _ => {
                let run = tx_dispatch!(self, lock_run(run_id))?;
                (run, tx_dispatch!(self, round_for_reply(task_id))?)
            }
        };
        self.note_locked_with(&mut run, round.as_ref().map(|r| &r.task));
        Ok((run, round))
    }

    /// [`Tx::lock_run_with_task`] for a round's seal, with the round's sealed request: on
    /// PostgreSQL, as the unit's first statement, and when the request is stored without
    /// reading its bases (each whole, or a delta on a base whose depth is given, below the
    /// snapshot depth), its insert ([`Tx::insert_sealed_request`]) goes out last in the same
    /// round trip and its row comes back in [`SealingLock::sealed`]. Otherwise nothing is
    /// inserted (`None`): the caller inserts the request once it has checked the round. The
    /// insert belongs to the unit: a caller that finds the round no longer sealable rolls the
    /// unit back. A request already stored for the task's generation is `Conflict`, and voids
    /// the unit.
    pub async fn lock_run_with_task_sealing(
        &mut self,
        run_id: i64,
        task_id: i64,
        new: &NewSealedRequest,
    ) -> Result<SealingLock> {
        let stored = match &*self {
            Tx::Postgres(t) if t.first_statement() => crate::ops::sealed::stored_without_reads(new),
            _ => None,
        };
        let (Tx::Postgres(t), Some((record, body))) = (&mut *self, stored) else {
            let (run, task) = self.lock_run_with_task(run_id, task_id).await?;
            return Ok(SealingLock {
                run,
                task,
                sealed: None,
            });
        };
        for text in [&new.record, &new.body_sha256, &new.attempts] {
            crate::check_text(text)?;
        }
        let insert = postgres::Stmt::new(
            crate::sql::INSERT_SEALED_REQUEST_WITH_BODY_PG,
            crate::ops::sealed::sealed_insert_literals(new, &record, &body),
        );
        let (mut run, task, answer, _) = t
            .begin_locking_run_with(
                None,
                run_id,
                crate::sql::TASK_BY_ID,
                task_id,
                crate::row::task,
                Some(insert),
            )
            .await?;
        let answer = answer.ok_or_else(|| StoreError::Corrupt("a sealed request's insert answered no row".into()))?;
        use crate::row::Columns;
        let id = Columns::int(&answer, "id")?;
        let body_depth = Columns::opt_int(&answer, "body_depth")?;
        self.note_locked_with(&mut run, task.as_ref());
        let sealed = crate::ops::sealed::inserted_row(new, record, body, id, body_depth);
        Ok(SealingLock {
            run,
            task,
            sealed: Some(sealed),
        })
    }

    /// The unit holds `run`'s lock, and knows `row`, read under it.
    fn note_locked_with(&mut self, run: &mut RunRow, row: Option<&TaskRow>) {
        self.note_locked(run);
        if let (Tx::Postgres(t), Some(row)) = (&mut *self, row) {
            t.remember(row);
        }
    }
}

impl PgTx {
    /// The first statement of a kernel tool's evaluation ([`Tx::lock_run_with_task_and_search_head`],
    /// led by a job's claim with `taking_job`): the lock, the task, its search head, and
    /// whether the claim found the job.
    async fn begin_evaluation(
        &mut self,
        taking_job: Option<i64>,
        run_id: i64,
        task_id: i64,
    ) -> Result<(EvaluationLock, bool)> {
        let (run, task, head, taken) = self
            .begin_locking_run_with(
                taking_job,
                run_id,
                crate::sql::TASK_BY_ID,
                task_id,
                crate::row::task,
                Some(postgres::Stmt::new(
                    crate::sql::SEARCH_HEAD_PG,
                    vec![task_id.to_string()],
                )),
            )
            .await?;
        let search_head = head.as_ref().map(crate::row::frozen_head).transpose()?;
        Ok((EvaluationLock { run, task, search_head }, taken))
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
}

/// What a kernel tool's evaluation reads with its run lock ([`Tx::lock_run_with_task_and_search_head`]).
#[derive(Debug)]
pub struct EvaluationLock {
    pub run: RunRow,
    /// The task, when it exists.
    pub task: Option<TaskRow>,
    /// The head of the row that declared the task, for a `tool_search` call, when it was read
    /// with the lock.
    pub search_head: Option<FrozenHead>,
}

/// What a round's seal reads with its run lock ([`Tx::lock_run_with_task_sealing`]).
#[derive(Debug)]
pub struct SealingLock {
    pub run: RunRow,
    /// The task, when it exists.
    pub task: Option<TaskRow>,
    /// The sealed request, when it was inserted with the lock.
    pub sealed: Option<SealedRequestRow>,
}
