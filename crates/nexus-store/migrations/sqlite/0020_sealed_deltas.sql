-- 0020 sealed deltas. Keep in step with the other dialect's 0020_sealed_deltas.sql (the parity
-- test compares them).
--
-- A round's sealed record and body are mostly its predecessor's: a continuation's request
-- extends the previous round's entries, and a conversation turn's seed round extends the
-- previous turn's final round. Stored whole, every round wrote the whole history again, so a
-- long conversation's turns grew ever slower. A record or body may now be stored as a delta:
-- the first `keep` bytes of its base (`record_base_id`: a sealed_requests row; `base_sha256`:
-- a sealed_bodies row), then the stored bytes. The store writes a delta only while the chain
-- of deltas behind it is shorter than 32 (`*depth` counts them); the 32nd is stored whole, so
-- a read follows at most 31 bases and a write copies the whole history once in 32 rounds.
-- Readers always get the whole bytes (the store rebuilds them).

ALTER TABLE sealed_requests ADD COLUMN record_base_id BIGINT;
ALTER TABLE sealed_requests ADD COLUMN record_keep BIGINT;
ALTER TABLE sealed_requests ADD COLUMN record_depth BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sealed_bodies ADD COLUMN base_sha256 TEXT;
ALTER TABLE sealed_bodies ADD COLUMN keep BIGINT;
ALTER TABLE sealed_bodies ADD COLUMN depth BIGINT NOT NULL DEFAULT 0;
