-- 0011 events key (PostgreSQL dialect). Keep in step with migrations/sqlite/0011_events_key.sql:
-- the parity test (tests/parity.rs) fails on any difference in tables, columns, nullability,
-- normalized types, defaults, keys, unique constraints or indexes.
--
-- An event is found by its run and sequence, never by a row id (storage-and-scale.md §4 names
-- `events (run_id, sequence) unique` and no other key). The surrogate `id` goes, and the unique
-- constraint on `(run_id, sequence)` becomes the primary key (its index is built again, once). SQLite gains most from this (its table becomes WITHOUT ROWID: one b-tree per append
-- instead of two, a run's events together in key order; see the SQLite text); here an append writes
-- one index instead of two. The rows and every run's sequences are kept.
ALTER TABLE events
    DROP COLUMN id,
    DROP CONSTRAINT events_run_id_sequence_key,
    ADD PRIMARY KEY (run_id, sequence);
