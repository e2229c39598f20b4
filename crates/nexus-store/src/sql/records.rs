//! Kernel jobs, sealed provider requests and idempotency receipts (migration 0002): the SQL
//! text of `crate::sql` for them (its module doc holds the rules every statement follows).

// ---- jobs ----

pub(crate) const INSERT_JOB: &str = "INSERT INTO jobs (kind, run_id, task_id, generation, available_at, locked_by, \
     locked_until, attempts) VALUES ($1, $2, $3, $4, $5, NULL, NULL, 0) RETURNING id";

/// [`INSERT_JOB`] without the answer: buffered with the unit of work (`postgres/unit/buffered.rs`).
pub(crate) const INSERT_JOB_BUFFERED: &str = "INSERT INTO jobs (kind, run_id, task_id, generation, available_at, \
     locked_by, locked_until, attempts) VALUES ($1, $2, $3, $4, $5, NULL, NULL, 0)";

/// [`INSERT_JOB_BUFFERED`] under a reserved id (`$6`, from [`crate::sql::RESERVE_IDS`]).
pub(crate) const INSERT_JOB_WITH_ID: &str = "INSERT INTO jobs (id, kind, run_id, task_id, generation, available_at, \
     locked_by, locked_until, attempts) OVERRIDING SYSTEM VALUE VALUES ($6, $1, $2, $3, $4, $5, NULL, NULL, 0)";

pub(crate) const JOB_BY_ID: &str = "SELECT id, kind, run_id, task_id, generation, available_at, locked_by, locked_until, \
     attempts FROM jobs WHERE id = $1";

pub(crate) const DELETE_JOB: &str = "DELETE FROM jobs WHERE id = $1";

/// [`DELETE_JOB`] answering the id when the row was there (a `kernel_tool` job's claim sent
/// with its evaluation's first statement, `postgres.rs`).
pub(crate) const TAKE_JOB: &str = "DELETE FROM jobs WHERE id = $1 RETURNING id";

/// `$1` node, `$2` lease end, `$3` now, `$4` limit; one statement behind the writer gate.
pub(crate) const DEQUEUE_JOBS_SQLITE: &str = "UPDATE jobs SET locked_by = $1, locked_until = $2, attempts = attempts + 1 WHERE id IN \
     (SELECT id FROM jobs WHERE available_at <= $3 AND (locked_until IS NULL OR locked_until \
     < $3) ORDER BY id LIMIT CAST($4 AS BIGINT)) RETURNING id, kind, run_id, task_id, generation, \
     available_at, locked_by, locked_until, attempts";

/// The same, with the candidates locked `FOR UPDATE SKIP LOCKED` so nodes divide the work.
pub(crate) const DEQUEUE_JOBS_PG: &str = "UPDATE jobs SET locked_by = $1, locked_until = $2, attempts = attempts + 1 WHERE id IN \
     (SELECT id FROM jobs WHERE available_at <= $3 AND (locked_until IS NULL OR locked_until \
     < $3) ORDER BY id LIMIT CAST($4 AS BIGINT) FOR UPDATE SKIP LOCKED) RETURNING id, kind, run_id, task_id, \
     generation, available_at, locked_by, locked_until, attempts";

pub(crate) const RENEW_JOB_LEASE: &str = "UPDATE jobs SET locked_until = $3 WHERE id = $1 AND locked_by = $2";

pub(crate) const RELEASE_NODE_LEASES: &str =
    "UPDATE jobs SET locked_by = NULL, locked_until = NULL WHERE locked_by = $1";

pub(crate) const REQUEUE_JOB: &str =
    "UPDATE jobs SET available_at = $2, locked_by = NULL, locked_until = NULL WHERE id = $1";

// ---- sealed requests ----

/// A sealed body, once per digest (migration 0015), maybe a delta (0020): `$1` the digest,
/// `$2` the bytes, `$3` the base digest, `$4` the kept length, `$5` the delta depth.
pub(crate) const INSERT_SEALED_BODY: &str = "INSERT INTO sealed_bodies (body_sha256, body, base_sha256, keep, depth) \
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (body_sha256) DO NOTHING RETURNING depth";

/// A sealed request (`$1`–`$11` as [`INSERT_SEALED_REQUEST`]) and the body it names (`$4` its
/// digest, `$12` bytes, `$13` base digest, `$14` keep, `$15` depth) in one statement
/// (PostgreSQL: data-modifying `WITH`, which SQLite has not), answering the request's `id` and
/// the body's `body_depth`: the new row's, or that of the body an earlier round stored under
/// the digest (null only when a unit not yet visible to this statement stored it).
pub(crate) const INSERT_SEALED_REQUEST_WITH_BODY_PG: &str = "WITH body AS (INSERT INTO sealed_bodies (body_sha256, body, \
     base_sha256, keep, depth) VALUES ($4, $12, $13, $14, $15) ON CONFLICT (body_sha256) DO NOTHING RETURNING depth), \
     request AS (INSERT INTO sealed_requests (task_id, generation, record, body_sha256, request_bytes, tools_sha256, \
     attempts, created_at, record_base_id, record_keep, record_depth) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, \
     $10, $11) RETURNING id) SELECT (SELECT id FROM request) AS id, COALESCE((SELECT depth FROM body), \
     (SELECT depth FROM sealed_bodies WHERE body_sha256 = $4)) AS body_depth";

pub(crate) const INSERT_SEALED_REQUEST: &str = "INSERT INTO sealed_requests (task_id, generation, record, body_sha256, request_bytes, \
     tools_sha256, attempts, created_at, record_base_id, record_keep, record_depth) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id";

/// A sealed record with its body, joined by digest (migration 0015), with their delta bases
/// (0020).
pub(crate) const SEALED_REQUEST: &str = "SELECT s.id, s.task_id, s.generation, s.record, s.body_sha256, s.request_bytes, \
     s.tools_sha256, b.body, s.attempts, s.created_at, s.record_base_id, s.record_keep, b.base_sha256, b.keep \
     FROM sealed_requests s JOIN sealed_bodies b \
     ON b.body_sha256 = s.body_sha256 WHERE s.task_id = $1 AND s.generation = $2";
pub(crate) const SEALED_RECORD_DEPTH: &str = "SELECT record_depth FROM sealed_requests WHERE id = $1";
pub(crate) const SEALED_BODY_DEPTH: &str = "SELECT depth FROM sealed_bodies WHERE body_sha256 = $1";
/// One link of a record's delta chain: `$1` the sealed request.
pub(crate) const SEALED_RECORD_LINK: &str =
    "SELECT record, record_base_id, record_keep, record_depth FROM sealed_requests WHERE id = $1";
/// One link of a body's delta chain: `$1` the digest.
pub(crate) const SEALED_BODY_LINK: &str =
    "SELECT body, base_sha256, keep, depth FROM sealed_bodies WHERE body_sha256 = $1";

/// A run's model rounds in creation order with what the cache report reads: the round's key,
/// status, usage and, for the generation that was sealed, its tools digest.
pub(crate) const ROUND_CACHE_FACTS: &str = "SELECT t.key, t.status, t.usage, s.tools_sha256, \
     s.id AS sealed_id FROM tasks t LEFT JOIN sealed_requests s ON s.task_id = t.id AND s.generation = t.generation \
     WHERE t.run_id = $1 AND t.kind = 'model_task' ORDER BY t.id";

pub(crate) const SET_SEALED_ATTEMPTS: &str =
    "UPDATE sealed_requests SET attempts = $3 WHERE task_id = $1 AND generation = $2";

// ---- idempotency receipts ----

pub(crate) const RECEIPT_GET: &str = "SELECT id, scope_hash, envelope_sha256, status, body, expires_at, created_at FROM \
     idempotency_receipts WHERE scope_hash = $1 AND expires_at > $2";

pub(crate) const RECEIPT_DROP_EXPIRED_SCOPE: &str =
    "DELETE FROM idempotency_receipts WHERE scope_hash = $1 AND expires_at <= $2";

/// A taken scope returns no row (a conflict that leaves the transaction usable).
pub(crate) const RECEIPT_PUT: &str = "INSERT INTO idempotency_receipts (scope_hash, envelope_sha256, status, body, expires_at, \
     created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (scope_hash) DO NOTHING \
     RETURNING id, scope_hash, envelope_sha256, status, body, expires_at, created_at";

pub(crate) const RECEIPTS_PURGE: &str = "DELETE FROM idempotency_receipts WHERE expires_at <= $1";
