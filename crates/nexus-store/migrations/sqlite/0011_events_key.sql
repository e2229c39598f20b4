-- 0011 events key (SQLite dialect). Keep in step with migrations/postgres/0011_events_key.sql:
-- the parity test (tests/parity.rs) fails on any difference in tables, columns, nullability,
-- normalized types, defaults, keys, unique constraints or indexes.
--
-- An event is found by its run and sequence, never by a row id (storage-and-scale.md §4 names
-- `events (run_id, sequence) unique` and no other key), yet the table kept a surrogate `id` as
-- its rowid beside the unique index on `(run_id, sequence)`: every append wrote two b-trees (the
-- row at the rowid table's end, its index entry at its run's place), and a run's events were read
-- through the index with one rowid lookup each, scattered among every other run's events. The
-- table is now keyed by `(run_id, sequence)` alone, WITHOUT ROWID, so an append writes one b-tree
-- and a run's events lie together in key order. `id` is gone; no statement read it. The rows, and
-- so every run's sequences, are kept.
--
-- SQLite rebuilds the table by its documented procedure (new table, rows copied, old dropped, new
-- renamed); no table references `events`. The `events_sequence` trigger (migration 0005) is
-- recreated as it was. The migration runner turns foreign-key enforcement off while a migration
-- runs and ends it with `PRAGMA foreign_key_check` (sqlite.rs).

DROP TRIGGER events_sequence;

CREATE TABLE events_rebuilt (
    run_id BIGINT NOT NULL REFERENCES runs (id),
    sequence BIGINT NOT NULL,
    type TEXT NOT NULL,
    at BIGINT NOT NULL,
    task_key TEXT,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, sequence)
) WITHOUT ROWID;
INSERT INTO events_rebuilt (run_id, sequence, type, at, task_key, data)
    SELECT run_id, sequence, type, at, task_key, data FROM events;
DROP TABLE events;
ALTER TABLE events_rebuilt RENAME TO events;

CREATE TRIGGER events_sequence AFTER INSERT ON events
BEGIN
    UPDATE runs SET last_event_sequence = NEW.sequence WHERE id = NEW.run_id;
END;
