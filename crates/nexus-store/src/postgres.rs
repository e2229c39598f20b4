//! The PostgreSQL engine: several kernel nodes on one database, through an sqlx pool.
//!
//! Any node serves any request. Read-modify-write sequences lock their rows `FOR UPDATE`: the
//! run-table unit of work ([`crate::Tx`]) locks the run row first (`Tx::lock_run`), and the job
//! dequeue takes its candidates `FOR UPDATE SKIP LOCKED` so nodes divide the work. The
//! foundation statements are single-statement updates or insert-then-select.
//!
//! Schema selection: [`PgStore::open_in_schema`], or `?schema=NAME` in the URL (see
//! [`crate::StoreOptions`]), sets `search_path` on every pooled connection.

use std::str::FromStr;
use std::sync::Arc;

use sqlx::migrate::{Migrate, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use sqlx::{AssertSqlSafe, PgConnection, Row};
use uuid::Uuid;

use crate::row::Columns;
use crate::sqlite::pending_of;
use crate::{Result, StoreError, StoreOptions, redact_url};

mod conns;
#[cfg(test)]
mod plans;
mod prepared;
pub(crate) mod unit;
pub(crate) use conns::Transaction;
pub(crate) use conns::note_fault;
use conns::{Conn, Conns};
pub(crate) use conns::{inline_params, push_literal};
pub(crate) use prepared::{Literal, Stmt};

static MIGRATOR: Migrator = sqlx::migrate!("migrations/postgres");

/// Prepared statements kept per connection (sqlx's default is 100).
const STATEMENT_CACHE: usize = 400;

/// sqlx's side pool's size (the notice listener holds one of them for the store's lifetime).
const SIDE_POOL: u32 = 4;

/// The PostgreSQL engine. Cheap to clone: the pool is shared.
#[derive(Clone)]
pub struct PgStore {
    /// The connections every operation runs on (`conns.rs`: no round trip per checkout).
    pool: Conns,
    /// sqlx's own pool, opened lazily with at most [`SIDE_POOL`] connections, for what needs
    /// one: the migrator, the notice listener, the test harness's introspection.
    side: PgPool,
    /// The schema every connection works in (`search_path`), when one was selected.
    schema: Option<Arc<str>>,
    /// Transport principals served again while their version holds (`crate::principals`).
    principals: Arc<crate::principals::Principals>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

/// Whether `name` is a plain SQL identifier (so it can be quoted without escaping).
pub(crate) fn valid_schema_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 63
}

/// Splits the non-standard `schema=NAME` query parameter off a PostgreSQL URL: returns the URL
/// sqlx should see and the schema, if any.
pub(crate) fn split_schema(url: &str) -> Result<(String, Option<String>)> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_string(), None));
    };
    let mut schema = None;
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("schema", value)) => {
                if !valid_schema_name(value) {
                    return Err(StoreError::Config(format!(
                        "invalid schema name {value:?} in database url (expected [A-Za-z_][A-Za-z0-9_]*)"
                    )));
                }
                if schema.replace(value.to_string()).is_some() {
                    return Err(StoreError::Config("database url names `schema` twice".into()));
                }
            }
            _ => kept.push(pair),
        }
    }
    let url = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((url, schema))
}

impl PgStore {
    /// Opens a pool on `options.url` (honouring `?schema=NAME`).
    pub async fn open(options: &StoreOptions) -> Result<Self> {
        let (url, schema) = split_schema(&options.url)?;
        Self::connect(&url, schema, options).await
    }

    /// Opens a pool whose connections all work in `schema` (`search_path`); [`crate::Migrations::migrate`]
    /// creates the schema when missing and applies the migrations inside it.
    pub async fn open_in_schema(options: &StoreOptions, schema: &str) -> Result<Self> {
        let (url, from_url) = split_schema(&options.url)?;
        if !valid_schema_name(schema) {
            return Err(StoreError::Config(format!(
                "invalid schema name {schema:?} (expected [A-Za-z_][A-Za-z0-9_]*)"
            )));
        }
        if let Some(other) = from_url.filter(|s| s != schema) {
            return Err(StoreError::Config(format!(
                "schema {schema:?} asked for, but the database url names schema {other:?}"
            )));
        }
        Self::connect(&url, Some(schema.to_string()), options).await
    }

    async fn connect(url: &str, schema: Option<String>, options: &StoreOptions) -> Result<Self> {
        let mut connect = PgConnectOptions::from_str(url)
            .map_err(|e| StoreError::Config(format!("bad postgres url {}: {e}", redact_url(url))))?;
        if let Some(schema) = &schema {
            connect = connect.options([("search_path", schema.as_str())]);
        }
        // sqlx caches 100 prepared statements per connection by default; the kernel's hot
        // paths use more distinct texts than that, and an evicted one is parsed again.
        let connect = connect.statement_cache_capacity(STATEMENT_CACHE);
        let side = PgPoolOptions::new()
            .max_connections(SIDE_POOL)
            .connect_lazy_with(connect.clone());
        let pool = Conns::new(connect, options.postgres_max_connections.max(1));
        // Open one connection now, so a bad URL or an unreachable server fails the open.
        drop(pool.acquire().await?);
        Ok(Self {
            pool,
            side,
            schema: schema.map(Arc::from),
            principals: Arc::default(),
        })
    }

    /// The schema this store works in, when one was selected.
    pub fn schema(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    /// Closes the pool.
    pub async fn close(&self) {
        self.pool.close().await;
        self.side.close().await;
    }

    /// A write transaction (`READ COMMITTED`).
    pub(crate) async fn write_tx(&self) -> Result<Transaction> {
        Ok(Transaction::begin(self.pool.acquire().await?).await?)
    }

    /// Opens a unit of work (`READ COMMITTED`); its `BEGIN` goes out with its first statement.
    pub async fn begin(&self) -> Result<crate::PgTx> {
        Ok(crate::PgTx::new(Transaction::lazy(self.pool.acquire().await?)))
    }

    /// A pooled connection for a single write statement (SQLite gates its writers here;
    /// PostgreSQL needs no gate).
    pub(crate) async fn write_conn(&self) -> Result<Conn> {
        Ok(self.pool.acquire().await?)
    }

    /// The principal cache (`crate::principals`).
    pub(crate) fn principals(&self) -> &crate::principals::Principals {
        &self.principals
    }

    /// A pooled connection for reads.
    pub(crate) async fn read_conn(&self) -> Result<Conn> {
        Ok(self.pool.acquire().await?)
    }

    /// A pooled connection (the notices' sender and the database clock, `crate::nodes`).
    pub(crate) async fn conn(&self) -> Result<Conn> {
        Ok(self.pool.acquire().await?)
    }

    /// sqlx's pool (the notices' listener, `crate::nodes`; the migrator; tests).
    pub(crate) fn pool(&self) -> &PgPool {
        &self.side
    }
}

impl Columns for PgRow {
    fn public_id(&self, column: &str) -> Result<Uuid> {
        Ok(self.try_get(column)?)
    }
    fn opt_public_id(&self, column: &str) -> Result<Option<Uuid>> {
        Ok(self.try_get(column)?)
    }
    fn int(&self, column: &str) -> Result<i64> {
        Ok(self.try_get(column)?)
    }
    fn opt_int(&self, column: &str) -> Result<Option<i64>> {
        Ok(self.try_get(column)?)
    }
    fn float(&self, column: &str) -> Result<f64> {
        Ok(self.try_get(column)?)
    }
    fn text(&self, column: &str) -> Result<String> {
        Ok(self.try_get(column)?)
    }
    fn opt_text(&self, column: &str) -> Result<Option<String>> {
        Ok(self.try_get(column)?)
    }
    fn boolean(&self, column: &str) -> Result<bool> {
        Ok(self.try_get(column)?)
    }
    fn bytes(&self, column: &str) -> Result<Vec<u8>> {
        Ok(self.try_get(column)?)
    }
}

/// The store's operations over a PostgreSQL connection (see `crate::ops`).
pub(crate) mod ops {
    use crate::model::*;
    #[allow(unused_imports)]
    pub(crate) use crate::ops::all::*;
    pub(crate) use crate::ops::tasks::update_task_every_column as update_task;
    use crate::{Result, StoreError, check_text, row, sql};
    use sqlx::PgConnection as Conn;

    /// An executor door's rows: the run `public_id` as the account `account_id` finds it, read
    /// under the run lock (`SELECT … FOR UPDATE` first, storage-and-scale.md §3), then its task
    /// keyed `key`. A run of another account is locked until the door's unit rolls back.
    pub(crate) async fn open_door(
        c: &mut Conn,
        public_id: uuid::Uuid,
        account_id: i64,
        key: &str,
    ) -> Result<Option<(RunInAccount, Option<TaskRow>)>> {
        let Some(found) = run_in_account_by(c, sql::DOOR_RUN_PG, public_id, account_id).await? else {
            return Ok(None);
        };
        let task = task_by_key(c, found.run.id, key).await?;
        Ok(Some((found, task)))
    }

    /// A lazy unit's first statement when it locks a run ([`crate::Tx::lock_run`]): `BEGIN`
    /// and the lock in one round trip.
    pub(crate) async fn begin_locking_run(tx: &mut super::Transaction, id: i64) -> Result<RunRow> {
        let statement = super::Stmt::new(sql::LOCK_RUN_PG, vec![id.to_string()]);
        match tx.begin_with(&statement).await?.first() {
            Some(r) => row::run(r),
            None => Err(StoreError::NotFound(format!("run {id}"))),
        }
    }

    /// A lazy unit's first statement when it locks a run and reads a row under the lock
    /// ([`crate::Tx::lock`]): `BEGIN`, the lock and `then` (one parameter, `$1`:
    /// `then_id`) in one simple query, one round trip; `then` reads the database as it stands
    /// after the lock (`READ COMMITTED`: each statement reads it as it stands when it starts).
    /// `also` goes out last in the same query; its first row, if any.
    ///
    /// With `taking_job`, the query opens with the delete of that job in a transaction of its
    /// own (`BEGIN`, the delete, `COMMIT`, then the unit's `BEGIN`): a `kernel_tool` job's claim
    /// and its evaluation's first statement in one round trip. The last answer says whether the
    /// delete found the job (always `true` without one); when it did not, the unit holds the
    /// run lock all the same.
    pub(crate) async fn begin_locking_run_with<T: crate::frozen::HoldsTask>(
        tx: &mut super::Transaction,
        taking_job: Option<i64>,
        id: i64,
        then: &'static str,
        then_id: i64,
        decode: impl Fn(&sqlx::postgres::PgRow) -> Result<crate::frozen::Pending<T>>,
        also: Option<super::Stmt>,
    ) -> Result<(RunRow, Option<T>, Option<sqlx::postgres::PgRow>, bool)> {
        let mut statements = Vec::new();
        if let Some(job_id) = taking_job {
            // `BEGIN` leads the query: the delete commits on its own before the unit's `BEGIN`.
            statements.push(super::Stmt::new(sql::TAKE_JOB, vec![job_id.to_string()]));
            statements.push(super::Stmt::Text("COMMIT".into()));
            statements.push(super::Stmt::Text("BEGIN".into()));
        }
        let at = statements.len() + 1;
        statements.push(super::Stmt::new(sql::LOCK_RUN_PG, vec![id.to_string()]));
        statements.push(super::Stmt::new(then, vec![then_id.to_string()]));
        statements.extend(also);
        // `also` may be a write (a seal's insert): a unique violation is `Conflict`.
        let mut sets = tx.begin_with_sets(&statements).await.map_err(crate::write_error)?;
        let taken = taking_job.is_none() || sets.get(1).is_some_and(|s| !s.is_empty());
        let Some(r) = sets.get(at).and_then(|s| s.first()) else {
            return Err(StoreError::NotFound(format!("run {id}")));
        };
        let run = row::run(r)?;
        let then = sets.get(at + 1).and_then(|s| s.first()).map(decode).transpose()?;
        let also = match sets.get_mut(at + 2) {
            Some(set) if !set.is_empty() => Some(set.swap_remove(0)),
            _ => None,
        };
        Ok((run, resolve_frozen_opt(&mut **tx, then).await?, also, taken))
    }

    /// A lazy unit's first statement when it is an executor door ([`crate::Tx::open_door`]):
    /// `BEGIN`, the run lock and the task by key in one simple query, one round trip. The task
    /// is read by its own statement, after any wait for the lock (`READ COMMITTED`: each
    /// statement reads the database as it stands when it starts). With `answerer`, the run's
    /// answering member too, last (a claim's eligibility read, [`crate::Tx::open_claim_door`]).
    pub(crate) async fn begin_opening_door(
        tx: &mut super::Transaction,
        public_id: uuid::Uuid,
        account_id: i64,
        key: &str,
        answerer: bool,
    ) -> Result<Option<(RunInAccount, Option<TaskRow>, Option<crate::MemberRow>)>> {
        use crate::row::Columns;
        let public_literal = format!("'{public_id}'");
        let mut statements = vec![super::Stmt::new(
            sql::DOOR_RUN_PG,
            vec![public_literal.clone(), account_id.to_string()],
        )];
        // A key the text guard refuses names no task (as `task_by_key`).
        let keyed = check_text(key).is_ok();
        if keyed {
            use super::Literal;
            statements.push(super::Stmt::new(
                sql::TASK_BY_RUN_PUBLIC_ID_AND_KEY_PG,
                vec![public_literal.clone(), key.literal()],
            ));
        }
        if answerer {
            statements.push(super::Stmt::new(sql::DOOR_ANSWERER_PG, vec![public_literal]));
        }
        let sets = tx.begin_with_sets(&statements).await?;
        let Some(r) = sets.get(1).and_then(|s| s.first()) else {
            return Ok(None);
        };
        let Some(workspace_public_id) = r.opt_public_id("workspace_public_id")? else {
            return Ok(None);
        };
        let found = RunInAccount {
            run: row::run(r)?,
            workspace_public_id,
            creator_standing: r.opt_text("creator_standing")?.map(|s| row::standing(&s)).transpose()?,
        };
        let member = match sets.get(statements.len()).and_then(|s| s.first()) {
            Some(m) if answerer => Some(row::member(m)?),
            _ => None,
        };
        let door = match sets.get(2).and_then(|s| s.first()) {
            Some(t) if keyed => row::task(t)?.map(|t| (found, Some(t))),
            _ => crate::frozen::Pending::ready((found, None)),
        };
        let (found, task) = resolve_frozen(&mut **tx, door).await?;
        Ok(Some((found, task, member)))
    }

    /// PostgreSQL's conditional update is one statement either way: `before` gives only the
    /// expected generation.
    pub(crate) async fn update_task_over(
        c: &mut Conn,
        before: &TaskRow,
        task: &TaskRow,
        expect_statuses: &[TaskStatus],
        expect_claim_token: Option<&str>,
    ) -> Result<bool> {
        update_task(c, task, before.generation, expect_statuses, expect_claim_token).await
    }
}

async fn applied_versions(conn: &mut PgConnection) -> Result<Vec<i64>> {
    let exists: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
        .fetch_one(&mut *conn)
        .await?;
    if !exists {
        return Ok(Vec::new());
    }
    let applied = conn.list_applied_migrations("_sqlx_migrations").await?;
    Ok(applied.into_iter().map(|m| m.version).collect())
}

impl crate::Migrations for PgStore {
    async fn migrate(&self) -> Result<()> {
        if let Some(schema) = &self.schema {
            // The name was checked to be a plain identifier when the store was opened.
            sqlx::query(AssertSqlSafe(format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\"")))
                .execute(&self.side)
                .await?;
        }
        MIGRATOR.run(&self.side).await?;
        Ok(())
    }

    async fn pending_migrations(&self) -> Result<usize> {
        let mut conn = self.pool.acquire().await?;
        let applied = applied_versions(&mut conn).await?;
        Ok(pending_of(&MIGRATOR, &applied))
    }
}
