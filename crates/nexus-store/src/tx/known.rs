//! The task rows a unit of work knows as they are stored, and the one conditional task update
//! ([`Tx::update_task`]) that decides on them.
//!
//! Every writer of a task holds its run's lock (storage-and-scale.md §3, "Lock order"; SQLite's
//! unit holds the database write lock from `BEGIN`). A row the unit read under that lock (the
//! lock's own read, [`Tx::task_by_id`], [`Tx::task_by_key`], an executor door), inserted under
//! it, or last wrote under it, is therefore the stored row until the unit writes it again. Every
//! task write of a unit goes through [`Tx::insert_task`] or [`Tx::update_task`], which keep this
//! record current. A kernel caller's own copy of a row may carry columns it already changed (a
//! settle sets the content, then moves the status); the record is what the update's conditions
//! are decided on and what its changed columns are computed against, so the caller names only
//! what it expects. Over a known row SQLite writes without reading the row again, and
//! PostgreSQL buffers the update (`postgres/unit/update.rs`); a row the unit does not know is
//! updated by one conditional statement at once.

use super::*;

/// At most this many rows are known per unit: a unit that touches more updates the rest at
/// once (the bound keeps the record's upkeep flat).
const KNOWN_ROWS: usize = 16;

/// The task rows a unit knows as stored, the latest last.
#[derive(Debug, Default)]
pub(crate) struct Known {
    rows: Vec<TaskRow>,
}

impl Known {
    fn remember(&mut self, row: &TaskRow) {
        if let Some(known) = self.rows.iter_mut().find(|t| t.id == row.id) {
            known.clone_from(row);
            return;
        }
        if self.rows.len() == KNOWN_ROWS {
            self.rows.remove(0);
        }
        self.rows.push(row.clone());
    }

    /// The stored row `id`, taken out of the record (`None`: not known).
    fn take(&mut self, id: i64) -> Option<TaskRow> {
        let at = self.rows.iter().position(|t| t.id == id)?;
        Some(self.rows.remove(at))
    }

    pub(crate) fn clear(&mut self) {
        self.rows.clear();
    }
}

/// A conditional task update ([`Tx::update_task`]): `task` written where the stored row meets
/// `expect`.
#[derive(Debug, Clone, Copy)]
pub struct TaskUpdate<'a> {
    /// The row to store: every column but the identity (`id`, `run_id`, `key`, `kind`,
    /// `origin`, `created_at`) and `frozen_context`. A retry carries its new generation here.
    pub task: &'a TaskRow,
    pub expect: Expect<'a>,
}

/// What the stored row must hold for a [`TaskUpdate`] to write it.
#[derive(Debug, Clone, Copy)]
pub struct Expect<'a> {
    pub generation: i64,
    /// 1 to [`MAX_EXPECTED_STATUSES`] words; the row's status is one of them.
    pub statuses: &'a [TaskStatus],
    /// The stored claim token, when given (an executor's settle or extension: a stale claim
    /// token never writes).
    pub claim_token: Option<&'a str>,
}

impl<'a> TaskUpdate<'a> {
    /// `task` where the stored row is in `generation` with one of `statuses`.
    pub fn new(task: &'a TaskRow, generation: i64, statuses: &'a [TaskStatus]) -> Self {
        TaskUpdate {
            task,
            expect: Expect {
                generation,
                statuses,
                claim_token: None,
            },
        }
    }

    /// And, when given, where the stored row holds `claim_token`.
    pub fn with_claim_token(mut self, claim_token: Option<&'a str>) -> Self {
        self.expect.claim_token = claim_token;
        self
    }
}

impl Tx {
    /// `row` is the stored row (read, inserted or written under its run's lock).
    pub(super) fn remember(&mut self, row: &TaskRow) {
        match self {
            Tx::Sqlite(t) if !t.void => t.known.remember(row),
            Tx::Postgres(t) if !t.void && t.deferred.holds(row.run_id) => t.known.remember(row),
            _ => {}
        }
    }

    fn take_known(&mut self, id: i64) -> Option<TaskRow> {
        match self {
            Tx::Sqlite(t) => t.known.take(id),
            Tx::Postgres(t) => t.known.take(id),
        }
    }

    /// The conditional update ([`TaskUpdate`]): false (idle) when the stored row does not meet
    /// `expect`. Over a row the unit knows as stored it is decided here, without reading the
    /// row (and buffered on PostgreSQL); otherwise one conditional statement answers it.
    pub async fn update_task(&mut self, update: TaskUpdate<'_>) -> Result<bool> {
        let TaskUpdate { task, expect } = update;
        crate::row::status_slots(expect.statuses)?;
        let Some(before) = self.take_known(task.id) else {
            let moved = tx_dispatch!(
                self,
                update_task(task, expect.generation, expect.statuses, expect.claim_token)
            );
            if let Ok(true) = moved {
                self.remember(task);
            }
            return moved;
        };
        if before.generation != expect.generation {
            self.remember(&before);
            return Ok(false);
        }
        let moved = match self {
            Tx::Postgres(t) => t.buffer_task_update(&before, task, &expect),
            Tx::Sqlite(_) => None,
        };
        let stored = &before;
        let moved = match moved {
            Some(moved) => moved,
            None => tx_dispatch!(
                self,
                update_task_over(stored, task, expect.statuses, expect.claim_token)
            ),
        };
        match moved {
            Ok(true) => self.remember(task),
            Ok(false) => self.remember(&before),
            Err(_) => {}
        }
        moved
    }
}
