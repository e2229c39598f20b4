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

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::{Mutex, OwnedMutexGuard};
use uuid::Uuid;

pub(crate) mod driver;
mod engine;
mod gate;
mod group;
mod migrate;
mod open;
pub(crate) mod ops;

pub use group::GateUse;

pub(crate) use driver::{is_foreign_key_violation, is_unique_violation, message};
pub(crate) use gate::GatedTx;
pub(crate) use migrate::pending_of;
use open::Readers;

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

/// A public id as SQLite stores it: lowercase hyphenated TEXT.
fn id_text(id: Uuid) -> String {
    id.hyphenated().to_string()
}

/// How SQLite binds a public id (see [`id_text`]).
fn uid(id: Uuid) -> String {
    id_text(id)
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
