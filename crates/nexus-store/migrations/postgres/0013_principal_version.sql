-- 0013 principal version (PostgreSQL dialect). Keep in step with
-- migrations/sqlite/0013_principal_version.sql: the parity test (tests/parity.rs) fails on any
-- difference in tables, columns, nullability, normalized types, defaults, keys, unique
-- constraints or indexes.
--
-- One row whose `version` moves with every committed change to `credentials` or `executors`,
-- in the same transaction as the change (statement triggers here, row triggers in SQLite). The
-- store serves a credential with its executor again, without the join, while the version it
-- read them at is unchanged (src/principals.rs); the triggers see every writer, on every node.
--
-- The bump takes the row's lock until the writing transaction ends, which serializes the
-- writers of these two tables (rare: announcements, credentials minted or revoked, epochs). No
-- transaction writes both tables in two statements, so two writers never hold one table's row
-- each while waiting for the version row.

CREATE TABLE principal_version (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    version BIGINT NOT NULL
);

INSERT INTO principal_version (id, version) VALUES (1, 0);

CREATE FUNCTION principal_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE principal_version SET version = version + 1 WHERE id = 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER credentials_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON credentials
    FOR EACH STATEMENT EXECUTE FUNCTION principal_version_bump();

CREATE TRIGGER executors_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON executors
    FOR EACH STATEMENT EXECUTE FUNCTION principal_version_bump();
