//! The unit of work: one transaction on either engine, through which the kernel writes run
//! state so that each change and its event commit together (storage-and-scale.md §3). Its
//! contract, the same on both engines, is all here; how an engine keeps it is its own business
//! (PostgreSQL's: `postgres/unit/`).
//!
//! - **Begin and lock.** [`crate::Store::begin`] opens it; [`Tx::lock`] takes a run's lock and
//!   reads what a typed request names under it ([`RunLock`], [`LockReads`]). Lock order: the
//!   run row first, then task rows by ascending id. (PostgreSQL: `SELECT … FOR UPDATE`; SQLite:
//!   `BEGIN IMMEDIATE` already holds the database write lock.)
//! - **Reads** see the database as the unit's own writes left it.
//! - **Buffered writes** (`put_*`, `delete_*`, [`Tx::update_run`]) answer `Result<()>` and may
//!   be sent later: before the unit's next read, or with its commit. A buffered write's failure
//!   is therefore answered by that read or the commit (SQLite sends each at once, and answers
//!   it there; PostgreSQL sends them with the next statement).
//! - **Answering writes** (`insert_*` returning a row or an id, [`Tx::update_task`] returning
//!   whether the row met its [`Expect`]) answer on the call. A task row the unit read or wrote
//!   under its run's lock is known as stored (`tx/known.rs`): an update of it is decided on that
//!   row, without reading it again, whatever the caller's copy holds.
//! - **Ids.** The kernel names no id it was not given: an insert answers its row's id. A run's
//!   rows take ascending ids in the order the unit inserts them, on any node. (PostgreSQL may
//!   take ids ahead of a unit's inserts and buffer them; that is private to it.)
//! - **Failure voids the unit.** A statement that fails in the database (a unique or foreign
//!   key violation: `Conflict`, `NotFound`; or `Database`) voids the unit on both engines, as
//!   PostgreSQL aborts the transaction: every later call and the commit answer
//!   [`StoreError::TxAborted`]; drop it and begin again. A key already used (a task key in its
//!   run, a sealed generation) is [`StoreError::Conflict`], whichever call answers it: the
//!   insert, or the read or commit a buffered insert went out with (`tests/key_conflicts.rs`).
//!   The store's own answers do not void it: `NotFound` for a missing run found by a read
//!   ([`Tx::lock`], `update_run`, `append_event`), the text guard, a bad argument (`Config`),
//!   and the two designed non-failures — [`Tx::idempotency_put`]'s `Conflict` for a taken
//!   scope and [`Tx::insert_edge`]'s `false` for an existing edge.
//! - **End.** [`Tx::commit`] commits every change and event, or answers why not; a `Tx`
//!   dropped without it rolls back: neither its changes nor its events exist.

use serde_json::Value;

use crate::model::*;
use crate::{Result, StoreError, postgres, sqlite, voids_transaction, write_error};

/// An open SQLite transaction (`BEGIN IMMEDIATE`).
pub struct SqliteTx {
    /// The transaction and the writer gate it holds (`sqlite/gate.rs`).
    pub(crate) tx: sqlite::GatedTx,
    /// A statement failed in the database: the unit of work is void.
    pub(crate) void: bool,
    /// The runs this unit of work has read or appended to, with each one's latest event
    /// sequence as it stands inside the unit. The write lock is held from `BEGIN`, so no other
    /// writer moves a sequence, and inside the unit only [`Tx::append_event`] does. An append to
    /// a run listed here takes the next sequence without reading the run row back.
    sequences: Vec<RunSequence>,
    /// The task rows the unit knows as stored (`tx/known.rs`).
    known: known::Known,
}

/// A run's latest event sequence inside a SQLite unit of work. The appends do not write the run
/// row (no trigger since migration 0012: each append rewrote the run row); the unit writes it
/// once, with its own [`Tx::update_run`] of the run or else just before it commits, and a run
/// row read inside the unit is given the unit's sequence. So `runs.last_event_sequence` is
/// right in every committed state, as on PostgreSQL, whose append moves it in the same statement.
#[derive(Debug, Clone, Copy)]
struct RunSequence {
    run_id: i64,
    last: i64,
    /// The run row holds `last` (false after an append, until the unit writes it).
    stored: bool,
}

impl SqliteTx {
    pub(crate) fn new(tx: sqlite::GatedTx) -> Self {
        Self {
            tx,
            void: false,
            sequences: Vec::new(),
            known: known::Known::default(),
        }
    }
}

impl std::fmt::Debug for SqliteTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqliteTx")
    }
}

/// The unit of work, from [`crate::Store::begin`]. Dispatches to the engine like
/// [`crate::Store`].
#[derive(Debug)]
pub enum Tx {
    Sqlite(SqliteTx),
    Postgres(PgTx),
}

/// Runs one operation on the engine's transaction. A void unit of work refuses it
/// (`TxAborted`); a statement failure voids the unit of work, on both engines alike (PostgreSQL
/// aborts the transaction; SQLite would carry on, so the flag keeps the engines in step).
/// The PostgreSQL arm is boxed, as in `crate::Store`'s dispatch, so sqlx's large futures do
/// not size the SQLite path's.
macro_rules! tx_dispatch {
    ($self:ident, $area:ident :: $f:ident ( $($arg:expr),* )) => {
        tx_dispatch!(@run $self, |c| crate::ops::$area::$f(c, $($arg),*), |c| crate::ops::$area::$f(c, $($arg),*))
    };
    ($self:ident, $f:ident ( $($arg:expr),* )) => {
        tx_dispatch!(@run $self, |c| sqlite::ops::$f(c, $($arg),*), |c| postgres::ops::$f(c, $($arg),*))
    };
    (@run $self:ident, |$c:ident| $lite:expr, |$p:ident| $pg:expr) => {{
        let (void, result) = match $self {
            Tx::Sqlite(t) => {
                if t.void {
                    return Err(StoreError::TxAborted);
                }
                let $c = &mut *t.tx;
                (&mut t.void, $lite.await)
            }
            Tx::Postgres(t) => {
                if t.void {
                    return Err(StoreError::TxAborted);
                }
                let held = t.deferred.take_buffered();
                let tx = &mut t.tx;
                let result = Box::pin(async move {
                    tx.ensure_begun().await?;
                    if let Some(held) = held {
                        // A buffered write's failure is a write's: a used key is `Conflict`.
                        tx.execute_simple(&held).await.map_err(write_error)?;
                    }
                    let $p = &mut **tx;
                    $pg.await
                })
                .await;
                (&mut t.void, result)
            }
        };
        if let Err(e) = &result {
            if voids_transaction(e) {
                *void = true;
            }
        }
        result
    }};
}

impl Tx {
    /// Commits every change and event of the unit of work. A void unit of work (an earlier
    /// statement failed) is rolled back instead and answers `TxAborted`: a commit never
    /// silently loses the work. On SQLite the run rows first take the sequences of the unit's
    /// appends that no [`Tx::update_run`] wrote ([`RunSequence`]).
    pub async fn commit(mut self) -> Result<()> {
        self.store_sequences().await?;
        match self {
            Tx::Sqlite(t) if t.void => Err(StoreError::TxAborted),
            Tx::Postgres(t) if t.void => Err(StoreError::TxAborted),
            Tx::Sqlite(t) => t.tx.commit().await.map_err(write_error),
            Tx::Postgres(mut t) => match t.deferred.commit_statements() {
                Some(stmts) => Box::pin(t.tx.commit_with(&stmts)).await.map_err(write_error),
                None => Box::pin(t.tx.commit()).await.map_err(write_error),
            },
        }
    }

    /// Rolls back explicitly (dropping the `Tx` does the same).
    pub async fn rollback(self) -> Result<()> {
        match self {
            Tx::Sqlite(t) => Ok(t.tx.rollback().await?),
            Tx::Postgres(t) => Ok(Box::pin(t.tx.rollback()).await?),
        }
    }

    /// Whether an earlier statement failed, so that only dropping the unit of work remains.
    pub fn is_void(&self) -> bool {
        match self {
            Tx::Sqlite(t) => t.void,
            Tx::Postgres(t) => t.void,
        }
    }

    /// `sqlite` or `postgres`.
    pub fn dialect(&self) -> &'static str {
        match self {
            Tx::Sqlite(_) => "sqlite",
            Tx::Postgres(_) => "postgres",
        }
    }

    // ---- runs ----

    /// Locks the run row and returns it, fresh. PostgreSQL: `SELECT … FOR UPDATE`; SQLite:
    /// a plain read (the write lock is held). `NotFound` for no such run.
    pub async fn lock_run(&mut self, run_id: i64) -> Result<RunRow> {
        let mut run = match self {
            // A unit's first statement: `BEGIN` goes with it.
            Tx::Postgres(t) if t.first_statement() => {
                let result = Box::pin(postgres::ops::begin_locking_run(&mut t.tx, run_id)).await;
                if result.as_ref().is_err_and(voids_transaction) {
                    t.void = true;
                }
                result?
            }
            _ => tx_dispatch!(self, lock_run(run_id))?,
        };
        self.note_locked(&mut run);
        Ok(run)
    }

    /// The run row locked for this unit unless another transaction holds it (PostgreSQL `FOR
    /// UPDATE SKIP LOCKED`; `None` then, or when there is no such run). SQLite's unit already
    /// holds the write lock, so there it is [`Tx::lock_run`] (`None`: no such run).
    pub async fn try_lock_run(&mut self, run_id: i64) -> Result<Option<RunRow>> {
        let mut run = tx_dispatch!(self, try_lock_run(run_id))?;
        if let Some(run) = run.as_mut() {
            self.note_locked(run);
        }
        Ok(run)
    }

    /// Inserts a run (`last_event_sequence` 0, no deliverable, no attention). A taken public id
    /// is `Conflict`.
    pub async fn insert_run(&mut self, new: NewRun) -> Result<RunRow> {
        let mut run = tx_dispatch!(self, insert_run(&new))?;
        self.note_locked(&mut run);
        Ok(run)
    }

    /// Writes the run's mutable columns: `status`, `deliverable_task_id`, `revision`,
    /// `attention`, `started_at`, `ended_at`, `default_runner_id`. Never `run`'s
    /// `last_event_sequence` (only [`Tx::append_event`] moves it): on SQLite the same statement
    /// writes the sequence of the unit's appends to the run, when the row does not hold it yet
    /// ([`RunSequence`]). `NotFound` for no such run.
    pub async fn update_run(&mut self, run: &RunRow) -> Result<()> {
        if let Tx::Postgres(t) = self
            && let Some(buffered) = t.buffer_run_update(run)
        {
            // Under the lock the row is there: the update is buffered.
            return buffered;
        }
        let sequence = self.unstored_sequence(run.id);
        tx_dispatch!(self, update_run(run, sequence))?;
        self.mark_stored(run.id);
        Ok(())
    }

    /// Moves a run whose row does not read (a [`StoreError::Corrupt`] word) to
    /// `needs_attention` with `attention {reason, task_key: null}` and its
    /// `run_status_changed {from, to, reason}` event, reading and writing only the columns
    /// that needs: the one statement of a unit of its own. False when the run is gone, has
    /// ended or is already held.
    pub async fn hold_unreadable_run(&mut self, run_id: i64, reason: &str, at: i64) -> Result<bool> {
        tx_dispatch!(self, hold_unreadable_run(run_id, reason, at))
    }

    pub async fn run_by_id(&mut self, run_id: i64) -> Result<Option<RunRow>> {
        let mut run = tx_dispatch!(self, run_by_id(run_id))?;
        if let Some(r) = &mut run {
            self.note_read(r);
        }
        Ok(run)
    }

    // ---- events ----

    /// Increments `runs.last_event_sequence` (under the run lock) and inserts the event with
    /// that sequence: 1, 2, 3, … per run, without gaps. `data` is stored as compact JSON
    /// (member order kept). `NotFound` for no such run.
    pub async fn append_event(
        &mut self,
        run_id: i64,
        kind: crate::EventKind,
        task_key: Option<&str>,
        data: &Value,
        at: i64,
    ) -> Result<EventRow> {
        if let Tx::Postgres(t) = self {
            if t.void {
                return Err(StoreError::TxAborted);
            }
            if let Some(row) = t.deferred.append(run_id, kind, task_key, data, at)? {
                return Ok(row);
            }
        }
        let known = self.known_sequence(run_id);
        let row = tx_dispatch!(self, append_event(run_id, known, kind, task_key, data, at))?;
        self.note_append(run_id, row.sequence);
        Ok(row)
    }

    // ---- tasks ----

    /// Inserts a task: the only write of a frozen context, whose body is stored once per distinct
    /// content (`frozen_contexts`, migration 0014; the row keeps its digest). A key already used in
    /// the run is `Conflict` (which aborts a PostgreSQL transaction: check
    /// [`Tx::task_by_key`] first when a repeat is expected).
    ///
    /// On PostgreSQL under an id the unit took ahead (`postgres/unit/reserved.rs`), the insert is buffered
    /// with the unit's writes; else, with writes buffered, it goes out at the end of their simple
    /// query (`postgres/unit/after_buffered.rs`).
    pub async fn insert_task(&mut self, new: NewTask) -> Result<TaskRow> {
        if let Tx::Postgres(t) = self
            && let Some(id) = t.take_reserved_id(false)
        {
            let row = t.buffer_task_insert(id, new)?;
            self.remember(&row);
            return Ok(row);
        }
        let after_held = match self {
            Tx::Postgres(t) => t.insert_task_after_buffered(&new).await,
            Tx::Sqlite(_) => None,
        };
        let row = match after_held {
            Some(row) => row?,
            None => tx_dispatch!(self, insert_task(&new))?,
        };
        self.remember(&row);
        Ok(row)
    }

    /// An executor door's rows inside the unit of work: the run `public_id` as the account
    /// `account_id` finds it ([`crate::RunStore::run_in_account`]: `None` when it is not there),
    /// read under the run lock, and its task keyed `key`. One statement on SQLite, whose writer
    /// page cache no commit invalidates (a reader starts cold after every commit); on
    /// PostgreSQL the lookup that takes the run lock, then the row.
    pub async fn open_door(
        &mut self,
        public_id: uuid::Uuid,
        account_id: i64,
        key: &str,
    ) -> Result<Option<(RunInAccount, Option<TaskRow>)>> {
        self.open_door_reading(public_id, account_id, key, false).await
    }

    /// [`Tx::open_door`] for a claim, which reads the run's answering member next (its
    /// eligibility, executor.md §1): on PostgreSQL, as the unit's first statement, the member
    /// is read in the same round trip, after the lock, and [`Tx::member_by_id`] answers it
    /// from there.
    pub async fn open_claim_door(
        &mut self,
        public_id: uuid::Uuid,
        account_id: i64,
        key: &str,
    ) -> Result<Option<(RunInAccount, Option<TaskRow>)>> {
        self.open_door_reading(public_id, account_id, key, true).await
    }

    async fn open_door_reading(
        &mut self,
        public_id: uuid::Uuid,
        account_id: i64,
        key: &str,
        answerer: bool,
    ) -> Result<Option<(RunInAccount, Option<TaskRow>)>> {
        let mut opened = match self {
            // A unit's first statement: `BEGIN` goes with the run lock.
            Tx::Postgres(t) if t.first_statement() => {
                let result = Box::pin(postgres::ops::begin_opening_door(
                    &mut t.tx, public_id, account_id, key, answerer,
                ))
                .await;
                if result.as_ref().is_err_and(voids_transaction) {
                    t.void = true;
                }
                result?.map(|(found, task, member)| {
                    t.answerer = member.map(Box::new);
                    (found, task)
                })
            }
            _ => tx_dispatch!(self, open_door(public_id, account_id, key))?,
        };
        if let Some((found, task)) = &mut opened {
            self.note_locked(&mut found.run);
            if let Some(task) = task {
                self.remember(task);
            }
        }
        Ok(opened)
    }

    /// [`crate::AccountStore::member_by_id`] inside the unit of work (on PostgreSQL, the answering
    /// member a claim's door read with its lock, when that is the one asked for).
    pub async fn member_by_id(&mut self, id: i64) -> Result<Option<crate::MemberRow>> {
        if let Tx::Postgres(t) = self
            && let Some(m) = t.answerer.as_ref().filter(|m| m.id == id)
        {
            return Ok(Some(crate::MemberRow::clone(m)));
        }
        tx_dispatch!(self, member_by_id(id))
    }

    /// Every task of the run, by id.
    pub async fn tasks_of_run(&mut self, run_id: i64) -> Result<Vec<TaskRow>> {
        tx_dispatch!(self, tasks_of_run(run_id))
    }

    /// The task keyed `key` in the run (known as stored when the unit holds the run's lock:
    /// `tx/known.rs`).
    pub async fn task_by_key(&mut self, run_id: i64, key: &str) -> Result<Option<TaskRow>> {
        let task = tx_dispatch!(self, task_by_key(run_id, key))?;
        if let Some(task) = &task {
            self.remember(task);
        }
        Ok(task)
    }

    /// The task `task_id` (known as stored when the unit holds its run's lock: `tx/known.rs`).
    pub async fn task_by_id(&mut self, task_id: i64) -> Result<Option<TaskRow>> {
        let task = tx_dispatch!(self, task_by_id(task_id))?;
        if let Some(task) = &task {
            self.remember(task);
        }
        Ok(task)
    }

    /// A task's id, kind, declaring row and `frozen_digest`, without reading `frozen_context`.
    pub async fn task_frozen_head(&mut self, task_id: i64) -> Result<Option<FrozenHead>> {
        tx_dispatch!(self, task_frozen_head(task_id))
    }

    /// A task's `frozen_context` alone (`None`: no such row, or no frozen context), read from
    /// `frozen_contexts` by the row's digest.
    pub async fn task_frozen_context(&mut self, task_id: i64) -> Result<Option<String>> {
        tx_dispatch!(self, task_frozen_context(task_id))
    }

    /// The run's rows whose `declaring_task_id` is `declaring_id`, by id.
    pub async fn tasks_declared_by(&mut self, run_id: i64, declaring_id: i64) -> Result<Vec<TaskRow>> {
        tx_dispatch!(self, tasks_declared_by(run_id, declaring_id))
    }

    /// What the run's end reads of every row of the run ([`TaskEndRow`]), in id order, when
    /// none is in an open status; `None` when one is (or the run has no rows). One statement for
    /// "has the run gone quiet, and with what".
    pub async fn tasks_if_quiescent(&mut self, run_id: i64) -> Result<Option<Vec<TaskEndRow>>> {
        tx_dispatch!(self, tasks_if_quiescent(run_id))
    }

    // ---- edges ----

    /// Adds the edge `task_id` → `depends_on_id` (`after | reads | pairs`). Returns false when
    /// the same edge already exists (no error, the transaction stays usable).
    pub async fn insert_edge(&mut self, task_id: i64, depends_on_id: i64, kind: EdgeKind) -> Result<bool> {
        tx_dispatch!(self, insert_edge(task_id, depends_on_id, kind))
    }

    /// Every edge among the run's tasks, by (task_id, depends_on_id, kind).
    pub async fn edges_of_run(&mut self, run_id: i64) -> Result<Vec<EdgeRow>> {
        tx_dispatch!(self, edges_of_run(run_id))
    }

    /// The edges into `depends_on_id` (its dependents), by (task_id, depends_on_id, kind).
    pub async fn edges_into(&mut self, depends_on_id: i64) -> Result<Vec<EdgeRow>> {
        tx_dispatch!(self, edges_into(depends_on_id))
    }

    // ---- jobs ----

    pub async fn job_by_id(&mut self, job_id: i64) -> Result<Option<JobRow>> {
        tx_dispatch!(self, job_by_id(job_id))
    }

    // ---- sealed requests ----

    /// Stores the sealed request of (task, generation), with the exact provider body bytes.
    /// A second seal of the same pair is `Conflict`.
    pub async fn insert_sealed_request(&mut self, new: NewSealedRequest) -> Result<SealedRequestRow> {
        tx_dispatch!(self, insert_sealed_request(&new))
    }

    pub async fn sealed_request(&mut self, task_id: i64, generation: i64) -> Result<Option<SealedRequestRow>> {
        tx_dispatch!(self, sealed_request(task_id, generation))
    }

    /// Replaces the attempts JSON of a sealed request; false when there is none.
    pub async fn set_sealed_attempts(&mut self, task_id: i64, generation: i64, attempts: &str) -> Result<bool> {
        tx_dispatch!(self, set_sealed_attempts(task_id, generation, attempts))
    }

    // ---- idempotency receipts ----

    /// The unexpired receipt (`expires_at > now`) of the scope.
    pub async fn idempotency_get(&mut self, scope_hash: &str, now: i64) -> Result<Option<ReceiptRow>> {
        tx_dispatch!(self, idempotency_get(scope_hash, now))
    }

    /// Stores a receipt. An expired receipt of the same scope (`expires_at <= created_at`) is
    /// replaced; a live one, or one a concurrent transaction holds, makes this `Conflict`
    /// (the second request should then read the first's receipt and replay it). The
    /// transaction stays usable after the conflict.
    pub async fn idempotency_put(&mut self, new: NewReceipt) -> Result<ReceiptRow> {
        tx_dispatch!(self, idempotency_put(&new))
    }

    // ---- uploads (migration 0003) ----

    /// Records that the blob with this digest exists; false when it already did.
    pub async fn insert_blob(&mut self, sha256: &str, byte_size: i64, now: i64) -> Result<bool> {
        tx_dispatch!(self, insert_blob(sha256, byte_size, now))
    }

    /// Inserts a descriptor (unbound). Its blob row must exist (`NotFound` otherwise).
    pub async fn insert_upload(&mut self, new: crate::NewUpload) -> Result<crate::UploadRow> {
        tx_dispatch!(self, insert_upload(&new))
    }

    pub async fn upload_by_public_id(&mut self, public_id: uuid::Uuid) -> Result<Option<crate::UploadRow>> {
        tx_dispatch!(self, upload_by_public_id(public_id))
    }

    /// Binds the upload to a task (and sets `bound_at` on its first binding). False when that
    /// binding already existed.
    pub async fn bind_upload(&mut self, upload_id: i64, task_id: i64, now: i64) -> Result<bool> {
        tx_dispatch!(self, bind_upload(upload_id, task_id, now))
    }

    /// Deletes unbound descriptors created at or before the cutoff; returns the digest of each
    /// deleted descriptor (candidates for [`Tx::delete_orphan_blob`]; repeats possible).
    pub async fn delete_unbound_uploads(&mut self, created_at_or_before: i64) -> Result<Vec<String>> {
        tx_dispatch!(self, delete_unbound_uploads(created_at_or_before))
    }

    /// Deletes the blob row when no descriptor references it; true when it was deleted (the
    /// caller then removes the bytes before committing).
    pub async fn delete_orphan_blob(&mut self, sha256: &str) -> Result<bool> {
        tx_dispatch!(self, delete_orphan_blob(sha256))
    }
}

/// Memory documents (migration 0004): the same operations as the [`crate::MemoryStore`] methods,
/// inside the unit of work (a kernel tool's evaluation settles its row in the same
/// transaction as its write).
impl Tx {
    pub async fn memory_document(
        &mut self,
        scope: crate::MemoryScope,
        owner_id: i64,
        path: &str,
    ) -> Result<Option<crate::MemoryDocRow>> {
        tx_dispatch!(self, memory_get(scope, owner_id, path))
    }

    /// Every document of (scope, owner), sorted by path bytes.
    pub async fn memory_documents(
        &mut self,
        scope: crate::MemoryScope,
        owner_id: i64,
        with_content: bool,
    ) -> Result<Vec<crate::MemoryDocRow>> {
        tx_dispatch!(self, memory_list(scope, owner_id, with_content))
    }

    /// See [`crate::MemoryStore::memory_put`].
    pub async fn memory_put(
        &mut self,
        new: crate::NewMemoryDoc,
        expected_lock_version: Option<i64>,
        bound: i64,
    ) -> Result<crate::MemoryPut> {
        tx_dispatch!(self, memory_put(&new, expected_lock_version, bound))
    }

    pub async fn memory_delete(
        &mut self,
        scope: crate::MemoryScope,
        owner_id: i64,
        path: &str,
        expected_lock_version: Option<i64>,
    ) -> Result<crate::MemoryDelete> {
        tx_dispatch!(self, memory_delete(scope, owner_id, path, expected_lock_version))
    }

    /// The internal id of the member with this public id.
    pub async fn member_id_of(&mut self, public_id: uuid::Uuid) -> Result<Option<i64>> {
        tx_dispatch!(self, member_id_of(public_id))
    }

    /// The internal id of the workspace with this public id.
    pub async fn workspace_id_of(&mut self, public_id: uuid::Uuid) -> Result<Option<i64>> {
        tx_dispatch!(self, workspace_id_of(public_id))
    }
}

/// Round facts and key probes (migration 0005): what a round's expansion reads instead of the
/// whole run.
impl Tx {
    /// A round as its reply step reads it (one statement): the row, its facts, and two facts
    /// of its neighbourhood.
    pub async fn round_for_reply(&mut self, task_id: i64) -> Result<Option<RoundForReply>> {
        tx_dispatch!(self, round_for_reply(task_id))
    }

    /// The task `task_id` and the rows it depends on, by id.
    pub async fn task_and_deps(&mut self, task_id: i64) -> Result<Vec<TaskRow>> {
        tx_dispatch!(self, task_and_deps(task_id))
    }

    /// The facts of a continuation round, if its authoring transaction wrote them.
    pub async fn round_facts(&mut self, task_id: i64) -> Result<Option<RoundFactsRow>> {
        tx_dispatch!(self, round_facts(task_id))
    }

    /// Writes (or replaces) a round's facts.
    pub async fn put_round_facts(&mut self, facts: &RoundFactsRow) -> Result<()> {
        if let Tx::Postgres(t) = self
            && let Some(buffered) = t.buffer_round_facts(facts)
        {
            return buffered;
        }
        tx_dispatch!(self, put_round_facts(facts))
    }

    /// Every task key of the run, in no particular order.
    pub async fn task_keys_of_run(&mut self, run_id: i64) -> Result<Vec<String>> {
        tx_dispatch!(self, task_keys_of_run(run_id))
    }
}

/// Conversations and their inputs (migration 0017, runs.md §12): the writes, and the reads a
/// write needs, inside the unit of work (the kernel keeps an idempotency receipt beside them).
impl Tx {
    /// Inserts a conversation (live, no archive mark).
    pub async fn insert_conversation(&mut self, new: crate::NewConversation) -> Result<crate::ConversationRow> {
        tx_dispatch!(self, insert_conversation(&new))
    }

    /// The conversation with this public id.
    pub async fn conversation_by_public_id(&mut self, public_id: uuid::Uuid) -> Result<Option<crate::ConversationRow>> {
        tx_dispatch!(self, conversation_by_public_id(public_id))
    }

    /// Archives (`Some(at)`, keeping an earlier mark) or unarchives (`None`) a conversation
    /// and all its descendants; returns how many rows it touched.
    pub async fn archive_conversation_tree(&mut self, id: i64, at: Option<i64>) -> Result<u64> {
        tx_dispatch!(self, archive_conversation_tree(id, at))
    }

    /// Sets (or clears) the conversation's default runner; false when there is no such row.
    pub async fn set_conversation_default_runner(&mut self, id: i64, runner_id: Option<i64>) -> Result<bool> {
        tx_dispatch!(self, set_conversation_default_runner(id, runner_id))
    }

    /// Queues an input as `pending` under the conversation's lock and binds its attachments;
    /// a `user` input past `bound` pending `user` inputs is [`crate::InputInsert::Full`].
    pub async fn insert_input(&mut self, new: crate::NewInput, bound: i64) -> Result<crate::InputInsert> {
        tx_dispatch!(self, insert_input(&new, bound))
    }

    /// The input of the conversation with this public id.
    pub async fn input_by_public_id(
        &mut self,
        conversation_id: i64,
        public_id: uuid::Uuid,
    ) -> Result<Option<crate::InputRow>> {
        tx_dispatch!(self, input_by_public_id(conversation_id, public_id))
    }

    /// Appends an event to the conversation's feed at its next sequence, moving
    /// `conversations.last_event_sequence` in the same unit of work; returns the sequence.
    pub async fn append_conversation_event(
        &mut self,
        conversation_id: i64,
        kind: crate::ConversationEventKind,
        at: i64,
        data: &str,
    ) -> Result<i64> {
        tx_dispatch!(self, append_conversation_event(conversation_id, kind, at, data))
    }

    /// `pending → canceled`; false when the input was not pending.
    pub async fn cancel_pending_input(&mut self, id: i64) -> Result<bool> {
        tx_dispatch!(self, cancel_pending_input(id))
    }
}

mod after_writes;
mod buffered;
mod history;
mod known;
mod locked;
pub use crate::postgres::unit::PgTx;
pub(crate) use known::Known;
pub use known::{Expect, TaskUpdate};
pub(crate) use locked::sealable;
pub use locked::{LockReads, Locked, RunLock};
mod sequences;
mod turns;
