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
    pub(crate) fn task_id(&self) -> i64 {
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
    pub(crate) fn of(run: RunRow) -> Self {
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
pub(crate) fn sealable(run: &RunRow, task: Option<&TaskRow>, new: &NewSealedRequest) -> bool {
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

    /// [`LockReads::Seal`]. PostgreSQL may store the request with the lock in one round trip
    /// (`postgres/unit/locked.rs`); otherwise, and when the round turned out not sealable
    /// there, the lock and its reads, then the insert when the round is sealable.
    async fn lock_sealing(&mut self, run_id: i64, new: &NewSealedRequest) -> Result<Locked> {
        let with = RunLock {
            run_id,
            with: LockReads::Task(new.task_id),
        };
        if let Tx::Postgres(t) = self
            && let Some(mut locked) = t.seal_leading(run_id, new).await?
        {
            self.note_lock(&mut locked);
            return Ok(locked);
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
