//! The store's operations, written once for both engines and grouped by area: accounts
//! (accounts, workspaces, standing, members), executors (executors, announcements,
//! credentials), runs (runs, jobs, idempotency receipts), tasks (tasks, edges, round facts, the
//! sweep's selections and the inbox page), sealed requests, events, memory, uploads and
//! conversations (conversations and their inputs), turns (turns, the running turn, the wake
//! clock, mail and steers), history (the ranked search over titles and turn text, the turn
//! windows of `session_read`) and summaries (the list pages' aggregates).
//!
//! An operation is one generic function over the connection trait [`db::Db`] (implemented by
//! `rusqlite::Connection` and `sqlx::PgConnection`): `async fn op<C: Db>(c: &mut C, …)`, its
//! statements built with [`db::query`] / [`db::query_scalar`] in sqlx's words. The same
//! function serves a single statement on a pool, a [`crate::Store`] method and a [`crate::Tx`]
//! unit of work (a pooled connection and an open transaction both deref to the engine's
//! connection). Where the dialects need different text, [`Dialect`] picks it by the connection
//! type; a public id binds through [`db::uid`].
//!
//! Each area's file also holds its public trait (`AccountStore`, `RunStore`, …), implemented
//! once for [`crate::Store`]: each method names its operation once in [`on_conn!`], which
//! takes a reader (`read`), the connection for one write statement behind SQLite's writer gate
//! (`write`) or a write transaction (`tx`) from the engine the store holds. An operation only
//! one engine has stays in that engine (`sqlite/ops.rs`: the task update naming only changed
//! columns, the executor door's one read; `postgres.rs`: the pipelined first statements of a
//! unit of work). [`all`] names every area's operations, so an area (or an engine's own
//! operation) calls another's by name.
//!
//! The foundation's and the run tables' statement texts are in `crate::sql` (they share its
//! column lists); the memory, upload and conversation areas keep theirs in their own files. A
//! new area is one more file here, named in [`all`] and in `crate::prelude`.

pub(crate) mod accounts;
pub(crate) mod conversations;
pub(crate) mod db;
pub(crate) mod events;
pub(crate) mod executors;
pub(crate) mod history;
pub(crate) mod memory;
pub(crate) mod runs;
pub(crate) mod sealed;
pub(crate) mod summaries;
pub(crate) mod tasks;
pub(crate) mod turns;
pub(crate) mod uploads;

/// Every area's operations by name, for an area that calls another's (and for the engines'
/// `ops` modules, whose own operations call them).
#[allow(unused_imports)]
pub(crate) mod all {
    pub(crate) use super::accounts::*;
    pub(crate) use super::conversations::*;
    pub(crate) use super::events::*;
    pub(crate) use super::executors::*;
    pub(crate) use super::history::*;
    pub(crate) use super::memory::*;
    pub(crate) use super::runs::*;
    pub(crate) use super::sealed::*;
    pub(crate) use super::summaries::*;
    pub(crate) use super::tasks::*;
    pub(crate) use super::turns::*;
    pub(crate) use super::uploads::*;
}

/// The statements whose text differs by dialect, chosen by the engine's connection type (so
/// each operation keeps one definition).
pub(crate) trait Dialect {
    /// Appends an event at the run's next sequence and moves `runs.last_event_sequence` to it,
    /// in one statement: `$1` run, `$2` type, `$3` at, `$4` task key, `$5` data; returns the
    /// sequence (no row: no such run).
    const APPEND_EVENT: &'static str;
    /// The append at a sequence the unit of work already knows (`$2`), when the dialect has
    /// one: `$1` run, `$3` type, `$4` at, `$5` task key, `$6` data; the run's sequence moves
    /// with it. `None`: every append reads the sequence ([`Dialect::APPEND_EVENT`]).
    const APPEND_EVENT_AT: Option<&'static str>;
    /// A task's id, kind, declaring row and frozen digest by id (`$1`), read from the covering
    /// index `tasks_frozen_head` so no frozen bytes are touched.
    const TASK_FROZEN_HEAD: &'static str;
    /// The task insert that also stores its frozen context's body (`$45`), when the dialect
    /// has one statement for both. `None`: the body is stored by its own statement first.
    const INSERT_TASK_WITH_BODY: Option<&'static str>;
    /// The run row by id (`$1`), locked for the unit of work: PostgreSQL `SELECT … FOR
    /// UPDATE`; on SQLite a plain read (`BEGIN IMMEDIATE` holds the write lock).
    const LOCK_RUN: &'static str;
    /// The run row by id (`$1`) locked for the unit of work unless another holds it (no row
    /// then): PostgreSQL `FOR UPDATE SKIP LOCKED`; on SQLite [`Dialect::LOCK_RUN`].
    const TRY_LOCK_RUN: &'static str;
    /// The sweep's selection of expired parks: `$1` now, `$2` cursor, `$3` limit; PostgreSQL
    /// passes over locked rows (`FOR UPDATE SKIP LOCKED`) so nodes divide them.
    const EXPIRED_PARKS: &'static str;
    /// The job dequeue: `$1` node, `$2` lease end, `$3` now, `$4` limit.
    const DEQUEUE_JOBS: &'static str;
    /// Serializes the writers of one memory (scope, owner), `$1` naming it.
    const MEMORY_LOCK: &'static str;
    /// The conversation row by id (`$1`), locked for the unit of work (PostgreSQL `FOR
    /// UPDATE`; on SQLite a plain read, as `BEGIN IMMEDIATE` holds the write lock).
    const LOCK_CONVERSATION: &'static str;
    /// A sealed body and its request in one statement (PostgreSQL,
    /// [`crate::sql::INSERT_SEALED_REQUEST_WITH_BODY_PG`]); `None`: one statement each.
    const INSERT_SEALED_REQUEST_WITH_BODY: Option<&'static str>;
    /// The ranked history search (`ops/history.rs`), over the dialect's full-text index.
    const SEARCH_HISTORY: &'static str;
    /// The runs list's per-run summary (`ops/summaries.rs`): `$1` the ids, a JSON array.
    const RUN_SUMMARIES: &'static str;
    /// The conversations list's per-conversation summary, likewise.
    const CONVERSATION_SUMMARIES: &'static str;
    /// The search's `$1`: the terms in the dialect's full-text query syntax.
    fn search_query(terms: &[history::SearchTerm]) -> String;
}

impl Dialect for rusqlite::Connection {
    const APPEND_EVENT: &'static str = crate::sql::APPEND_EVENT_SQLITE;
    const APPEND_EVENT_AT: Option<&'static str> = Some(crate::sql::APPEND_EVENT_AT_SQLITE);
    const TASK_FROZEN_HEAD: &'static str = crate::sql::TASK_FROZEN_HEAD_SQLITE;
    const INSERT_TASK_WITH_BODY: Option<&'static str> = None;
    const LOCK_RUN: &'static str = crate::sql::RUN_BY_ID;
    const TRY_LOCK_RUN: &'static str = crate::sql::RUN_BY_ID;
    const EXPIRED_PARKS: &'static str = crate::sql::EXPIRED_PARKS;
    const DEQUEUE_JOBS: &'static str = crate::sql::DEQUEUE_JOBS_SQLITE;
    const MEMORY_LOCK: &'static str = memory::MEMORY_LOCK_SQLITE;
    const LOCK_CONVERSATION: &'static str = conversations::LOCK_CONVERSATION_SQLITE;
    const INSERT_SEALED_REQUEST_WITH_BODY: Option<&'static str> = None;
    const SEARCH_HISTORY: &'static str = history::SEARCH_SQLITE;
    const RUN_SUMMARIES: &'static str = summaries::RUN_SUMMARIES_SQLITE;
    const CONVERSATION_SUMMARIES: &'static str = summaries::CONVERSATION_SUMMARIES_SQLITE;
    fn search_query(terms: &[history::SearchTerm]) -> String {
        history::SearchTerm::fts5_query(terms)
    }
}

impl Dialect for sqlx::PgConnection {
    const APPEND_EVENT: &'static str = crate::sql::APPEND_EVENT_PG;
    const APPEND_EVENT_AT: Option<&'static str> = None;
    const TASK_FROZEN_HEAD: &'static str = crate::sql::TASK_FROZEN_HEAD_PG;
    const INSERT_TASK_WITH_BODY: Option<&'static str> = Some(crate::sql::INSERT_TASK_WITH_BODY_PG);
    const LOCK_RUN: &'static str = crate::sql::LOCK_RUN_PG;
    const TRY_LOCK_RUN: &'static str = crate::sql::TRY_LOCK_RUN_PG;
    const EXPIRED_PARKS: &'static str = crate::sql::EXPIRED_PARKS_PG;
    const DEQUEUE_JOBS: &'static str = crate::sql::DEQUEUE_JOBS_PG;
    const MEMORY_LOCK: &'static str = memory::MEMORY_LOCK_PG;
    const LOCK_CONVERSATION: &'static str = conversations::LOCK_CONVERSATION_PG;
    const INSERT_SEALED_REQUEST_WITH_BODY: Option<&'static str> = Some(crate::sql::INSERT_SEALED_REQUEST_WITH_BODY_PG);
    const SEARCH_HISTORY: &'static str = history::SEARCH_PG;
    const RUN_SUMMARIES: &'static str = summaries::RUN_SUMMARIES_PG;
    const CONVERSATION_SUMMARIES: &'static str = summaries::CONVERSATION_SUMMARIES_PG;
    fn search_query(terms: &[history::SearchTerm]) -> String {
        history::SearchTerm::tsquery(terms)
    }
}

/// Runs the operation `$op` over a connection `$c` of the engine `$store` holds: `read` (a
/// pooled reader), `write` (a connection for one write statement, behind SQLite's writer
/// gate) or `tx` (a write transaction, committed when `$op` succeeds). The operation is one
/// generic function ([`db::Db`]); this names it once and the macro expands it per engine. The
/// PostgreSQL arm is boxed: a future that awaits sqlx's pool and statements is about 8.7 KB, and
/// inline it would size every store call's future on SQLite too
/// (docs/decisions/119-futures-and-allocation.md).
macro_rules! on_conn {
    ($store:expr, tx, |$c:ident| $op:expr) => {
        match $store {
            $crate::Store::Sqlite(s) => {
                let mut tx = s.write_tx().await?;
                let $c = &mut *tx;
                let out = $op.await?;
                tx.commit().await.map_err($crate::write_error)?;
                Ok(out)
            }
            $crate::Store::Postgres(s) => {
                Box::pin(async move {
                    let mut tx = s.write_tx().await?;
                    let $c = &mut *tx;
                    let out = $op.await?;
                    tx.commit().await.map_err($crate::write_error)?;
                    Ok(out)
                })
                .await
            }
        }
    };
    ($store:expr, $how:ident, |$c:ident| $op:expr) => {
        match $store {
            $crate::Store::Sqlite(s) => {
                let mut held = $crate::ops::on_conn!(@conn s, $how);
                let $c = &mut *held;
                $op.await
            }
            $crate::Store::Postgres(s) => {
                Box::pin(async move {
                    let mut held = $crate::ops::on_conn!(@conn s, $how);
                    let $c = &mut *held;
                    $op.await
                })
                .await
            }
        }
    };
    (@conn $s:ident, read) => {
        $s.read_conn().await?
    };
    (@conn $s:ident, write) => {
        $s.write_conn().await?
    };
}
pub(crate) use on_conn;
