//! PostgreSQL: the statements of `tx/after_writes.rs` (whose answer the caller waits on: what a
//! settle reads next, a row's dependencies, a reply's key probe, a job insert) and the insert of
//! a task, when writes are buffered: each goes out as a prepared template
//! (`postgres/prepared.rs`) at the end of the simple query that sends the writes, so the writes
//! take no round trip of their own. With nothing buffered the caller sends it as an ordinary
//! statement. A failure there, the read's or a buffered write's, is named as a write's.
//!
//! Each statement here is one more text whose `$n` PostgreSQL types from its context (the
//! template test in `update.rs` prepares every one on the schema).

use super::*;
use crate::postgres::{Literal, Stmt};
use sqlx::Row;
use sqlx::postgres::PgRow;

impl PgTx {
    /// [`Tx::around_settled`] with the buffered writes (`None`: none buffered).
    pub(crate) async fn around_settled_after_buffered(&mut self, settled: &TaskRow) -> Option<Result<AroundSettled>> {
        if !self.buffers_writes() {
            return None;
        }
        Some(self.around_settled_with_buffered(settled).await)
    }

    async fn around_settled_with_buffered(&mut self, settled: &TaskRow) -> Result<AroundSettled> {
        let (run_id, depends_on_id) = (settled.run_id, settled.id);
        let continued = settled.declaring_task_id.is_some();
        let literals = vec![run_id.to_string(), depends_on_id.to_string()];
        let next = if continued {
            let id = vec![depends_on_id.to_string()];
            Stmt::new(crate::sql::DEPENDENTS_AND_THEIR_DEPS_PG, id)
        } else {
            Stmt::new(crate::sql::TASKS_OF_QUIESCENT_RUN_UNLESS_DEPENDED, literals.clone())
        };
        let reads = vec![Stmt::new(crate::sql::EDGES_INTO_UNLESS_AWAITING, literals), next];
        let mut sets = self.reads_after_buffered(reads).await?.into_iter();
        let edges = sets.next().unwrap_or_default();
        let edges = edges.iter().map(crate::row::edge_or_awaiting).collect::<Result<_>>()?;
        let edges = crate::row::edges_unless_awaiting(edges);
        let next = sets.next().unwrap_or_default();
        let mut around = AroundSettled::default();
        match &edges {
            Some(e) if continued && !e.is_empty() => {
                around.dependents = self.dependents_read(&next).await?;
            }
            Some(e) if !continued && e.is_empty() => {
                let rows = next.iter().map(crate::row::task_end).collect::<Result<Vec<_>>>()?;
                around.quiescence = Some(crate::row::quiescent(rows));
            }
            _ => {}
        }
        around.edges = edges;
        Ok(around)
    }

    /// [`Tx::edges_from`] with the buffered writes (`None`: none buffered).
    pub(crate) async fn edges_from_after_buffered(&mut self, task_id: i64) -> Option<Result<Vec<EdgeRow>>> {
        if !self.buffers_writes() {
            return None;
        }
        let read = Stmt::new(crate::sql::EDGES_FROM, vec![task_id.to_string()]);
        Some(match self.read_after_buffered(read).await {
            Ok(rows) => rows.iter().map(crate::row::edge).collect(),
            Err(e) => Err(e),
        })
    }

    /// [`Tx::used_task_keys`] with the buffered writes (`None`: none buffered, or more keys
    /// than the probe's slots). The first such probe takes ids ahead (`reserved.rs`).
    pub(crate) async fn used_task_keys_after_buffered(
        &mut self,
        run_id: i64,
        keys: &[String],
    ) -> Option<Result<Vec<String>>> {
        if !self.buffers_writes() || keys.len() > crate::sql::KEY_PROBE_SLOTS {
            return None;
        }
        let Some(slots) = crate::ops::tasks::key_probe_slots(keys) else {
            return Some(Ok(Vec::new()));
        };
        self.ids_for_probe(keys.len());
        let mut literals = vec![run_id.literal()];
        literals.extend(slots.iter().map(|k| k.literal()));
        let read = Stmt::new(crate::sql::USED_TASK_KEYS, literals);
        let used = self.read_after_buffered(read).await.and_then(|rows| {
            let mut used = rows
                .iter()
                .map(|r| r.try_get::<String, _>(0).map_err(StoreError::from))
                .collect::<Result<Vec<_>>>()?;
            used.sort();
            used.dedup();
            Ok(used)
        });
        Some(used)
    }

    /// [`Tx::insert_job`] under an id taken ahead (buffered), or at the end of the buffered
    /// writes' simple query (`None`: neither; the caller sends the insert on its own).
    pub(crate) async fn insert_job_after_buffered(&mut self, new: &NewJob) -> Option<Result<i64>> {
        if let Some(id) = self.take_reserved_id(true) {
            return Some(self.buffer_job_insert(id, new).map(|()| id));
        }
        if !self.buffers_writes() {
            return None;
        }
        let literals = [
            new.kind.literal(),
            new.run_id.literal(),
            new.task_id.literal(),
            new.generation.literal(),
            new.available_at.literal(),
        ];
        let insert = Stmt::new(crate::sql::INSERT_JOB, literals.to_vec());
        let rows = match self.read_after_buffered(insert).await {
            Ok(rows) => rows,
            Err(e) => return Some(Err(e)),
        };
        let id = match rows.first() {
            Some(r) => r.try_get::<i64, _>(0),
            None => Err(sqlx::Error::RowNotFound),
        };
        Some(self.void_on(id.map_err(StoreError::from)))
    }
}

impl PgTx {
    /// The rows of [`crate::sql::DEPENDENTS_AND_THEIR_DEPS_PG`] by dependent, each group in id
    /// order without repeats, their frozen contexts filled in as any task read's are.
    async fn dependents_read(&mut self, rows: &[PgRow]) -> Result<std::collections::HashMap<i64, Vec<TaskRow>>> {
        let mut groups: std::collections::HashMap<i64, Vec<crate::frozen::Pending<TaskRow>>> =
            std::collections::HashMap::new();
        for r in rows {
            let of: i64 = r.try_get("of_task")?;
            let group = groups.entry(of).or_default();
            let pending = crate::row::task(r)?;
            if group.last().is_none_or(|last| last.value.id != pending.value.id) {
                group.push(pending);
            }
        }
        let mut out = std::collections::HashMap::with_capacity(groups.len());
        for (of, pending) in groups {
            let resolved = crate::postgres::ops::resolve_frozen_all(&mut *self.tx, pending).await;
            out.insert(of, self.void_on(resolved)?);
        }
        Ok(out)
    }

    /// [`Tx::insert_task`] at the end of the buffered writes' simple query (`None`: nothing is buffered,
    /// the caller sends the insert as an ordinary statement). As the engine's insert does, the
    /// text guard runs first and the frozen context's body is kept before the unit commits.
    pub(crate) async fn insert_task_after_buffered(&mut self, new: &NewTask) -> Option<Result<TaskRow>> {
        if !self.buffers_writes() {
            return None;
        }
        Some(self.insert_task_with_buffered(new).await)
    }

    async fn insert_task_with_buffered(&mut self, new: &NewTask) -> Result<TaskRow> {
        let literals = task_insert_literals(new)?;
        let insert = Stmt::new(crate::sql::INSERT_TASK_WITH_BODY_PG, literals);
        let rows = self.read_after_buffered(insert).await?;
        let row = match rows.first() {
            Some(r) => crate::row::task(r),
            None => Err(sqlx::Error::RowNotFound.into()),
        };
        // The insert returns no digest: the caller's bytes are the row's.
        let mut task = self.void_on(row)?.without_frozen();
        task.frozen_context = new.frozen_context.clone();
        Ok(task)
    }

    /// Whether writes are buffered for the unit's next statement (and the unit is not void).
    pub(crate) fn buffers_writes(&self) -> bool {
        !self.void && self.deferred.has_buffered()
    }

    /// Sends the buffered writes and then `read` in one simple query; `read`'s rows. A failure
    /// (the read's or a buffered write's) voids the unit, as any statement's does, and is named
    /// as a write's (`write_error`): a key a buffered insert found used is `Conflict`.
    async fn read_after_buffered(&mut self, read: Stmt) -> Result<Vec<PgRow>> {
        let mut sets = self.reads_after_buffered(vec![read]).await?;
        Ok(sets.pop().unwrap_or_default())
    }

    /// [`PgTx::read_after_buffered`] for several statements: each one's rows, in order.
    /// The task and job ids the unit asked for ride with them (`reserved.rs`).
    async fn reads_after_buffered(&mut self, mut reads: Vec<Stmt>) -> Result<Vec<Vec<PgRow>>> {
        let held = self.deferred.take_buffered().unwrap_or_default();
        let reserving = self.ids_request().map(|r| reads.push(r)).is_some();
        let result = Box::pin(self.tx.reads_after(held, reads))
            .await
            .map_err(crate::write_error);
        let mut sets = self.void_on(result)?;
        if reserving {
            let rows = sets.pop().unwrap_or_default();
            let filled = self.ids_fill(&rows);
            self.void_on(filled)?;
        }
        Ok(sets)
    }

    /// `result` of a statement the unit sent; a failure voids the unit, as any statement's does.
    pub(crate) fn void_on<T>(&mut self, result: Result<T>) -> Result<T> {
        if result.as_ref().is_err_and(voids_transaction) {
            self.void = true;
        }
        result
    }
}

/// A task insert's values in [`crate::sql::INSERT_TASK_WITH_BODY_PG`]'s order (the identity,
/// the mutable columns, the body), after the text guard; the frozen context's body is kept
/// (`crate::frozen`) before the unit commits, as the engine's insert keeps it.
pub(crate) fn task_insert_literals(new: &NewTask) -> Result<Vec<String>> {
    crate::row::check_new_task_text(new)?;
    let digest = new.frozen_context.as_deref().map(crate::row::frozen_digest);
    if let (Some(digest), Some(body)) = (&digest, &new.frozen_context) {
        crate::frozen::keep(digest, body);
    }
    let mut literals = vec![
        new.run_id.literal(),
        new.key.literal(),
        new.kind.literal(),
        new.origin.as_str().literal(),
        digest.literal(),
        new.created_at.literal(),
    ];
    macro_rules! each_literal {
        (; $($f:ident),*) => {$( literals.push(Literal::literal(&new.$f)); )*};
    }
    crate::row::task_mutable_fields!(each_literal);
    literals.push(new.frozen_context.literal());
    Ok(literals)
}
