-- 0014 frozen contexts (PostgreSQL dialect). Keep in step with
-- migrations/sqlite/0014_frozen_contexts.sql: the parity test (tests/parity.rs) fails on any
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
-- frozen context take it from here by the digest (src/sql.rs, `frozen_body!`). Two units of
-- work inserting the same new body meet at its key: the second waits for the first to end, then
-- does nothing (or inserts, if the first rolled back).
--
-- `tasks.frozen_context` stays, NULL on every row from here on (docs/decisions.md, "Store"): the
-- dialects keep the same columns. Its values are set to NULL rather than the column dropped, so
-- the old row versions, and with them their out-of-line (TOAST) copies of the bytes, are
-- reclaimed by VACUUM; a dropped column's values would stay in every row until it is rewritten.
-- No foreign key ties `tasks.frozen_digest` to this table (as in SQLite, which could add one
-- only by rebuilding `tasks`): a digest is written only beside its body. Bodies are never
-- deleted, as task rows are not.
--
-- Rows written before migration 0006 hold a frozen context without a digest: they get theirs
-- here, the same digest the task insert computes.

CREATE TABLE frozen_contexts (
    digest TEXT NOT NULL PRIMARY KEY,
    body TEXT NOT NULL
);

UPDATE tasks SET frozen_digest = encode(sha256(convert_to(frozen_context, 'UTF8')), 'hex')
    WHERE frozen_context IS NOT NULL AND frozen_digest IS NULL;

INSERT INTO frozen_contexts (digest, body)
    SELECT frozen_digest, frozen_context FROM tasks WHERE frozen_context IS NOT NULL
    ON CONFLICT (digest) DO NOTHING;

UPDATE tasks SET frozen_context = NULL WHERE frozen_context IS NOT NULL;
