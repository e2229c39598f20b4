-- 0008 check equalities (PostgreSQL dialect). Keep in step with migrations/sqlite/0008_check_equalities.sql:
-- the parity test (tests/parity.rs) fails on any difference in tables, columns, nullability,
-- normalized types, defaults, keys, unique constraints or indexes.
--
-- The word lists of the run tables' CHECK constraints say "one of these words" as equalities
-- joined by OR instead of `IN (…)`. SQLite builds a temporary b-tree for an IN list of more than
-- two constants on every statement that tests it, and rebuilds its tables to change them (see the
-- SQLite text); PostgreSQL tests either form cheaply and changes them in place. The constraints
-- are restated here so that both dialects declare the same rules in the same words. The rows they
-- admit do not change.
ALTER TABLE runs
    DROP CONSTRAINT runs_status_check,
    ADD CONSTRAINT runs_status_check CHECK (status = 'pending' OR status = 'running'
        OR status = 'needs_attention' OR status = 'canceling' OR status = 'completed'
        OR status = 'canceled'),
    DROP CONSTRAINT runs_approval_mode_check,
    ADD CONSTRAINT runs_approval_mode_check CHECK (approval_mode = 'bypass' OR approval_mode = 'ask'
        OR approval_mode = 'rules');

ALTER TABLE tasks
    DROP CONSTRAINT tasks_kind_check,
    ADD CONSTRAINT tasks_kind_check CHECK (kind = 'model_task' OR kind = 'tool_task'
        OR kind = 'await_task'),
    DROP CONSTRAINT tasks_status_check,
    ADD CONSTRAINT tasks_status_check CHECK (status = 'waiting' OR status = 'needs_approval'
        OR status = 'running' OR status = 'dispatched' OR status = 'awaiting_input'
        OR status = 'completed' OR status = 'failed' OR status = 'canceled' OR status = 'timed_out'
        OR status = 'skipped' OR status = 'uncertain'),
    DROP CONSTRAINT tasks_origin_check,
    ADD CONSTRAINT tasks_origin_check CHECK (origin = 'author' OR origin = 'model' OR origin = 'kernel'),
    DROP CONSTRAINT tasks_on_failure_check,
    ADD CONSTRAINT tasks_on_failure_check CHECK (on_failure = 'propagate' OR on_failure = 'absorb'
        OR on_failure = 'halt'),
    DROP CONSTRAINT tasks_visibility_check,
    ADD CONSTRAINT tasks_visibility_check CHECK (visibility = 'visible' OR visibility = 'collapsed'
        OR visibility = 'hidden');

ALTER TABLE task_edges
    DROP CONSTRAINT task_edges_kind_check,
    ADD CONSTRAINT task_edges_kind_check CHECK (kind = 'after' OR kind = 'reads' OR kind = 'pairs');
