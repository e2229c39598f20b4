-- 0001 foundation (SQLite dialect). Keep in step with migrations/postgres/0001_foundation.sql:
-- the parity test (tests/parity.rs) fails on any difference in tables, columns, nullability,
-- normalized types, defaults, keys, unique constraints or indexes.
--
-- Portable types (storage-and-scale.md §2): internal ids INTEGER PRIMARY KEY (the rowid),
-- other integers and timestamps (Unix ms) BIGINT, public ids TEXT (a hyphenated UUID),
-- JSON TEXT, booleans INTEGER 0/1 (the only other use of INTEGER).

CREATE TABLE accounts (
    id INTEGER PRIMARY KEY,
    public_id TEXT NOT NULL UNIQUE,
    handle TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

CREATE TABLE workspaces (
    id INTEGER PRIMARY KEY,
    public_id TEXT NOT NULL UNIQUE,
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    handle TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (account_id, handle)
);

CREATE TABLE members (
    id INTEGER PRIMARY KEY,
    public_id TEXT NOT NULL UNIQUE,
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    kind TEXT NOT NULL CHECK (kind IN ('human', 'agent')),
    handle TEXT NOT NULL,
    display_name TEXT NOT NULL,
    role TEXT NOT NULL,
    steward_id BIGINT REFERENCES members (id),
    configuration TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (account_id, handle)
);

CREATE TABLE workspace_members (
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    member_id BIGINT NOT NULL REFERENCES members (id),
    standing TEXT NOT NULL CHECK (standing IN ('read', 'write')),
    PRIMARY KEY (workspace_id, member_id)
);

CREATE INDEX workspace_members_member ON workspace_members (member_id);

CREATE TABLE executors (
    id INTEGER PRIMARY KEY,
    public_id TEXT NOT NULL UNIQUE,
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    kind TEXT NOT NULL CHECK (kind IN ('agent_application', 'runner')),
    status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
    display_name TEXT NOT NULL,
    credential_epoch BIGINT NOT NULL DEFAULT 0,
    assignment_scope TEXT NOT NULL CHECK (assignment_scope IN ('user_private', 'account_wide')),
    manager_id BIGINT REFERENCES members (id),
    agent_id BIGINT UNIQUE REFERENCES members (id),
    served_tools TEXT NOT NULL DEFAULT '[]',
    environment TEXT NOT NULL DEFAULT '{}',
    served_documents TEXT NOT NULL DEFAULT '[]',
    last_seen_at BIGINT,
    created_at BIGINT NOT NULL
);

-- Only one non-revoked runner per (account, manager, registration name) (executor.md §1).
CREATE UNIQUE INDEX executors_active_runner_name ON executors (account_id, manager_id, display_name)
    WHERE kind = 'runner' AND status = 'active';

CREATE INDEX executors_account_kind ON executors (account_id, kind, id);

CREATE TABLE credentials (
    id INTEGER PRIMARY KEY,
    public_id TEXT NOT NULL UNIQUE,
    plane TEXT NOT NULL CHECK (plane IN ('member', 'executor_transport')),
    member_id BIGINT REFERENCES members (id),
    executor_id BIGINT REFERENCES executors (id),
    epoch BIGINT NOT NULL,
    secret_sha256 TEXT NOT NULL,
    expires_at BIGINT,
    revoked_at BIGINT,
    created_at BIGINT NOT NULL,
    CHECK ((plane = 'member' AND member_id IS NOT NULL AND executor_id IS NULL)
        OR (plane = 'executor_transport' AND executor_id IS NOT NULL AND member_id IS NULL))
);

CREATE INDEX credentials_executor_epoch ON credentials (executor_id, epoch);
CREATE INDEX credentials_member ON credentials (member_id);
