-- 0002 runs (SQLite dialect). Keep in step with migrations/postgres/0002_runs.sql: the parity
-- test (tests/parity.rs) fails on any difference in tables, columns, nullability, normalized
-- types, defaults, keys, unique constraints or indexes.
--
-- Runs, tasks, their edges and events, kernel jobs, sealed provider requests and idempotency
-- receipts (storage-and-scale.md §4, runs.md §1/§5/§11, errors-and-auth.md §6). JSON is TEXT,
-- timestamps BIGINT Unix ms, booleans INTEGER 0/1.

CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    public_id TEXT NOT NULL UNIQUE,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    created_by_id BIGINT NOT NULL REFERENCES members (id),
    answering_member_id BIGINT NOT NULL REFERENCES members (id),
    declaring_agent_id BIGINT REFERENCES members (id),
    status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'needs_attention', 'canceling',
        'completed', 'canceled')),
    hosting TEXT NOT NULL,
    approval_mode TEXT NOT NULL CHECK (approval_mode IN ('bypass', 'ask', 'rules')),
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

CREATE INDEX runs_workspace ON runs (workspace_id, id);

CREATE TABLE tasks (
    id INTEGER PRIMARY KEY,
    run_id BIGINT NOT NULL REFERENCES runs (id),
    key TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('model_task', 'tool_task', 'await_task')),
    status TEXT NOT NULL CHECK (status IN ('waiting', 'needs_approval', 'running', 'dispatched',
        'awaiting_input', 'completed', 'failed', 'canceled', 'timed_out', 'skipped', 'uncertain')),
    generation BIGINT NOT NULL,
    origin TEXT NOT NULL CHECK (origin IN ('author', 'model', 'kernel')),
    on_failure TEXT NOT NULL CHECK (on_failure IN ('propagate', 'absorb', 'halt')),
    failure_resolution TEXT,
    visibility TEXT NOT NULL CHECK (visibility IN ('visible', 'collapsed', 'hidden')),
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
    UNIQUE (run_id, key)
);

-- The inbox: addressed_executor_id = $e AND status IN (…) AND id > $cursor ORDER BY id.
CREATE INDEX tasks_inbox ON tasks (addressed_executor_id, status, id);
-- The sweep: parked rows by deadline.
CREATE INDEX tasks_deadline ON tasks (deadline_at)
    WHERE status IN ('needs_approval', 'running', 'dispatched', 'awaiting_input');
-- Held approvals, oldest first.
CREATE INDEX tasks_held_approvals ON tasks (id) WHERE status = 'needs_approval';

CREATE TABLE task_edges (
    task_id BIGINT NOT NULL REFERENCES tasks (id),
    depends_on_id BIGINT NOT NULL REFERENCES tasks (id),
    kind TEXT NOT NULL CHECK (kind IN ('after', 'reads', 'pairs')),
    PRIMARY KEY (task_id, depends_on_id, kind)
);

CREATE INDEX task_edges_depends_on ON task_edges (depends_on_id);

CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    run_id BIGINT NOT NULL REFERENCES runs (id),
    sequence BIGINT NOT NULL,
    type TEXT NOT NULL,
    at BIGINT NOT NULL,
    task_key TEXT,
    data TEXT NOT NULL,
    UNIQUE (run_id, sequence)
);

CREATE TABLE jobs (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    run_id BIGINT NOT NULL REFERENCES runs (id),
    task_id BIGINT REFERENCES tasks (id),
    generation BIGINT NOT NULL,
    available_at BIGINT NOT NULL,
    locked_by TEXT,
    locked_until BIGINT,
    attempts BIGINT NOT NULL
);

CREATE INDEX jobs_available ON jobs (available_at) WHERE locked_by IS NULL;
CREATE INDEX jobs_locked_by ON jobs (locked_by) WHERE locked_by IS NOT NULL;

CREATE TABLE sealed_requests (
    id INTEGER PRIMARY KEY,
    task_id BIGINT NOT NULL REFERENCES tasks (id),
    generation BIGINT NOT NULL,
    record TEXT NOT NULL,
    body_sha256 TEXT NOT NULL,
    request_bytes BIGINT NOT NULL,
    body BLOB NOT NULL,
    attempts TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (task_id, generation)
);

CREATE TABLE idempotency_receipts (
    id INTEGER PRIMARY KEY,
    scope_hash TEXT NOT NULL UNIQUE,
    envelope_sha256 TEXT NOT NULL,
    status BIGINT NOT NULL,
    body TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE INDEX idempotency_receipts_expires ON idempotency_receipts (expires_at);
