//! Tasks, their edges, round facts and key probes (migrations 0002, 0005, 0006): the SQL text
//! of `crate::sql` for them (its module doc holds the rules every statement follows).

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
/// [`crate::row`]'s bind order. With `@id`, the row's id is given (`$46`, from
/// [`RESERVE_IDS`]) and nothing is returned.
macro_rules! insert_task {
    ($prefix:literal) => {
        insert_task!(@ $prefix, "", "", "", " RETURNING id, run_id, key, kind, origin, \
     NULL AS frozen_digest, created_at, status, generation, on_failure, failure_resolution, \
     visibility, mainline, branch_of, pairs_with, declaring_task_id, tool_name, tool_alias, \
     tool_input, tool_call_id, target_executor_id, addressed_executor_id, addressed_role, \
     effect_profile, timeout_ms, await_started_at, deadline_at, claim_token, claimed_at, \
     claimant_id, content, structured_present, structured_content, is_error, title, metadata, \
     error_key, error_detail, approval, request_surface, usage, reply, \
     resolution_token_sha256, started_at, settled_at")
    };
    (@id $prefix:literal) => {
        insert_task!(@ $prefix, "id, ", "OVERRIDING SYSTEM VALUE ", "$46, ", "")
    };
    (@ $prefix:literal, $id_column:literal, $overriding:literal, $id_value:literal, $suffix:literal) => {
        concat!(
            $prefix,
            "INSERT INTO tasks (",
            $id_column,
            "run_id, key, kind, origin, frozen_digest, created_at, status, \
     generation, on_failure, failure_resolution, visibility, mainline, branch_of, pairs_with, \
     declaring_task_id, tool_name, tool_alias, tool_input, tool_call_id, target_executor_id, \
     addressed_executor_id, addressed_role, effect_profile, timeout_ms, await_started_at, \
     deadline_at, claim_token, claimed_at, claimant_id, content, structured_present, \
     structured_content, is_error, title, metadata, error_key, error_detail, approval, \
     request_surface, usage, reply, resolution_token_sha256, started_at, settled_at) ",
            $overriding,
            "VALUES (",
            $id_value,
            "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, \
     $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, \
     $34, $35, $36, $37, $38, $39, $40, $41, $42, $43, $44)",
            $suffix
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

/// [`INSERT_TASK_WITH_BODY_PG`] under a reserved id (`$46`), buffered with the unit's writes
/// (`postgres/unit/reserved.rs`): the caller builds the row, so nothing is returned.
pub(crate) const INSERT_TASK_WITH_ID_PG: &str = insert_task!(@id
    "WITH body AS (INSERT INTO frozen_contexts (digest, body) SELECT CAST($5 AS TEXT), \
     CAST($45 AS TEXT) WHERE $5 IS NOT NULL ON CONFLICT (digest) DO NOTHING) "
);

/// Ids taken ahead of the inserts a unit holds (`postgres/unit/reserved.rs`): `$1` from the `tasks`
/// identity (`kind` 0), `$2` from the `jobs` identity (`kind` 1). A reserved id the unit does
/// not use is a gap, as a rolled-back insert's is.
pub(crate) const RESERVE_IDS: &str = "SELECT 0 AS kind, nextval(pg_get_serial_sequence('tasks', 'id')) AS id \
     FROM generate_series(1, CAST($1 AS INTEGER)) UNION ALL SELECT 1, nextval(pg_get_serial_sequence('jobs', 'id')) \
     FROM generate_series(1, CAST($2 AS INTEGER))";

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
/// `tool_search` call: read with the lock of the call's evaluation (`Tx::lock` of a `LockReads::Evaluation`).
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

/// What the run's end reads of every row of run `$1` ([`crate::TaskEndRow`]'s columns), unless one
/// of them is in an open status (`TaskStatus::OPEN`, one probe of `tasks_run_status` each,
/// evaluated once): no rows then. Not `o.status IN (…)`, which SQLite codes as a temporary b-tree
/// built on every execution, dearer than the five probes
/// (docs/decisions/115-sqlite-temporary-btrees.md); and the statuses are words, not bound values,
/// because a bound status against the partial indexes' predicates makes the plan value-dependent (a
/// recompile on every execution). No `ORDER BY`: the store sorts the few rows by id itself, where
/// SQLite would open a sorter per execution.
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
/// end-of-run read sent with its probe of the row's dependents (`postgres/unit/after_buffered.rs`). With a
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
/// buffered writes: `crate::Tx::around_settled`).
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
