//! Uploads and captures (uploads.md; executor.md §9 binding, §12 claim-scoped reads).
//!
//! An upload is an immutable blob ([`blobs`]) plus a descriptor row. A member creates an
//! upload, an executor a capture. Ingest streams the bytes into a staging file while hashing
//! and sniffing them ([`UploadWriter`]); the descriptor's `content_type` is detected from the
//! bytes ([`detect`]), never taken from the client.
//!
//! Hand-offs (ARCHITECTURE.md, "Seams inside the kernel"): the commit calls [`Kernel::check_result_uploads`]
//! and [`Kernel::bind_result_uploads`] inside its settle transaction; the worker calls
//! [`Kernel::reap_uploads_if_due`] (or [`Kernel::reap_uploads`]); the request builder uses
//! [`Kernel::media_judge`].

// `KernelError` carries the envelope's extra members; boxing it is a crate-wide change.
#![allow(clippy::result_large_err)]

pub mod blobs;
pub mod detect;
pub mod media;
pub mod reap;
pub mod state;

use nexus_api::uploads::{Upload, UploadEnvelope};
use nexus_core::codes::Code;
use nexus_core::results::UPLOAD_URI_PREFIX;
use nexus_store::prelude::*;
use nexus_store::{NewUpload, TaskStatus, Tx, UploadRow};
use serde_json::{Map, Value};
use subtle::ConstantTimeEq;
use uuid::Uuid;

use crate::auth::{ExecutorPrincipal, MemberPrincipal};
use crate::error::{KernelError, KernelResult};
use crate::{Uploads, time};

pub use blobs::{BlobReader, Blobs, DbBlobs, FsBlobs};
pub use media::UploadJudge;
pub use state::UploadState;

/// Who commits a result that links uploads (executor.md §9, runs.md §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Committer {
    /// An executor (internal id): links must name its own captures.
    Executor(i64),
    /// A resolving member (internal id): links must name its own uploads.
    Member(i64),
}

/// Who creates an upload.
#[derive(Clone, Copy)]
pub enum Creator<'a> {
    Member(&'a MemberPrincipal),
    Executor(&'a ExecutorPrincipal),
}

/// Bytes being ingested: the staging file plus the type sniffer.
#[derive(Debug)]
pub struct UploadWriter {
    staging: blobs::Staging,
    sniffer: detect::Sniffer,
}

impl UploadWriter {
    /// Appends a chunk.
    pub async fn write(&mut self, chunk: &[u8]) -> KernelResult<()> {
        self.sniffer.feed(chunk);
        self.staging.write(chunk).await.map_err(io_error)
    }

    /// Bytes written so far (the caller refuses past `bounds::UPLOAD`).
    pub fn len(&self) -> u64 {
        self.staging.len()
    }

    pub fn is_empty(&self) -> bool {
        self.staging.is_empty()
    }
}

/// The bytes a reader may fetch: the descriptor, and the blob to stream.
#[derive(Debug, Clone)]
pub struct UploadBytes {
    pub upload: UploadRow,
}

pub(crate) fn io_error(e: std::io::Error) -> KernelError {
    tracing::error!(error = %e, "blob store failure");
    KernelError::of(Code::InternalError)
}

fn not_found() -> KernelError {
    KernelError::new(Code::NotFound, "no such upload")
}

fn unknown_result_upload(id: &Uuid) -> KernelError {
    KernelError::new(
        Code::UnknownResultUpload,
        format!("{UPLOAD_URI_PREFIX}{id} is not the committer's own upload"),
    )
}

/// The public descriptor (uploads.md §1).
pub fn descriptor(u: &UploadRow) -> Upload {
    Upload {
        public_id: u.public_id.to_string(),
        filename: u.filename.clone(),
        content_type: u.content_type.clone(),
        // A stored size is never negative (the store's CHECK and the writer both hold it).
        byte_size: u64::try_from(u.byte_size).unwrap_or_default(),
        created_at: time::iso(u.created_at),
        rest: Map::new(),
    }
}

/// The `{upload}` answer of ingest and of the descriptor reads.
pub fn envelope(u: &UploadRow) -> UploadEnvelope {
    UploadEnvelope { upload: descriptor(u) }
}

/// Whether `text` names `nexus://uploads/<id>` anywhere inside a JSON string.
fn json_mentions(value: &Value, uri: &str) -> bool {
    match value {
        Value::String(s) => s.contains(uri),
        Value::Array(items) => items.iter().any(|v| json_mentions(v, uri)),
        Value::Object(m) => m.values().any(|v| json_mentions(v, uri)),
        _ => false,
    }
}

impl Uploads<'_> {
    /// A staging writer for a new upload's bytes.
    pub async fn begin_upload(&self) -> KernelResult<UploadWriter> {
        Ok(UploadWriter {
            staging: self.state.uploads.blobs.stage().await.map_err(io_error)?,
            sniffer: detect::Sniffer::new(),
        })
    }

    /// Stores the written bytes and their descriptor: 201 `{upload}` (uploads.md §1). The type
    /// is detected from the bytes; the filename is sanitized against it.
    pub async fn create_upload(
        &self,
        creator: Creator<'_>,
        filename: &str,
        writer: UploadWriter,
    ) -> KernelResult<UploadEnvelope> {
        let UploadWriter { staging, sniffer } = writer;
        let detected = sniffer.finish();
        let staged = staging.finish().await.map_err(io_error)?;
        let name = detect::sanitize_filename(filename, &detected);
        let (account_id, member, executor) = match creator {
            Creator::Member(p) => (p.member.account_id, Some(p.member.id), None),
            Creator::Executor(e) => (e.executor.account_id, None, Some(e.executor.id)),
        };
        let now = self.now_ms();
        let sha256 = staged.sha256.clone();
        let byte_size = staged.byte_size as i64;
        let mut tx = self.store.begin().await?;
        // The blob row first: on PostgreSQL it waits for a reaper deleting the same digest,
        // so the bytes put below are never removed under a live descriptor.
        tx.insert_blob(&sha256, byte_size, now).await?;
        self.state.uploads.blobs.put(staged, &sha256).await.map_err(io_error)?;
        let row = tx
            .insert_upload(NewUpload {
                public_id: time::new_id(),
                account_id,
                creator_member_id: member,
                creator_executor_id: executor,
                filename: name,
                content_type: detected.content_type,
                byte_size,
                sha256,
                created_at: now,
            })
            .await?;
        tx.commit().await?;
        Ok(envelope(&row))
    }

    /// `GET /uploads/{id}`: only the creating member reads the descriptor.
    pub async fn get_upload(&self, p: &MemberPrincipal, id: Uuid) -> KernelResult<UploadEnvelope> {
        let u = self.store.upload_by_public_id(id).await?.ok_or_else(not_found)?;
        if u.creator_member_id != Some(p.member.id) {
            return Err(not_found());
        }
        Ok(envelope(&u))
    }

    /// `GET /executor/uploads/{id}`: an executor reads the descriptor of its own capture.
    pub async fn get_capture(&self, e: &ExecutorPrincipal, id: Uuid) -> KernelResult<UploadEnvelope> {
        let u = self.store.upload_by_public_id(id).await?.ok_or_else(not_found)?;
        if u.creator_executor_id != Some(e.executor.id) {
            return Err(not_found());
        }
        Ok(envelope(&u))
    }

    /// `GET /uploads/{id}/bytes`: the creator, or a member with standing in a workspace whose
    /// run rows bind the upload (uploads.md §6). Anything else is 404, like an absent id.
    pub async fn upload_bytes(&self, p: &MemberPrincipal, id: Uuid) -> KernelResult<UploadBytes> {
        let u = self.store.upload_by_public_id(id).await?.ok_or_else(not_found)?;
        if u.account_id != p.member.account_id {
            return Err(not_found());
        }
        let readable = u.creator_member_id == Some(p.member.id)
            || self.store.upload_readable_via_workspace(u.id, p.member.id).await?;
        if !readable {
            return Err(not_found());
        }
        Ok(UploadBytes { upload: u })
    }

    /// Claim-scoped attachment reads (executor.md §12): the exact claimant of a dispatched,
    /// unexpired claim reads uploads reachable from the claimed run.
    pub async fn claim_attachment(
        &self,
        e: &ExecutorPrincipal,
        run: Uuid,
        task_key: &str,
        upload: Uuid,
        claim_token: Option<&str>,
    ) -> KernelResult<UploadBytes> {
        let Some(token) = claim_token.filter(|t| !t.is_empty()) else {
            return Err(KernelError::new(
                Code::ParameterMissing,
                "the Claim-Token header is required",
            ));
        };
        let row_missing = || KernelError::new(Code::NotFound, "no such task");
        let run = self.store.run_by_public_id(run).await?.ok_or_else(row_missing)?;
        let task = self
            .store
            .task_by_key(run.id, task_key)
            .await?
            .ok_or_else(row_missing)?;
        if task.addressed_executor_id != Some(e.executor.id) {
            return Err(row_missing());
        }
        let holds = task.claimant_id == Some(e.executor.id)
            && task
                .claim_token
                .as_deref()
                .is_some_and(|t| bool::from(t.as_bytes().ct_eq(token.as_bytes())));
        if !holds {
            return Err(KernelError::of(Code::NotClaimant));
        }
        let now = self.now_ms();
        if task.status != TaskStatus::Dispatched || task.deadline_at.is_some_and(|d| d <= now) {
            return Err(KernelError::of(Code::ClaimInactive));
        }
        let u = self.store.upload_by_public_id(upload).await?.ok_or_else(not_found)?;
        if u.account_id != e.executor.account_id {
            return Err(not_found());
        }
        let reachable = if self.store.upload_bound_in_run(u.id, run.id).await? {
            true
        } else {
            // A `tool_input` mention grants reads only of uploads the run can already read:
            // the run creator's own, or bound in a workspace the creator stands in.
            let uri = format!("{UPLOAD_URI_PREFIX}{}", u.public_id);
            let mentioned = task
                .tool_input
                .as_deref()
                .and_then(|s| serde_json::from_str::<Value>(s).ok())
                .is_some_and(|v| json_mentions(&v, &uri));
            mentioned
                && (u.creator_member_id == Some(run.created_by_id)
                    || self
                        .store
                        .upload_readable_via_workspace(u.id, run.created_by_id)
                        .await?)
        };
        if !reachable {
            return Err(not_found());
        }
        Ok(UploadBytes { upload: u })
    }

    /// Opens `len` bytes of the upload's blob from `start`.
    pub async fn open_upload(&self, u: &UploadRow, start: u64, len: u64) -> KernelResult<BlobReader> {
        self.state
            .uploads
            .blobs
            .open_range(&u.sha256, start, len)
            .await
            .map_err(io_error)?
            .ok_or_else(|| {
                tracing::error!(upload = %u.public_id, sha256 = %u.sha256, "a descriptor's blob is missing");
                not_found()
            })
    }

    /// Each linked id must be the committer's own capture (executor) or upload (member), and
    /// still exist; otherwise 422 `unknown_result_upload`, whole or nothing (executor.md §9).
    /// Call inside the settle transaction, before storing anything.
    pub async fn check_result_uploads(&self, tx: &mut Tx, committer: Committer, ids: &[Uuid]) -> KernelResult<()> {
        for id in ids {
            let own = match tx.upload_by_public_id(*id).await? {
                Some(u) => match committer {
                    Committer::Executor(e) => u.creator_executor_id == Some(e),
                    Committer::Member(m) => u.creator_member_id == Some(m),
                },
                None => false,
            };
            if !own {
                return Err(unknown_result_upload(id));
            }
        }
        Ok(())
    }

    /// Binds each linked upload to the settled task (uploads.md §5), in the settle
    /// transaction. An id with no descriptor is 422 `unknown_result_upload`.
    pub async fn bind_result_uploads(&self, tx: &mut Tx, task_id: i64, ids: &[Uuid]) -> KernelResult<()> {
        let now = self.now_ms();
        for id in ids {
            let u = tx
                .upload_by_public_id(*id)
                .await?
                .ok_or_else(|| unknown_result_upload(id))?;
            tx.bind_upload(u.id, task_id, now).await?;
        }
        Ok(())
    }

    /// Whether a member may name the upload as an attachment (uploads.md §4: the caller must be
    /// able to read it): its creator, or a member with standing where it is bound.
    pub async fn member_can_read_upload(&self, p: &MemberPrincipal, id: Uuid) -> KernelResult<bool> {
        match self.upload_bytes(p, id).await {
            Ok(_) => Ok(true),
            Err(e) if e.code == Code::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}
