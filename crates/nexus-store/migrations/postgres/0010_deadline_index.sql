-- 0010 deadline index (PostgreSQL dialect). Keep in step with migrations/sqlite/0010_deadline_index.sql:
-- the parity test (tests/parity.rs) fails on any difference in tables, columns, nullability,
-- normalized types, defaults, keys, unique constraints or indexes.
--
-- `tasks_deadline (deadline_at)` over parked rows was written by every claim (the deadline moves:
-- an index delete and an insert) and every settle (a delete), and read by nothing: the sweep's
-- expiry selection (`sql::EXPIRED_PARKS`) walks `tasks_parked (id)`, the same parked rows in the
-- id order it pages by, and tests each row's deadline. It is dropped; the sweep's plan is the one
-- it had (a store test holds it).
DROP INDEX tasks_deadline;
