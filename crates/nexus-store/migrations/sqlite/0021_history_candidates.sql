-- 0021 history candidates (SQLite dialect). Keep in step with
-- migrations/postgres/0021_history_candidates.sql.
--
-- Nothing to do here: FTS5 yields a search's matches newest first by itself, so SQLite needs no
-- choice between ways of finding the newest `k` (the PostgreSQL dialect adds one, a function).
SELECT 1;
