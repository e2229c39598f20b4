//! SQL text shared by both engines. `$n` placeholders work in SQLite and PostgreSQL alike, so
//! a statement is written once here unless a dialect needs its own form (row locks, for one).
//! Only the binding differs: SQLite binds public ids as hyphenated TEXT, PostgreSQL as `uuid`.
//!
//! A bound row limit is written `LIMIT CAST($n AS BIGINT)`, never `LIMIT $n`: SQLite (3.47 and
//! later) reads a bare parameter's value when it plans a `LIMIT`, which marks the statement as
//! depending on that value, so every new binding recompiles it (parse and plan again on each
//! execution). The cast keeps the plan value-free; PostgreSQL reads it as the `int8` it binds.
//! The same holds for a bare parameter compared with a column that a partial index's predicate
//! names (`kind = $2` beside `executors_active_runner_name … WHERE kind = 'runner'`): SQLite
//! reads the value to decide whether the index applies, so such a comparison is written
//! `kind = CAST($2 AS TEXT)`.
//! The SQLite driver asserts in debug builds that no statement recompiles per execution.

pub(crate) const INSERT_ACCOUNT: &str = "INSERT INTO accounts (public_id, handle, created_at) \
     VALUES ($1, $2, $3) ON CONFLICT (handle) DO NOTHING";
pub(crate) const ACCOUNT_BY_HANDLE: &str = "SELECT id, public_id, handle, created_at FROM accounts WHERE handle = $1";
pub(crate) const ACCOUNT_BY_ID: &str = "SELECT id, public_id, handle, created_at FROM accounts WHERE id = $1";

pub(crate) const INSERT_WORKSPACE: &str = "INSERT INTO workspaces (public_id, account_id, handle, created_at) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (account_id, handle) DO NOTHING";
pub(crate) const WORKSPACE_BY_HANDLE: &str = "SELECT id, public_id, account_id, handle, created_at FROM workspaces \
     WHERE account_id = $1 AND handle = $2";
pub(crate) const WORKSPACE_BY_PUBLIC_ID: &str =
    "SELECT id, public_id, account_id, handle, created_at FROM workspaces WHERE public_id = $1";
pub(crate) const WORKSPACE_BY_ID: &str =
    "SELECT id, public_id, account_id, handle, created_at FROM workspaces WHERE id = $1";

pub(crate) const UPSERT_STANDING: &str = "INSERT INTO workspace_members (workspace_id, member_id, standing) VALUES ($1, $2, $3) \
     ON CONFLICT (workspace_id, member_id) DO UPDATE SET standing = excluded.standing";
pub(crate) const STANDING: &str = "SELECT standing FROM workspace_members WHERE workspace_id = $1 AND member_id = $2";

pub(crate) const INSERT_MEMBER: &str = "INSERT INTO members \
     (public_id, account_id, kind, handle, display_name, role, steward_id, configuration, \
      created_at, updated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8, $8) \
     RETURNING id, public_id, account_id, kind, handle, display_name, role, steward_id, \
      configuration, created_at, updated_at";
pub(crate) const MEMBER_BY_ID: &str = "SELECT id, public_id, account_id, kind, handle, \
     display_name, role, steward_id, configuration, created_at, updated_at \
     FROM members WHERE id = $1";
/// The answering member of the run whose public id is `$1`: a claim door's eligibility read,
/// sent with its run lock (`postgres.rs`, `begin_opening_door`).
pub(crate) const DOOR_ANSWERER_PG: &str = "SELECT id, public_id, account_id, kind, handle, \
     display_name, role, steward_id, configuration, created_at, updated_at \
     FROM members WHERE id = (SELECT answering_member_id FROM runs WHERE public_id = $1)";
pub(crate) const MEMBER_BY_PUBLIC_ID: &str = "SELECT id, public_id, account_id, kind, handle, \
     display_name, role, steward_id, configuration, created_at, updated_at \
     FROM members WHERE public_id = $1";
pub(crate) const MEMBER_BY_HANDLE: &str = "SELECT id, public_id, account_id, kind, handle, \
     display_name, role, steward_id, configuration, created_at, updated_at \
     FROM members WHERE account_id = $1 AND handle = $2";
/// The members holding standing in workspace `$1`, with it, ordered by handle.
pub(crate) const WORKSPACE_MEMBERS: &str = "SELECT m.id, m.public_id, m.account_id, m.kind, m.handle, \
     m.display_name, m.role, m.steward_id, m.configuration, m.created_at, m.updated_at, wm.standing \
     FROM workspace_members wm JOIN members m ON m.id = wm.member_id \
     WHERE wm.workspace_id = $1 ORDER BY m.handle";
pub(crate) const SET_MEMBER_CONFIGURATION: &str =
    "UPDATE members SET configuration = $1, updated_at = $2 WHERE id = $3";

/// `$1` public id, `$2` account, `$3` kind, `$4` display name, `$5` scope, `$6` manager,
/// `$7` agent, `$8` now. Status `active`, epoch 0, an empty announcement.
pub(crate) const INSERT_EXECUTOR: &str = "INSERT INTO executors \
     (public_id, account_id, kind, status, display_name, credential_epoch, assignment_scope, \
      manager_id, agent_id, created_at) \
     VALUES ($1, $2, $3, 'active', $4, 0, $5, $6, $7, $8) \
     RETURNING id, public_id, account_id, kind, status, display_name, credential_epoch, \
      assignment_scope, manager_id, agent_id, served_tools, environment, served_documents, \
      last_seen_at, created_at";
/// An executor row's columns, each prefixed with `$t` (a table alias and dot, or nothing).
macro_rules! executor_columns {
    ($t:literal) => {
        concat!(
            $t,
            "id, ",
            $t,
            "public_id, ",
            $t,
            "account_id, ",
            $t,
            "kind, ",
            $t,
            "status, ",
            $t,
            "display_name, ",
            $t,
            "credential_epoch, ",
            $t,
            "assignment_scope, ",
            $t,
            "manager_id, ",
            $t,
            "agent_id, ",
            $t,
            "served_tools, ",
            $t,
            "environment, ",
            $t,
            "served_documents, ",
            $t,
            "last_seen_at, ",
            $t,
            "created_at"
        )
    };
}

macro_rules! executor_select {
    ($where:literal) => {
        concat!("SELECT ", executor_columns!(""), " FROM executors ", $where)
    };
}
pub(crate) const EXECUTOR_BY_ID: &str = executor_select!("WHERE id = $1");
pub(crate) const EXECUTOR_BY_PUBLIC_ID: &str = executor_select!("WHERE public_id = $1");
pub(crate) const ACTIVE_RUNNER_BY_NAME: &str = executor_select!(
    "WHERE account_id = $1 AND manager_id = $2 AND display_name = $3 \
     AND kind = 'runner' AND status = 'active'"
);
pub(crate) const AGENT_APPLICATION_OF: &str = executor_select!("WHERE agent_id = $1 AND kind = 'agent_application'");
pub(crate) const EXECUTORS_OF_ACCOUNT: &str = executor_select!("WHERE account_id = $1 ORDER BY id");
pub(crate) const EXECUTORS_OF_ACCOUNT_KIND: &str =
    executor_select!("WHERE account_id = $1 AND kind = CAST($2 AS TEXT) ORDER BY id");
pub(crate) const ADVANCE_EPOCH: &str = "UPDATE executors SET credential_epoch = credential_epoch + 1 \
     WHERE id = $1 RETURNING credential_epoch";
pub(crate) const REVOKE_EXECUTOR: &str = "UPDATE executors SET status = 'revoked' WHERE id = $1";
pub(crate) const PUT_ANNOUNCEMENT: &str = "UPDATE executors \
     SET served_tools = $1, environment = $2, served_documents = $3, last_seen_at = $4 \
     WHERE id = $5";
/// `$1` now, `$2` the executor: its push channel opened or closed (`last_seen_at` only).
pub(crate) const MARK_EXECUTOR_SEEN: &str = "UPDATE executors SET last_seen_at = $1 WHERE id = $2";

pub(crate) const INSERT_CREDENTIAL: &str = "INSERT INTO credentials \
     (public_id, plane, member_id, executor_id, epoch, secret_sha256, expires_at, revoked_at, \
      created_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8) \
     RETURNING id, public_id, plane, member_id, executor_id, epoch, secret_sha256, expires_at, \
      revoked_at, created_at";
pub(crate) const CREDENTIAL_BY_PUBLIC_ID: &str = "SELECT id, public_id, plane, member_id, \
     executor_id, epoch, secret_sha256, expires_at, revoked_at, created_at \
     FROM credentials WHERE public_id = $1";
/// A credential by public id (`$1`, its columns prefixed `c_`) with its executor's row (`NULL`s
/// for a member credential) and the `principal_version` they were read at (migration 0013): a
/// transport request's authentication in one read.
pub(crate) const CREDENTIAL_WITH_EXECUTOR: &str = concat!(
    "SELECT ",
    executor_columns!("e."),
    ", (SELECT v.version FROM principal_version v WHERE v.id = 1) AS principal_version, c.id AS c_id, c.public_id AS c_public_id, \
     c.plane AS c_plane, c.member_id AS c_member_id, c.executor_id AS c_executor_id, c.epoch AS c_epoch, \
     c.secret_sha256 AS c_secret_sha256, c.expires_at AS c_expires_at, c.revoked_at AS c_revoked_at, \
     c.created_at AS c_created_at FROM credentials c LEFT JOIN executors e ON e.id = c.executor_id \
     WHERE c.public_id = $1"
);
/// The version `credentials` and `executors` are at (migration 0013; `src/principals.rs`).
pub(crate) const PRINCIPAL_VERSION: &str = "SELECT version FROM principal_version WHERE id = 1";
pub(crate) const REVOKE_CREDENTIAL: &str =
    "UPDATE credentials SET revoked_at = $1 WHERE public_id = $2 AND revoked_at IS NULL";
pub(crate) const HAS_TRANSPORT_CREDENTIAL_AT: &str = "SELECT 1 FROM credentials \
     WHERE plane = 'executor_transport' AND executor_id = $1 AND epoch = $2 \
     AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $3) LIMIT 1";
// ---- runs (migration 0002) ----

/// The columns of a `runs` row, each read from `$t<column>` as `$a<column>`: `run_columns!("",
/// "")` for a plain select, `run_columns!("r.", "r_")` beside another table's columns in a join
/// (decoded through `row::Prefixed`).
macro_rules! run_columns {
    ($t:literal, $a:literal) => {
        concat!(
            $t,
            "id AS ",
            $a,
            "id, ",
            $t,
            "public_id AS ",
            $a,
            "public_id, ",
            $t,
            "workspace_id AS ",
            $a,
            "workspace_id, ",
            $t,
            "created_by_id AS ",
            $a,
            "created_by_id, ",
            $t,
            "answering_member_id AS ",
            $a,
            "answering_member_id, ",
            $t,
            "declaring_agent_id AS ",
            $a,
            "declaring_agent_id, ",
            $t,
            "status AS ",
            $a,
            "status, ",
            $t,
            "hosting AS ",
            $a,
            "hosting, ",
            $t,
            "approval_mode AS ",
            $a,
            "approval_mode, ",
            $t,
            "approval_rules AS ",
            $a,
            "approval_rules, ",
            $t,
            "default_runner_id AS ",
            $a,
            "default_runner_id, ",
            $t,
            "deliverable_task_id AS ",
            $a,
            "deliverable_task_id, ",
            $t,
            "revision AS ",
            $a,
            "revision, ",
            $t,
            "attention AS ",
            $a,
            "attention, ",
            $t,
            "last_event_sequence AS ",
            $a,
            "last_event_sequence, ",
            $t,
            "created_at AS ",
            $a,
            "created_at, ",
            $t,
            "started_at AS ",
            $a,
            "started_at, ",
            $t,
            "ended_at AS ",
            $a,
            "ended_at"
        )
    };
}

macro_rules! run_select {
    ($where:literal) => {
        run_select!(@also "", $where)
    };
    // `$also` adds result columns after the row's own (`", <expr> AS <name>"`): a literal or a
    // macro that expands to one.
    (@also $also:expr, $where:literal) => {
        concat!("SELECT ", run_columns!("", ""), $also, " FROM runs ", $where)
    };
}

/// `$1` public id, `$2` workspace, `$3` created by, `$4` answering, `$5` declaring agent, `$6` status,
/// `$7` hosting, `$8` approval mode, `$9` rules, `$10` default runner, `$11` revision, `$12` created,
/// `$13` started.
pub(crate) const INSERT_RUN: &str = "INSERT INTO runs (public_id, workspace_id, created_by_id, answering_member_id, \
     declaring_agent_id, status, hosting, approval_mode, approval_rules, default_runner_id, \
     deliverable_task_id, revision, attention, last_event_sequence, created_at, started_at, \
     ended_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL, $11, NULL, 0, $12, $13, \
     NULL) RETURNING id, public_id, workspace_id, created_by_id, answering_member_id, \
     declaring_agent_id, status, hosting, approval_mode, approval_rules, default_runner_id, \
     deliverable_task_id, revision, attention, last_event_sequence, created_at, started_at, \
     ended_at";

/// The run's mutable columns written by `$1` (id) .. `$8`, and `$also` after them.
macro_rules! update_run {
    ($also:literal) => {
        concat!(
            "UPDATE runs SET status = $2, deliverable_task_id = $3, revision = $4, attention = $5, \
             started_at = $6, ended_at = $7, default_runner_id = $8",
            $also,
            " WHERE id = $1"
        )
    };
}

/// The whole mutable row; never `last_event_sequence` (only the event append moves it).
pub(crate) const UPDATE_RUN: &str = update_run!("");

/// [`UPDATE_RUN`] that also moves `last_event_sequence` to `$9`: SQLite's unit of work, which
/// appended to the run, writes the sequence with the run's own update (tx.rs).
pub(crate) const UPDATE_RUN_AND_SEQUENCE: &str = update_run!(", last_event_sequence = $9");

/// Before a unit of work commits, the run's sequence moves to its last append's: SQLite's unit
/// when no run update wrote it (tx.rs), PostgreSQL's when none was held (`postgres/unit/deferred.rs`).
pub(crate) const STORE_EVENT_SEQUENCE: &str = "UPDATE runs SET last_event_sequence = $2 WHERE id = $1";

pub(crate) const RUN_BY_ID: &str = run_select!("WHERE id = $1");

/// A run's status word as stored, undecoded ([`crate::Tx::hold_unreadable_run`]).
pub(crate) const RUN_STATUS_WORD: &str = "SELECT status FROM runs WHERE id = $1";

/// A run whose row does not read moves to `needs_attention` from the status `$3` it was read
/// at, with the attention `$2` and the sequence of the event that says so.
pub(crate) const HOLD_UNREADABLE_RUN: &str = "UPDATE runs SET status = 'needs_attention', attention = $2, \
     last_event_sequence = last_event_sequence + 1 WHERE id = $1 AND status = $3 RETURNING last_event_sequence";

/// A task's frozen context, the body stored under its digest (`frozen_contexts`, migration 0014;
/// `NULL` for a row without one), read beside the row `$t` (a table name or alias).
macro_rules! frozen_body {
    ($t:literal) => {
        concat!(
            "(SELECT fc.body FROM frozen_contexts fc WHERE fc.digest = ",
            $t,
            ".frozen_digest)"
        )
    };
}

/// A task row's columns read through the alias `t` (what `row::task` decodes).
macro_rules! task_columns_t {
    () => {
        concat!(
            "t.id, t.run_id, t.key, t.kind, t.origin, t.frozen_digest, t.created_at, \
         t.status, t.generation, t.on_failure, t.failure_resolution, t.visibility, t.mainline, \
         t.branch_of, t.pairs_with, t.declaring_task_id, t.tool_name, t.tool_alias, t.tool_input, \
         t.tool_call_id, t.target_executor_id, t.addressed_executor_id, t.addressed_role, \
         t.effect_profile, t.timeout_ms, t.await_started_at, t.deadline_at, t.claim_token, \
         t.claimed_at, t.claimant_id, t.content, t.structured_present, t.structured_content, \
         t.is_error, t.title, t.metadata, t.error_key, t.error_detail, t.approval, \
         t.request_surface, t.usage, t.reply, t.resolution_token_sha256, t.started_at, \
         t.settled_at"
        )
    };
}

/// The columns the executor doors add to the run row `$t` (a table name or alias): its
/// workspace's public id when that workspace belongs to the account `$2` (`NULL` otherwise),
/// and the standing its creator holds there now.
macro_rules! run_account_facts {
    ($t:literal) => {
        concat!(
            ", (SELECT w.public_id FROM workspaces w WHERE w.id = ",
            $t,
            ".workspace_id AND w.account_id = $2) AS workspace_public_id, (SELECT m.standing \
             FROM workspace_members m WHERE m.workspace_id = ",
            $t,
            ".workspace_id AND m.member_id = ",
            $t,
            ".created_by_id) AS creator_standing"
        )
    };
}

/// SQLite, inside a unit of work (the write lock is buffered): an executor door's one read. Run `$1`
/// by public id (columns prefixed `r_`), its workspace's public id when that workspace belongs
/// to the account `$2` (`NULL` otherwise), its creator's standing there, and its task keyed `$3`
/// (`NULL`s when there is none): [`RUN_IN_ACCOUNT`] and the task by key in one.
pub(crate) const DOOR_SQLITE: &str = concat!(
    "SELECT ",
    run_columns!("r.", "r_"),
    run_account_facts!("r"),
    ", ",
    task_columns_t!(),
    " FROM runs r LEFT JOIN tasks t ON t.run_id = r.id AND t.key = $3 WHERE r.public_id = $1"
);

/// The PostgreSQL run lock (storage-and-scale.md §3: the run row first).
pub(crate) const LOCK_RUN_PG: &str = run_select!("WHERE id = $1 FOR UPDATE");

/// The run row locked unless another transaction holds it (no row then): the sweep's lock, so
/// two nodes sweeping one row never wait for each other (storage-and-scale.md §5).
pub(crate) const TRY_LOCK_RUN_PG: &str = run_select!("WHERE id = $1 FOR UPDATE SKIP LOCKED");

pub(crate) const RUN_BY_PUBLIC_ID: &str = run_select!("WHERE public_id = $1");

/// A run with its workspace's public id when that workspace belongs to the account `$2` (`NULL`
/// otherwise) and its creator's standing there, chosen by `$where`.
macro_rules! run_in_account_select {
    ($where:literal) => {
        run_select!(@also run_account_facts!("runs"), $where)
    };
}

/// A run by public id (`$1`) as the account `$2` finds it (`run_in_account_select!`): the
/// read-only executor door (claim status) and the others' lookup where a key cannot be read.
pub(crate) const RUN_IN_ACCOUNT: &str = run_in_account_select!("WHERE public_id = $1");

/// PostgreSQL: [`RUN_IN_ACCOUNT`] taking the run lock (storage-and-scale.md §3: the run row
/// first), the executor doors' first statement in their unit of work; the task by key follows
/// in its own statement, so it is read after any wait for the lock.
pub(crate) const DOOR_RUN_PG: &str = run_in_account_select!("WHERE public_id = $1 FOR UPDATE");

pub(crate) const RUNS_OF_WORKSPACE: &str =
    run_select!("WHERE workspace_id = $1 AND id > $2 ORDER BY id LIMIT CAST($3 AS BIGINT)");

pub(crate) const RUNS_OF_WORKSPACE_STATUS: &str =
    run_select!("WHERE workspace_id = $1 AND id > $2 AND status = $4 ORDER BY id LIMIT CAST($3 AS BIGINT)");

/// Newest first (`GET W/runs?order=desc`): the runs below the cursor id, by id descending.
pub(crate) const RUNS_OF_WORKSPACE_DESC: &str =
    run_select!("WHERE workspace_id = $1 AND id < $2 ORDER BY id DESC LIMIT CAST($3 AS BIGINT)");

pub(crate) const RUNS_OF_WORKSPACE_DESC_STATUS: &str =
    run_select!("WHERE workspace_id = $1 AND id < $2 AND status = $4 ORDER BY id DESC LIMIT CAST($3 AS BIGINT)");

/// SQLite (the write lock is buffered): the event takes the run's next sequence as the run row
/// holds it (the unit of work has not appended to this run yet). The unit writes the run row's
/// sequence once, with its update of the run or before it commits (tx.rs; migration 0012).
pub(crate) const APPEND_EVENT_SQLITE: &str = "INSERT INTO events (run_id, sequence, type, at, task_key, data) \
     SELECT id, last_event_sequence + 1, $2, $3, $4, $5 FROM runs WHERE id = $1 RETURNING sequence";

/// SQLite, when the unit of work already knows the run's sequence (`$2`, the next one): the
/// same append without reading the run row back. `INSERT … VALUES` builds no temporary table,
/// where `INSERT … SELECT` into a table with a trigger and `RETURNING` build one each
/// (docs/decisions/117-event-sequence-in-the-unit.md); `UNIQUE (run_id, sequence)` refuses a
/// sequence already taken.
pub(crate) const APPEND_EVENT_AT_SQLITE: &str =
    "INSERT INTO events (run_id, sequence, type, at, task_key, data) VALUES ($1, $2, $3, $4, $5, $6)";

/// PostgreSQL: the sequence moves under the run row's lock (the UPDATE takes it) and the event
/// takes it, in one statement.
pub(crate) const APPEND_EVENT_PG: &str = "WITH s AS (UPDATE runs SET last_event_sequence = last_event_sequence + 1 \
     WHERE id = $1 RETURNING last_event_sequence) INSERT INTO events (run_id, sequence, type, at, \
     task_key, data) SELECT $1, last_event_sequence, $2, $3, $4, $5 FROM s RETURNING sequence";

pub(crate) const LATEST_EVENT_SEQUENCE: &str = "SELECT last_event_sequence FROM runs WHERE id = $1";

pub(crate) const EVENTS_AFTER: &str = "SELECT run_id, sequence, type, at, task_key, data FROM events WHERE run_id = $1 AND \
     sequence > $2 ORDER BY sequence LIMIT CAST($3 AS BIGINT)";

mod records;
mod tasks;

pub(crate) use records::*;
pub(crate) use tasks::*;
