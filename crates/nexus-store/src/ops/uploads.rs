//! Uploads, captures, their bindings and blob metadata (migration 0003; uploads.md,
//! storage-and-scale.md §4), written once for both engines (see [`crate::ops`]).
//!
//! The bytes are not here: the kernel keeps them in a content-addressed blob store keyed by
//! SHA-256. The `blobs` table records which digests exist, so the reaper deletes a blob only
//! when no descriptor references it (the `uploads.sha256` foreign key enforces it).

use crate::ops::db::{Db, query, uid};
use crate::ops::on_conn;
use crate::{Result, Store, check_text, write_error};

use uuid::Uuid;

use crate::row::Columns;

/// An upload (member) or capture (executor) descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadRow {
    pub id: i64,
    pub public_id: Uuid,
    pub account_id: i64,
    /// Set for an upload (a member created it).
    pub creator_member_id: Option<i64>,
    /// Set for a capture (an executor created it).
    pub creator_executor_id: Option<i64>,
    /// The sanitized filename.
    pub filename: String,
    /// The type detected from the bytes.
    pub content_type: String,
    pub byte_size: i64,
    /// Lowercase hex SHA-256 of the bytes (the blob key).
    pub sha256: String,
    pub created_at: i64,
    /// When the first row bound it; `None` while unbound (the reaper's candidates).
    pub bound_at: Option<i64>,
}

/// A new descriptor. Exactly one of the creators is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUpload {
    pub public_id: Uuid,
    pub account_id: i64,
    pub creator_member_id: Option<i64>,
    pub creator_executor_id: Option<i64>,
    pub filename: String,
    pub content_type: String,
    pub byte_size: i64,
    pub sha256: String,
    pub created_at: i64,
}

pub(crate) fn upload(r: &impl Columns) -> Result<UploadRow> {
    Ok(UploadRow {
        id: r.int("id")?,
        public_id: r.public_id("public_id")?,
        account_id: r.int("account_id")?,
        creator_member_id: r.opt_int("creator_member_id")?,
        creator_executor_id: r.opt_int("creator_executor_id")?,
        filename: r.text("filename")?,
        content_type: r.text("content_type")?,
        byte_size: r.int("byte_size")?,
        sha256: r.text("sha256")?,
        created_at: r.int("created_at")?,
        bound_at: r.opt_int("bound_at")?,
    })
}

pub(crate) mod sql {
    macro_rules! upload_columns {
        ($p:literal) => {
            concat!(
                $p,
                "id, ",
                $p,
                "public_id, ",
                $p,
                "account_id, ",
                $p,
                "creator_member_id, ",
                $p,
                "creator_executor_id, ",
                $p,
                "filename, ",
                $p,
                "content_type, ",
                $p,
                "byte_size, ",
                $p,
                "sha256, ",
                $p,
                "created_at, ",
                $p,
                "bound_at"
            )
        };
    }

    pub(crate) const INSERT_BLOB: &str =
        "INSERT INTO blobs (sha256, byte_size, created_at) VALUES ($1, $2, $3) ON CONFLICT (sha256) DO NOTHING";
    pub(crate) const INSERT_UPLOAD: &str = concat!(
        "INSERT INTO uploads (public_id, account_id, creator_member_id, creator_executor_id, \
         filename, content_type, byte_size, sha256, created_at, bound_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL) RETURNING ",
        upload_columns!("")
    );
    pub(crate) const UPLOAD_BY_PUBLIC_ID: &str =
        concat!("SELECT ", upload_columns!(""), " FROM uploads WHERE public_id = $1");
    pub(crate) const BIND_UPLOAD: &str = "INSERT INTO upload_bindings (upload_id, task_id, input_id, created_at) \
         VALUES ($1, $2, NULL, $3) ON CONFLICT (upload_id, task_id) DO NOTHING";
    pub(crate) const MARK_BOUND: &str = "UPDATE uploads SET bound_at = $2 WHERE id = $1 AND bound_at IS NULL";
    /// Bound to a task of a run in a workspace where the member has standing (read or write).
    pub(crate) const READABLE_VIA_WORKSPACE: &str = "SELECT 1 AS one FROM upload_bindings b \
         JOIN tasks t ON t.id = b.task_id JOIN runs r ON r.id = t.run_id \
         JOIN workspace_members wm ON wm.workspace_id = r.workspace_id \
         WHERE b.upload_id = $1 AND wm.member_id = $2 LIMIT 1";
    pub(crate) const BOUND_IN_RUN: &str = "SELECT 1 AS one FROM upload_bindings b \
         JOIN tasks t ON t.id = b.task_id WHERE b.upload_id = $1 AND t.run_id = $2 LIMIT 1";
    pub(crate) const BOUND_UPLOADS_OF_RUN: &str = concat!(
        "SELECT ",
        upload_columns!(""),
        " FROM uploads WHERE id IN (SELECT b.upload_id FROM upload_bindings b \
         JOIN tasks t ON t.id = b.task_id WHERE t.run_id = $1) ORDER BY id"
    );
    pub(crate) const DELETE_UNBOUND: &str =
        "DELETE FROM uploads WHERE bound_at IS NULL AND created_at <= $1 RETURNING sha256";
    pub(crate) const PUT_BLOB_BODY: &str =
        "INSERT INTO blob_bodies (sha256, body) VALUES ($1, $2) ON CONFLICT (sha256) DO NOTHING";
    /// `$2` the 1-based first byte, `$3` how many.
    pub(crate) const BLOB_BODY_RANGE: &str = "SELECT substr(body, CAST($2 AS INTEGER), CAST($3 AS INTEGER)) AS part \
         FROM blob_bodies WHERE sha256 = $1";
    pub(crate) const DELETE_BLOB_BODY: &str = "DELETE FROM blob_bodies WHERE sha256 = $1";
    pub(crate) const DELETE_ORPHAN_BLOB: &str = "DELETE FROM blobs WHERE sha256 = $1 \
         AND NOT EXISTS (SELECT 1 FROM uploads u WHERE u.sha256 = $1) RETURNING sha256";
}

pub(crate) async fn insert_blob<C: Db>(c: &mut C, sha256: &str, byte_size: i64, now: i64) -> Result<bool> {
    check_text(sha256)?;
    let done = query(sql::INSERT_BLOB)
        .bind(sha256)
        .bind(byte_size)
        .bind(now)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(done.rows_affected() > 0)
}

pub(crate) async fn insert_upload<C: Db>(c: &mut C, new: &NewUpload) -> Result<UploadRow> {
    check_text(&new.filename)?;
    check_text(&new.content_type)?;
    check_text(&new.sha256)?;
    let r = query(sql::INSERT_UPLOAD)
        .bind(uid(new.public_id))
        .bind(new.account_id)
        .bind(new.creator_member_id)
        .bind(new.creator_executor_id)
        .bind(&new.filename)
        .bind(&new.content_type)
        .bind(new.byte_size)
        .bind(&new.sha256)
        .bind(new.created_at)
        .fetch_one(&mut *c)
        .await
        .map_err(write_error)?;
    upload(&r)
}

pub(crate) async fn upload_by_public_id<C: Db>(c: &mut C, public_id: uuid::Uuid) -> Result<Option<UploadRow>> {
    query(sql::UPLOAD_BY_PUBLIC_ID)
        .bind(uid(public_id))
        .fetch_optional(&mut *c)
        .await?
        .map(|r| upload(&r))
        .transpose()
}

pub(crate) async fn bind_upload<C: Db>(c: &mut C, upload_id: i64, task_id: i64, now: i64) -> Result<bool> {
    let done = query(sql::BIND_UPLOAD)
        .bind(upload_id)
        .bind(task_id)
        .bind(now)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    query(sql::MARK_BOUND)
        .bind(upload_id)
        .bind(now)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(done.rows_affected() > 0)
}

pub(crate) async fn upload_readable_via_workspace<C: Db>(c: &mut C, upload_id: i64, member_id: i64) -> Result<bool> {
    Ok(query(sql::READABLE_VIA_WORKSPACE)
        .bind(upload_id)
        .bind(member_id)
        .fetch_optional(&mut *c)
        .await?
        .is_some())
}

pub(crate) async fn upload_bound_in_run<C: Db>(c: &mut C, upload_id: i64, run_id: i64) -> Result<bool> {
    Ok(query(sql::BOUND_IN_RUN)
        .bind(upload_id)
        .bind(run_id)
        .fetch_optional(&mut *c)
        .await?
        .is_some())
}

pub(crate) async fn bound_uploads_of_run<C: Db>(c: &mut C, run_id: i64) -> Result<Vec<UploadRow>> {
    query(sql::BOUND_UPLOADS_OF_RUN)
        .bind(run_id)
        .fetch_all(&mut *c)
        .await?
        .iter()
        .map(upload)
        .collect()
}

pub(crate) async fn delete_unbound_uploads<C: Db>(c: &mut C, created_at_or_before: i64) -> Result<Vec<String>> {
    let rows = query(sql::DELETE_UNBOUND)
        .bind(created_at_or_before)
        .fetch_all(&mut *c)
        .await
        .map_err(write_error)?;
    let mut shas = Vec::with_capacity(rows.len());
    for r in &rows {
        shas.push(crate::row::Columns::text(r, "sha256")?);
    }
    Ok(shas)
}

pub(crate) async fn delete_orphan_blob<C: Db>(c: &mut C, sha256: &str) -> Result<bool> {
    check_text(sha256)?;
    Ok(query(sql::DELETE_ORPHAN_BLOB)
        .bind(sha256)
        .fetch_optional(&mut *c)
        .await
        .map_err(write_error)?
        .is_some())
}

pub(crate) async fn put_blob_body<C: Db>(c: &mut C, sha256: &str, body: &[u8]) -> Result<()> {
    check_text(sha256)?;
    query(sql::PUT_BLOB_BODY)
        .bind(sha256)
        .bind(body)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(())
}

pub(crate) async fn blob_body_range<C: Db>(c: &mut C, sha256: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>> {
    let first = i64::try_from(start)
        .unwrap_or(i64::MAX - 1)
        .saturating_add(1)
        .min(i64::from(i32::MAX));
    let len = i64::try_from(len).unwrap_or(i64::MAX).min(i64::from(i32::MAX));
    query(sql::BLOB_BODY_RANGE)
        .bind(sha256)
        .bind(first)
        .bind(len)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| crate::row::Columns::bytes(&r, "part"))
        .transpose()
}

pub(crate) async fn delete_blob_body<C: Db>(c: &mut C, sha256: &str) -> Result<()> {
    query(sql::DELETE_BLOB_BODY)
        .bind(sha256)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(())
}

/// The uploads operations on the store (see `crate::ops`).
#[allow(async_fn_in_trait)]
pub trait UploadStore {
    async fn upload_by_public_id(&self, public_id: Uuid) -> Result<Option<UploadRow>>;
    /// Whether the upload is bound to a task of a run in a workspace where the member has
    /// standing (uploads.md §6).
    async fn upload_readable_via_workspace(&self, upload_id: i64, member_id: i64) -> Result<bool>;
    /// Whether the upload is bound to a task of the run.
    async fn upload_bound_in_run(&self, upload_id: i64, run_id: i64) -> Result<bool>;
    /// Every upload bound to a task of the run, by id.
    async fn bound_uploads_of_run(&self, run_id: i64) -> Result<Vec<UploadRow>>;
    /// Stores a blob's bytes under `sha256` (a no-op when they are there).
    async fn put_blob_body(&self, sha256: &str, body: &[u8]) -> Result<()>;
    /// `len` bytes of the blob from byte `start` (fewer at its end); `None`: no such blob.
    async fn blob_body_range(&self, sha256: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>>;
    /// Removes a blob's bytes (absent is fine).
    async fn delete_blob_body(&self, sha256: &str) -> Result<()>;
}

impl UploadStore for Store {
    async fn upload_by_public_id(&self, public_id: Uuid) -> Result<Option<crate::UploadRow>> {
        on_conn!(self, read, |c| upload_by_public_id(c, public_id))
    }
    async fn upload_readable_via_workspace(&self, upload_id: i64, member_id: i64) -> Result<bool> {
        on_conn!(self, read, |c| upload_readable_via_workspace(c, upload_id, member_id))
    }
    async fn upload_bound_in_run(&self, upload_id: i64, run_id: i64) -> Result<bool> {
        on_conn!(self, read, |c| upload_bound_in_run(c, upload_id, run_id))
    }
    async fn bound_uploads_of_run(&self, run_id: i64) -> Result<Vec<crate::UploadRow>> {
        on_conn!(self, read, |c| bound_uploads_of_run(c, run_id))
    }
    async fn put_blob_body(&self, sha256: &str, body: &[u8]) -> Result<()> {
        on_conn!(self, write, |c| put_blob_body(c, sha256, body))
    }
    async fn blob_body_range(&self, sha256: &str, start: u64, len: u64) -> Result<Option<Vec<u8>>> {
        on_conn!(self, read, |c| blob_body_range(c, sha256, start, len))
    }
    async fn delete_blob_body(&self, sha256: &str) -> Result<()> {
        on_conn!(self, write, |c| delete_blob_body(c, sha256))
    }
}
