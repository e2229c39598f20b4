-- 0014 frozen contexts (SQLite dialect). Keep in step with
-- migrations/postgres/0014_frozen_contexts.sql: the parity test (tests/parity.rs) fails on any
-- difference in tables, columns, nullability, normalized types, defaults, keys, unique
-- constraints or indexes.
--
-- A model task's frozen context (the rendered tool declaration, environment and skill catalog,
-- up to about 1 MiB) is stored once per distinct content, under its digest: the SHA-256 of its
-- bytes in lowercase hex, which the task insert already wrote to `tasks.frozen_digest`
-- (migration 0006). Every task row held its own copy, and a continuation round copies its
-- round's bytes, so a run of hundreds of rounds over a large declaration stored the same bytes
-- hundreds of times. The task insert now writes the body here once per digest
-- (`INSERT … ON CONFLICT DO NOTHING`) and the task row keeps the digest; the reads that return a
-- frozen context take it from here by the digest (src/sql.rs, `frozen_body!`).
--
-- `tasks.frozen_context` stays, NULL on every row from here on (docs/decisions.md, "Store"): the
-- table is not rebuilt, a NULL takes no room in a row, and the dialects keep the same columns.
-- No foreign key ties `tasks.frozen_digest` to this table: a digest is written only beside its
-- body, and SQLite cannot add a foreign key without rebuilding `tasks` (migration 0008's
-- procedure) for a check the insert already makes true. Bodies are never deleted, as task rows
-- are not.
--
-- Rows written before migration 0006 hold a frozen context without a digest: they get theirs
-- here, from `nexus_sha256_hex`, a function the SQLite migrator registers on its connection
-- (src/sqlite/migrate.rs), the same digest the task insert computes. The freed pages stay in
-- the file for later rows (SQLite shrinks a file only by VACUUM).

CREATE TABLE frozen_contexts (
    digest TEXT NOT NULL PRIMARY KEY,
    body TEXT NOT NULL
);

UPDATE tasks SET frozen_digest = nexus_sha256_hex(frozen_context)
    WHERE frozen_context IS NOT NULL AND frozen_digest IS NULL;

INSERT INTO frozen_contexts (digest, body)
    SELECT frozen_digest, frozen_context FROM tasks WHERE frozen_context IS NOT NULL
    ON CONFLICT (digest) DO NOTHING;

UPDATE tasks SET frozen_context = NULL WHERE frozen_context IS NOT NULL;
