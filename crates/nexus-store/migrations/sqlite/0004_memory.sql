-- 0004 memory (SQLite dialect). Keep in step with migrations/postgres/0004_memory.sql: the
-- parity test (tests/parity.rs) fails on any difference in tables, columns, nullability,
-- normalized types, defaults, keys, unique constraints or indexes.
--
-- Memory documents (kernel-tools.md §8): one row per (scope, owner, path). `owner_id` is the
-- internal id of the scope's owner: a member (`user`), a workspace (`workspace`) or a
-- conversation (`conversation`), so it carries no foreign key. `path` is the whole path, scope
-- root included (`workspace/notes/deploy.md`). `byte_size` is the UTF-8 length of `content`.

CREATE TABLE memory_documents (
    id INTEGER PRIMARY KEY,
    scope TEXT NOT NULL CHECK (scope IN ('user', 'workspace', 'conversation')),
    owner_id BIGINT NOT NULL,
    path TEXT NOT NULL,
    content TEXT NOT NULL,
    description TEXT,
    byte_size BIGINT NOT NULL,
    lock_version BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (scope, owner_id, path)
);
