//! Statements that usually come right after buffered writes (`tx/buffered.rs`, `tx/buffered_update.rs`)
//! and whose answer the caller waits on: a settle's probe of its dependents (with what the
//! settle reads next: the dependents' rows when some are expected, else the run's end-of-run
//! read) and the dependencies of the rows it readies, a reply's probe of the task keys it is about to use, and the inserts of a task or a
//! job whose id the caller needs. On PostgreSQL, when writes are buffered, the statement goes
//! out as a prepared template (`postgres/prepared.rs`) at the end of the simple query that
//! sends them, so the writes take no round trip of their own; with nothing held it is an
//! ordinary statement. On SQLite every write has already run.
//!
//! Each statement here is one more text whose `$n` PostgreSQL types from its context (the
//! template test in `buffered_update.rs` prepares every one on the schema).

use super::*;
use crate::postgres::{Literal, Stmt};
use sqlx::Row;
use sqlx::postgres::PgRow;

impl Tx {
    /// The edges into `depends_on_id` (its dependents), by (task_id, depends_on_id, kind),
    /// unless run `run_id` holds a kernel-held (`running`) await (`None`): one statement. A
    /// settle asks through [`Tx::probe_dependents`], which sends it after buffered writes.
    pub async fn edges_into_unless_awaiting(
        &mut self,
        run_id: i64,
        depends_on_id: i64,
    ) -> Result<Option<Vec<EdgeRow>>> {
        tx_dispatch!(self, edges_into_unless_awaiting(run_id, depends_on_id))
    }

    /// [`Tx::edges_into_unless_awaiting`], and what a settle reads next, as the caller expects
    /// it (`dependents_expected`): each dependent's [`Tx::task_and_deps`] when rows are expected
    /// to depend on `depends_on_id`; otherwise the run's end-of-run read
    /// ([`Tx::tasks_if_quiescent`] as the run stands after the unit's writes so far), which
    /// answers only when no row depends on it and the run holds no kernel-held await. On
    /// PostgreSQL with writes buffered, the two go out with them in one round trip; otherwise only
    /// the edges are read.
    pub async fn probe_dependents(
        &mut self,
        run_id: i64,
        depends_on_id: i64,
        dependents_expected: bool,
    ) -> Result<DependentsProbe> {
        match self {
            Tx::Postgres(t) if t.buffers_writes() => {
                let literals = vec![run_id.to_string(), depends_on_id.to_string()];
                let next = if dependents_expected {
                    let id = vec![depends_on_id.to_string()];
                    Stmt::new(crate::sql::DEPENDENTS_AND_THEIR_DEPS_PG, id)
                } else {
                    Stmt::new(crate::sql::TASKS_OF_QUIESCENT_RUN_UNLESS_DEPENDED, literals.clone())
                };
                let reads = vec![Stmt::new(crate::sql::EDGES_INTO_UNLESS_AWAITING, literals), next];
                let mut sets = t.reads_after_buffered(reads, StoreError::from).await?.into_iter();
                let edges = sets.next().unwrap_or_default();
                let edges = edges.iter().map(crate::row::edge_or_awaiting).collect::<Result<_>>()?;
                let edges = crate::row::edges_unless_awaiting(edges);
                let next = sets.next().unwrap_or_default();
                let mut probe = DependentsProbe::default();
                match &edges {
                    Some(e) if dependents_expected && !e.is_empty() => {
                        probe.dependents = t.dependents_read(&next).await?;
                    }
                    Some(e) if !dependents_expected && e.is_empty() => {
                        let rows = next.iter().map(crate::row::task_end).collect::<Result<Vec<_>>>()?;
                        probe.quiescence = Some(crate::row::quiescent(rows));
                    }
                    _ => {}
                }
                probe.edges = edges;
                Ok(probe)
            }
            _ => Ok(DependentsProbe {
                edges: self.edges_into_unless_awaiting(run_id, depends_on_id).await?,
                ..DependentsProbe::default()
            }),
        }
    }

    /// The edges out of `task_id` (its dependencies), by (task_id, depends_on_id, kind).
    pub async fn edges_from(&mut self, task_id: i64) -> Result<Vec<EdgeRow>> {
        match self {
            Tx::Postgres(t) if t.buffers_writes() => {
                let read = Stmt::new(crate::sql::EDGES_FROM, vec![task_id.to_string()]);
                let rows = t.read_after_buffered(read, StoreError::from).await?;
                rows.iter().map(crate::row::edge).collect()
            }
            _ => tx_dispatch!(self, edges_from(task_id)),
        }
    }

    /// The keys among `keys` that name a task of the run (sorted, without repeats).
    pub async fn used_task_keys(&mut self, run_id: i64, keys: &[String]) -> Result<Vec<String>> {
        match self {
            Tx::Postgres(t) if t.buffers_writes() && keys.len() <= crate::sql::KEY_PROBE_SLOTS => {
                let Some(slots) = crate::ops::tasks::key_probe_slots(keys) else {
                    return Ok(Vec::new());
                };
                t.ids_for_probe(keys.len());
                let mut literals = vec![run_id.literal()];
                literals.extend(slots.iter().map(|k| k.literal()));
                let rows = t
                    .read_after_buffered(Stmt::new(crate::sql::USED_TASK_KEYS, literals), StoreError::from)
                    .await?;
                let mut used = rows
                    .iter()
                    .map(|r| r.try_get::<String, _>(0).map_err(StoreError::from))
                    .collect::<Result<Vec<_>>>()?;
                used.sort();
                used.dedup();
                Ok(used)
            }
            _ => tx_dispatch!(self, used_task_keys(run_id, keys)),
        }
    }

    /// Inserts a job (unlocked, 0 attempts) and returns its id ([`Tx::put_job`]
    /// when the caller does not need it).
    ///
    /// On PostgreSQL under an id the unit took ahead (`tx/reserved.rs`), the insert is buffered
    /// with the unit's writes.
    pub async fn insert_job(&mut self, new: NewJob) -> Result<i64> {
        if let Tx::Postgres(t) = self
            && let Some(id) = t.take_reserved_id(true)
        {
            t.buffer_job_insert(id, &new)?;
            return Ok(id);
        }
        match self {
            Tx::Postgres(t) if t.buffers_writes() => {
                crate::check_text(&new.kind)?;
                let literals = [
                    new.kind.literal(),
                    new.run_id.literal(),
                    new.task_id.literal(),
                    new.generation.literal(),
                    new.available_at.literal(),
                ];
                let insert = Stmt::new(crate::sql::INSERT_JOB, literals.to_vec());
                let rows = t.read_after_buffered(insert, crate::write_error).await?;
                let id = match rows.first() {
                    Some(r) => r.try_get::<i64, _>(0),
                    None => Err(sqlx::Error::RowNotFound),
                };
                t.void_on(id.map_err(StoreError::from))
            }
            _ => tx_dispatch!(self, insert_job(&new)),
        }
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
    pub(super) async fn insert_task_after_buffered(&mut self, new: &NewTask) -> Option<Result<TaskRow>> {
        if !self.buffers_writes() {
            return None;
        }
        Some(self.insert_task_with_buffered(new).await)
    }

    async fn insert_task_with_buffered(&mut self, new: &NewTask) -> Result<TaskRow> {
        let literals = task_insert_literals(new)?;
        let insert = Stmt::new(crate::sql::INSERT_TASK_WITH_BODY_PG, literals);
        let rows = self.read_after_buffered(insert, crate::write_error).await?;
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
    fn buffers_writes(&self) -> bool {
        !self.void && self.deferred.has_buffered()
    }

    /// Sends the buffered writes and then `read` in one simple query; `read`'s rows. A failure
    /// (the read's or a buffered write's) voids the unit, as any statement's does.
    /// `classify` names the failure (`write_error` when `read` is a write).
    async fn read_after_buffered(&mut self, read: Stmt, classify: fn(sqlx::Error) -> StoreError) -> Result<Vec<PgRow>> {
        let mut sets = self.reads_after_buffered(vec![read], classify).await?;
        Ok(sets.pop().unwrap_or_default())
    }

    /// [`PgTx::read_after_buffered`] for several statements: each one's rows, in order.
    /// The task and job ids the unit asked for ride with them (`tx/reserved.rs`).
    async fn reads_after_buffered(
        &mut self,
        mut reads: Vec<Stmt>,
        classify: fn(sqlx::Error) -> StoreError,
    ) -> Result<Vec<Vec<PgRow>>> {
        let held = self.deferred.take_buffered().unwrap_or_default();
        let reserving = self.ids_request().map(|r| reads.push(r)).is_some();
        let result = Box::pin(self.tx.reads_after(held, reads)).await.map_err(classify);
        let mut sets = self.void_on(result)?;
        if reserving {
            let rows = sets.pop().unwrap_or_default();
            let filled = self.ids_fill(&rows);
            self.void_on(filled)?;
        }
        Ok(sets)
    }

    /// `result` of a statement the unit sent; a failure voids the unit, as any statement's does.
    fn void_on<T>(&mut self, result: Result<T>) -> Result<T> {
        if result.as_ref().is_err_and(voids_transaction) {
            self.void = true;
        }
        result
    }
}

/// A task insert's values in [`crate::sql::INSERT_TASK_WITH_BODY_PG`]'s order (the identity,
/// the mutable columns, the body), after the text guard; the frozen context's body is kept
/// (`crate::frozen`) before the unit commits, as the engine's insert keeps it.
pub(super) fn task_insert_literals(new: &NewTask) -> Result<Vec<String>> {
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
