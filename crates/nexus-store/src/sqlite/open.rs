//! Opening the SQLite store: the database URL, the single-node lock file, the settings every
//! connection gets, the write connection, the read-only readers, and the checkpointer thread.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use fs2::FileExt;
use rusqlite::{Connection, OpenFlags};
use tokio::sync::Mutex;

use super::{HeldConn, Shared, SqliteStore, driver, group};
use crate::{Result, SqliteSynchronous, StoreError, StoreOptions};

/// The least number of read connections a file database gets (WAL readers run beside the
/// writer); more when the machine has more cores, since a read holds one only while it runs.
const MIN_READERS: usize = 4;

/// The read connections, the lowest-numbered free one first.
///
/// Every commit empties the page cache of every reader (a WAL reader cannot tell which pages
/// changed), so a reader is warm only for the reads it serves before the next commit. Handing
/// out the first free connection keeps the reads between two commits on as few connections as
/// possible, and the second and later of them find the small hot tables (credentials,
/// executors) already cached; round-robin sent each read to a connection that had missed the
/// last commit, cold. See docs/decisions/111-sqlite-readers-and-door-reads.md.
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

/// Opens the write connection of a file database: created when missing, WAL journal, and the
/// configured `synchronous` ([`SqliteSynchronous`]: `FULL` by default, so an acknowledged commit
/// survives power loss; `NORMAL` makes it durable against power loss only from the next
/// checkpoint). Only this connection commits, so its setting is the store's.
fn open_writer(path: &Path, busy: Duration, synchronous: SqliteSynchronous) -> Result<Connection> {
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
    conn.pragma_update(None, "synchronous", synchronous.pragma())?;
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
/// at 50 ms, with the same throughput and p99 (docs/decisions/113-sqlite-checkpoints.md). A
/// pass with nothing to copy only reads the WAL index.
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
                let writer = shared(open_writer(&path, busy, options.sqlite_synchronous)?);
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

    /// The write connection runs `synchronous = FULL` unless the options say `NORMAL`: an
    /// acknowledged commit survives power loss by default (issue 28).
    #[tokio::test]
    async fn the_writer_syncs_every_commit_by_default() {
        use crate::{SqliteSynchronous, StoreOptions};
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("nexus.db").display());
        for (options, want) in [
            (StoreOptions::new(url.clone()), SqliteSynchronous::Full),
            (
                StoreOptions {
                    sqlite_synchronous: SqliteSynchronous::Normal,
                    ..StoreOptions::new(url.clone())
                },
                SqliteSynchronous::Normal,
            ),
        ] {
            let store = Store::open(&options).await.unwrap();
            let Store::Sqlite(s) = &store else { unreachable!() };
            let writer = s.write_conn().await.unwrap();
            let level: i64 = writer.query_row("PRAGMA synchronous", [], |r| r.get(0)).unwrap();
            assert_eq!(level, want.level(), "{want:?}");
            drop(writer);
            drop(store);
        }
        assert_eq!(StoreOptions::new(url).sqlite_synchronous, SqliteSynchronous::Full);
    }

    /// The architecture invariant behind the writer gate: a reader connection cannot write.
    #[tokio::test]
    async fn reader_connections_are_read_only() {
        let ts = crate::testing::sqlite().await;
        let Store::Sqlite(s) = &ts.store else { unreachable!() };
        let mut reader = s.pool.acquire().await.unwrap();
        let e =
            crate::sqlite::driver::query("INSERT INTO accounts (public_id, handle, created_at) VALUES ($1, $2, $3)")
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
        crate::sqlite::driver::query("INSERT INTO accounts (public_id, handle, created_at) VALUES ($1, $2, $3)")
            .bind("00000000-0000-7000-8000-000000000000")
            .bind("fine")
            .bind(0_i64)
            .execute(&mut writer)
            .into_inner()
            .unwrap();
    }
}
