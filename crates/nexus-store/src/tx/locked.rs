//! The run lock with what the unit reads under it: one typed request ([`RunLock`]) and its
//! answer ([`Locked`]).
//!
//! Both engines answer the same request the same way. How it travels is the engine's own
//! business: on PostgreSQL, as the unit's first statement, `BEGIN`, the lock and the reads go
//! out in one simple query (as the executor doors do: [`Tx::open_door`]); otherwise, and on
//! SQLite, one statement after another.

use super::*;

/// "Lock run `run_id` and read `with` under the lock" ([`Tx::lock`]).
#[derive(Debug, Clone, Copy)]
pub struct RunLock<'a> {
    pub run_id: i64,
    pub with: LockReads<'a>,
}

/// What a [`RunLock`] reads under the lock, besides the run row.
#[derive(Debug, Clone, Copy)]
pub enum LockReads<'a> {
    /// The task row with this id ([`Locked::task`]).
    Task(i64),
    /// The task with this id as a round's reply step reads it ([`Locked::round`]; `task` is
    /// left `None`).
    Round(i64),
    /// A kernel tool's evaluation of the task with this id ([`Locked::task`]), with the head
    /// of the row that declared it when it is a `tool_search` call ([`Locked::search_head`]).
    /// The head is read only where it rides with the lock at no cost (PostgreSQL, as the unit's
    /// first statement); `None` leaves the read to the caller.
    Evaluation(i64),
    /// A round's seal: the task `task_id` of the request ([`Locked::task`]), and the request
    /// stored ([`Locked::sealed`]) when the round is sealable: the run is `running` and the task
    /// is `waiting` in the request's generation. A round that is not sealable stores nothing,
    /// and the unit holds only the lock and the reads. A request already stored for the task's
    /// generation of a sealable round is `Conflict`.
    Seal(&'a NewSealedRequest),
}

impl LockReads<'_> {
    fn task_id(&self) -> i64 {
        match *self {
            LockReads::Task(id) | LockReads::Round(id) | LockReads::Evaluation(id) => id,
            LockReads::Seal(new) => new.task_id,
        }
    }
}

/// What a [`RunLock`] answers: the run row, fresh, and what it asked for.
#[derive(Debug)]
pub struct Locked {
    pub run: RunRow,
    /// The task, when it exists ([`LockReads::Task`], [`LockReads::Evaluation`],
    /// [`LockReads::Seal`]).
    pub task: Option<TaskRow>,
    /// The round, when it exists ([`LockReads::Round`]).
    pub round: Option<RoundForReply>,
    /// The search head read with the lock ([`LockReads::Evaluation`]).
    pub search_head: Option<FrozenHead>,
    /// The sealed request stored by a [`LockReads::Seal`] of a sealable round.
    pub sealed: Option<SealedRequestRow>,
}

impl Locked {
    fn of(run: RunRow) -> Self {
        Locked {
            run,
            task: None,
            round: None,
            search_head: None,
            sealed: None,
        }
    }
}

/// Whether a seal of `new` may store its request: the run `running`, the task `waiting` in the
/// request's generation.
fn sealable(run: &RunRow, task: Option<&TaskRow>, new: &NewSealedRequest) -> bool {
    run.status == RunStatus::Running
        && task.is_some_and(|t| t.generation == new.generation && t.status == TaskStatus::Waiting)
}

impl Tx {
    /// Locks the run and reads what `lock.with` names under the lock ([`LockReads`]).
    /// `NotFound` for no such run.
    pub async fn lock(&mut self, lock: RunLock<'_>) -> Result<Locked> {
        match lock.with {
            LockReads::Seal(new) => self.lock_sealing(lock.run_id, new).await,
            _ => self.lock_reading(lock).await,
        }
    }

    /// [`Tx::lock`] of reads that write nothing.
    async fn lock_reading(&mut self, lock: RunLock<'_>) -> Result<Locked> {
        let mut locked = match self {
            Tx::Postgres(t) if t.first_statement() => t.begin_locked(None, lock).await?.0,
            _ => {
                let mut locked = Locked::of(tx_dispatch!(self, lock_run(lock.run_id))?);
                match lock.with {
                    LockReads::Round(id) => locked.round = tx_dispatch!(self, round_for_reply(id))?,
                    with => locked.task = tx_dispatch!(self, task_by_id(with.task_id()))?,
                }
                locked
            }
        };
        self.note_lock(&mut locked);
        Ok(locked)
    }

    /// [`LockReads::Seal`]. On PostgreSQL, as the unit's first statement and when the request
    /// is stored without reading its bases (each whole, or a delta on a base whose depth is
    /// given, below the snapshot depth), its insert goes out with the lock in one round trip;
    /// when the round then turns out not sealable (or the insert fails), that unit is rolled
    /// back and the lock taken again, on a fresh transaction, without it.
    async fn lock_sealing(&mut self, run_id: i64, new: &NewSealedRequest) -> Result<Locked> {
        let with = RunLock {
            run_id,
            with: LockReads::Task(new.task_id),
        };
        if let Tx::Postgres(t) = self
            && t.first_statement()
            && let Some(stored) = crate::ops::sealed::stored_without_reads(new)
        {
            match t.begin_sealing(run_id, new, stored).await {
                Ok(mut locked) if sealable(&locked.run, locked.task.as_ref(), new) => {
                    self.note_lock(&mut locked);
                    return Ok(locked);
                }
                // Sealed already, by another unit (`Conflict`), no row to seal (`NotFound`), or
                // a round no longer sealable: the plain lock below reads it as it stands.
                Ok(_) | Err(StoreError::Conflict(_) | StoreError::NotFound(_)) => t.restart().await?,
                Err(e) => return Err(e),
            }
        }
        let mut locked = self.lock_reading(with).await?;
        if sealable(&locked.run, locked.task.as_ref(), new) {
            locked.sealed = Some(tx_dispatch!(self, insert_sealed_request(new))?);
        }
        Ok(locked)
    }

    /// A `kernel_tool` job's claim and its evaluation's lock (`Store::take_kernel_job`): on
    /// PostgreSQL, the delete of job `job_id` in a transaction of its own, then this unit's
    /// `BEGIN` and [`LockReads::Evaluation`] of `task_id`, in one round trip. `None` when the
    /// job was gone; the unit then holds the run lock, and the caller rolls it back.
    pub(crate) async fn take_job_locking_run(
        &mut self,
        job_id: i64,
        run_id: i64,
        task_id: i64,
    ) -> Result<Option<Locked>> {
        let Tx::Postgres(t) = self else {
            return Err(StoreError::Config("a job's claim with a unit is PostgreSQL's".into()));
        };
        if !t.first_statement() {
            return Err(StoreError::Config("a job's claim leads its unit".into()));
        }
        let lock = RunLock {
            run_id,
            with: LockReads::Evaluation(task_id),
        };
        let (mut locked, taken) = t.begin_locked(Some(job_id), lock).await?;
        self.note_lock(&mut locked);
        Ok(taken.then_some(locked))
    }

    /// The unit holds `locked.run`'s lock, and knows the task row it read under it.
    fn note_lock(&mut self, locked: &mut Locked) {
        self.note_locked(&mut locked.run);
        let row = locked.task.as_ref().or(locked.round.as_ref().map(|r| &r.task));
        if let Some(row) = row {
            self.remember(row);
        }
    }
}

impl PgTx {
    /// The unit's first statement: `BEGIN`, the run lock and the reads of `lock` in one simple
    /// query, led by a job's claim with `taking_job`; what it read, and whether the claim found
    /// the job.
    async fn begin_locked(&mut self, taking_job: Option<i64>, lock: RunLock<'_>) -> Result<(Locked, bool)> {
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
