//! The Nexus store: one interface ([`Engine`]), two engines (SQLite, the embedded default, and
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
pub use ops::conversations::{
    ArchivedFilter, ConversationEventRow, ConversationRow, DeliveryMode, InputInsert, InputKind, InputRow, InputState,
    NewConversation, NewInput,
};
pub use ops::history::{
    HistoryCursor, HistoryHit, HistorySearch, HistoryTurn, HitTurn, INDEXED_CHARS as HISTORY_INDEXED_CHARS,
    PREFIX_MIN_CHARS as HISTORY_PREFIX_MIN_CHARS, SearchTerm,
};
pub use ops::memory::{MemoryDelete, MemoryDocRow, MemoryPut, MemoryScope, NewMemoryDoc};
pub use ops::sealed::SNAPSHOT_DEPTH;
pub use ops::summaries::{ConversationSummaryRow, RunSummaryRow, SUMMARY_PROMPT_CHARS};
pub use ops::turns::{NewTurn, TurnEnd, TurnRole, TurnRow, TurnStatus};
pub use ops::uploads::{NewUpload, UploadRow};
pub use postgres::PgStore;
pub use sqlite::driver::STATEMENT_TARGET as SQLITE_STATEMENT_TARGET;
pub use sqlite::{GateUse, SqliteStore};
pub use tx::{Expect, LockReads, Locked, PgTx, RunLock, SqliteTx, TaskUpdate, Tx};

mod tx;

use uuid::Uuid;

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
///   sets `search_path` to `NAME` on every pooled connection; [`Engine::migrate`] then creates
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

/// The one store interface. Both engines implement it; [`Store`] dispatches to one of them.
///
/// Methods that create things take ids and timestamps from the caller (the kernel owns the
/// clock and id generation), so both engines write identical rows for identical calls.
#[allow(async_fn_in_trait)]
pub trait Engine {
    /// Applies pending migrations.
    async fn migrate(&self) -> Result<()>;
    /// How many embedded migrations are not yet applied.
    async fn pending_migrations(&self) -> Result<usize>;

    // ---- accounts and workspaces ----
    /// Returns the account with `handle`, creating it (with `public_id`) when absent.
    async fn ensure_account(&self, public_id: Uuid, handle: &str, now: i64) -> Result<AccountRow>;
    async fn account_by_id(&self, id: i64) -> Result<Option<AccountRow>>;
    /// Returns the workspace with `handle` in the account, creating it when absent.
    async fn ensure_workspace(&self, public_id: Uuid, account_id: i64, handle: &str, now: i64) -> Result<WorkspaceRow>;
    async fn workspace_by_public_id(&self, public_id: Uuid) -> Result<Option<WorkspaceRow>>;
    /// The workspace with internal id `id`.
    async fn workspace_by_id(&self, id: i64) -> Result<Option<WorkspaceRow>>;
    /// Upserts a member's standing in a workspace.
    async fn set_standing(&self, workspace_id: i64, member_id: i64, standing: Standing) -> Result<()>;
    async fn standing(&self, workspace_id: i64, member_id: i64) -> Result<Option<Standing>>;

    // ---- members ----
    /// Creates a member. An agent (with `agent_executor_public_id`) also gets its
    /// agent_application executor, managed by its steward, in the same transaction.
    /// A taken handle is `StoreError::Conflict`.
    async fn create_member(&self, new: NewMember) -> Result<(MemberRow, Option<ExecutorRow>)>;
    async fn member_by_id(&self, id: i64) -> Result<Option<MemberRow>>;
    async fn member_by_public_id(&self, public_id: Uuid) -> Result<Option<MemberRow>>;
    async fn member_by_handle(&self, account_id: i64, handle: &str) -> Result<Option<MemberRow>>;
    /// The members holding standing in the workspace, with it, ordered by handle.
    async fn workspace_members(&self, workspace_id: i64) -> Result<Vec<(MemberRow, Standing)>>;
    /// Replaces an agent's stored configuration JSON (whole replacement).
    async fn set_member_configuration(&self, member_id: i64, configuration: Option<&str>, now: i64) -> Result<()>;

    // ---- executors ----
    /// Registers a runner. Only one non-revoked runner may exist per (account, manager,
    /// display_name): a second is `StoreError::Conflict`.
    async fn create_runner(&self, new: NewRunner) -> Result<ExecutorRow>;
    async fn executor_by_id(&self, id: i64) -> Result<Option<ExecutorRow>>;
    async fn executor_by_public_id(&self, public_id: Uuid) -> Result<Option<ExecutorRow>>;
    /// The non-revoked runner with this registration name under this manager.
    async fn active_runner_by_name(&self, account_id: i64, manager_id: i64, name: &str) -> Result<Option<ExecutorRow>>;
    /// The agent_application executor of an agent member.
    async fn agent_application_of(&self, agent_member_id: i64) -> Result<Option<ExecutorRow>>;
    /// Every executor of the account (optionally of one kind), ordered by id.
    async fn list_executors(&self, account_id: i64, kind: Option<ExecutorKind>) -> Result<Vec<ExecutorRow>>;
    /// Increments `credential_epoch` and returns the new epoch; older transport credentials
    /// are fenced from then on.
    async fn advance_executor_epoch(&self, executor_id: i64) -> Result<i64>;
    /// Marks the executor `revoked`.
    async fn revoke_executor(&self, executor_id: i64, now: i64) -> Result<()>;
    /// Replaces the stored announcement whole and sets `last_seen_at = now`.
    async fn put_announcement(&self, executor_id: i64, announcement: &Announcement, now: i64) -> Result<()>;
    /// Sets `last_seen_at = now` (the executor's push channel opened or closed).
    async fn mark_executor_seen(&self, executor_id: i64, now: i64) -> Result<()>;

    // ---- credentials ----
    async fn insert_credential(&self, new: NewCredential) -> Result<CredentialRow>;
    async fn credential_by_public_id(&self, public_id: Uuid) -> Result<Option<CredentialRow>>;
    /// The credential with its executor's row (`None` beside a member credential), in one read.
    async fn credential_with_executor(&self, public_id: Uuid) -> Result<Option<(CredentialRow, Option<ExecutorRow>)>>;
    /// Sets `revoked_at`; returns false when the credential does not exist or was revoked.
    async fn revoke_credential(&self, public_id: Uuid, now: i64) -> Result<bool>;
    /// Whether a non-revoked, unexpired transport credential exists at `epoch`.
    async fn has_transport_credential_at(&self, executor_id: i64, epoch: i64, now: i64) -> Result<bool>;

    // ---- runs (reads outside a transaction; writes go through [`Tx`]) ----
    async fn run_by_id(&self, id: i64) -> Result<Option<RunRow>>;
    async fn run_by_public_id(&self, public_id: Uuid) -> Result<Option<RunRow>>;
    /// The run `public_id` with its workspace's public id and its creator's standing, when that
    /// workspace belongs to `account_id` (one read; `None` for an unknown run or another
    /// account's).
    async fn run_in_account(&self, public_id: Uuid, account_id: i64) -> Result<Option<RunInAccount>>;
    /// The workspace's runs with `id > after_id` (optionally of one status), by id, at most
    /// `limit`.
    async fn runs_of_workspace(
        &self,
        workspace_id: i64,
        status: Option<RunStatus>,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<RunRow>>;
    /// The workspace's runs with `id < before_id` (optionally of one status), newest first, at
    /// most `limit` (`GET W/runs?order=desc`; pass `i64::MAX` for the first page).
    async fn runs_of_workspace_newest(
        &self,
        workspace_id: i64,
        status: Option<RunStatus>,
        before_id: i64,
        limit: i64,
    ) -> Result<Vec<RunRow>>;
    /// The run's tasks with `id > after_id`, by id, at most `limit`.
    async fn tasks_of_run(&self, run_id: i64, after_id: i64, limit: i64) -> Result<Vec<TaskRow>>;
    async fn task_by_key(&self, run_id: i64, key: &str) -> Result<Option<TaskRow>>;
    async fn task_by_id(&self, id: i64) -> Result<Option<TaskRow>>;
    /// The run's rows whose `declaring_task_id` is `declaring_id`, by id.
    async fn tasks_declared_by(&self, run_id: i64, declaring_id: i64) -> Result<Vec<TaskRow>>;
    /// The task `id`, its declaring row (whatever their runs), and the rows of run `run_id`
    /// that the declaring row declared, by id: a continuation round with its predecessor and
    /// the predecessor's fan, in one read.
    async fn task_neighbourhood(&self, run_id: i64, id: i64) -> Result<Vec<TaskRow>>;

    /// The task `id` and the rows it depends on, by id (one task's read, without its run).
    async fn task_and_deps(&self, id: i64) -> Result<Vec<TaskRow>>;

    /// Every edge among the run's tasks, by (task_id, depends_on_id, kind).
    async fn edges_of_run(&self, run_id: i64) -> Result<Vec<EdgeRow>>;
    /// The edges out of task `task_id` (what it depends on), by (depends_on_id, kind).
    async fn edges_from(&self, task_id: i64) -> Result<Vec<EdgeRow>>;
    /// The run's events with `sequence > after_sequence`, in order, at most `limit`.
    async fn events_after(&self, run_id: i64, after_sequence: i64, limit: i64) -> Result<Vec<EventRow>>;
    /// `runs.last_event_sequence` (0 before the first event); `NotFound` for no such run.
    async fn latest_event_sequence(&self, run_id: i64) -> Result<i64>;
    async fn sealed_request(&self, task_id: i64, generation: i64) -> Result<Option<SealedRequestRow>>;
    /// The run's model rounds in creation order, with what the cache report reads.
    async fn round_cache_facts(&self, run_id: i64) -> Result<Vec<RoundCacheFacts>>;
    /// One summary per run of `run_ids` that has tasks (`GET W/runs`; one read for a page).
    async fn run_summaries(&self, run_ids: &[i64]) -> Result<Vec<RunSummaryRow>>;
    /// One summary per conversation of `conversation_ids` (`GET W/conversations`).
    async fn conversation_summaries(&self, conversation_ids: &[i64]) -> Result<Vec<ConversationSummaryRow>>;

    // ---- jobs (storage-and-scale.md §5) ----
    async fn job_by_id(&self, job_id: i64) -> Result<Option<JobRow>>;
    /// Leases up to `limit` jobs with `available_at <= now` and no live lease
    /// (`locked_until IS NULL OR locked_until < now`) to `node_id` until `now + lease_ms`,
    /// counting an attempt on each; by id. PostgreSQL: `FOR UPDATE SKIP LOCKED`; SQLite: one
    /// `UPDATE … RETURNING` in `BEGIN IMMEDIATE`. No job goes to two nodes at once. A leased
    /// row whose kind does not read is answered in [`Dequeued::unreadable`], not as an error:
    /// the caller holds its run and removes it.
    async fn dequeue_jobs(&self, node_id: &str, now: i64, lease_ms: i64, limit: i64) -> Result<Dequeued>;
    /// Extends the lease to `now + lease_ms` when `node_id` still holds it; false otherwise.
    async fn renew_job_lease(&self, job_id: i64, node_id: &str, now: i64, lease_ms: i64) -> Result<bool>;
    /// Clears every lease held by `node_id` (at start: an earlier process of this node is
    /// gone). Returns how many were released.
    async fn release_node_leases(&self, node_id: &str) -> Result<u64>;
    /// Unlocks the job and makes it available at `available_at` (a retry later).
    async fn requeue_job(&self, job_id: i64, available_at: i64) -> Result<bool>;
    /// Deletes the job; false when it was already gone.
    async fn delete_job(&self, job_id: i64) -> Result<bool>;

    // ---- the sweep and the approval queue ----
    /// `(run_id, task_id)` of parked tasks (`needs_approval | running | dispatched |
    /// awaiting_input`) with `deadline_at <= now` and `id > after_task_id` on runs that are not
    /// `completed | canceled`, by task id, at most `limit` (the sweep uses 500).
    async fn expired_parks(&self, now: i64, after_task_id: i64, limit: i64) -> Result<Vec<(i64, i64)>>;
    /// `(run_id, task_id)` of parks addressed to a `revoked` executor on runs that are not
    /// `completed | canceled`: unclaimed `dispatched` tool rows and tool rows at
    /// `needs_approval`, with `id > after_task_id`, by task id, at most `limit`.
    async fn revoked_parks(&self, after_task_id: i64, limit: i64) -> Result<Vec<(i64, i64)>>;
    /// Tasks at `needs_approval` on the workspace's runs with `id > after_task_id`, oldest
    /// (lowest id) first, at most `limit`.
    async fn held_approvals(&self, workspace_id: i64, after_task_id: i64, limit: i64) -> Result<Vec<TaskRow>>;
    /// The inbox page: tasks addressed to `executor_id` in one of [`INBOX_STATUSES`] with
    /// `id > after_task_id`, on runs `running | canceling`, by id, at most `limit`; each with
    /// its run's row (one read for the page, which reads no more rows than it returns but for
    /// rows of runs that are no longer live).
    async fn inbox_page(&self, executor_id: i64, after_task_id: i64, limit: i64) -> Result<Vec<(TaskRow, RunRow)>>;

    // ---- idempotency receipts (errors-and-auth.md §6) ----
    /// The unexpired receipt (`expires_at > now`) of the scope.
    async fn idempotency_get(&self, scope_hash: &str, now: i64) -> Result<Option<ReceiptRow>>;
    /// Deletes receipts with `expires_at <= now`; returns how many.
    async fn purge_idempotency_receipts(&self, now: i64) -> Result<u64>;

    // ---- conversations (migration 0017, runs.md §12; writes go through [`Tx`]) ----
    /// The conversation with this internal id.
    async fn conversation_by_id(&self, id: i64) -> Result<Option<ConversationRow>>;
    /// The conversation with this public id.
    async fn conversation_by_public_id(&self, public_id: Uuid) -> Result<Option<ConversationRow>>;
    /// A page of the workspace's top-level conversations (no parent), ids ascending after
    /// `after_id`, filtered by their archive mark.
    async fn top_level_conversations(
        &self,
        workspace_id: i64,
        filter: ArchivedFilter,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<ConversationRow>>;
    /// The direct children of a conversation, ids ascending.
    async fn conversation_children(&self, parent_id: i64) -> Result<Vec<ConversationRow>>;
    /// A page of a conversation's feed, sequences ascending after `after_sequence`.
    async fn conversation_events(
        &self,
        conversation_id: i64,
        after_sequence: i64,
        limit: i64,
    ) -> Result<Vec<ConversationEventRow>>;
    /// `conversations.last_event_sequence` (0 before the first event); `NotFound` for no such
    /// conversation.
    async fn latest_conversation_event_sequence(&self, conversation_id: i64) -> Result<i64>;
    /// A page of a conversation's inputs, ids ascending after `after_id`.
    async fn conversation_inputs(&self, conversation_id: i64, after_id: i64, limit: i64) -> Result<Vec<InputRow>>;

    // ---- turns (migration 0018, runs.md §12; writes go through [`Tx`]) ----
    async fn turn_by_id(&self, id: i64) -> Result<Option<TurnRow>>;
    async fn turn_by_public_id(&self, conversation_id: i64, public_id: Uuid) -> Result<Option<TurnRow>>;
    /// The assistant turn a run hosts.
    async fn turn_of_run(&self, run_id: i64) -> Result<Option<TurnRow>>;
    /// Turns after `position` ascending, or (`newest_first`) before it descending.
    async fn turns_page(
        &self,
        conversation_id: i64,
        position: i64,
        limit: i64,
        newest_first: bool,
    ) -> Result<Vec<TurnRow>>;
    /// The latest ended assistant turn.
    async fn last_reply(&self, conversation_id: i64) -> Result<Option<TurnRow>>;
    /// The round a new turn's history starts from: the final round of the latest ended
    /// assistant turn that has a sealed request (turns that left none are passed over).
    async fn history_round(&self, conversation_id: i64) -> Result<Option<i64>>;
    /// Conversations whose `wake_at` has come, earliest first.
    async fn due_conversations(&self, now: i64, limit: i64) -> Result<Vec<i64>>;
    /// How many inputs of the conversation are `pending`.
    async fn pending_input_count(&self, conversation_id: i64) -> Result<i64>;
    /// The child of `parent_id` with this label.
    async fn child_by_label(&self, parent_id: i64, label: &str) -> Result<Option<ConversationRow>>;
    /// The steers bound to a turn and not yet delivered, oldest first.
    async fn steers_of_turn(&self, turn_id: i64) -> Result<Vec<InputRow>>;

    // ---- conversation history (migration 0019, kernel-tools.md §10; also on [`Tx`]) ----
    /// One page of the ranked full-text search over a workspace's titles and turn text
    /// (`ops/history.rs` says how terms match and hits rank).
    async fn search_history(&self, search: &HistorySearch<'_>) -> Result<Vec<HistoryHit>>;
    /// Turns after `position` ascending, or (`newest_first`) before it descending, each text
    /// cut to `chars` characters.
    async fn history_turns(
        &self,
        conversation_id: i64,
        position: i64,
        limit: i64,
        newest_first: bool,
        chars: i64,
    ) -> Result<Vec<HistoryTurn>>;
    /// The position of the conversation's turn `public_id`.
    async fn turn_position(&self, conversation_id: i64, public_id: Uuid) -> Result<Option<i64>>;

    // ---- memory documents (migration 0004, kernel-tools.md §8; also on [`Tx`]) ----
    /// The document at `path` of (scope, owner).
    async fn memory_document(&self, scope: MemoryScope, owner_id: i64, path: &str) -> Result<Option<MemoryDocRow>>;
    /// Every document of (scope, owner), sorted by path bytes; `with_content: false` leaves
    /// `content` empty.
    async fn memory_documents(
        &self,
        scope: MemoryScope,
        owner_id: i64,
        with_content: bool,
    ) -> Result<Vec<MemoryDocRow>>;
    /// Creates (`lock_version` 1) or replaces (version + 1) a document in one write
    /// transaction. `expected_lock_version` (0 = no document) must equal the stored version
    /// when given (`Stale`); a new document past `bound` documents of (scope, owner) is `Full`.
    async fn memory_put(&self, new: NewMemoryDoc, expected_lock_version: Option<i64>, bound: i64) -> Result<MemoryPut>;
    /// Deletes a document, conditionally on `expected_lock_version` when given.
    async fn memory_delete(
        &self,
        scope: MemoryScope,
        owner_id: i64,
        path: &str,
        expected_lock_version: Option<i64>,
    ) -> Result<MemoryDelete>;
    /// The workspace with `handle` in the account (no creation).
    async fn workspace_by_handle(&self, account_id: i64, handle: &str) -> Result<Option<WorkspaceRow>>;

    // ---- uploads (migration 0003; writes go through [`Tx`]) ----
    async fn upload_by_public_id(&self, public_id: Uuid) -> Result<Option<UploadRow>>;
    /// Whether the upload is bound to a task of a run in a workspace where the member has
    /// standing (uploads.md §6).
    async fn upload_readable_via_workspace(&self, upload_id: i64, member_id: i64) -> Result<bool>;
    /// Whether the upload is bound to a task of the run.
    async fn upload_bound_in_run(&self, upload_id: i64, run_id: i64) -> Result<bool>;
    /// Every upload bound to a task of the run, by id.
    async fn bound_uploads_of_run(&self, run_id: i64) -> Result<Vec<UploadRow>>;

    // ---- blob bodies (migration 0022: blobs kept in the database, one write per digest) ----
    /// Stores a blob's bytes under `sha256` (a no-op when they are there).
    async fn put_blob_body(&self, sha256: &str, body: &[u8]) -> Result<()>;
    /// `len` bytes of the blob from byte `start` (fewer at its end); `None`: no such blob.
    async fn blob_body_range(&self, sha256: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>>;
    /// Removes a blob's bytes (absent is fine).
    async fn delete_blob_body(&self, sha256: &str) -> Result<()>;
}

/// A store handle: one of the two engines. Cheap to clone (pools are shared).
#[derive(Clone)]
pub enum Store {
    Sqlite(SqliteStore),
    Postgres(PgStore),
}

/// Calls the engine's method. The PostgreSQL arm is boxed: a future that awaits sqlx's pool
/// and statements is about 8.7 KB, and inline it would size every store call's future — and
/// so every kernel and handler future that awaits one — on SQLite too, whose own are small. Every
/// move of those futures (axum and tower move a handler's several times) copied that much
/// (docs/decisions/119-futures-and-allocation.md). PostgreSQL pays one allocation per call beside a
/// network round trip.
macro_rules! dispatch {
    ($self:ident, $method:ident ( $($arg:expr),* )) => {
        match $self {
            Store::Sqlite(s) => s.$method($($arg),*).await,
            Store::Postgres(s) => Box::pin(s.$method($($arg),*)).await,
        }
    };
}

mod dispatch;

impl Store {
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
