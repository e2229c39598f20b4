-- 0015 sealed bodies and the tools digest (PostgreSQL dialect). Keep in step with
-- migrations/sqlite/0015_sealed_bodies.sql: the parity test (tests/parity.rs) fails on any
-- difference in tables, columns, nullability, normalized types, defaults, keys, unique
-- constraints or indexes.
--
-- The exact body bytes a round sent (providers.md §4, served by `GET …/request?format=provider`)
-- are stored once per distinct body, under their SHA-256 in lowercase hex, which every sealed
-- request already records as `body_sha256`. A retried task seals a new record with the same
-- bytes, and so do identical requests in different runs: they now share one row. The seal
-- writes the body here (`INSERT … ON CONFLICT DO NOTHING`) beside its record; the reads join on
-- the digest. Bodies are never deleted, as sealed records are not. (`WHERE true`: SQLite's
-- grammar needs a WHERE before an upsert's ON CONFLICT in `INSERT … SELECT`.)
--
-- `tools_sha256`: the SHA-256 (lowercase hex) of the tools bytes inside the body, as the
-- adapter encoded them (NULL when the request offered no tools, and on rows sealed before this
-- migration). The per-round cache report of `GET R/cache` compares it from round to round.

CREATE TABLE sealed_bodies (
    body_sha256 TEXT NOT NULL PRIMARY KEY,
    body BYTEA NOT NULL
);

INSERT INTO sealed_bodies (body_sha256, body)
    SELECT body_sha256, body FROM sealed_requests WHERE true
    ON CONFLICT (body_sha256) DO NOTHING;

ALTER TABLE sealed_requests DROP COLUMN body;

ALTER TABLE sealed_requests ADD COLUMN tools_sha256 TEXT;
