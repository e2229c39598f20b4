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
/// when no run update wrote it (tx.rs), PostgreSQL's when none was held (`tx/deferred.rs`).
pub(crate) const STORE_EVENT_SEQUENCE: &str = "UPDATE runs SET last_event_sequence = $2 WHERE id = $1";

pub(crate) const RUN_BY_ID: &str = run_select!("WHERE id = $1");

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

/// SQLite, inside a unit of work (the write lock is held): an executor door's one read. Run `$1`
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

/// SQLite (the write lock is held): the event takes the run's next sequence as the run row
/// holds it (the unit of work has not appended to this run yet). The unit writes the run row's
/// sequence once, with its update of the run or before it commits (tx.rs; migration 0012).
pub(crate) const APPEND_EVENT_SQLITE: &str = "INSERT INTO events (run_id, sequence, type, at, task_key, data) \
     SELECT id, last_event_sequence + 1, $2, $3, $4, $5 FROM runs WHERE id = $1 RETURNING sequence";

/// SQLite, when the unit of work already knows the run's sequence (`$2`, the next one): the
/// same append without reading the run row back. `INSERT … VALUES` builds no temporary table,
/// where `INSERT … SELECT` into a table with a trigger and `RETURNING` build one each
/// (BENCHMARKS.md, "Appends at the known sequence"); `UNIQUE (run_id, sequence)` refuses a
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

// ---- tasks ----

macro_rules! task_select {
    ($where:literal) => {
        task_select!(@frozen "frozen_digest", $where)
    };
    // `$frozen` stands in for the frozen context's digest (`"NULL"` where a read must not
    // touch it); the body comes from the process's cache or `frozen_contexts` (`crate::frozen`).
    (@frozen $frozen:expr, $where:literal) => {
        concat!(
            "SELECT id, run_id, key, kind, origin, ",
            $frozen,
            " AS frozen_digest, created_at, status, generation, \
             on_failure, failure_resolution, visibility, mainline, branch_of, pairs_with, \
             declaring_task_id, tool_name, tool_alias, tool_input, tool_call_id, target_executor_id, \
             addressed_executor_id, addressed_role, effect_profile, timeout_ms, await_started_at, \
             deadline_at, claim_token, claimed_at, claimant_id, content, structured_present, \
             structured_content, is_error, title, metadata, error_key, error_detail, approval, \
             request_surface, usage, reply, resolution_token_sha256, started_at, settled_at FROM \
             tasks ",
            $where
        )
    };
}

/// A frozen context's body by its digest (`$1`): what a task read takes when the process's
/// cache lacks it (`crate::frozen`).
pub(crate) const FROZEN_BODY: &str = "SELECT body FROM frozen_contexts WHERE digest = $1";

/// A frozen context's body, once per digest (migration 0014): `$1` the digest
/// ([`crate::row::frozen_digest`]), `$2` the body. A body already stored is left as it is.
pub(crate) const INSERT_FROZEN_CONTEXT: &str =
    "INSERT INTO frozen_contexts (digest, body) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING";

/// The task insert, after `$prefix`. The only statement that writes `frozen_digest`, once the
/// body it names is stored (`tasks.frozen_context` is left `NULL` since migration 0014; the
/// insert's caller has the bytes, so `RETURNING` does not read them back). `$1`–`$6`: run, key,
/// kind, origin, the frozen context's digest, created; `$7`–`$44`: the mutable columns in
/// [`crate::row`]'s bind order.
macro_rules! insert_task {
    ($prefix:literal) => {
        concat!(
            $prefix,
            "INSERT INTO tasks (run_id, key, kind, origin, frozen_digest, created_at, status, \
     generation, on_failure, failure_resolution, visibility, mainline, branch_of, pairs_with, \
     declaring_task_id, tool_name, tool_alias, tool_input, tool_call_id, target_executor_id, \
     addressed_executor_id, addressed_role, effect_profile, timeout_ms, await_started_at, \
     deadline_at, claim_token, claimed_at, claimant_id, content, structured_present, \
     structured_content, is_error, title, metadata, error_key, error_detail, approval, \
     request_surface, usage, reply, resolution_token_sha256, started_at, settled_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, \
     $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, \
     $34, $35, $36, $37, $38, $39, $40, $41, $42, $43, $44) RETURNING id, run_id, key, kind, origin, \
     NULL AS frozen_digest, created_at, status, generation, on_failure, failure_resolution, \
     visibility, mainline, branch_of, pairs_with, declaring_task_id, tool_name, tool_alias, \
     tool_input, tool_call_id, target_executor_id, addressed_executor_id, addressed_role, \
     effect_profile, timeout_ms, await_started_at, deadline_at, claim_token, claimed_at, \
     claimant_id, content, structured_present, structured_content, is_error, title, metadata, \
     error_key, error_detail, approval, request_surface, usage, reply, \
     resolution_token_sha256, started_at, settled_at"
        )
    };
}

/// The task insert after [`INSERT_FROZEN_CONTEXT`] stored its body (SQLite: two statements).
pub(crate) const INSERT_TASK: &str = insert_task!("");

/// PostgreSQL's task insert with its body in one statement: [`INSERT_FROZEN_CONTEXT`] as a
/// data-modifying `WITH`, `$45` the body (nothing stored when `$5`, the digest, is `NULL`).
pub(crate) const INSERT_TASK_WITH_BODY_PG: &str = insert_task!(
    "WITH body AS (INSERT INTO frozen_contexts (digest, body) SELECT CAST($5 AS TEXT), \
     CAST($45 AS TEXT) WHERE $5 IS NOT NULL ON CONFLICT (digest) DO NOTHING) "
);

/// The conditional task update (storage-and-scale.md §8.1): `$1` id, `$2` expected generation,
/// `$3`–`$14` the expected statuses (padded by repeating one), `$15` the expected claim token or
/// null, `$16`–`$53` the mutable columns. Every column but the identity and the frozen context.
pub(crate) const UPDATE_TASK: &str = "UPDATE tasks SET status = $16, generation = $17, on_failure = $18, failure_resolution = \
     $19, visibility = $20, mainline = $21, branch_of = $22, pairs_with = $23, \
     declaring_task_id = $24, tool_name = $25, tool_alias = $26, tool_input = $27, \
     tool_call_id = $28, target_executor_id = $29, addressed_executor_id = $30, \
     addressed_role = $31, effect_profile = $32, timeout_ms = $33, await_started_at = $34, \
     deadline_at = $35, claim_token = $36, claimed_at = $37, claimant_id = $38, content = \
     $39, structured_present = $40, structured_content = $41, is_error = $42, title = $43, \
     metadata = $44, error_key = $45, error_detail = $46, approval = $47, request_surface = \
     $48, usage = $49, reply = $50, resolution_token_sha256 = $51, started_at = $52, \
     settled_at = $53 WHERE id = $1 AND generation = $2 AND status IN ($3, $4, $5, $6, $7, \
     $8, $9, $10, $11, $12, $13, $14) AND ($15 IS NULL OR claim_token = $15)";

pub(crate) const TASK_BY_ID: &str = task_select!("WHERE id = $1");

/// A task by id without its frozen context (read back as `None`): what the SQLite engine's
/// narrow update compares against (`sqlite/ops.rs`, `update_task`).
pub(crate) const TASK_MUTABLE_BY_ID: &str = task_select!(@frozen "NULL", "WHERE id = $1");

/// A task's frozen head ([`crate::model::FrozenHead`]): everything but the frozen bytes, from
/// the covering index `tasks_frozen_head` (migration 0006). SQLite: named, since its planner
/// prefers the rowid lookup, which walked the frozen context's overflow pages to reach
/// `frozen_digest` while the row held the bytes (before migration 0014).
pub(crate) const TASK_FROZEN_HEAD_SQLITE: &str = "SELECT id, kind, declaring_task_id, frozen_digest FROM tasks \
     INDEXED BY tasks_frozen_head WHERE id = $1";

pub(crate) const TASK_FROZEN_HEAD_PG: &str =
    "SELECT id, kind, declaring_task_id, frozen_digest FROM tasks WHERE id = $1";

/// The head (as [`TASK_FROZEN_HEAD_PG`]) of the row that declared task `$1`, when `$1` is a
/// `tool_search` call: read with the lock of the call's evaluation (`Tx::lock_run_with_task_and_search_head`).
pub(crate) const SEARCH_HEAD_PG: &str = "SELECT d.id, d.kind, d.declaring_task_id, d.frozen_digest FROM tasks t \
     JOIN tasks d ON d.id = t.declaring_task_id WHERE t.id = $1 AND t.tool_name = 'tool_search'";

/// A task's frozen context alone, from `frozen_contexts` by the row's digest (migration 0014).
pub(crate) const TASK_FROZEN_CONTEXT: &str = concat!(
    "SELECT ",
    frozen_body!("t"),
    " AS frozen_context FROM tasks t WHERE t.id = $1"
);

pub(crate) const TASK_BY_KEY: &str = task_select!("WHERE run_id = $1 AND key = $2");

/// [`TASK_BY_KEY`] with the run named by its public id (`$1`): an executor door's read of its
/// row, in the simple query that takes the run lock (`postgres::ops::begin_opening_door`).
pub(crate) const TASK_BY_RUN_PUBLIC_ID_AND_KEY_PG: &str =
    task_select!("WHERE run_id = (SELECT id FROM runs WHERE public_id = $1) AND key = $2");

pub(crate) const TASKS_OF_RUN: &str = task_select!("WHERE run_id = $1 ORDER BY id");

pub(crate) const TASKS_DECLARED_BY: &str = task_select!("WHERE run_id = $1 AND declaring_task_id = $2 ORDER BY id");

/// What the run's end reads of every row of run `$1` ([`crate::TaskEndRow`]'s columns), unless
/// one of them is in an open status (`TaskStatus::OPEN`, one probe of `tasks_run_status` each,
/// evaluated once): no rows then. Not `o.status IN (…)`, which SQLite codes as a temporary
/// b-tree built on every execution, dearer than the five probes (BENCHMARKS.md); and the
/// statuses are words, not bound values, because a bound status against the partial indexes'
/// predicates makes the plan value-dependent (a recompile on every execution). No `ORDER BY`:
/// the store sorts the few rows by id itself, where SQLite would open a sorter per execution.
macro_rules! tasks_of_quiescent_run {
    () => {
        "SELECT id, key, status, on_failure, failure_resolution FROM tasks \
     WHERE run_id = $1 \
     AND NOT EXISTS (SELECT 1 FROM tasks o WHERE o.run_id = $1 AND o.status = 'waiting') \
     AND NOT EXISTS (SELECT 1 FROM tasks o WHERE o.run_id = $1 AND o.status = 'needs_approval') \
     AND NOT EXISTS (SELECT 1 FROM tasks o WHERE o.run_id = $1 AND o.status = 'running') \
     AND NOT EXISTS (SELECT 1 FROM tasks o WHERE o.run_id = $1 AND o.status = 'dispatched') \
     AND NOT EXISTS (SELECT 1 FROM tasks o WHERE o.run_id = $1 AND o.status = 'awaiting_input')"
    };
}
pub(crate) const TASKS_OF_QUIESCENT_RUN: &str = tasks_of_quiescent_run!();

/// [`TASKS_OF_QUIESCENT_RUN`] of run `$1` when no row depends on task `$2`: a settle's
/// end-of-run read sent with its probe of the row's dependents (`tx/after_held.rs`). With a
/// dependent it answers nothing (a cascade may change the statuses: the settle reads again).
pub(crate) const TASKS_OF_QUIESCENT_RUN_UNLESS_DEPENDED: &str = concat!(
    tasks_of_quiescent_run!(),
    " AND NOT EXISTS (SELECT 1 FROM task_edges d WHERE d.depends_on_id = $2)"
);

/// The edges into task `$2`, unless run `$1` holds a kernel-held (`running`) await: one row
/// with `awaiting = 1` and no edge then; else `awaiting = 0` on every edge, or on one row of
/// NULLs when there is none. One statement for [`crate::Tx::edges_into_unless_awaiting`].
pub(crate) const EDGES_INTO_UNLESS_AWAITING: &str = "SELECT e.task_id AS task_id, e.depends_on_id AS depends_on_id, \
     e.kind AS kind, a.awaiting AS awaiting FROM (SELECT CAST(CASE WHEN EXISTS (SELECT 1 FROM tasks WHERE run_id = $1 \
     AND kind = 'await_task' AND status = 'running') THEN 1 ELSE 0 END AS BIGINT) AS awaiting) a LEFT JOIN task_edges e \
     ON e.depends_on_id = $2 AND a.awaiting = 0";

pub(crate) const TASKS_OF_RUN_PAGE: &str =
    task_select!("WHERE run_id = $1 AND id > $2 ORDER BY id LIMIT CAST($3 AS BIGINT)");

/// Parked rows past their deadline on live runs (the sweep's candidates). The status test is
/// the predicate of the partial index `tasks_parked` word for word (migration 0007), so SQLite's
/// planner sees that it covers it and walks the parked rows in id order, testing each deadline
/// (no index holds deadlines since migration 0010).
macro_rules! expired_parks {
    ($tail:literal) => {
        concat!(
            "SELECT t.run_id AS run_id, t.id AS id FROM tasks t JOIN runs r ON r.id = t.run_id WHERE \
             (t.status = 'needs_approval' OR t.status = 'running' OR t.status = 'dispatched' OR t.status = \
             'awaiting_input') AND t.deadline_at <= $1 AND t.id > $2 AND r.status NOT IN ('completed', \
             'canceled') ORDER BY t.id LIMIT CAST($3 AS BIGINT)",
            $tail
        )
    };
}

pub(crate) const EXPIRED_PARKS: &str = expired_parks!("");

/// The same, passing over rows another node's sweep (or any writer) holds at this moment, so
/// nodes divide the expired rows instead of queuing on them (storage-and-scale.md §5).
pub(crate) const EXPIRED_PARKS_PG: &str = expired_parks!(" FOR UPDATE OF t SKIP LOCKED");

/// Parks whose addressee is revoked, on live runs (the sweep's second selection, executor.md
/// §13): unclaimed `dispatched` tool rows and held approvals. `$1` cursor, `$2` limit.
/// The first status test is the predicate of the partial index `tasks_inbox_open` word for word
/// (migration 0007; the second narrows it), so SQLite's planner reads a revoked executor's open
/// rows from that index.
pub(crate) const REVOKED_PARKS: &str = "SELECT t.run_id AS run_id, t.id AS id FROM tasks t JOIN executors e ON \
     e.id = t.addressed_executor_id JOIN runs r ON r.id = t.run_id WHERE e.status = 'revoked' AND \
     (t.status = 'dispatched' OR t.status = 'needs_approval' OR t.status = 'awaiting_input') AND \
     t.kind = 'tool_task' AND ((t.status = 'dispatched' AND t.claimed_at IS NULL) OR t.status = \
     'needs_approval') AND t.id > $1 AND r.status NOT IN ('completed', 'canceled') ORDER BY t.id \
     LIMIT CAST($2 AS BIGINT)";

macro_rules! task_select_t {
    ($where:literal) => {
        task_select_t!(@also "", $where)
    };
    // With the run's row beside the task's, its columns prefixed `r_`.
    (@runs $where:literal) => {
        task_select_t!(@also concat!(", ", run_columns!("r.", "r_")), $where)
    };
    (@also $also:expr, $where:literal) => {
        concat!(
            "SELECT ",
            task_columns_t!(),
            $also,
            " FROM tasks t JOIN runs r ON r.id = t.run_id ",
            $where
        )
    };
}

pub(crate) const HELD_APPROVALS: &str = task_select_t!(
    "WHERE r.workspace_id = $1 AND t.status = 'needs_approval' AND t.id > $2 ORDER BY t.id LIMIT CAST($3 AS BIGINT)"
);

/// The inbox page (storage-and-scale.md §9): `$1` executor, `$2` cursor, `$3` limit; each row
/// with its run's. The status test is the predicate of the partial index `tasks_inbox_open`
/// (migration 0007) word for word, and names [`crate::INBOX_STATUSES`] (a unit test holds the
/// two together): the page walks that index in id order and stops at the limit.
pub(crate) const INBOX_PAGE: &str = task_select_t!(
    @runs
    "WHERE t.addressed_executor_id = $1 \
     AND (t.status = 'dispatched' OR t.status = 'needs_approval' OR t.status = 'awaiting_input') \
     AND t.id > $2 AND r.status IN ('running', 'canceling') ORDER BY t.id LIMIT CAST($3 AS BIGINT)"
);

// ---- edges ----

pub(crate) const INSERT_EDGE: &str = "INSERT INTO task_edges (task_id, depends_on_id, kind) VALUES ($1, $2, $3) ON CONFLICT DO \
     NOTHING";

pub(crate) const EDGES_OF_RUN: &str = "SELECT e.task_id AS task_id, e.depends_on_id AS depends_on_id, e.kind AS kind FROM \
     task_edges e JOIN tasks t ON t.id = e.task_id WHERE t.run_id = $1 ORDER BY e.task_id, \
     e.depends_on_id, e.kind";

/// No `ORDER BY`: `task_edges_depends_on` holds an id's dependents in rowid order, so SQLite
/// would open a sorter on every execution (every settle makes one, and most find nothing); the
/// store sorts the few rows itself.
pub(crate) const EDGES_INTO: &str = "SELECT task_id, depends_on_id, kind FROM task_edges WHERE depends_on_id = $1";

pub(crate) const EDGES_FROM: &str = "SELECT task_id, depends_on_id, kind FROM task_edges WHERE task_id = $1 \
     ORDER BY task_id, depends_on_id, kind";

// ---- jobs ----

pub(crate) const INSERT_JOB: &str = "INSERT INTO jobs (kind, run_id, task_id, generation, available_at, locked_by, \
     locked_until, attempts) VALUES ($1, $2, $3, $4, $5, NULL, NULL, 0) RETURNING id";

/// [`INSERT_JOB`] without the answer: held with the unit of work (`tx/held.rs`).
pub(crate) const INSERT_JOB_HELD: &str = "INSERT INTO jobs (kind, run_id, task_id, generation, available_at, \
     locked_by, locked_until, attempts) VALUES ($1, $2, $3, $4, $5, NULL, NULL, 0)";

pub(crate) const JOB_BY_ID: &str = "SELECT id, kind, run_id, task_id, generation, available_at, locked_by, locked_until, \
     attempts FROM jobs WHERE id = $1";

pub(crate) const DELETE_JOB: &str = "DELETE FROM jobs WHERE id = $1";

/// [`DELETE_JOB`] answering the id when the row was there (a `kernel_tool` job's claim sent
/// with its evaluation's first statement, `postgres.rs`).
pub(crate) const TAKE_JOB: &str = "DELETE FROM jobs WHERE id = $1 RETURNING id";

/// `$1` node, `$2` lease end, `$3` now, `$4` limit; one statement behind the writer gate.
pub(crate) const DEQUEUE_JOBS_SQLITE: &str = "UPDATE jobs SET locked_by = $1, locked_until = $2, attempts = attempts + 1 WHERE id IN \
     (SELECT id FROM jobs WHERE available_at <= $3 AND (locked_until IS NULL OR locked_until \
     < $3) ORDER BY id LIMIT CAST($4 AS BIGINT)) RETURNING id, kind, run_id, task_id, generation, \
     available_at, locked_by, locked_until, attempts";

/// The same, with the candidates locked `FOR UPDATE SKIP LOCKED` so nodes divide the work.
pub(crate) const DEQUEUE_JOBS_PG: &str = "UPDATE jobs SET locked_by = $1, locked_until = $2, attempts = attempts + 1 WHERE id IN \
     (SELECT id FROM jobs WHERE available_at <= $3 AND (locked_until IS NULL OR locked_until \
     < $3) ORDER BY id LIMIT CAST($4 AS BIGINT) FOR UPDATE SKIP LOCKED) RETURNING id, kind, run_id, task_id, \
     generation, available_at, locked_by, locked_until, attempts";

pub(crate) const RENEW_JOB_LEASE: &str = "UPDATE jobs SET locked_until = $3 WHERE id = $1 AND locked_by = $2";

pub(crate) const RELEASE_NODE_LEASES: &str =
    "UPDATE jobs SET locked_by = NULL, locked_until = NULL WHERE locked_by = $1";

pub(crate) const REQUEUE_JOB: &str =
    "UPDATE jobs SET available_at = $2, locked_by = NULL, locked_until = NULL WHERE id = $1";

// ---- sealed requests ----

/// A sealed body, once per digest (migration 0015), maybe a delta (0020): `$1` the digest,
/// `$2` the bytes, `$3` the base digest, `$4` the kept length, `$5` the delta depth.
pub(crate) const INSERT_SEALED_BODY: &str = "INSERT INTO sealed_bodies (body_sha256, body, base_sha256, keep, depth) \
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (body_sha256) DO NOTHING RETURNING depth";

/// A sealed request (`$1`–`$11` as [`INSERT_SEALED_REQUEST`]) and the body it names (`$4` its
/// digest, `$12` bytes, `$13` base digest, `$14` keep, `$15` depth) in one statement
/// (PostgreSQL: data-modifying `WITH`, which SQLite has not), answering the request's `id` and
/// the body's `body_depth`: the new row's, or that of the body an earlier round stored under
/// the digest (null only when a unit not yet visible to this statement stored it).
pub(crate) const INSERT_SEALED_REQUEST_WITH_BODY_PG: &str = "WITH body AS (INSERT INTO sealed_bodies (body_sha256, body, \
     base_sha256, keep, depth) VALUES ($4, $12, $13, $14, $15) ON CONFLICT (body_sha256) DO NOTHING RETURNING depth), \
     request AS (INSERT INTO sealed_requests (task_id, generation, record, body_sha256, request_bytes, tools_sha256, \
     attempts, created_at, record_base_id, record_keep, record_depth) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, \
     $10, $11) RETURNING id) SELECT (SELECT id FROM request) AS id, COALESCE((SELECT depth FROM body), \
     (SELECT depth FROM sealed_bodies WHERE body_sha256 = $4)) AS body_depth";

pub(crate) const INSERT_SEALED_REQUEST: &str = "INSERT INTO sealed_requests (task_id, generation, record, body_sha256, request_bytes, \
     tools_sha256, attempts, created_at, record_base_id, record_keep, record_depth) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id";

/// A sealed record with its body, joined by digest (migration 0015), with their delta bases
/// (0020).
pub(crate) const SEALED_REQUEST: &str = "SELECT s.id, s.task_id, s.generation, s.record, s.body_sha256, s.request_bytes, \
     s.tools_sha256, b.body, s.attempts, s.created_at, s.record_base_id, s.record_keep, b.base_sha256, b.keep \
     FROM sealed_requests s JOIN sealed_bodies b \
     ON b.body_sha256 = s.body_sha256 WHERE s.task_id = $1 AND s.generation = $2";
pub(crate) const SEALED_RECORD_DEPTH: &str = "SELECT record_depth FROM sealed_requests WHERE id = $1";
pub(crate) const SEALED_BODY_DEPTH: &str = "SELECT depth FROM sealed_bodies WHERE body_sha256 = $1";
/// One link of a record's delta chain: `$1` the sealed request.
pub(crate) const SEALED_RECORD_LINK: &str =
    "SELECT record, record_base_id, record_keep, record_depth FROM sealed_requests WHERE id = $1";
/// One link of a body's delta chain: `$1` the digest.
pub(crate) const SEALED_BODY_LINK: &str =
    "SELECT body, base_sha256, keep, depth FROM sealed_bodies WHERE body_sha256 = $1";

/// A run's model rounds in creation order with what the cache report reads: the round's key,
/// status, usage and, for the generation that was sealed, its tools digest.
pub(crate) const ROUND_CACHE_FACTS: &str = "SELECT t.key, t.status, t.usage, s.tools_sha256, \
     s.id AS sealed_id FROM tasks t LEFT JOIN sealed_requests s ON s.task_id = t.id AND s.generation = t.generation \
     WHERE t.run_id = $1 AND t.kind = 'model_task' ORDER BY t.id";

pub(crate) const SET_SEALED_ATTEMPTS: &str =
    "UPDATE sealed_requests SET attempts = $3 WHERE task_id = $1 AND generation = $2";

// ---- idempotency receipts ----

pub(crate) const RECEIPT_GET: &str = "SELECT id, scope_hash, envelope_sha256, status, body, expires_at, created_at FROM \
     idempotency_receipts WHERE scope_hash = $1 AND expires_at > $2";

pub(crate) const RECEIPT_DROP_EXPIRED_SCOPE: &str =
    "DELETE FROM idempotency_receipts WHERE scope_hash = $1 AND expires_at <= $2";

/// A taken scope returns no row (a conflict that leaves the transaction usable).
pub(crate) const RECEIPT_PUT: &str = "INSERT INTO idempotency_receipts (scope_hash, envelope_sha256, status, body, expires_at, \
     created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (scope_hash) DO NOTHING \
     RETURNING id, scope_hash, envelope_sha256, status, body, expires_at, created_at";

pub(crate) const RECEIPTS_PURGE: &str = "DELETE FROM idempotency_receipts WHERE expires_at <= $1";

// ---- round facts and key probes (migration 0005) ----

pub(crate) const ROUND_FACTS: &str =
    "SELECT task_id, chain_rounds, key_floor, history FROM round_facts WHERE task_id = $1";

pub(crate) const PUT_ROUND_FACTS: &str = "INSERT INTO round_facts (task_id, chain_rounds, key_floor, history) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (task_id) DO UPDATE SET chain_rounds = excluded.chain_rounds, \
     key_floor = excluded.key_floor, history = excluded.history";

/// Every key of the run (the `(run_id, key)` unique index covers it).
pub(crate) const TASK_KEYS_OF_RUN: &str = "SELECT key FROM tasks WHERE run_id = $1";

/// How many keys one [`USED_TASK_KEYS`] probe names.
pub(crate) const KEY_PROBE_SLOTS: usize = 16;

/// `$1` run, `$2`–`$17` keys (padded by repeating one): the ones in use.
pub(crate) const USED_TASK_KEYS: &str = "SELECT key FROM tasks WHERE run_id = $1 AND key IN ($2, $3, $4, $5, $6, \
     $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)";

/// A task, its declaring row, and the rows of run `$2` that row declared (for a continuation:
/// its predecessor, the predecessor's fan and itself), by id.
///
/// The ids are gathered first and the rows fetched by them, never an `OR` of the tests:
/// PostgreSQL has no index path for an `OR` with an `IN (subquery)`, which left
/// [`TASK_AND_DEPS`] a walk of the whole table, a cost that grew with every task ever stored
/// (`postgres/plans.rs` pins that an index serves both).
pub(crate) const TASK_NEIGHBOURHOOD: &str = task_select!(
    "WHERE id IN (SELECT CAST($1 AS BIGINT) UNION ALL SELECT declaring_task_id FROM tasks WHERE id = $1 \
     UNION ALL SELECT id FROM tasks WHERE run_id = $2 AND declaring_task_id = \
     (SELECT declaring_task_id FROM tasks WHERE id = $1)) ORDER BY id"
);

/// A task and the rows it depends on, by id (ids first, as [`TASK_NEIGHBOURHOOD`]).
pub(crate) const TASK_AND_DEPS: &str = task_select!(
    "WHERE id IN (SELECT CAST($1 AS BIGINT) UNION ALL SELECT depends_on_id FROM task_edges WHERE task_id = $1) \
     ORDER BY id"
);

/// The rows depending on task `$1`, each with the rows it depends on, by dependent (`of_task`)
/// and id: [`TASK_AND_DEPS`] of every dependent in one statement (PostgreSQL, after a settle's
/// held writes: `crate::Tx::probe_dependents`).
pub(crate) const DEPENDENTS_AND_THEIR_DEPS_PG: &str = concat!(
    "SELECT x.of_task AS of_task, ",
    task_columns_t!(),
    " FROM (SELECT e.task_id AS of_task, e.task_id AS id FROM task_edges e WHERE e.depends_on_id = $1 \
     UNION SELECT e.task_id, d.depends_on_id FROM task_edges e JOIN task_edges d ON d.task_id = e.task_id \
     WHERE e.depends_on_id = $1) x JOIN tasks t ON t.id = x.id ORDER BY x.of_task, t.id"
);

/// A round as its reply step reads it: the row, its facts (if any), whether any row depends on
/// it, and whether its run holds a kernel-held (`running`) await.
pub(crate) const ROUND_FOR_REPLY: &str = concat!(
    "SELECT ",
    task_columns_t!(),
    ", f.task_id AS facts_task_id, f.chain_rounds AS facts_chain_rounds, \
     f.key_floor AS facts_key_floor, f.history AS facts_history, EXISTS (SELECT 1 FROM \
     task_edges e WHERE e.depends_on_id = t.id) AS has_dependents, EXISTS (SELECT 1 FROM tasks \
     w WHERE w.run_id = t.run_id AND w.status = 'running' AND w.kind = 'await_task') AS \
     running_awaits FROM tasks t LEFT JOIN round_facts f ON f.task_id = t.id WHERE t.id = $1"
);

#[cfg(test)]
mod tests {
    /// The quiescence read writes the open statuses as words: they are exactly
    /// `TaskStatus::OPEN`, one probe each.
    #[test]
    fn the_quiescence_read_probes_every_open_status_once() {
        let text = super::TASKS_OF_QUIESCENT_RUN;
        for s in crate::TaskStatus::OPEN {
            assert_eq!(text.matches(&format!("o.status = '{s}'")).count(), 1, "{s}");
        }
        assert_eq!(text.matches("o.status = ").count(), crate::TaskStatus::OPEN.len());
    }
}
