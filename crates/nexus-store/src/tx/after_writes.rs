//! Reads a unit of work usually makes right after buffered writes, whose answer the caller
//! waits on: what a settle reads next, the dependencies of the rows it readies, a reply's probe
//! of the task keys it is about to use, and the insert of a job whose id the caller needs. On
//! PostgreSQL with writes buffered each goes out with them in one round trip
//! (`postgres/unit/after_buffered.rs`); otherwise, and on SQLite, as an ordinary statement.

use super::*;

impl Tx {
    /// The edges into `depends_on_id` (its dependents), by (task_id, depends_on_id, kind),
    /// unless run `run_id` holds a kernel-held (`running`) await (`None`): one statement. A
    /// settle asks through [`Tx::around_settled`], which sends it after buffered writes.
    pub async fn edges_into_unless_awaiting(
        &mut self,
        run_id: i64,
        depends_on_id: i64,
    ) -> Result<Option<Vec<EdgeRow>>> {
        tx_dispatch!(self, edges_into_unless_awaiting(run_id, depends_on_id))
    }

    /// What a settle of `settled` reads next (the rows the settle can reach, runs.md §7): the
    /// edges into it ([`Tx::edges_into_unless_awaiting`]), and, on PostgreSQL with writes
    /// buffered, in the same round trip as they go out, one of two reads the store picks from
    /// the row itself. A row a model round declared (`declaring_task_id`) is followed by its
    /// round's continuation, which depends on it: each dependent's [`Tx::task_and_deps`].
    /// Any other row: the run's end-of-run read ([`Tx::tasks_if_quiescent`] as the run stands
    /// after the unit's writes so far), which answers only when no row depends on it and the
    /// run holds no kernel-held await. Otherwise only the edges are read.
    pub async fn around_settled(&mut self, settled: &TaskRow) -> Result<AroundSettled> {
        if let Tx::Postgres(t) = self
            && let Some(read) = t.around_settled_after_buffered(settled).await
        {
            return read;
        }
        Ok(AroundSettled {
            edges: self.edges_into_unless_awaiting(settled.run_id, settled.id).await?,
            ..AroundSettled::default()
        })
    }

    /// The edges out of `task_id` (its dependencies), by (task_id, depends_on_id, kind).
    pub async fn edges_from(&mut self, task_id: i64) -> Result<Vec<EdgeRow>> {
        if let Tx::Postgres(t) = self
            && let Some(read) = t.edges_from_after_buffered(task_id).await
        {
            return read;
        }
        tx_dispatch!(self, edges_from(task_id))
    }

    /// The keys among `keys` that name a task of the run (sorted, without repeats).
    pub async fn used_task_keys(&mut self, run_id: i64, keys: &[String]) -> Result<Vec<String>> {
        if let Tx::Postgres(t) = self
            && let Some(read) = t.used_task_keys_after_buffered(run_id, keys).await
        {
            return read;
        }
        tx_dispatch!(self, used_task_keys(run_id, keys))
    }

    /// Inserts a job (unlocked, 0 attempts) and returns its id ([`Tx::put_job`]
    /// when the caller does not need it). On PostgreSQL under an id the unit took ahead, the
    /// insert is buffered with the unit's writes.
    pub async fn insert_job(&mut self, new: NewJob) -> Result<i64> {
        if let Tx::Postgres(t) = self
            && let Some(inserted) = t.insert_job_after_buffered(&new).await
        {
            return inserted;
        }
        tx_dispatch!(self, insert_job(&new))
    }
}
