-- 0013 principal version (SQLite dialect). Keep in step with
-- migrations/postgres/0013_principal_version.sql: the parity test (tests/parity.rs) fails on any
-- difference in tables, columns, nullability, normalized types, defaults, keys, unique
-- constraints or indexes.
--
-- One row whose `version` moves with every committed change to `credentials` or `executors`,
-- in the same transaction as the change (these triggers). A transport request's
-- authentication reads a credential with its executor (two rows, a join, some twenty columns)
-- on every request; the store keeps the pair it last read for each credential with the
-- version it read them at, and serves it again while one tiny read finds the version unchanged
-- (src/principals.rs). The triggers, not the store's own writes, move it, so a change made by
-- any process on the database (an admin command beside a server, another node) is seen at the
-- next request.

CREATE TABLE principal_version (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    version BIGINT NOT NULL
);

INSERT INTO principal_version (id, version) VALUES (1, 0);

CREATE TRIGGER credentials_insert_version AFTER INSERT ON credentials
BEGIN
    UPDATE principal_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER credentials_update_version AFTER UPDATE ON credentials
BEGIN
    UPDATE principal_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER credentials_delete_version AFTER DELETE ON credentials
BEGIN
    UPDATE principal_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER executors_insert_version AFTER INSERT ON executors
BEGIN
    UPDATE principal_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER executors_update_version AFTER UPDATE ON executors
BEGIN
    UPDATE principal_version SET version = version + 1 WHERE id = 1;
END;

CREATE TRIGGER executors_delete_version AFTER DELETE ON executors
BEGIN
    UPDATE principal_version SET version = version + 1 WHERE id = 1;
END;
