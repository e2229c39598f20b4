-- 0008 check equalities (SQLite dialect). Keep in step with migrations/postgres/0008_check_equalities.sql:
-- the parity test (tests/parity.rs) fails on any difference in tables, columns, nullability,
-- normalized types, defaults, keys, unique constraints or indexes.
--
-- The word lists of the run tables' CHECK constraints say "one of these words" as equalities
-- joined by OR instead of `IN (…)`, as migration 0007 did for the partial indexes. SQLite codes
-- an IN list of more than two constants as a temporary b-tree that it builds and drops on every
-- execution of a statement that tests the constraint: every insert tests every CHECK, and every
-- update that writes a checked column tests its CHECK, so each settle's task and run updates
-- built two such trees (about 8 % of the inbox path's instructions, BENCHMARKS.md) and each task
-- insert five. The words are the same, and so are the rows the constraints admit.
--
-- SQLite cannot change a constraint in place, so the three tables are rebuilt by its documented
-- procedure: a new table, the rows copied (ids kept), the old table dropped, the new one renamed,
-- its indexes and the trigger that names `runs` recreated as they were (migrations 0002, 0005,
-- 0006, 0007). The migration runner turns foreign-key enforcement off while a migration runs and
-- ends each one with `PRAGMA foreign_key_check`, which must find nothing (sqlite.rs). Columns keep
-- their order (`frozen_digest` stays last, where migration 0006 added it).

DROP TRIGGER events_sequence;

CREATE TABLE runs_rebuilt (
    id INTEGER PRIMARY KEY,
    public_id TEXT NOT NULL UNIQUE,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    created_by_id BIGINT NOT NULL REFERENCES members (id),
    answering_member_id BIGINT NOT NULL REFERENCES members (id),
    declaring_agent_id BIGINT REFERENCES members (id),
    status TEXT NOT NULL CHECK (status = 'pending' OR status = 'running' OR status = 'needs_attention'
        OR status = 'canceling' OR status = 'completed' OR status = 'canceled'),
    hosting TEXT NOT NULL,
    approval_mode TEXT NOT NULL CHECK (approval_mode = 'bypass' OR approval_mode = 'ask'
        OR approval_mode = 'rules'),
    approval_rules TEXT,
    default_runner_id BIGINT REFERENCES executors (id),
    deliverable_task_id BIGINT REFERENCES tasks (id),
    revision BIGINT NOT NULL,
    attention TEXT,
    last_event_sequence BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    started_at BIGINT,
    ended_at BIGINT
);
INSERT INTO runs_rebuilt SELECT * FROM runs;
DROP TABLE runs;
ALTER TABLE runs_rebuilt RENAME TO runs;
CREATE INDEX runs_workspace ON runs (workspace_id, id);

CREATE TABLE tasks_rebuilt (
    id INTEGER PRIMARY KEY,
    run_id BIGINT NOT NULL REFERENCES runs (id),
    key TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind = 'model_task' OR kind = 'tool_task' OR kind = 'await_task'),
    status TEXT NOT NULL CHECK (status = 'waiting' OR status = 'needs_approval' OR status = 'running'
        OR status = 'dispatched' OR status = 'awaiting_input' OR status = 'completed'
        OR status = 'failed' OR status = 'canceled' OR status = 'timed_out' OR status = 'skipped'
        OR status = 'uncertain'),
    generation BIGINT NOT NULL,
    origin TEXT NOT NULL CHECK (origin = 'author' OR origin = 'model' OR origin = 'kernel'),
    on_failure TEXT NOT NULL CHECK (on_failure = 'propagate' OR on_failure = 'absorb'
        OR on_failure = 'halt'),
    failure_resolution TEXT,
    visibility TEXT NOT NULL CHECK (visibility = 'visible' OR visibility = 'collapsed'
        OR visibility = 'hidden'),
    mainline INTEGER NOT NULL,
    branch_of TEXT,
    pairs_with TEXT,
    declaring_task_id BIGINT REFERENCES tasks (id),
    tool_name TEXT,
    tool_alias TEXT,
    tool_input TEXT,
    tool_call_id TEXT,
    target_executor_id BIGINT REFERENCES executors (id),
    addressed_executor_id BIGINT REFERENCES executors (id),
    addressed_role TEXT,
    effect_profile TEXT,
    timeout_ms BIGINT,
    await_started_at BIGINT,
    deadline_at BIGINT,
    claim_token TEXT,
    claimed_at BIGINT,
    claimant_id BIGINT REFERENCES executors (id),
    content TEXT,
    structured_present INTEGER NOT NULL,
    structured_content TEXT,
    is_error INTEGER NOT NULL,
    title TEXT,
    metadata TEXT,
    error_key TEXT,
    error_detail TEXT,
    approval TEXT,
    -- Written by the insert only, never changed (storage-and-scale.md §8.5).
    frozen_context TEXT,
    request_surface TEXT,
    usage TEXT,
    reply TEXT,
    resolution_token_sha256 TEXT,
    created_at BIGINT NOT NULL,
    started_at BIGINT,
    settled_at BIGINT,
    frozen_digest TEXT,
    UNIQUE (run_id, key)
);
INSERT INTO tasks_rebuilt SELECT * FROM tasks;
DROP TABLE tasks;
ALTER TABLE tasks_rebuilt RENAME TO tasks;
CREATE INDEX tasks_inbox ON tasks (addressed_executor_id, status, id);
CREATE INDEX tasks_held_approvals ON tasks (id) WHERE status = 'needs_approval';
CREATE INDEX tasks_declaring ON tasks (run_id, declaring_task_id);
CREATE INDEX tasks_run_status ON tasks (run_id, status);
CREATE INDEX tasks_frozen_head ON tasks (id, kind, declaring_task_id, frozen_digest);
CREATE INDEX tasks_deadline ON tasks (deadline_at)
    WHERE status = 'needs_approval' OR status = 'running' OR status = 'dispatched' OR status = 'awaiting_input';
CREATE INDEX tasks_parked ON tasks (id)
    WHERE status = 'needs_approval' OR status = 'running' OR status = 'dispatched' OR status = 'awaiting_input';
CREATE INDEX tasks_inbox_open ON tasks (addressed_executor_id, id)
    WHERE status = 'dispatched' OR status = 'needs_approval' OR status = 'awaiting_input';

CREATE TABLE task_edges_rebuilt (
    task_id BIGINT NOT NULL REFERENCES tasks (id),
    depends_on_id BIGINT NOT NULL REFERENCES tasks (id),
    kind TEXT NOT NULL CHECK (kind = 'after' OR kind = 'reads' OR kind = 'pairs'),
    PRIMARY KEY (task_id, depends_on_id, kind)
);
INSERT INTO task_edges_rebuilt SELECT * FROM task_edges;
DROP TABLE task_edges;
ALTER TABLE task_edges_rebuilt RENAME TO task_edges;
CREATE INDEX task_edges_depends_on ON task_edges (depends_on_id);

CREATE TRIGGER events_sequence AFTER INSERT ON events
BEGIN
    UPDATE runs SET last_event_sequence = NEW.sequence WHERE id = NEW.run_id;
END;
