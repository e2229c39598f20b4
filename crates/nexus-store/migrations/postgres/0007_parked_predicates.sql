-- 0007 parked predicates (PostgreSQL dialect). Keep in step with migrations/sqlite/0007_parked_predicates.sql:
-- the parity test (tests/parity.rs) fails on any difference in tables, columns, nullability,
-- normalized types, defaults, keys, unique constraints or indexes.
--
-- The two partial indexes over parked rows say "a parked status" as four equalities joined by
-- OR instead of `status IN (…)`. SQLite evaluates an index's predicate for the old and the new
-- row on every update that touches `status` or the indexed column, and codes an IN list of more
-- than two constants as a temporary b-tree built on each evaluation: four of them per settle and
-- two per claim, about 3 % of the inbox path's CPU (BENCHMARKS.md). The rows the indexes hold do
-- not change. The sweep's selection (`sql::EXPIRED_PARKS`) repeats the predicate word for word,
-- which is how SQLite's planner recognises that a partial index covers it.
DROP INDEX tasks_deadline;
CREATE INDEX tasks_deadline ON tasks (deadline_at)
    WHERE status = 'needs_approval' OR status = 'running' OR status = 'dispatched' OR status = 'awaiting_input';
DROP INDEX tasks_parked;
CREATE INDEX tasks_parked ON tasks (id)
    WHERE status = 'needs_approval' OR status = 'running' OR status = 'dispatched' OR status = 'awaiting_input';
