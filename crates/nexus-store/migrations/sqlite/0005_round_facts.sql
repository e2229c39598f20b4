-- 0005 round facts (SQLite dialect). Keep in step with migrations/postgres/0005_round_facts.sql:
-- the parity test (tests/parity.rs) fails on any difference in tables, columns, nullability,
-- normalized types, defaults, keys, unique constraints or indexes.
--
-- The per-round hot path (runs.md §7, issue 4): indexes for the queries a round makes, and the
-- chain facts a continuation carries so that expanding a round reads neither the whole chain
-- nor every key of the run.

-- A round's fan and continuation (`tasks_declared_by`: run_id = $r AND declaring_task_id = $d).
CREATE INDEX tasks_declaring ON tasks (run_id, declaring_task_id);
-- Open rows and kernel-held awaits of a run (`any_open_task`, `any_running_await`).
CREATE INDEX tasks_run_status ON tasks (run_id, status);

-- The sweep's two selections, which run on every worker pass: parked rows in id order (the
-- expiry candidates), and the revoked addressees whose parks it handles.
CREATE INDEX tasks_parked ON tasks (id)
    WHERE status IN ('needs_approval', 'running', 'dispatched', 'awaiting_input');
CREATE INDEX executors_status ON executors (status);

-- One row per continuation round, written in the transaction that authors it (the expansion of
-- its chain predecessor), never changed. `chain_rounds`: the rounds of the chain up to and
-- including the predecessor; `history`: the predecessor's expansion history (JSON, the
-- repeat-call rule's look-back before the predecessor, oldest first); `key_floor`: every
-- `r{n}` with n below it was in use when the row was written.
CREATE TABLE round_facts (
    task_id BIGINT PRIMARY KEY REFERENCES tasks (id),
    chain_rounds BIGINT NOT NULL,
    key_floor BIGINT NOT NULL,
    history TEXT NOT NULL
);

-- SQLite only (no statement there both updates and inserts): an event's insert moves its run's
-- sequence. The append (`INSERT … SELECT last_event_sequence + 1`) runs under the database
-- write lock; PostgreSQL does the same in one statement with a data-modifying CTE.
CREATE TRIGGER events_sequence AFTER INSERT ON events
BEGIN
    UPDATE runs SET last_event_sequence = NEW.sequence WHERE id = NEW.run_id;
END;
