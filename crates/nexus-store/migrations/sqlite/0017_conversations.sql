-- 0017 conversations (SQLite dialect). Keep in step with migrations/postgres/0017_conversations.sql:
-- the parity test (tests/parity.rs) fails on any difference in tables, columns, nullability,
-- normalized types, defaults, keys, unique constraints or indexes.
--
-- Conversations and their inputs (runs.md §12, storage-and-scale.md §4). A child conversation
-- names its parent, the spawning task and a label unique per parent. `archived_at` is NULL
-- while the conversation is live; `last_event_sequence` is its feed's last sequence. An
-- input's `attachments` and `tool_names` are JSON arrays (TEXT); `deliver_at` is NULL for an
-- input due at once. Turns are not stored yet (issue 25,
-- part 1: inputs stay pending).

CREATE TABLE conversations (
    id INTEGER PRIMARY KEY,
    public_id TEXT NOT NULL UNIQUE,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    created_by_id BIGINT NOT NULL REFERENCES members (id),
    answering_member_id BIGINT NOT NULL REFERENCES members (id),
    default_runner_id BIGINT REFERENCES executors (id),
    title TEXT,
    parent_id BIGINT REFERENCES conversations (id),
    spawn_task_id BIGINT REFERENCES tasks (id),
    label TEXT,
    archived_at BIGINT,
    last_event_sequence BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (parent_id, label)
);

CREATE INDEX conversations_workspace ON conversations (workspace_id, id);
CREATE INDEX conversations_parent ON conversations (parent_id, id);

CREATE TABLE conversation_inputs (
    id INTEGER PRIMARY KEY,
    public_id TEXT NOT NULL UNIQUE,
    conversation_id BIGINT NOT NULL REFERENCES conversations (id),
    kind TEXT NOT NULL CHECK (kind = 'user' OR kind = 'task_result'),
    state TEXT NOT NULL CHECK (state = 'pending' OR state = 'steering' OR state = 'consumed' OR state = 'canceled'),
    delivery_mode TEXT NOT NULL CHECK (delivery_mode = 'queue' OR delivery_mode = 'steer'),
    content TEXT,
    attachments TEXT NOT NULL,
    model TEXT,
    tool_names TEXT,
    approval_mode TEXT,
    created_by_id BIGINT REFERENCES members (id),
    deliver_at BIGINT,
    created_at BIGINT NOT NULL
);

CREATE INDEX conversation_inputs_state ON conversation_inputs (conversation_id, state, id);

-- The conversation feed (runs.md §12): gapless sequences per conversation, moved with
-- `conversations.last_event_sequence` in the change's transaction.
CREATE TABLE conversation_events (
    id INTEGER PRIMARY KEY,
    conversation_id BIGINT NOT NULL REFERENCES conversations (id),
    sequence BIGINT NOT NULL,
    type TEXT NOT NULL,
    at BIGINT NOT NULL,
    data TEXT NOT NULL,
    UNIQUE (conversation_id, sequence)
);
