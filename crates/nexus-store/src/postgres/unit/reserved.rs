//! PostgreSQL: task and job ids a unit of work takes ahead of its inserts, so that the inserts
//! are buffered with its writes (`buffered.rs`) rather than sent one round trip each. Private to
//! the engine: the kernel names no id it has not been given, on either engine.
//!
//! A task insert returns the row's id, and the next write (an edge to the row, a row that
//! depends on it) needs it; a job insert returns the id a hand-off claims the job by. So each
//! such insert would go out on its own: a reply's expansion of one kernel tool call would spend
//! three round trips on its two rows and the call's job.
//!
//! The rule: a unit's key probe ([`Tx::used_task_keys`]) is the unit looking for free keys to
//! insert rows under, after checking them under the run's lock. The first such probe of a unit
//! that goes out after buffered writes also takes as many task ids, and as many job ids, as it
//! names keys (a window of candidate keys: at least the rows the unit then inserts). Each later
//! insert takes the next id of its kind, builds its answer from what it was given (no column of
//! either is defaulted or computed by the database) and is buffered like any write; an insert made
//! before the ids came uses none, and drops the request.
//!
//! The ids come from the tables' identities, in the unit, under the run's lock, so a run's
//! rows keep ascending ids in the order they were inserted, on any node. An id the unit does
//! not use is a gap, as a rolled-back insert's is.

use std::collections::VecDeque;

use super::*;
use crate::postgres::{Literal, Stmt};
use sqlx::Row;
use sqlx::postgres::PgRow;

/// The ids a unit asked for and the ones it holds unused.
#[derive(Debug, Default)]
pub(crate) struct ReservedIds {
    /// The unit has asked for ids (once a unit).
    asked: bool,
    /// How many task and job ids the unit's next read after buffered writes takes.
    wanted: (usize, usize),
    /// Reserved task ids not yet used, ascending.
    tasks: VecDeque<i64>,
    /// Reserved job ids not yet used, ascending.
    jobs: VecDeque<i64>,
}

impl ReservedIds {
    /// The statement that takes the ids asked for, to send with a read (`None`: none asked for).
    fn request(&mut self) -> Option<Stmt> {
        let (tasks, jobs) = std::mem::take(&mut self.wanted);
        (tasks + jobs > 0).then(|| Stmt::new(crate::sql::RESERVE_IDS, vec![tasks.to_string(), jobs.to_string()]))
    }

    /// The ids [`ReservedIds::request`]'s statement answered.
    fn fill(&mut self, rows: &[PgRow]) -> Result<()> {
        let mut taken = rows
            .iter()
            .map(|r| Ok((r.try_get::<i32, _>("kind")?, r.try_get::<i64, _>("id")?)))
            .collect::<std::result::Result<Vec<_>, sqlx::Error>>()?;
        taken.sort_unstable();
        for (kind, id) in taken {
            match kind {
                0 => self.tasks.push_back(id),
                _ => self.jobs.push_back(id),
            }
        }
        Ok(())
    }

    /// The next id of a pool, for an insert about to be made; an empty pool drops a request
    /// not yet answered (the ids would come after the inserts they were for).
    fn take(&mut self, job: bool) -> Option<i64> {
        let id = if job {
            self.jobs.pop_front()
        } else {
            self.tasks.pop_front()
        };
        if id.is_none() {
            self.wanted = (0, 0);
        }
        id
    }
}

impl PgTx {
    /// A key probe of `keys` is about to go out after buffered writes: the unit is looking for
    /// keys to insert rows under, so the probe also takes as many task ids and as many job ids
    /// as it names keys, once a unit (the rule in the module's header).
    pub(crate) fn ids_for_probe(&mut self, keys: usize) {
        let ids = self.ids.get_or_insert_with(Box::default);
        if !ids.asked {
            ids.asked = true;
            ids.wanted = (keys, keys);
        }
    }

    /// The statement that takes the ids the unit asked for, to send with its next read after
    /// buffered writes (`None`: none asked for).
    pub(crate) fn ids_request(&mut self) -> Option<Stmt> {
        self.ids.as_mut()?.request()
    }

    /// Keeps the ids [`PgTx::ids_request`]'s statement answered.
    pub(crate) fn ids_fill(&mut self, rows: &[PgRow]) -> Result<()> {
        match self.ids.as_mut() {
            Some(ids) => ids.fill(rows),
            None => Ok(()),
        }
    }

    /// The next reserved id of a task (`job` false) or a job, for an insert about to be made
    /// (`None`: none is reserved, or the unit is void).
    pub(crate) fn take_reserved_id(&mut self, job: bool) -> Option<i64> {
        if self.void {
            return None;
        }
        self.ids.as_mut()?.take(job)
    }

    /// Holds the insert of `new` under the reserved `id` ([`crate::sql::INSERT_TASK_WITH_ID_PG`])
    /// and returns its row.
    pub(crate) fn buffer_task_insert(&mut self, id: i64, new: NewTask) -> Result<TaskRow> {
        let mut literals = after_buffered::task_insert_literals(&new)?;
        literals.push(id.to_string());
        self.deferred
            .buffer_statement(Stmt::new(crate::sql::INSERT_TASK_WITH_ID_PG, literals));
        Ok(new.into_row(id))
    }

    /// Holds the insert of `new` under the reserved `id` ([`crate::sql::INSERT_JOB_WITH_ID`]).
    pub(crate) fn buffer_job_insert(&mut self, id: i64, new: &NewJob) -> Result<()> {
        let literals: [&dyn Literal; 6] = [
            &new.kind,
            &new.run_id,
            &new.task_id,
            &new.generation,
            &new.available_at,
            &id,
        ];
        self.deferred.buffer(crate::sql::INSERT_JOB_WITH_ID, &literals);
        Ok(())
    }
}
