//! Reads that usually come right after held writes (`tx/held.rs`, `tx/held_update.rs`): a
//! settle's probe of its dependents and the dependencies of the rows it readies. On PostgreSQL,
//! when writes are held, the read goes out as a prepared template (`postgres/prepared.rs`) at
//! the end of the simple query that sends them, so the writes take no round trip of their own;
//! with nothing held it is an ordinary statement. On SQLite every write has already run.
//!
//! Each read here is one more statement text whose `$n` PostgreSQL types from its context (the
//! template test in `held_update.rs` prepares every one on the schema).

use super::*;
use crate::postgres::Stmt;
use sqlx::postgres::PgRow;

impl Tx {
    /// The edges into `depends_on_id` (its dependents), by (task_id, depends_on_id, kind),
    /// unless run `run_id` holds a kernel-held (`running`) await (`None`): one statement.
    pub async fn edges_into_unless_awaiting(
        &mut self,
        run_id: i64,
        depends_on_id: i64,
    ) -> Result<Option<Vec<EdgeRow>>> {
        match self {
            Tx::Postgres(t) if t.holds_writes() => {
                let read = Stmt::new(
                    crate::sql::EDGES_INTO_UNLESS_AWAITING,
                    vec![run_id.to_string(), depends_on_id.to_string()],
                );
                let rows = t.read_after_held(read).await?;
                let rows = rows.iter().map(crate::row::edge_or_awaiting).collect::<Result<_>>()?;
                Ok(crate::row::edges_unless_awaiting(rows))
            }
            _ => tx_dispatch!(self, edges_into_unless_awaiting(run_id, depends_on_id)),
        }
    }

    /// The edges out of `task_id` (its dependencies), by (task_id, depends_on_id, kind).
    pub async fn edges_from(&mut self, task_id: i64) -> Result<Vec<EdgeRow>> {
        match self {
            Tx::Postgres(t) if t.holds_writes() => {
                let read = Stmt::new(crate::sql::EDGES_FROM, vec![task_id.to_string()]);
                let rows = t.read_after_held(read).await?;
                rows.iter().map(crate::row::edge).collect()
            }
            _ => tx_dispatch!(self, edges_from(task_id)),
        }
    }
}

impl PgTx {
    /// Whether writes are held for the unit's next statement (and the unit is not void).
    fn holds_writes(&self) -> bool {
        !self.void && self.deferred.has_held()
    }

    /// Sends the held writes and then `read` in one simple query; `read`'s rows. A failure
    /// (the read's or a held write's) voids the unit, as any statement's does.
    async fn read_after_held(&mut self, read: Stmt) -> Result<Vec<PgRow>> {
        let held = self.deferred.take_held().unwrap_or_default();
        let result = Box::pin(self.tx.read_after(held, read)).await.map_err(StoreError::from);
        if result.as_ref().is_err_and(voids_transaction) {
            self.void = true;
        }
        result
    }
}
