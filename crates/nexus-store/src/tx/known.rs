//! PostgreSQL: the task rows a unit of work knows as they are stored, so that a task update
//! over one of them is held (`tx/held_update.rs`) instead of sent at once.
//!
//! Every writer of a task holds its run's lock (storage-and-scale.md §3, "Lock order"). A row
//! the unit read under that lock (the lock's own read: `Tx::lock_run_with_task`,
//! `Tx::lock_run_with_round`, `Tx::open_door`), inserted under it, or last wrote under it, is
//! therefore the stored row until the unit writes it again, and every task write of a unit
//! goes through `tx.rs` (insert, `update_task`, `update_task_claimed`, `update_task_over`),
//! which keeps this record current. A kernel caller's own copy of a row may carry columns it
//! already changed (a settle sets the content, then moves the status); the record is what the
//! update's conditions are decided on and what its changed columns are computed against. A
//! row the unit does not know (read without the lock, or through the store outside the unit)
//! is updated at once, as before.

use super::*;

/// At most this many rows are known per unit: a unit that touches more updates the rest at
/// once (the bound keeps the record's upkeep flat).
const KNOWN_ROWS: usize = 16;

impl PgTx {
    /// The row `id` as stored, when the unit knows it.
    pub(super) fn known_task(&self, id: i64) -> Option<&TaskRow> {
        self.known.iter().find(|t| t.id == id)
    }

    /// `row` is the stored row (read, inserted or written under its run's lock).
    pub(super) fn remember(&mut self, row: &TaskRow) {
        if self.void || !self.deferred.holds(row.run_id) {
            return;
        }
        if let Some(known) = self.known.iter_mut().find(|t| t.id == row.id) {
            known.clone_from(row);
            return;
        }
        if self.known.len() == KNOWN_ROWS {
            self.known.remove(0);
        }
        self.known.push(row.clone());
    }

    /// The stored row `id` is no longer known (an update whose outcome the unit did not see).
    pub(super) fn forget(&mut self, id: i64) {
        self.known.retain(|t| t.id != id);
    }

    /// [`Tx::update_task`] (with its claim token) of a row the unit knows, held; `None`: not
    /// known, or not under its run's lock: send the update now.
    pub(super) fn hold_known_update(
        &mut self,
        task: &TaskRow,
        expect_generation: i64,
        expect_statuses: &[TaskStatus],
        expect_claim_token: Option<&str>,
    ) -> Option<Result<bool>> {
        let before = self.known_task(task.id)?.clone();
        if before.generation != expect_generation {
            return self.deferred.holds(before.run_id).then_some(Ok(false));
        }
        let held = self.hold_task_update(&before, task, expect_statuses, expect_claim_token)?;
        if matches!(held, Ok(true)) {
            self.remember(task);
        }
        Some(held)
    }
}
