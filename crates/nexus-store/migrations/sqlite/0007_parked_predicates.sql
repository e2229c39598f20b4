-- 0007 parked predicates (SQLite dialect). Keep in step with migrations/postgres/0007_parked_predicates.sql:
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

-- The inbox page (storage-and-scale.md §9): an executor's open rows in id order. With
-- `tasks_inbox (addressed_executor_id, status, id)` alone a page read every open row of the
-- executor and sorted them before its LIMIT (one index range per status), so a page cost grew
-- with the inbox. This index holds exactly the inbox's rows in page order; `sql::INBOX_PAGE`
-- repeats its predicate word for word. `tasks_inbox` stays for the sweep's revoked-addressee
-- selection.
CREATE INDEX tasks_inbox_open ON tasks (addressed_executor_id, id)
    WHERE status = 'dispatched' OR status = 'needs_approval' OR status = 'awaiting_input';
