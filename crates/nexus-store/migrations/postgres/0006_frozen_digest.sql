-- 0006 frozen digest (PostgreSQL dialect). Keep in step with migrations/sqlite/0006_frozen_digest.sql:
-- the parity test (tests/parity.rs) fails on any difference in tables, columns, nullability,
-- normalized types, defaults, keys, unique constraints or indexes.
--
-- The SHA-256 (lowercase hex) of a task's `frozen_context` bytes, written by the same insert
-- and, like the frozen context, never updated, so a reader can key on the frozen context
-- (the kernel's `tool_search` index cache) without reading it. NULL where the frozen context
-- is NULL and on rows written before this migration.
ALTER TABLE tasks ADD COLUMN frozen_digest TEXT;

-- The head read (`task_frozen_head`: id, kind, declaring row, digest) from this index alone.
-- SQLite appends the new column after `frozen_context` in the row record, so reading it from
-- the table walks the frozen context's whole overflow chain (about 0.5 ms at 2.9 MB); the
-- SQLite statement names this index (`INDEXED BY`). PostgreSQL keeps large values out of line
-- and has the same index for parity.
CREATE INDEX tasks_frozen_head ON tasks (id, kind, declaring_task_id, frozen_digest);
