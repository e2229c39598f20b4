-- 0003 uploads (postgres dialect). Keep in step with migrations/sqlite/0003_uploads.sql: the
-- parity test (tests/parity.rs) fails on any difference in tables, columns, nullability,
-- normalized types, defaults, keys, unique constraints or indexes.
--
-- Uploads and captures (uploads.md, storage-and-scale.md §4): a descriptor per upload, the
-- rows that bind it, and the content-addressed blobs (the bytes live under <data-dir>/blobs/,
-- keyed by SHA-256; this table is their metadata, so a blob is deleted only when no
-- descriptor references it).

CREATE TABLE blobs (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sha256 TEXT NOT NULL UNIQUE,
    byte_size BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE uploads (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id UUID NOT NULL UNIQUE,
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    -- Exactly one creator: a member (an upload) or an executor (a capture).
    creator_member_id BIGINT REFERENCES members (id),
    creator_executor_id BIGINT REFERENCES executors (id),
    filename TEXT NOT NULL,
    -- Detected from the bytes (uploads.md §2), never the client's claim.
    content_type TEXT NOT NULL,
    byte_size BIGINT NOT NULL,
    sha256 TEXT NOT NULL REFERENCES blobs (sha256),
    created_at BIGINT NOT NULL,
    -- Set by the first binding; NULL while unbound (the reaper's index).
    bound_at BIGINT,
    CHECK ((creator_member_id IS NULL) <> (creator_executor_id IS NULL))
);

-- The reaper: unbound uploads by age.
CREATE INDEX uploads_unbound ON uploads (created_at) WHERE bound_at IS NULL;
CREATE INDEX uploads_sha256 ON uploads (sha256);

-- A binding is a committed row naming the upload: a task (a step attachment or a result
-- resource_link) or, with conversations, an input (input_id; its table comes later).
CREATE TABLE upload_bindings (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    upload_id BIGINT NOT NULL REFERENCES uploads (id),
    task_id BIGINT REFERENCES tasks (id),
    input_id BIGINT,
    created_at BIGINT NOT NULL,
    UNIQUE (upload_id, task_id),
    CHECK ((task_id IS NULL) <> (input_id IS NULL))
);

CREATE INDEX upload_bindings_task ON upload_bindings (task_id);
