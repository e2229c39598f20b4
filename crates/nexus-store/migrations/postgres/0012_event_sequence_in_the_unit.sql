-- 0012 event sequence in the unit (PostgreSQL dialect). Keep in step with
-- migrations/sqlite/0012_event_sequence_in_the_unit.sql: the parity test (tests/parity.rs)
-- fails on any difference in tables, columns, nullability, normalized types, defaults, keys,
-- unique constraints or indexes.
--
-- The SQLite dialect drops its `events_sequence` trigger here: its unit of work writes a run's
-- sequence once per unit instead of once per event. This dialect never had the trigger: its
-- append moves the sequence in the same statement, under the run row's lock (src/sql.rs,
-- `APPEND_EVENT_PG`). The schema does not change; the column's rule is recorded on it.

COMMENT ON COLUMN runs.last_event_sequence IS
    'The sequence of the run''s latest event (0 before the first); it moves with every committed append.';
