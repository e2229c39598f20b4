//! The SQLite engine: the embedded default, for one kernel node.
//!
//! Single-node guard: an exclusive `flock` on `<database>.lock`, held for the store's lifetime.
//! The OS drops it when the process dies, so a crash never blocks a restart.
//! Every write transaction is `BEGIN IMMEDIATE` (it takes the database write lock up front).
//!
//! Connections: one write connection and a few read-only reader connections over the WAL
//! file, driven by `rusqlite` through [`driver`], whose statements run inline on the calling
//! task (its module comment says why). `sqlite::memory:` has a single connection that does
//! both, so there a read waits for an open unit of work to end.
//!
//! Writer gate: SQLite admits one writer at a time, and a writer that finds the lock taken
//! waits in SQLite's busy handler, which sleeps in growing steps (1, 2, 5, 10 … 100 ms) and
//! gives up at the busy timeout. Under concurrent commits that turns into long stalls and
//! `SQLITE_BUSY` failures. So within this process every write — a unit of work or a single
//! statement — first takes the write connection's async mutex (the gate), queuing writers in
//! FIFO order without touching the database lock; the busy handler then only ever waits for
//! another process (an admin command beside a server). Waiting for the gate is bounded by the
//! same busy timeout, so a stuck writer answers `Busy` rather than hanging its caller. Units
//! of work that queue for the gate share one transaction ([`group`]: group commit).

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fs2::FileExt;
use rusqlite::{Connection, OpenFlags};
use sqlx::migrate::{MigrateError, Migrator};
use tokio::sync::{Mutex, OwnedMutexGuard};
use uuid::Uuid;

use crate::model::*;
use crate::row::{self, Columns};
use crate::{Engine, Result, StoreError, StoreOptions, check_text, sql, write_error};

pub(crate) mod driver;
mod group;

pub use group::GateUse;

pub(crate) use driver::{is_foreign_key_violation, is_unique_violation, message};
use driver::{query, query_scalar};

static MIGRATOR: Migrator = sqlx::migrate!("migrations/sqlite");

/// The migrations ledger, the same table (and rows) sqlx's migrator keeps, so a database
/// migrated by an earlier build reads as migrated.
const LEDGER: &str = "CREATE TABLE IF NOT EXISTS _sqlx_migrations (
    version BIGINT PRIMARY KEY,
    description TEXT NOT NULL,
    installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    success BOOLEAN NOT NULL,
    checksum BLOB NOT NULL,
    execution_time BIGINT NOT NULL
)";

/// The least number of read connections a file database gets (WAL readers run beside the
/// writer); more when the machine has more cores, since a read holds one only while it runs.
const MIN_READERS: usize = 4;

/// A connection behind an async mutex: held for a whole unit of work (the writer) or for one
/// read (a reader). Its guard is `Send`, so a handler's future stays `Send`.
type Shared = Arc<Mutex<Connection>>;

/// A connection held for one read or one write statement (or, as [`GatedTx`], a unit of work).
pub(crate) type HeldConn = OwnedMutexGuard<Connection>;

/// The SQLite engine. Cheap to clone: the connections and the lock file are shared.
#[derive(Clone)]
pub struct SqliteStore {
    /// Read connections (`acquire` hands one out).
    pool: Readers,
    /// The one write connection. Its mutex is the writer gate (see the module comment): held
    /// by every write for its whole duration.
    writer: Shared,
    /// Group commit over the write connection ([`group`]).
    group: Arc<group::Group>,
    /// How long a writer waits for the gate (and a read for a connection) before answering
    /// [`StoreError::Busy`].
    busy: Duration,
    /// The database file; `None` for `sqlite::memory:`.
    path: Option<PathBuf>,
    /// The open lock file whose `flock` is the single-node guard (released when the last clone
    /// drops).
    _lock: Option<Arc<File>>,
    /// Keeps the checkpointer thread running (file databases; it stops when this drops).
    _checkpointer: Option<Arc<std::sync::mpsc::Sender<()>>>,
    /// Transport principals served again while their version holds (`crate::principals`).
    principals: Arc<crate::principals::Principals>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// The read connections, the lowest-numbered free one first.
///
/// Every commit empties the page cache of every reader (a WAL reader cannot tell which pages
/// changed), so a reader is warm only for the reads it serves before the next commit. Handing
/// out the first free connection keeps the reads between two commits on as few connections as
/// possible, and the second and later of them find the small hot tables (credentials,
/// executors) already cached; round-robin sent each read to a connection that had missed the
/// last commit, cold. Measured in BENCHMARKS.md ("Inbox throughput").
#[derive(Clone)]
pub(crate) struct Readers {
    conns: Arc<[Shared]>,
    busy: Duration,
}

impl Readers {
    /// A read connection, for one statement or a few. `Busy` when none frees up within the
    /// busy timeout (in memory the only connection is the writer's, held by a unit of work).
    pub(crate) async fn acquire(&self) -> Result<HeldConn> {
        for conn in self.conns.iter() {
            if let Ok(held) = conn.clone().try_lock_owned() {
                return Ok(held);
            }
        }
        tokio::time::timeout(self.busy, self.conns[0].clone().lock_owned())
            .await
            .map_err(|_| StoreError::Busy)
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

/// The settings every connection gets: foreign keys enforced, the busy timeout, and a statement
/// cache large enough for the store's fixed texts.
fn configure(conn: &Connection, busy: Duration) -> Result<()> {
    conn.busy_timeout(busy)?;
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.set_prepared_statement_cache_capacity(driver::STATEMENT_CACHE);
    Ok(())
}

/// Opens the write connection of a file database: created when missing, WAL journal,
/// `synchronous = NORMAL` (a commit is durable against a process crash at once and against
/// power loss from the next checkpoint; SQLite's recommended pairing with WAL).
fn open_writer(path: &Path, busy: Duration) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    configure(&conn, busy)?;
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Config(format!(
            "the SQLite database {} cannot use a WAL journal (journal mode {mode})",
            path.display()
        )));
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // The checkpointer thread keeps the WAL short; the writer checkpoints itself (inside the
    // gate) only when that falls far behind.
    conn.pragma_update(None, "wal_autocheckpoint", WRITER_CHECKPOINT_PAGES)?;
    Ok(conn)
}

/// How often the checkpointer copies the WAL back into the database file.
///
/// Under steady writes the WAL never drains between two passes (new frames arrive while a pass
/// copies), so SQLite cannot restart it from the top until the writer's own checkpoint at
/// [`WRITER_CHECKPOINT_PAGES`] copies what is left, inside the writer gate, with both files'
/// `fsync`s: every queued writer waits for that. What is left is what arrived since the
/// checkpointer's last pass, so the pace of the passes sets the stall: the slowest claim→commit
/// of an inbox bench run was 26 ms (median of 13 runs; 20 – 37) at 200 ms and 13 ms (10 – 26)
/// at 50 ms, with the same throughput and p99 (BENCHMARKS.md, "sixth sitting"). A pass with
/// nothing to copy only reads the WAL index.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(50);

/// The WAL length (pages) at which the writer checkpoints by itself (SQLite's default, used when
/// there is no checkpointer, is 1,000): a backstop for a checkpointer that fell behind, and
/// under steady writes what lets the WAL restart from the top ([`CHECKPOINT_EVERY`]).
const WRITER_CHECKPOINT_PAGES: i64 = 10_000;

/// Starts the checkpointer: a thread with its own connection that runs a `PASSIVE` checkpoint
/// every [`CHECKPOINT_EVERY`]. With SQLite's default the commit that crosses 1,000 WAL pages
/// runs the checkpoint itself, copying pages and syncing both files while it holds the writer
/// gate, so every writer queued behind it waits. A passive checkpoint runs beside writers and
/// readers and never blocks them. The thread ends when the last clone of the store drops (the
/// returned sender with it).
fn start_checkpointer(path: &Path, busy: Duration) -> Result<std::sync::mpsc::Sender<()>> {
    use std::sync::mpsc::{RecvTimeoutError, channel};
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    configure(&conn, busy)?;
    let (stop, stopped) = channel::<()>();
    std::thread::Builder::new()
        .name("nexus-sqlite-checkpoint".into())
        .spawn(move || {
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(CHECKPOINT_EVERY) {
                if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                    tracing::warn!(error = %e, "SQLite WAL checkpoint failed; the writer checkpoints as a backstop");
                }
            }
        })
        .map_err(|e| StoreError::Config(format!("cannot start the SQLite checkpointer thread: {e}")))?;
    Ok(stop)
}

/// Opens a read connection: read-only, so no write can ever bypass the writer gate.
fn open_reader(path: &Path, busy: Duration) -> Result<Connection> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    configure(&conn, busy)?;
    Ok(conn)
}

fn shared(conn: Connection) -> Shared {
    Arc::new(Mutex::new(conn))
}

impl SqliteStore {
    /// Opens (creating when missing) the database named by `options.url`.
    pub async fn open(options: &StoreOptions) -> Result<Self> {
        let busy = Duration::from_millis(options.sqlite_busy_timeout_ms);
        match parse_url(&options.url)? {
            Target::Memory => {
                // One connection, which reads and writes: the database lives as long as it does.
                let conn = Connection::open_in_memory()?;
                configure(&conn, busy)?;
                let writer = shared(conn);
                Ok(Self {
                    pool: Readers {
                        conns: Arc::from([writer.clone()]),
                        busy,
                    },
                    writer,
                    // The one connection also reads: a read must never see a group's
                    // uncommitted work, so every unit commits alone.
                    group: Arc::new(group::Group::new(false)),
                    busy,
                    path: None,
                    _lock: None,
                    _checkpointer: None,
                    principals: Arc::default(),
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
                // The writer first: it creates the file and switches it to WAL, which the
                // read-only connections need.
                let writer = shared(open_writer(&path, busy)?);
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                let readers = (0..MIN_READERS.max(cores))
                    .map(|_| open_reader(&path, busy).map(shared))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Self {
                    pool: Readers {
                        conns: Arc::from(readers),
                        busy,
                    },
                    writer,
                    group: Arc::new(group::Group::new(true)),
                    busy,
                    _checkpointer: Some(Arc::new(start_checkpointer(&path, busy)?)),
                    path: Some(path),
                    _lock: lock.map(Arc::new),
                    principals: Arc::default(),
                })
            }
        }
    }

    /// The database file (`None` in memory).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// How long units of work (and waiting members committing their group) have held the
    /// writer gate since the store opened, and how many units ended: over a window, the held
    /// time against the window's length says how close the writes come to SQLite's one-writer
    /// limit (the inbox bench prints it).
    pub fn writer_gate_use(&self) -> GateUse {
        self.group.gate_use()
    }

    /// Waits for every unit of work in flight to end. The connections close when the last
    /// clone drops, and so does the single-node lock.
    pub async fn close(&self) {
        let quiet = self.writer.lock().await;
        self.settle_group(&quiet);
    }

    /// Takes the writer gate, the write connection itself, waiting at most the busy timeout.
    /// A unit of work may find a group's transaction open on it ([`group`]).
    async fn gate_for_unit(&self) -> Result<HeldConn> {
        let _queued = self.group.queue();
        tokio::time::timeout(self.busy, self.writer.clone().lock_owned())
            .await
            .map_err(|_| StoreError::Busy)
    }

    /// The writer gate for anything but a unit of work: an open group commits first, so the
    /// connection is in autocommit mode.
    async fn gate(&self) -> Result<HeldConn> {
        let conn = self.gate_for_unit().await?;
        self.settle_group(&conn);
        Ok(conn)
    }

    /// Commits an open group. A failure is the group's members' to report (they receive it);
    /// the connection is left in autocommit mode either way.
    fn settle_group(&self, conn: &Connection) {
        if let Err(e) = self.group.settle(conn) {
            tracing::warn!(error = %e, "committing a group of SQLite units of work failed");
        }
    }

    /// The write connection for a single write statement (which commits on its own).
    pub(crate) async fn write_conn(&self) -> Result<HeldConn> {
        self.gate().await
    }

    /// A write transaction: the writer gate, then `BEGIN IMMEDIATE` (or a savepoint inside an
    /// open group).
    pub(crate) async fn write_tx(&self) -> Result<GatedTx> {
        let conn = self.gate_for_unit().await?;
        let since = Instant::now();
        let savepoint = match self.group.begin(&conn) {
            Ok(savepoint) => savepoint,
            Err(e) => {
                self.group.note_unit(since);
                return Err(write_error(e));
            }
        };
        Ok(GatedTx {
            conn: Some(conn),
            open: true,
            savepoint,
            group: self.group.clone(),
            writer: self.writer.clone(),
            since,
        })
    }

    /// Opens a unit of work (the writer gate, then `BEGIN IMMEDIATE` or a savepoint).
    pub async fn begin(&self) -> Result<crate::SqliteTx> {
        Ok(crate::SqliteTx::new(self.write_tx().await?))
    }

    /// A read connection (for the test harness's introspection).
    #[cfg(feature = "testing")]
    pub(crate) async fn read_conn(&self) -> Result<HeldConn> {
        self.pool.acquire().await
    }

    async fn one_member(&self, q: driver::Query<'_>) -> Result<Option<MemberRow>> {
        q.fetch_optional(&mut *self.pool.acquire().await?)
            .await?
            .map(|r| row::member(&r))
            .transpose()
    }

    async fn one_executor(&self, q: driver::Query<'_>) -> Result<Option<ExecutorRow>> {
        q.fetch_optional(&mut *self.pool.acquire().await?)
            .await?
            .map(|r| row::executor(&r))
            .transpose()
    }

    /// Applies the pending migrations, each in its own transaction with its ledger row,
    /// refusing a ledger that records a failed migration, a changed migration text, or a
    /// migration this build does not have (as sqlx's migrator does).
    ///
    /// Foreign keys are not enforced while a migration runs, as SQLite's table-rebuild procedure
    /// asks (migration 0008 drops and renames tables that others reference); instead each
    /// migration ends with `PRAGMA foreign_key_check`, and any row it reports fails the migration
    /// before its commit. Enforcement is back on when this returns, whatever the outcome.
    fn migrate_now(conn: &mut Connection) -> Result<()> {
        // The pragma is a no-op inside a transaction: it is set here, between them.
        conn.pragma_update(None, "foreign_keys", false)?;
        let outcome = Self::migrate_unenforced(conn);
        conn.pragma_update(None, "foreign_keys", true)?;
        outcome
    }

    fn migrate_unenforced(conn: &mut Connection) -> Result<()> {
        conn.execute_batch(LEDGER).map_err(write_error)?;
        let applied = applied_migrations(conn)?;
        let known = |v: i64| MIGRATOR.iter().any(|m| m.version == v);
        for (version, _, success) in &applied {
            if !success {
                return Err(MigrateError::Dirty(*version).into());
            }
            if !known(*version) {
                return Err(MigrateError::VersionMissing(*version).into());
            }
        }
        for m in MIGRATOR.iter().filter(|m| !m.migration_type.is_down_migration()) {
            if let Some((_, checksum, _)) = applied.iter().find(|(v, _, _)| *v == m.version) {
                if checksum.as_slice() != &*m.checksum {
                    return Err(MigrateError::VersionMismatch(m.version).into());
                }
                continue;
            }
            let started = Instant::now();
            let apply = |conn: &Connection| -> rusqlite::Result<()> {
                conn.execute_batch(m.sql.as_str())?;
                foreign_keys_hold(conn)?;
                conn.execute(
                    "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
                     VALUES (?1, ?2, TRUE, ?3, ?4)",
                    rusqlite::params![
                        m.version,
                        &*m.description,
                        &*m.checksum,
                        i64::try_from(started.elapsed().as_nanos()).unwrap_or(i64::MAX)
                    ],
                )?;
                Ok(())
            };
            if m.no_tx {
                apply(conn).map_err(write_error)?;
            } else {
                let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                apply(&tx).map_err(write_error)?;
                tx.commit().map_err(write_error)?;
            }
        }
        Ok(())
    }
}

/// `PRAGMA foreign_key_check` over the whole database: an error naming the first reference
/// that points nowhere, if any.
fn foreign_keys_hold(conn: &Connection) -> rusqlite::Result<()> {
    let mut check = conn.prepare("PRAGMA foreign_key_check")?;
    let mut rows = check.query([])?;
    match rows.next()? {
        None => Ok(()),
        Some(r) => {
            let table: String = r.get(0)?;
            let rowid: Option<i64> = r.get(1)?;
            let parent: String = r.get(2)?;
            Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY),
                Some(format!(
                    "the migration leaves {table} row {rowid:?} referring to a missing {parent} row"
                )),
            ))
        }
    }
}

/// The ledger's rows: version, checksum, success. Empty when there is no ledger yet.
fn applied_migrations(conn: &mut Connection) -> Result<Vec<(i64, Vec<u8>, bool)>> {
    let exists = query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'")
        .fetch_optional(conn)
        .into_inner()?
        .is_some();
    if !exists {
        return Ok(Vec::new());
    }
    let rows = query("SELECT version, checksum, success FROM _sqlx_migrations ORDER BY version")
        .fetch_all(conn)
        .into_inner()?;
    rows.iter()
        .map(|r| Ok((r.int("version")?, r.bytes("checksum")?, r.boolean("success")?)))
        .collect()
}

/// A public id as SQLite stores it: lowercase hyphenated TEXT.
fn id_text(id: Uuid) -> String {
    id.hyphenated().to_string()
}

/// How SQLite binds a public id (see [`id_text`]).
fn uid(id: Uuid) -> String {
    id_text(id)
}

/// The run-table operations over a SQLite connection (see `crate::ops`).
pub(crate) mod ops {
    use super::driver::{query, query_scalar};
    use super::uid;
    use rusqlite::Connection as Conn;
    crate::ops::engine_ops!(
        lock_run = sql::RUN_BY_ID,
        dequeue = sql::DEQUEUE_JOBS_SQLITE,
        update_task = update_task_every_column
    );

    /// The conditional task update, writing only the columns that change.
    ///
    /// SQLite maintains an index, and checks a foreign key, for every column named in an
    /// `UPDATE`'s `SET` list, whether or not its value changes; `sql::UPDATE_TASK` names all 38
    /// mutable columns, so each update rewrote every index of `tasks` and looked up every
    /// referenced row. Inside a unit of work this engine holds the database's write lock, so it
    /// reads the row (without its frozen context), checks the same conditions the full
    /// statement's `WHERE` checks (generation, one of the expected statuses, the claim token),
    /// and names only the changed columns. Same answer as `update_task_every_column`: false when
    /// no row matches, true otherwise.
    pub(crate) async fn update_task(
        c: &mut Conn,
        task: &TaskRow,
        expect_generation: i64,
        expect_statuses: &[&str],
        expect_claim_token: Option<&str>,
    ) -> Result<bool> {
        row::check_task_row_text(task)?;
        row::status_slots(expect_statuses)?;
        if c.is_autocommit() {
            // Not inside a unit of work: nothing holds the row still between a read and a write.
            return update_task_every_column(c, task, expect_generation, expect_statuses, expect_claim_token).await;
        }
        let current = match query(sql::TASK_MUTABLE_BY_ID)
            .bind(task.id)
            .fetch_optional(&mut *c)
            .await?
        {
            Some(r) => row::task(&r)?,
            None => return Ok(false),
        };
        update_changed(
            c,
            &current,
            task,
            expect_generation,
            expect_statuses,
            expect_claim_token,
            false,
        )
        .await
    }

    /// An executor door's rows in one statement (the write lock is held): the run `public_id`
    /// as the account `account_id` finds it, and its task keyed `key`.
    pub(crate) async fn open_door(
        c: &mut Conn,
        public_id: uuid::Uuid,
        account_id: i64,
        key: &str,
    ) -> Result<Option<(RunInAccount, Option<TaskRow>)>> {
        use crate::row::Columns;
        if check_text(key).is_err() {
            return Ok(run_in_account(c, public_id, account_id)
                .await?
                .map(|found| (found, None)));
        }
        // Decoded where the row lies: the door is read twice per settled task, and its 70-odd
        // columns are copied once, into the rows, not into driver values first.
        let door = query(sql::DOOR_SQLITE)
            .bind(uid(public_id))
            .bind(account_id)
            .bind(key)
            .fetch_optional_as(&mut *c, |r| {
                let Some(workspace_public_id) = r.opt_public_id("workspace_public_id")? else {
                    return Ok(None);
                };
                let found = RunInAccount {
                    run: row::run(&row::Prefixed(r, "r_"))?,
                    workspace_public_id,
                    creator_standing: r.opt_text("creator_standing")?.map(|s| row::standing(&s)).transpose()?,
                };
                let task = match r.opt_int("id")? {
                    Some(_) => Some(row::task(r)?),
                    None => None,
                };
                Ok(Some((found, task)))
            })
            .await?;
        Ok(door.flatten())
    }

    /// [`update_task`] over `before`, the row as this unit of work read it (under the write
    /// lock, unchanged since): the conditions are checked on it and the row is not read again.
    /// The `UPDATE` still names the generation, the status and the claim token, so a `before`
    /// that was not current changes nothing.
    pub(crate) async fn update_task_over(
        c: &mut Conn,
        before: &TaskRow,
        task: &TaskRow,
        expect_statuses: &[&str],
        expect_claim_token: Option<&str>,
    ) -> Result<bool> {
        row::check_task_row_text(task)?;
        row::status_slots(expect_statuses)?;
        if c.is_autocommit() || before.id != task.id {
            return update_task_every_column(c, task, before.generation, expect_statuses, expect_claim_token).await;
        }
        update_changed(
            c,
            before,
            task,
            before.generation,
            expect_statuses,
            expect_claim_token,
            true,
        )
        .await
    }

    /// Sets the columns of `task` that differ from `current` when `current` meets the
    /// conditions; `guard` repeats them in the statement (`current` was not read here).
    async fn update_changed(
        c: &mut Conn,
        current: &TaskRow,
        task: &TaskRow,
        expect_generation: i64,
        expect_statuses: &[&str],
        expect_claim_token: Option<&str>,
        guard: bool,
    ) -> Result<bool> {
        let matches = current.generation == expect_generation
            && expect_statuses.contains(&current.status.as_str())
            && expect_claim_token.is_none_or(|t| current.claim_token.as_deref() == Some(t));
        if !matches {
            return Ok(false);
        }
        let mut statement = String::from("UPDATE tasks SET ");
        let mut slot = 1;
        macro_rules! set_list {
            (; $($f:ident),*) => {$(
                if current.$f != task.$f {
                    slot += 1;
                    if slot > 2 {
                        statement.push_str(", ");
                    }
                    statement.push_str(concat!(stringify!($f), " = $"));
                    statement.push_str(&slot.to_string());
                }
            )*};
        }
        row::task_mutable_fields!(set_list);
        if slot == 1 {
            return Ok(true); // nothing changes
        }
        statement.push_str(" WHERE id = $1");
        if guard {
            statement.push_str(&format!(" AND generation = ${} AND status = ${}", slot + 1, slot + 2));
            slot += 2;
            if expect_claim_token.is_some() {
                slot += 1;
                statement.push_str(&format!(" AND claim_token = ${slot}"));
            }
        }
        let mut q = query(&statement).bind(task.id);
        macro_rules! bind_changed {
            (; $($f:ident),*) => {$(
                if current.$f != task.$f {
                    q = q.bind(&task.$f);
                }
            )*};
        }
        row::task_mutable_fields!(bind_changed);
        if guard {
            q = q.bind(expect_generation).bind(&current.status);
            if let Some(t) = expect_claim_token {
                q = q.bind(t);
            }
        }
        let done = q.execute(&mut *c).await.map_err(write_error)?;
        Ok(done.rows_affected() > 0)
    }
    crate::uploads::upload_ops!();
    crate::memory::memory_ops!(scope_lock = crate::memory::MEMORY_LOCK_SQLITE);
}

pub(crate) fn pending_of(migrator: &Migrator, applied: &[i64]) -> usize {
    migrator
        .iter()
        .filter(|m| !m.migration_type.is_down_migration() && !applied.contains(&m.version))
        .count()
}

impl Engine for SqliteStore {
    async fn migrate(&self) -> Result<()> {
        let mut conn = self.gate().await?;
        Self::migrate_now(&mut conn)
    }

    async fn pending_migrations(&self) -> Result<usize> {
        let mut conn = self.pool.acquire().await?;
        let applied: Vec<i64> = applied_migrations(&mut conn)?.into_iter().map(|(v, _, _)| v).collect();
        Ok(pending_of(&MIGRATOR, &applied))
    }

    async fn ensure_account(&self, public_id: Uuid, handle: &str, now: i64) -> Result<AccountRow> {
        let mut conn = self.write_conn().await?;
        check_text(handle)?;
        query(sql::INSERT_ACCOUNT)
            .bind(id_text(public_id))
            .bind(handle)
            .bind(now)
            .execute(&mut conn)
            .await
            .map_err(write_error)?;
        let r = query(sql::ACCOUNT_BY_HANDLE).bind(handle).fetch_one(&mut conn).await?;
        row::account(&r)
    }

    async fn account_by_id(&self, id: i64) -> Result<Option<AccountRow>> {
        query(sql::ACCOUNT_BY_ID)
            .bind(id)
            .fetch_optional(&mut *self.pool.acquire().await?)
            .await?
            .map(|r| row::account(&r))
            .transpose()
    }

    async fn ensure_workspace(&self, public_id: Uuid, account_id: i64, handle: &str, now: i64) -> Result<WorkspaceRow> {
        let mut conn = self.write_conn().await?;
        check_text(handle)?;
        query(sql::INSERT_WORKSPACE)
            .bind(id_text(public_id))
            .bind(account_id)
            .bind(handle)
            .bind(now)
            .execute(&mut conn)
            .await
            .map_err(write_error)?;
        let r = query(sql::WORKSPACE_BY_HANDLE)
            .bind(account_id)
            .bind(handle)
            .fetch_one(&mut conn)
            .await?;
        row::workspace(&r)
    }

    async fn workspace_by_public_id(&self, public_id: Uuid) -> Result<Option<WorkspaceRow>> {
        query(sql::WORKSPACE_BY_PUBLIC_ID)
            .bind(id_text(public_id))
            .fetch_optional(&mut *self.pool.acquire().await?)
            .await?
            .map(|r| row::workspace(&r))
            .transpose()
    }

    async fn workspace_by_id(&self, id: i64) -> Result<Option<WorkspaceRow>> {
        query(sql::WORKSPACE_BY_ID)
            .bind(id)
            .fetch_optional(&mut *self.pool.acquire().await?)
            .await?
            .map(|r| row::workspace(&r))
            .transpose()
    }

    async fn set_standing(&self, workspace_id: i64, member_id: i64, standing: Standing) -> Result<()> {
        let mut conn = self.write_conn().await?;
        query(sql::UPSERT_STANDING)
            .bind(workspace_id)
            .bind(member_id)
            .bind(standing.as_str())
            .execute(&mut conn)
            .await
            .map_err(write_error)?;
        Ok(())
    }

    async fn standing(&self, workspace_id: i64, member_id: i64) -> Result<Option<Standing>> {
        let value: Option<String> = query_scalar(sql::STANDING)
            .bind(workspace_id)
            .bind(member_id)
            .fetch_optional(&mut *self.pool.acquire().await?)
            .await?;
        value.map(|v| row::standing(&v)).transpose()
    }

    async fn create_member(&self, new: NewMember) -> Result<(MemberRow, Option<ExecutorRow>)> {
        row::check_member_text(&new)?;
        let agent = row::agent_executor_of(&new)?;
        let mut tx = self.write_tx().await?;
        let r = query(sql::INSERT_MEMBER)
            .bind(id_text(new.public_id))
            .bind(new.account_id)
            .bind(new.kind.as_str())
            .bind(&new.handle)
            .bind(&new.display_name)
            .bind(&new.role)
            .bind(new.steward_id)
            .bind(new.now)
            .fetch_one(&mut tx)
            .await
            .map_err(write_error)?;
        let member = row::member(&r)?;
        let executor = match agent {
            Some((public_id, display_name, manager_id)) => {
                let r = query(sql::INSERT_EXECUTOR)
                    .bind(id_text(public_id))
                    .bind(new.account_id)
                    .bind(ExecutorKind::AgentApplication.as_str())
                    .bind(display_name)
                    .bind(AssignmentScope::UserPrivate.as_str())
                    .bind(manager_id)
                    .bind(member.id)
                    .bind(new.now)
                    .fetch_one(&mut tx)
                    .await
                    .map_err(write_error)?;
                Some(row::executor(&r)?)
            }
            None => None,
        };
        tx.commit().await.map_err(write_error)?;
        Ok((member, executor))
    }

    async fn member_by_public_id(&self, public_id: Uuid) -> Result<Option<MemberRow>> {
        self.one_member(query(sql::MEMBER_BY_PUBLIC_ID).bind(id_text(public_id)))
            .await
    }

    async fn member_by_handle(&self, account_id: i64, handle: &str) -> Result<Option<MemberRow>> {
        if check_text(handle).is_err() {
            return Ok(None); // nothing stored holds U+0000
        }
        self.one_member(query(sql::MEMBER_BY_HANDLE).bind(account_id).bind(handle))
            .await
    }

    async fn set_member_configuration(&self, member_id: i64, configuration: Option<&str>, now: i64) -> Result<()> {
        let mut conn = self.write_conn().await?;
        if let Some(c) = configuration {
            check_text(c)?;
        }
        let done = query(sql::SET_MEMBER_CONFIGURATION)
            .bind(configuration)
            .bind(now)
            .bind(member_id)
            .execute(&mut conn)
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
        let r = query(sql::INSERT_EXECUTOR)
            .bind(id_text(new.public_id))
            .bind(new.account_id)
            .bind(ExecutorKind::Runner.as_str())
            .bind(&new.display_name)
            .bind(new.assignment_scope.as_str())
            .bind(new.manager_id)
            .bind(None::<i64>)
            .bind(new.now)
            .fetch_one(&mut conn)
            .await
            .map_err(write_error)?;
        row::executor(&r)
    }

    async fn executor_by_id(&self, id: i64) -> Result<Option<ExecutorRow>> {
        self.one_executor(query(sql::EXECUTOR_BY_ID).bind(id)).await
    }

    async fn executor_by_public_id(&self, public_id: Uuid) -> Result<Option<ExecutorRow>> {
        self.one_executor(query(sql::EXECUTOR_BY_PUBLIC_ID).bind(id_text(public_id)))
            .await
    }

    async fn active_runner_by_name(&self, account_id: i64, manager_id: i64, name: &str) -> Result<Option<ExecutorRow>> {
        if check_text(name).is_err() {
            return Ok(None);
        }
        self.one_executor(
            query(sql::ACTIVE_RUNNER_BY_NAME)
                .bind(account_id)
                .bind(manager_id)
                .bind(name),
        )
        .await
    }

    async fn agent_application_of(&self, agent_member_id: i64) -> Result<Option<ExecutorRow>> {
        self.one_executor(query(sql::AGENT_APPLICATION_OF).bind(agent_member_id))
            .await
    }

    async fn list_executors(&self, account_id: i64, kind: Option<ExecutorKind>) -> Result<Vec<ExecutorRow>> {
        let rows = match kind {
            Some(kind) => {
                query(sql::EXECUTORS_OF_ACCOUNT_KIND)
                    .bind(account_id)
                    .bind(kind.as_str())
                    .fetch_all(&mut *self.pool.acquire().await?)
                    .await?
            }
            None => {
                query(sql::EXECUTORS_OF_ACCOUNT)
                    .bind(account_id)
                    .fetch_all(&mut *self.pool.acquire().await?)
                    .await?
            }
        };
        rows.iter().map(row::executor).collect()
    }

    async fn advance_executor_epoch(&self, executor_id: i64) -> Result<i64> {
        let mut conn = self.write_conn().await?;
        let epoch: Option<i64> = query_scalar(sql::ADVANCE_EPOCH)
            .bind(executor_id)
            .fetch_optional(&mut conn)
            .await
            .map_err(write_error)?;
        epoch.ok_or_else(|| StoreError::NotFound(format!("executor {executor_id}")))
    }

    async fn revoke_executor(&self, executor_id: i64, _now: i64) -> Result<()> {
        let mut conn = self.write_conn().await?;
        let done = query(sql::REVOKE_EXECUTOR)
            .bind(executor_id)
            .execute(&mut conn)
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
        let done = query(sql::PUT_ANNOUNCEMENT)
            .bind(&announcement.served_tools)
            .bind(&announcement.environment)
            .bind(&announcement.served_documents)
            .bind(now)
            .bind(executor_id)
            .execute(&mut conn)
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
        let r = query(sql::INSERT_CREDENTIAL)
            .bind(id_text(new.public_id))
            .bind(new.plane.as_str())
            .bind(new.member_id)
            .bind(new.executor_id)
            .bind(new.epoch)
            .bind(&new.secret_sha256)
            .bind(new.expires_at)
            .bind(new.now)
            .fetch_one(&mut conn)
            .await
            .map_err(write_error)?;
        row::credential(&r)
    }

    async fn credential_by_public_id(&self, public_id: Uuid) -> Result<Option<CredentialRow>> {
        query(sql::CREDENTIAL_BY_PUBLIC_ID)
            .bind(id_text(public_id))
            .fetch_optional(&mut *self.pool.acquire().await?)
            .await?
            .map(|r| row::credential(&r))
            .transpose()
    }

    async fn revoke_credential(&self, public_id: Uuid, now: i64) -> Result<bool> {
        let mut conn = self.write_conn().await?;
        let done = query(sql::REVOKE_CREDENTIAL)
            .bind(now)
            .bind(id_text(public_id))
            .execute(&mut conn)
            .await
            .map_err(write_error)?;
        Ok(done.rows_affected() > 0)
    }

    async fn has_transport_credential_at(&self, executor_id: i64, epoch: i64, now: i64) -> Result<bool> {
        let found = query(sql::HAS_TRANSPORT_CREDENTIAL_AT)
            .bind(executor_id)
            .bind(epoch)
            .bind(now)
            .fetch_optional(&mut *self.pool.acquire().await?)
            .await?;
        Ok(found.is_some())
    }

    crate::ops::engine_methods!();
    crate::uploads::upload_methods!();
    crate::memory::memory_methods!();
}

/// A unit of work holding the writer gate, the write connection itself (from
/// [`SqliteStore::write_tx`]). Dropped without [`GatedTx::commit`], it rolls its own work back
/// before the gate opens, so the next writer never finds that work half done.
pub(crate) struct GatedTx {
    /// The gate; `None` once the unit ended.
    conn: Option<HeldConn>,
    /// The unit began and has neither committed nor rolled back.
    open: bool,
    /// The unit runs under a savepoint inside an open group ([`group`]).
    savepoint: bool,
    group: Arc<group::Group>,
    writer: Shared,
    /// When the unit took the gate ([`group::GateUse`]).
    since: Instant,
}

impl GatedTx {
    /// Commits the unit: returns once its changes are committed, alone or with its group.
    /// On failure nothing of the unit is kept.
    pub(crate) async fn commit(mut self) -> rusqlite::Result<()> {
        self.open = false;
        let conn = self.conn.take().expect("an open unit holds the gate");
        let end = self.group.end_unit(&conn, self.savepoint, group::Ending::Commit);
        drop(conn); // the gate passes to the next writer
        self.group.note_unit(self.since);
        match end {
            group::End::Done(r) => r,
            group::End::Wait(member) => group::wait(self.group.clone(), self.writer.clone(), member).await,
        }
    }

    pub(crate) async fn rollback(mut self) -> rusqlite::Result<()> {
        self.open = false;
        let conn = self.conn.take().expect("an open unit holds the gate");
        let end = self.group.end_unit(&conn, self.savepoint, group::Ending::Rollback);
        drop(conn);
        self.group.note_unit(self.since);
        match end {
            group::End::Done(r) => r,
            group::End::Wait(_) => unreachable!("a rollback never waits for a group"),
        }
    }
}

impl Drop for GatedTx {
    fn drop(&mut self) {
        if self.open
            && let Some(conn) = self.conn.take()
        {
            let end = self.group.end_unit(&conn, self.savepoint, group::Ending::Rollback);
            drop(conn);
            self.group.note_unit(self.since);
            if let group::End::Done(Err(e)) = end {
                tracing::warn!(error = %e, "rolling back a dropped SQLite unit of work failed");
            }
        }
    }
}

impl std::ops::Deref for GatedTx {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("an open unit holds the gate")
    }
}

impl std::ops::DerefMut for GatedTx {
    fn deref_mut(&mut self) -> &mut Connection {
        self.conn.as_mut().expect("an open unit holds the gate")
    }
}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use crate::Store;

    /// The checkpointer, not the writer, copies the WAL into the database file: the writer's own
    /// threshold is far above what a migration writes, so only the background thread can have
    /// moved the schema into the main file.
    #[tokio::test]
    async fn the_checkpointer_copies_the_wal_into_the_file() {
        let ts = crate::testing::sqlite().await;
        let path = ts.sqlite_path().unwrap();
        let wal_pages = |p: &std::path::Path| {
            let wal = std::fs::metadata(format!("{}-wal", p.display())).map_or(0, |m| m.len());
            wal / 4096
        };
        assert!(
            wal_pages(&path) < super::WRITER_CHECKPOINT_PAGES as u64,
            "the writer never checkpointed"
        );
        let file_len = || std::fs::metadata(&path).unwrap().len();
        // Generous for a loaded CI machine: the first pass comes one period after the open.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while file_len() <= 4096 {
            assert!(std::time::Instant::now() < deadline, "no checkpoint within 10 s");
            tokio::time::sleep(super::CHECKPOINT_EVERY / 4).await;
        }
        // The copy is complete and consistent: a fresh connection reads the schema.
        let c = rusqlite::Connection::open(&path).unwrap();
        let tables: i64 = c
            .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert!(tables > 10, "{tables}");
    }

    /// The engines' dispatch keeps PostgreSQL's futures (sqlx's; about 8.7 KB each in a release
    /// build) boxed, so a store call's future on SQLite is about as small as the SQLite engine's
    /// own. Every kernel and handler future that awaits a store call carries it, and axum and
    /// tower move a handler's future several times per request.
    #[tokio::test]
    async fn the_engine_dispatch_does_not_size_sqlite_futures_by_postgres() {
        use crate::Engine;
        use std::mem::size_of_val;
        let ts = crate::testing::sqlite().await;
        let Store::Sqlite(s) = &ts.store else { unreachable!() };
        let id = uuid::Uuid::nil();
        let pairs = [
            (
                "credential_with_executor",
                size_of_val(&s.credential_with_executor(id)),
                size_of_val(&ts.store.credential_with_executor(id)),
            ),
            ("begin", size_of_val(&s.begin()), size_of_val(&ts.store.begin())),
        ];
        let mut tx = ts.store.begin().await.unwrap();
        let engine = {
            let crate::Tx::Sqlite(t) = &mut tx else { unreachable!() };
            size_of_val(&super::ops::lock_run(&mut t.tx, 1))
        };
        let unit = ("Tx::lock_run", engine, size_of_val(&tx.lock_run(1)));
        for (what, engine, dispatched) in pairs.into_iter().chain([unit]) {
            assert!(
                dispatched <= engine + 256,
                "{what}: the dispatched future is {dispatched} bytes, the SQLite engine's {engine}"
            );
        }
        tx.rollback().await.unwrap();
    }

    /// The steps of SQLite's plan for `sql` with `args` bound.
    fn query_plan(c: &rusqlite::Connection, sql: &str, args: [i64; 3]) -> Vec<String> {
        c.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap()
            .query_map(args, |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// Migration 0007: the sweep's selection is served by the partial index over parked rows
    /// (its status test is the index's predicate word for word), and neither a claim's nor a
    /// settle's task update builds a temporary b-tree to evaluate an index predicate. Migration
    /// 0008: nor to test a CHECK constraint's word list, on the run tables' updates and inserts.
    #[tokio::test]
    async fn run_table_writes_build_no_temporary_tree() {
        let ts = crate::testing::sqlite().await;
        let Store::Sqlite(s) = &ts.store else { unreachable!() };
        let c = s.write_conn().await.unwrap();
        let plan = query_plan(&c, crate::sql::EXPIRED_PARKS, [1, 0, 10]);
        assert!(
            plan.iter().any(|step| step.contains("USING INDEX tasks_parked")),
            "{plan:?}"
        );
        let temporary_trees = |sql: &str| -> usize {
            let mut stmt = c.prepare(&format!("EXPLAIN {sql}")).unwrap();
            let mut rows = stmt.raw_query();
            let mut n = 0;
            while let Some(r) = rows.next().unwrap() {
                n += usize::from(r.get::<_, String>(1).unwrap() == "OpenEphemeral");
            }
            n
        };
        // The claim: the deadline moves (no index holds it since migration 0010).
        assert_eq!(
            temporary_trees(
                "UPDATE tasks SET claim_token = 'k', claimed_at = 1, claimant_id = 1, \
                 await_started_at = 1, deadline_at = 2 WHERE id = 1 AND generation = 1 AND status = 'dispatched'"
            ),
            0
        );
        // A settle changes the status, which the table's CHECK tests.
        assert_eq!(
            temporary_trees(
                "UPDATE tasks SET status = 'completed', settled_at = 2 WHERE id = 1 AND generation = 1 \
                 AND status = 'dispatched' AND claim_token = 'k'"
            ),
            0
        );
        // Writes of every checked column test every word list: the run's whole-row update, a
        // task update naming each checked column, the edge insert.
        for sql in [
            crate::sql::UPDATE_RUN,
            crate::sql::UPDATE_RUN_AND_SEQUENCE,
            "UPDATE runs SET approval_mode = 'ask' WHERE id = 1",
            "UPDATE tasks SET kind = 'tool_task', status = 'completed', origin = 'model', \
             on_failure = 'halt', visibility = 'hidden' WHERE id = 1",
            crate::sql::INSERT_EDGE,
        ] {
            assert_eq!(temporary_trees(sql), 0, "{sql}");
        }
        // The inserts test every CHECK of their table; the one tree left holds their
        // `RETURNING` rows.
        for sql in [crate::sql::INSERT_RUN, crate::sql::INSERT_TASK] {
            assert!(sql.contains("RETURNING"), "{sql}");
            assert_eq!(temporary_trees(sql), 1, "{sql}");
        }
    }

    /// The migration runner's closing check finds a reference that points nowhere (foreign keys
    /// are not enforced while a migration runs), and passes when every reference holds.
    #[test]
    fn the_foreign_key_check_refuses_a_dangling_reference() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        c.execute_batch(
            "PRAGMA foreign_keys = OFF; CREATE TABLE parent (id INTEGER PRIMARY KEY); \
             CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id BIGINT REFERENCES parent (id)); \
             INSERT INTO parent (id) VALUES (1); INSERT INTO child (id, parent_id) VALUES (5, 1);",
        )
        .unwrap();
        super::foreign_keys_hold(&c).expect("every reference holds");
        c.execute_batch("INSERT INTO child (id, parent_id) VALUES (6, 2)")
            .unwrap();
        let e = super::foreign_keys_hold(&c).unwrap_err();
        assert_eq!(
            e.sqlite_error_code(),
            Some(rusqlite::ErrorCode::ConstraintViolation),
            "{e:?}"
        );
        assert!(e.to_string().contains("child row Some(6)"), "{e}");
    }

    /// The sweep's revoked-addressee selection reads a revoked executor's open rows from
    /// `tasks_inbox_open` (migration 0009 dropped the whole-table `tasks_inbox`).
    #[tokio::test]
    async fn revoked_parks_read_the_open_inbox_index() {
        let ts = crate::testing::sqlite().await;
        let Store::Sqlite(s) = &ts.store else { unreachable!() };
        let c = s.write_conn().await.unwrap();
        let plan: Vec<String> = c
            .prepare(&format!("EXPLAIN QUERY PLAN {}", crate::sql::REVOKED_PARKS))
            .unwrap()
            .query_map([0_i64, 10], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            plan.iter().any(|step| step.contains("USING INDEX tasks_inbox_open")),
            "{plan:?}"
        );
    }

    /// The inbox page walks `tasks_inbox_open` in id order and stops at its limit: no sort of
    /// every open row (migration 0007). Its status test names exactly `INBOX_STATUSES`.
    #[tokio::test]
    async fn the_inbox_page_reads_its_index_in_page_order() {
        let ts = crate::testing::sqlite().await;
        let Store::Sqlite(s) = &ts.store else { unreachable!() };
        let c = s.write_conn().await.unwrap();
        let plan = query_plan(&c, crate::sql::INBOX_PAGE, [1, 0, 50]);
        assert!(
            plan.iter().any(|step| step.contains("USING INDEX tasks_inbox_open")),
            "{plan:?}"
        );
        assert!(!plan.iter().any(|step| step.contains("TEMP B-TREE")), "{plan:?}");
        let named: Vec<&str> = crate::sql::INBOX_PAGE
            .split("t.status = '")
            .skip(1)
            .filter_map(|rest| rest.split('\'').next())
            .collect();
        assert_eq!(named, crate::INBOX_STATUSES);
    }

    /// The architecture invariant behind the writer gate: a reader connection cannot write.
    #[tokio::test]
    async fn reader_connections_are_read_only() {
        let ts = crate::testing::sqlite().await;
        let Store::Sqlite(s) = &ts.store else { unreachable!() };
        let mut reader = s.pool.acquire().await.unwrap();
        let e = super::query("INSERT INTO accounts (public_id, handle, created_at) VALUES ($1, $2, $3)")
            .bind("00000000-0000-7000-8000-000000000000")
            .bind("sneaky")
            .bind(0_i64)
            .execute(&mut reader)
            .into_inner()
            .unwrap_err();
        assert_eq!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::ReadOnly), "{e:?}");
        drop(reader);
        // The same statement through the write connection is fine.
        let mut writer = s.write_conn().await.unwrap();
        super::query("INSERT INTO accounts (public_id, handle, created_at) VALUES ($1, $2, $3)")
            .bind("00000000-0000-7000-8000-000000000000")
            .bind("fine")
            .bind(0_i64)
            .execute(&mut writer)
            .into_inner()
            .unwrap();
    }
}

#[cfg(test)]
mod build {
    /// The workspace's `.cargo/config.toml` compiles the bundled SQLite without its memory
    /// statistics (`SQLITE_DEFAULT_MEMSTATUS=0`), which would take a global mutex on every
    /// allocation; a build that lost the setting fails here.
    #[test]
    fn the_bundled_sqlite_keeps_no_memory_statistics() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let mut s = c.prepare("PRAGMA compile_options").unwrap();
        let options: Vec<String> = s
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"), "{options:?}");
    }
}
