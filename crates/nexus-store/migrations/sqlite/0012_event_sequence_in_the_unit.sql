-- 0012 event sequence in the unit (SQLite dialect). Keep in step with
-- migrations/postgres/0012_event_sequence_in_the_unit.sql: the parity test (tests/parity.rs)
-- fails on any difference in tables, columns, nullability, normalized types, defaults, keys,
-- unique constraints or indexes.
--
-- The `events_sequence` trigger (migration 0005) rewrote the run row on every event insert, to
-- move `runs.last_event_sequence`: three rewrites of the same row for a runner task's claim and
-- commit, each its own trigger program. The writes all come through the store's unit of work,
-- which already knows each run's sequence inside the unit (the write lock is held from `BEGIN`);
-- it now writes the run row's sequence once, with its own update of the run or else just before
-- it commits, and gives a run row read inside the unit the unit's sequence (src/tx.rs,
-- `RunSequence`). Every committed state holds the same `last_event_sequence` as before. No row
-- changes here.

DROP TRIGGER events_sequence;
