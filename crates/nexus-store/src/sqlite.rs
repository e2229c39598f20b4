//! The SQLite engine: the embedded default, for one kernel node.
//!
//! Single-node guard: an exclusive `flock` on `<database>.lock`, held for the store's lifetime.
//! The OS drops it when the process dies, so a crash never blocks a restart.
//! Every write transaction is `BEGIN IMMEDIATE` (it takes the database write lock up front).
//!
//! Writer gate: SQLite admits one writer at a time, and a writer that finds the lock taken
//! waits in SQLite's busy handler, which sleeps in growing steps (1, 2, 5, 10 … 100 ms) and
//! gives up at the busy timeout. Under concurrent commits that turns into long stalls and
//! `SQLITE_BUSY` failures. So within this process every write — a unit of work or a single
//! statement — first takes one async mutex (the gate), queuing writers in FIFO order without
//! touching the database lock; the busy handler then only ever waits for another process (an
//! admin command beside a server). Waiting for the gate is bounded by the same busy timeout,
//! so a stuck writer answers `Busy` rather than hanging its caller.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use fs2::FileExt;
use sqlx::migrate::{Migrate, Migrator};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{Row, SqliteConnection};
use uuid::Uuid;

use crate::model::*;
use crate::row::{self, Columns};
use crate::{Engine, Result, StoreError, StoreOptions, check_text, sql, write_error};

static MIGRATOR: Migrator = sqlx::migrate!("migrations/sqlite");

/// How many pooled connections a file database gets (WAL readers run alongside the writer).
const FILE_POOL_SIZE: u32 = 8;

/// The SQLite engine. Cheap to clone: the pool and the lock file are shared.
#[derive(Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// The writer gate (see the module comment): held by every write for its whole duration.
    writer: Arc<tokio::sync::Mutex<()>>,
    /// How long a writer waits for the gate before answering [`StoreError::Busy`].
    busy: Duration,
    /// The database file; `None` for `sqlite::memory:`.
    path: Option<PathBuf>,
    /// The open lock file whose `flock` is the single-node guard (released when the last clone
    /// drops).
    _lock: Option<Arc<File>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

enum Target {
    Memory,
    File(PathBuf),
}

fn parse_url(url: &str) -> Result<Target> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .ok_or_else(|| StoreError::Config(format!("not a sqlite url: {url}")))?;
    // Query parameters (`?mode=…`) are not supported; the store sets its own options.
    let path = rest.split('?').next().unwrap_or_default();
    if path == ":memory:" {
        return Ok(Target::Memory);
    }
    if path.is_empty() {
        return Err(StoreError::Config(format!("sqlite url has no path: {url}")));
    }
    Ok(Target::File(PathBuf::from(path)))
}

/// `<database>.lock`, beside the database.
pub(crate) fn lock_path(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

fn take_lock(database: &Path) -> Result<File> {
    let path = lock_path(database);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| StoreError::Config(format!("cannot open lock file {}: {e}", path.display())))?;
    match file.try_lock_exclusive() {
        Ok(()) => Ok(file),
        Err(e) if e.kind() == fs2::lock_contended_error().kind() => Err(StoreError::Config(format!(
            "the SQLite database {} is already in use by another nexus process (lock file {} is \
             held); SQLite serves one node only, use PostgreSQL for several",
            database.display(),
            path.display()
        ))),
        Err(e) => Err(StoreError::Config(format!("cannot lock {}: {e}", path.display()))),
    }
}

impl SqliteStore {
    /// Opens (creating when missing) the database named by `options.url`.
    pub async fn open(options: &StoreOptions) -> Result<Self> {
        let busy = Duration::from_millis(options.sqlite_busy_timeout_ms);
        match parse_url(&options.url)? {
            Target::Memory => {
                let connect = SqliteConnectOptions::from_str("sqlite::memory:")?
                    .foreign_keys(true)
                    .busy_timeout(busy);
                // One connection that never closes: the database lives as long as it does.
                let pool = SqlitePoolOptions::new()
                    .max_connections(1)
                    .min_connections(1)
                    .idle_timeout(None)
                    .max_lifetime(None)
                    .connect_with(connect)
                    .await?;
                Ok(Self {
                    pool,
                    writer: Arc::default(),
                    busy,
                    path: None,
                    _lock: None,
                })
            }
            Target::File(path) => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| StoreError::Config(format!("cannot create {}: {e}", parent.display())))?;
                }
                // The guard comes first: nothing touches the file while another node holds it.
                // Short-lived admin commands skip it so they can run beside a server.
                let lock = if options.single_node_lock {
                    Some(take_lock(&path)?)
                } else {
                    None
                };
                let connect = SqliteConnectOptions::new()
                    .filename(&path)
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Normal)
                    .foreign_keys(true)
                    .busy_timeout(busy);
                let pool = SqlitePoolOptions::new()
                    .max_connections(FILE_POOL_SIZE)
                    .connect_with(connect)
                    .await?;
                Ok(Self {
                    pool,
                    writer: Arc::default(),
                    busy,
                    path: Some(path),
                    _lock: lock.map(Arc::new),
                })
            }
        }
    }

    /// The database file (`None` in memory).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Closes the pool. The single-node lock is released when the last clone drops.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Takes the writer gate, waiting at most the busy timeout.
    async fn gate(&self) -> Result<tokio::sync::OwnedMutexGuard<()>> {
        tokio::time::timeout(self.busy, self.writer.clone().lock_owned())
            .await
            .map_err(|_| StoreError::Busy)
    }

    /// A pooled connection for a single write statement, holding the writer gate.
    pub(crate) async fn write_conn(&self) -> Result<WriteConn> {
        let gate = self.gate().await?;
        let conn = self.pool.acquire().await?;
        Ok(WriteConn { conn, _gate: gate })
    }

    /// A write transaction: the writer gate, then `BEGIN IMMEDIATE`.
    pub(crate) async fn write_tx(&self) -> Result<GatedTx> {
        let gate = self.gate().await?;
        let tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        Ok(GatedTx { tx, _gate: gate })
    }

    /// Opens a unit of work (the writer gate, then `BEGIN IMMEDIATE`).
    pub async fn begin(&self) -> Result<crate::SqliteTx> {
        Ok(crate::SqliteTx::new(self.write_tx().await?))
    }

    #[cfg(feature = "testing")]
    pub(crate) fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    async fn one_member(&self, q: SqliteQuery<'_>) -> Result<Option<MemberRow>> {
        q.fetch_optional(&self.pool).await?.map(|r| row::member(&r)).transpose()
    }

    async fn one_executor(&self, q: SqliteQuery<'_>) -> Result<Option<ExecutorRow>> {
        q.fetch_optional(&self.pool)
            .await?
            .map(|r| row::executor(&r))
            .transpose()
    }
}

type SqliteQuery<'q> = sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>;

/// A public id as SQLite stores it: lowercase hyphenated TEXT.
fn id_text(id: Uuid) -> String {
    id.hyphenated().to_string()
}

impl Columns for SqliteRow {
    fn public_id(&self, column: &str) -> Result<Uuid> {
        let text: String = self.try_get(column)?;
        row::parse_public_id(column, &text)
    }
    fn int(&self, column: &str) -> Result<i64> {
        Ok(self.try_get(column)?)
    }
    fn opt_int(&self, column: &str) -> Result<Option<i64>> {
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

/// How SQLite binds a public id (see [`id_text`]).
fn uid(id: Uuid) -> String {
    id_text(id)
}

/// The run-table operations over a SQLite connection (see `crate::ops`).
pub(crate) mod ops {
    use super::uid;
    use sqlx::SqliteConnection as Conn;
    crate::ops::engine_ops!(lock_run = sql::RUN_BY_ID, dequeue = sql::DEQUEUE_JOBS_SQLITE);
    crate::uploads::upload_ops!();
    crate::memory::memory_ops!(scope_lock = crate::memory::MEMORY_LOCK_SQLITE);
}

async fn applied_versions(conn: &mut SqliteConnection) -> Result<Vec<i64>> {
    let exists = sqlx::query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'")
        .fetch_optional(&mut *conn)
        .await?
        .is_some();
    if !exists {
        return Ok(Vec::new());
    }
    let applied = conn.list_applied_migrations("_sqlx_migrations").await?;
    Ok(applied.into_iter().map(|m| m.version).collect())
}

pub(crate) fn pending_of(migrator: &Migrator, applied: &[i64]) -> usize {
    migrator
        .iter()
        .filter(|m| !m.migration_type.is_down_migration() && !applied.contains(&m.version))
        .count()
}

impl Engine for SqliteStore {
    async fn migrate(&self) -> Result<()> {
        MIGRATOR.run(&self.pool).await?;
        Ok(())
    }

    async fn pending_migrations(&self) -> Result<usize> {
        let mut conn = self.pool.acquire().await?;
        let applied = applied_versions(&mut conn).await?;
        Ok(pending_of(&MIGRATOR, &applied))
    }

    async fn ensure_account(&self, public_id: Uuid, handle: &str, now: i64) -> Result<AccountRow> {
        let mut conn = self.write_conn().await?;
        check_text(handle)?;
        sqlx::query(sql::INSERT_ACCOUNT)
            .bind(id_text(public_id))
            .bind(handle)
            .bind(now)
            .execute(&mut *conn)
            .await
            .map_err(write_error)?;
        let r = sqlx::query(sql::ACCOUNT_BY_HANDLE)
            .bind(handle)
            .fetch_one(&mut *conn)
            .await?;
        row::account(&r)
    }

    async fn account_by_id(&self, id: i64) -> Result<Option<AccountRow>> {
        sqlx::query(sql::ACCOUNT_BY_ID)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .map(|r| row::account(&r))
            .transpose()
    }

    async fn ensure_workspace(&self, public_id: Uuid, account_id: i64, handle: &str, now: i64) -> Result<WorkspaceRow> {
        let mut conn = self.write_conn().await?;
        check_text(handle)?;
        sqlx::query(sql::INSERT_WORKSPACE)
            .bind(id_text(public_id))
            .bind(account_id)
            .bind(handle)
            .bind(now)
            .execute(&mut *conn)
            .await
            .map_err(write_error)?;
        let r = sqlx::query(sql::WORKSPACE_BY_HANDLE)
            .bind(account_id)
            .bind(handle)
            .fetch_one(&mut *conn)
            .await?;
        row::workspace(&r)
    }

    async fn workspace_by_public_id(&self, public_id: Uuid) -> Result<Option<WorkspaceRow>> {
        sqlx::query(sql::WORKSPACE_BY_PUBLIC_ID)
            .bind(id_text(public_id))
            .fetch_optional(&self.pool)
            .await?
            .map(|r| row::workspace(&r))
            .transpose()
    }

    async fn workspace_by_id(&self, id: i64) -> Result<Option<WorkspaceRow>> {
        sqlx::query(sql::WORKSPACE_BY_ID)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .map(|r| row::workspace(&r))
            .transpose()
    }

    async fn set_standing(&self, workspace_id: i64, member_id: i64, standing: Standing) -> Result<()> {
        let mut conn = self.write_conn().await?;
        sqlx::query(sql::UPSERT_STANDING)
            .bind(workspace_id)
            .bind(member_id)
            .bind(standing.as_str())
            .execute(&mut *conn)
            .await
            .map_err(write_error)?;
        Ok(())
    }

    async fn standing(&self, workspace_id: i64, member_id: i64) -> Result<Option<Standing>> {
        let value: Option<String> = sqlx::query_scalar(sql::STANDING)
            .bind(workspace_id)
            .bind(member_id)
            .fetch_optional(&self.pool)
            .await?;
        value.map(|v| row::standing(&v)).transpose()
    }

    async fn create_member(&self, new: NewMember) -> Result<(MemberRow, Option<ExecutorRow>)> {
        row::check_member_text(&new)?;
        let agent = row::agent_executor_of(&new)?;
        let mut tx = self.write_tx().await?;
        let r = sqlx::query(sql::INSERT_MEMBER)
            .bind(id_text(new.public_id))
            .bind(new.account_id)
            .bind(new.kind.as_str())
            .bind(&new.handle)
            .bind(&new.display_name)
            .bind(&new.role)
            .bind(new.steward_id)
            .bind(new.now)
            .fetch_one(&mut *tx)
            .await
            .map_err(write_error)?;
        let member = row::member(&r)?;
        let executor = match agent {
            Some((public_id, display_name, manager_id)) => {
                let r = sqlx::query(sql::INSERT_EXECUTOR)
                    .bind(id_text(public_id))
                    .bind(new.account_id)
                    .bind(ExecutorKind::AgentApplication.as_str())
                    .bind(display_name)
                    .bind(AssignmentScope::UserPrivate.as_str())
                    .bind(manager_id)
                    .bind(member.id)
                    .bind(new.now)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(write_error)?;
                Some(row::executor(&r)?)
            }
            None => None,
        };
        tx.commit().await.map_err(write_error)?;
        Ok((member, executor))
    }

    async fn member_by_id(&self, id: i64) -> Result<Option<MemberRow>> {
        self.one_member(sqlx::query(sql::MEMBER_BY_ID).bind(id)).await
    }

    async fn member_by_public_id(&self, public_id: Uuid) -> Result<Option<MemberRow>> {
        self.one_member(sqlx::query(sql::MEMBER_BY_PUBLIC_ID).bind(id_text(public_id)))
            .await
    }

    async fn member_by_handle(&self, account_id: i64, handle: &str) -> Result<Option<MemberRow>> {
        if check_text(handle).is_err() {
            return Ok(None); // nothing stored holds U+0000
        }
        self.one_member(sqlx::query(sql::MEMBER_BY_HANDLE).bind(account_id).bind(handle))
            .await
    }

    async fn set_member_configuration(&self, member_id: i64, configuration: Option<&str>, now: i64) -> Result<()> {
        let mut conn = self.write_conn().await?;
        if let Some(c) = configuration {
            check_text(c)?;
        }
        let done = sqlx::query(sql::SET_MEMBER_CONFIGURATION)
            .bind(configuration)
            .bind(now)
            .bind(member_id)
            .execute(&mut *conn)
            .await
            .map_err(write_error)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("member {member_id}")));
        }
        Ok(())
    }

    async fn create_runner(&self, new: NewRunner) -> Result<ExecutorRow> {
        let mut conn = self.write_conn().await?;
        check_text(&new.display_name)?;
        let r = sqlx::query(sql::INSERT_EXECUTOR)
            .bind(id_text(new.public_id))
            .bind(new.account_id)
            .bind(ExecutorKind::Runner.as_str())
            .bind(&new.display_name)
            .bind(new.assignment_scope.as_str())
            .bind(new.manager_id)
            .bind(None::<i64>)
            .bind(new.now)
            .fetch_one(&mut *conn)
            .await
            .map_err(write_error)?;
        row::executor(&r)
    }

    async fn executor_by_id(&self, id: i64) -> Result<Option<ExecutorRow>> {
        self.one_executor(sqlx::query(sql::EXECUTOR_BY_ID).bind(id)).await
    }

    async fn executor_by_public_id(&self, public_id: Uuid) -> Result<Option<ExecutorRow>> {
        self.one_executor(sqlx::query(sql::EXECUTOR_BY_PUBLIC_ID).bind(id_text(public_id)))
            .await
    }

    async fn active_runner_by_name(&self, account_id: i64, manager_id: i64, name: &str) -> Result<Option<ExecutorRow>> {
        if check_text(name).is_err() {
            return Ok(None);
        }
        self.one_executor(
            sqlx::query(sql::ACTIVE_RUNNER_BY_NAME)
                .bind(account_id)
                .bind(manager_id)
                .bind(name),
        )
        .await
    }

    async fn agent_application_of(&self, agent_member_id: i64) -> Result<Option<ExecutorRow>> {
        self.one_executor(sqlx::query(sql::AGENT_APPLICATION_OF).bind(agent_member_id))
            .await
    }

    async fn list_executors(&self, account_id: i64, kind: Option<ExecutorKind>) -> Result<Vec<ExecutorRow>> {
        let rows = match kind {
            Some(kind) => {
                sqlx::query(sql::EXECUTORS_OF_ACCOUNT_KIND)
                    .bind(account_id)
                    .bind(kind.as_str())
                    .fetch_all(&self.pool)
                    .await?
            }
            None => {
                sqlx::query(sql::EXECUTORS_OF_ACCOUNT)
                    .bind(account_id)
                    .fetch_all(&self.pool)
                    .await?
            }
        };
        rows.iter().map(row::executor).collect()
    }

    async fn advance_executor_epoch(&self, executor_id: i64) -> Result<i64> {
        let mut conn = self.write_conn().await?;
        let epoch: Option<i64> = sqlx::query_scalar(sql::ADVANCE_EPOCH)
            .bind(executor_id)
            .fetch_optional(&mut *conn)
            .await
            .map_err(write_error)?;
        epoch.ok_or_else(|| StoreError::NotFound(format!("executor {executor_id}")))
    }

    async fn revoke_executor(&self, executor_id: i64, _now: i64) -> Result<()> {
        let mut conn = self.write_conn().await?;
        let done = sqlx::query(sql::REVOKE_EXECUTOR)
            .bind(executor_id)
            .execute(&mut *conn)
            .await
            .map_err(write_error)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("executor {executor_id}")));
        }
        Ok(())
    }

    async fn put_announcement(&self, executor_id: i64, announcement: &Announcement, now: i64) -> Result<()> {
        let mut conn = self.write_conn().await?;
        row::check_announcement_text(announcement)?;
        let done = sqlx::query(sql::PUT_ANNOUNCEMENT)
            .bind(&announcement.served_tools)
            .bind(&announcement.environment)
            .bind(&announcement.served_documents)
            .bind(now)
            .bind(executor_id)
            .execute(&mut *conn)
            .await
            .map_err(write_error)?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("executor {executor_id}")));
        }
        Ok(())
    }

    async fn insert_credential(&self, new: NewCredential) -> Result<CredentialRow> {
        let mut conn = self.write_conn().await?;
        check_text(&new.secret_sha256)?;
        let r = sqlx::query(sql::INSERT_CREDENTIAL)
            .bind(id_text(new.public_id))
            .bind(new.plane.as_str())
            .bind(new.member_id)
            .bind(new.executor_id)
            .bind(new.epoch)
            .bind(&new.secret_sha256)
            .bind(new.expires_at)
            .bind(new.now)
            .fetch_one(&mut *conn)
            .await
            .map_err(write_error)?;
        row::credential(&r)
    }

    async fn credential_by_public_id(&self, public_id: Uuid) -> Result<Option<CredentialRow>> {
        sqlx::query(sql::CREDENTIAL_BY_PUBLIC_ID)
            .bind(id_text(public_id))
            .fetch_optional(&self.pool)
            .await?
            .map(|r| row::credential(&r))
            .transpose()
    }

    async fn revoke_credential(&self, public_id: Uuid, now: i64) -> Result<bool> {
        let mut conn = self.write_conn().await?;
        let done = sqlx::query(sql::REVOKE_CREDENTIAL)
            .bind(now)
            .bind(id_text(public_id))
            .execute(&mut *conn)
            .await
            .map_err(write_error)?;
        Ok(done.rows_affected() > 0)
    }

    async fn has_transport_credential_at(&self, executor_id: i64, epoch: i64, now: i64) -> Result<bool> {
        let found = sqlx::query(sql::HAS_TRANSPORT_CREDENTIAL_AT)
            .bind(executor_id)
            .bind(epoch)
            .bind(now)
            .fetch_optional(&self.pool)
            .await?;
        Ok(found.is_some())
    }

    crate::ops::engine_methods!();
    crate::uploads::upload_methods!();
    crate::memory::memory_methods!();
}

/// A pooled connection holding the writer gate (from [`SqliteStore::write_conn`]). The
/// connection goes back to the pool before the gate opens (fields drop in order).
pub(crate) struct WriteConn {
    conn: sqlx::pool::PoolConnection<sqlx::Sqlite>,
    _gate: tokio::sync::OwnedMutexGuard<()>,
}

impl std::ops::Deref for WriteConn {
    type Target = SqliteConnection;
    fn deref(&self) -> &SqliteConnection {
        &self.conn
    }
}

impl std::ops::DerefMut for WriteConn {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        &mut self.conn
    }
}

/// A write transaction holding the writer gate (from [`SqliteStore::write_tx`]). Dropped
/// without [`GatedTx::commit`], it rolls back; the gate opens after the transaction is gone.
pub(crate) struct GatedTx {
    tx: sqlx::Transaction<'static, sqlx::Sqlite>,
    _gate: tokio::sync::OwnedMutexGuard<()>,
}

impl GatedTx {
    pub(crate) async fn commit(self) -> std::result::Result<(), sqlx::Error> {
        self.tx.commit().await
    }

    pub(crate) async fn rollback(self) -> std::result::Result<(), sqlx::Error> {
        self.tx.rollback().await
    }
}

impl std::ops::Deref for GatedTx {
    type Target = SqliteConnection;
    fn deref(&self) -> &SqliteConnection {
        &self.tx
    }
}

impl std::ops::DerefMut for GatedTx {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        &mut self.tx
    }
}
