//! PostgreSQL: the task rows a unit of work knows as they are stored, so that a task update
//! over one of them is buffered (`tx/buffered_update.rs`) instead of sent at once.
//!
//! Every writer of a task holds its run's lock (storage-and-scale.md §3, "Lock order"). A row
//! the unit read under that lock (the lock's own read: `Tx::lock`, `Tx::open_door`), inserted
//! under it, or last wrote under it, is therefore the stored row until the unit writes it again. Every task write of a unit goes
//! through `Tx::insert_task` or the updates below (`update_task`, `update_task_claimed`,
//! `update_task_over`), which keep this record current. A kernel caller's own copy of a row
//! may carry columns it already changed (a settle sets the content, then moves the status);
//! the record is what the update's conditions are decided on and what its changed columns are
//! computed against. A row the unit does not know (read without the lock, or through the store
//! outside the unit) is updated at once, as before.

use super::*;

/// At most this many rows are known per unit: a unit that touches more updates the rest at
/// once (the bound keeps the record's upkeep flat).
const KNOWN_ROWS: usize = 16;

impl PgTx {
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
    pub(super) fn buffer_known_update(
        &mut self,
        task: &TaskRow,
        expect_generation: i64,
        expect_statuses: &[TaskStatus],
        expect_claim_token: Option<&str>,
    ) -> Option<Result<bool>> {
        let at = self.known.iter().position(|t| t.id == task.id)?;
        if self.known[at].generation != expect_generation {
            return self.deferred.holds(self.known[at].run_id).then_some(Ok(false));
        }
        // Taken out while the update is decided on it (no copy), then kept again or replaced.
        let before = self.known.swap_remove(at);
        let held = self.buffer_task_update(&before, task, expect_statuses, expect_claim_token);
        match held {
            Some(Ok(true)) => self.remember(task),
            _ => self.known.push(before),
        }
        held
    }
}

/// The task writes of a unit of work, which keep the record current.
impl Tx {
    /// The conditional update: writes every column of `task` except the identity (`id`,
    /// `run_id`, `key`, `kind`, `origin`, `created_at`) and `frozen_context`, only where the
    /// stored row has `generation = expect_generation` and `status` in `expect_statuses`
    /// (1 to [`MAX_EXPECTED_STATUSES`] words). Returns false (idle) when no row matched.
    /// A retry passes the new generation in `task.generation` and the old one here.
    pub async fn update_task(
        &mut self,
        task: &TaskRow,
        expect_generation: i64,
        expect_statuses: &[TaskStatus],
    ) -> Result<bool> {
        self.update_task_expecting(task, expect_generation, expect_statuses, None)
            .await
    }

    /// [`Tx::update_task`] with `AND claim_token = expect_claim_token` too (executor settles:
    /// a stale claim token never settles).
    pub async fn update_task_claimed(
        &mut self,
        task: &TaskRow,
        expect_generation: i64,
        expect_statuses: &[TaskStatus],
        expect_claim_token: &str,
    ) -> Result<bool> {
        self.update_task_expecting(task, expect_generation, expect_statuses, Some(expect_claim_token))
            .await
    }

    /// [`Tx::update_task`] / [`Tx::update_task_claimed`]: held on PostgreSQL over a row the
    /// unit knows as stored (`tx/known.rs`), else sent at once.
    async fn update_task_expecting(
        &mut self,
        task: &TaskRow,
        expect_generation: i64,
        expect_statuses: &[TaskStatus],
        expect_claim_token: Option<&str>,
    ) -> Result<bool> {
        if let Tx::Postgres(t) = self
            && let Some(held) = t.buffer_known_update(task, expect_generation, expect_statuses, expect_claim_token)
        {
            return held;
        }
        let moved = tx_dispatch!(
            self,
            update_task(task, expect_generation, expect_statuses, expect_claim_token)
        );
        self.note_task_write(task, &moved);
        moved
    }

    /// After an update sent at once: the row is `task` when it moved, else unknown.
    fn note_task_write(&mut self, task: &TaskRow, moved: &Result<bool>) {
        if let Tx::Postgres(t) = self {
            match moved {
                Ok(true) => t.remember(task),
                _ => t.forget(task.id),
            }
        }
    }

    /// [`Tx::update_task`] (with `expect_claim_token` as in [`Tx::update_task_claimed`]) of a
    /// row this unit of work read and has not changed since: `before`, whose generation is the
    /// expected one. SQLite checks the conditions on `before` instead of reading the row again;
    /// so does PostgreSQL when the unit holds the run's lock, and then holds the `UPDATE` until
    /// the unit's next statement or its `COMMIT` (`tx/buffered_update.rs`); otherwise it runs the
    /// conditional `UPDATE` at once.
    pub async fn update_task_over(
        &mut self,
        before: &TaskRow,
        task: &TaskRow,
        expect_statuses: &[TaskStatus],
        expect_claim_token: Option<&str>,
    ) -> Result<bool> {
        if let Tx::Postgres(t) = self {
            // The unit's own record of the row, when it has one, over the caller's copy (whose
            // generation is still the one the caller expects).
            let held = match t.buffer_known_update(task, before.generation, expect_statuses, expect_claim_token) {
                Some(held) => Some(held),
                None => {
                    let held = t.buffer_task_update(before, task, expect_statuses, expect_claim_token);
                    if matches!(held, Some(Ok(true))) {
                        t.remember(task);
                    }
                    held
                }
            };
            if let Some(held) = held {
                return held;
            }
        }
        let moved = tx_dispatch!(
            self,
            update_task_over(before, task, expect_statuses, expect_claim_token)
        );
        self.note_task_write(task, &moved);
        moved
    }
}
