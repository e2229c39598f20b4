-- 0022 blob bodies (sqlite dialect). Keep in step with the other dialect's 0022_blob_bodies.sql
-- (tests/parity.rs).
--
-- The bytes of blobs kept in the database (`[storage.blobs] kind = "database"`, the default on
-- PostgreSQL, storage-and-scale.md §1), so every node on one database reads every upload and
-- capture. Keyed like the `blobs` metadata rows, by lowercase hex SHA-256; a body is written
-- once per digest and deleted by the reaper after its `blobs` row.

CREATE TABLE blob_bodies (
    sha256 TEXT NOT NULL PRIMARY KEY,
    body BLOB NOT NULL
);
