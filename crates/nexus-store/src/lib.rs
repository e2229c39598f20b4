//! The Nexus store: one interface (a trait per area, [`prelude`]), two engines (SQLite, the embedded default, and
//! PostgreSQL, for several kernel nodes on one database), the same migrations in both dialects.
//!
//! Architecture Invariant: no SQL appears outside this crate. The kernel talks to [`Store`],
//! never to sqlx.
//! Architecture Invariant: every state change and its event row commit in one transaction.

pub mod error;
mod frozen;
pub mod model;
mod nodes;
mod ops;
mod postgres;
mod principals;
mod row;
mod sql;
mod sqlite;
#[cfg(feature = "testing")]
pub mod testing;

pub use error::StoreError;
pub use model::*;
pub use nodes::{NOTICE_PAYLOAD_MAX, Notice, NoticeListener};
pub use ops::accounts::AccountStore;
pub use ops::conversations::{
    ArchivedFilter, ConversationEventRow, ConversationRow, ConversationStore, DeliveryMode, InputInsert, InputKind,
    InputRow, InputState, NewConversation, NewInput,
};
pub use ops::events::EventStore;
pub use ops::executors::ExecutorStore;
pub use ops::history::{
    HistoryCursor, HistoryHit, HistorySearch, HistoryStore, HistoryTurn, HitTurn,
    INDEXED_CHARS as HISTORY_INDEXED_CHARS, PREFIX_MIN_CHARS as HISTORY_PREFIX_MIN_CHARS, SearchTerm,
};
pub use ops::memory::{MemoryDelete, MemoryDocRow, MemoryPut, MemoryScope, MemoryStore, NewMemoryDoc};
pub use ops::runs::RunStore;
pub use ops::sealed::SNAPSHOT_DEPTH;
pub use ops::summaries::{ConversationSummaryRow, RunSummaryRow, SUMMARY_PROMPT_CHARS, SummaryStore};
pub use ops::tasks::TaskStore;
pub use ops::turns::{NewTurn, TurnEnd, TurnRole, TurnRow, TurnStatus, TurnStore};
pub use ops::uploads::{NewUpload, UploadRow, UploadStore};
pub use postgres::PgStore;
pub use sqlite::driver::STATEMENT_TARGET as SQLITE_STATEMENT_TARGET;
pub use sqlite::{GateUse, SqliteStore};
pub use tx::{Expect, LockReads, Locked, PgTx, RunLock, SqliteTx, TaskUpdate, Tx};

mod tx;

/// The store's interface traits, for `use nexus_store::prelude::*`: [`Store`] implements one
/// per area.
pub mod prelude {
    pub use crate::{
        AccountStore, ConversationStore, EventStore, ExecutorStore, HistoryStore, MemoryStore, Migrations, RunStore,
        SummaryStore, TaskStore, TurnStore, UploadStore,
    };
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// How to open a store.
///
/// # Database URLs
///
/// - `sqlite://PATH` (also `sqlite:PATH`; `sqlite:///abs/path` is absolute): the SQLite file,
///   created with its parent directory when missing. A lock file `PATH.lock` beside it holds an
///   exclusive `flock` for the store's lifetime, so a second process (or a second open in this
///   process) on the same file is refused with [`StoreError::Config`]. `sqlite::memory:` opens
///   a private in-memory database (one connection, no lock), for tests.
/// - `postgres://…` or `postgresql://…`: any URL sqlx accepts. **Schema selection**: the
///   non-standard query parameter `schema=NAME` (for example
///   `postgres://nexus@db/nexus?schema=tenant_a`) is removed before the URL reaches sqlx, and
///   sets `search_path` to `NAME` on every pooled connection; [`Migrations::migrate`] then creates
///   the schema when missing and applies the migrations inside it. `NAME` must match
///   `[A-Za-z_][A-Za-z0-9_]*`. sqlx's own libpq-style forms also work for a schema that already
///   exists: `?options[search_path]=NAME` or `?options=-c%20search_path%3DNAME`.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// `sqlite://PATH` or `postgres://…` (see the type's docs for schema selection).
    pub url: String,
    /// SQLite `busy_timeout` in milliseconds.
    pub sqlite_busy_timeout_ms: u64,
    /// PostgreSQL pool size.
    pub postgres_max_connections: u32,
    /// SQLite only: hold the single-node advisory lock (`flock` on `<db>.lock`) for the
    /// store's lifetime. `nexus serve` sets it, so a second server on one file refuses to
    /// start; short-lived admin commands do not, so they can run beside a server.
    pub single_node_lock: bool,
    /// SQLite only: the write connection's `synchronous` setting (`[storage.sqlite]
    /// synchronous`). [`SqliteSynchronous::Full`] by default.
    pub sqlite_synchronous: SqliteSynchronous,
}

impl StoreOptions {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            sqlite_busy_timeout_ms: 5000,
            postgres_max_connections: 20,
            single_node_lock: true,
            sqlite_synchronous: SqliteSynchronous::default(),
        }
    }
}

/// How hard a SQLite commit waits for the disk (`PRAGMA synchronous`; the journal is always WAL).
///
/// `Full` (the default) syncs the WAL at every commit, so a commit the kernel acknowledged
/// survives power loss; the group commit shares one sync among the units committed together.
/// `Normal` syncs only at checkpoints: a commit survives a crash of the process at once but can
/// be lost with the machine's power until the next checkpoint, and a runner told it succeeded
/// never resends it. See docs/decisions/114-sqlite-durability.md.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SqliteSynchronous {
    #[default]
    Full,
    Normal,
}

impl SqliteSynchronous {
    /// The pragma's value, as SQLite names it.
    pub fn pragma(self) -> &'static str {
        match self {
            Self::Full => "FULL",
            Self::Normal => "NORMAL",
        }
    }

    /// The number `PRAGMA synchronous` reads back (0 off, 1 normal, 2 full, 3 extra).
    pub fn level(self) -> i64 {
        match self {
            Self::Full => 2,
            Self::Normal => 1,
        }
    }
}

/// The migrator: each engine's own, and [`Store`]'s over the one it holds.
///
/// The store's interface is one trait per area (`ops/`: [`AccountStore`], [`ExecutorStore`],
/// [`RunStore`], [`TaskStore`], [`EventStore`], [`ConversationStore`], [`TurnStore`],
/// [`HistoryStore`], [`SummaryStore`], [`MemoryStore`], [`UploadStore`]), each implemented
/// once for [`Store`]; [`prelude`] names them all. Methods that create things take ids and
/// timestamps from the caller (the kernel owns the clock and id generation), so both engines
/// write identical rows for identical calls.
#[allow(async_fn_in_trait)]
pub trait Migrations {
    /// Applies pending migrations.
    async fn migrate(&self) -> Result<()>;
    /// How many embedded migrations are not yet applied.
    async fn pending_migrations(&self) -> Result<usize>;
}

/// A store handle: one of the two engines. Cheap to clone (pools are shared).
#[derive(Clone)]
pub enum Store {
    Sqlite(SqliteStore),
    Postgres(PgStore),
}

/// The PostgreSQL arms are boxed, as in `ops::on_conn!`.
impl Migrations for Store {
    async fn migrate(&self) -> Result<()> {
        match self {
            Store::Sqlite(s) => s.migrate().await,
            Store::Postgres(s) => Box::pin(s.migrate()).await,
        }
    }
    async fn pending_migrations(&self) -> Result<usize> {
        match self {
            Store::Sqlite(s) => s.pending_migrations().await,
            Store::Postgres(s) => Box::pin(s.pending_migrations()).await,
        }
    }
}

impl Store {
    /// The principal cache of the engine (`crate::principals`).
    pub(crate) fn principals(&self) -> &principals::Principals {
        match self {
            Store::Sqlite(s) => s.principals(),
            Store::Postgres(s) => s.principals(),
        }
    }

    /// Opens the store named by `options.url` (`sqlite://…` or `postgres://…`).
    pub async fn open(options: &StoreOptions) -> Result<Store> {
        if options.url.starts_with("postgres://") || options.url.starts_with("postgresql://") {
            Ok(Store::Postgres(PgStore::open(options).await?))
        } else if options.url.starts_with("sqlite:") {
            Ok(Store::Sqlite(SqliteStore::open(options).await?))
        } else {
            Err(StoreError::Config(format!(
                "unsupported database url (expected sqlite:// or postgres://): {}",
                redact_url(&options.url)
            )))
        }
    }

    /// Opens a unit of work. SQLite: `BEGIN IMMEDIATE` (the database write lock, so the run
    /// lock is implicit); PostgreSQL: a `READ COMMITTED` transaction. Dropping the [`Tx`]
    /// without [`Tx::commit`] rolls everything back.
    pub async fn begin(&self) -> Result<Tx> {
        match self {
            Store::Sqlite(s) => Ok(Tx::Sqlite(s.begin().await?)),
            Store::Postgres(s) => Ok(Tx::Postgres(Box::pin(s.begin()).await?)),
        }
    }

    /// A `kernel_tool` job's claim, then its evaluation's unit (storage-and-scale.md §5: the
    /// job row is deleted, and the delete committed, before the evaluation starts): deletes job
    /// `job_id`, opens a unit and takes the [`Tx::lock`] of a [`LockReads::Evaluation`] of
    /// (`run_id`, `task_id`). `None` when the job was gone (another worker claimed it). On
    /// PostgreSQL the delete, its commit and the unit's first statement go out in one round
    /// trip.
    pub async fn take_kernel_job(&self, job_id: i64, run_id: i64, task_id: i64) -> Result<Option<(Tx, Locked)>> {
        match self {
            Store::Sqlite(_) => {
                if !self.delete_job(job_id).await? {
                    return Ok(None);
                }
                let mut tx = self.begin().await?;
                let lock = RunLock {
                    run_id,
                    with: LockReads::Evaluation(task_id),
                };
                let locked = tx.lock(lock).await?;
                Ok(Some((tx, locked)))
            }
            Store::Postgres(_) => {
                let mut tx = self.begin().await?;
                match tx.take_job_locking_run(job_id, run_id, task_id).await? {
                    Some(lock) => Ok(Some((tx, lock))),
                    None => {
                        tx.rollback().await?;
                        Ok(None)
                    }
                }
            }
        }
    }

    /// SQLite: the writer gate's use so far ([`SqliteStore::writer_gate_use`]).
    /// PostgreSQL has no such gate (writers wait per run row): `None`.
    pub fn writer_gate_use(&self) -> Option<GateUse> {
        match self {
            Store::Sqlite(s) => Some(s.writer_gate_use()),
            Store::Postgres(_) => None,
        }
    }

    /// `sqlite` or `postgres`.
    pub fn dialect(&self) -> &'static str {
        match self {
            Store::Sqlite(_) => "sqlite",
            Store::Postgres(_) => "postgres",
        }
    }
}

/// The text guard (storage-and-scale.md §3): a string bound for storage must not hold U+0000.
/// Both engines call it before every write, so they refuse the same values.
pub(crate) fn check_text(value: &str) -> Result<()> {
    if value.contains('\0') {
        Err(StoreError::UnsupportedText)
    } else {
        Ok(())
    }
}

/// The text guard over a JSON value: no string (member names included) may hold U+0000, even
/// though serialization would escape it.
pub(crate) fn check_json(value: &serde_json::Value) -> Result<()> {
    match value {
        serde_json::Value::String(s) => check_text(s),
        serde_json::Value::Array(items) => items.iter().try_for_each(check_json),
        serde_json::Value::Object(members) => members.iter().try_for_each(|(k, v)| {
            check_text(k)?;
            check_json(v)
        }),
        _ => Ok(()),
    }
}

/// Maps a sqlx error from a write: a unique violation is a [`StoreError::Conflict`], a foreign
/// key violation a [`StoreError::NotFound`] (the referenced row is missing).
pub(crate) fn write_error<E: WriteFailure>(error: E) -> StoreError {
    error.classify()
}

/// A driver error as the store reports a failed write: a unique violation is `Conflict`, a
/// foreign key violation `NotFound` ([`FK_MISSING`]), anything else the engine's database error.
pub(crate) trait WriteFailure {
    fn classify(self) -> StoreError;
}

impl WriteFailure for sqlx::Error {
    fn classify(self) -> StoreError {
        if let Some(db) = self.as_database_error() {
            if db.is_unique_violation() {
                return StoreError::Conflict(db.message().to_string());
            }
            if db.is_foreign_key_violation() {
                return StoreError::NotFound(format!("{FK_MISSING}: {}", db.message()));
            }
        }
        StoreError::from(self)
    }
}

impl WriteFailure for rusqlite::Error {
    fn classify(self) -> StoreError {
        if sqlite::is_unique_violation(&self) {
            return StoreError::Conflict(sqlite::message(&self));
        }
        if sqlite::is_foreign_key_violation(&self) {
            return StoreError::NotFound(format!("{FK_MISSING}: {}", sqlite::message(&self)));
        }
        StoreError::Sqlite(self)
    }
}

/// The message prefix of a foreign key violation's [`StoreError::NotFound`].
pub(crate) const FK_MISSING: &str = "a referenced row is missing";
/// The message prefix of [`Tx::idempotency_put`]'s conflict, which no statement failure caused.
pub(crate) const RECEIPT_TAKEN: &str = "an idempotency receipt already holds scope";

/// Whether an error means a statement failed in the database, which aborts a PostgreSQL
/// transaction (so [`Tx`] voids itself on both engines). The store's own answers (a missing
/// run found by a read, a taken receipt scope, the text guard, a bad argument) do not.
pub(crate) fn voids_transaction(error: &StoreError) -> bool {
    match error {
        StoreError::Database(_) | StoreError::Sqlite(_) | StoreError::Migration(_) => true,
        StoreError::Conflict(m) => !m.starts_with(RECEIPT_TAKEN),
        StoreError::NotFound(m) => m.starts_with(FK_MISSING),
        StoreError::Config(_)
        | StoreError::Corrupt(_)
        | StoreError::UnsupportedText
        | StoreError::TxAborted
        | StoreError::Busy => false,
    }
}

/// A URL with any password replaced, for logs and errors.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.find(':') {
                Some(colon) => format!("{}{}:***{}", &url[..scheme + 3], &userinfo[..colon], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}
