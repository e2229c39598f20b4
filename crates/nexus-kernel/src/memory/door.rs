//! The member HTTP door of memory (kernel-tools.md §8): list, read, put and delete documents,
//! and so manage skill documents (`<scope>/skills/<name>`, which need a skill-grammar name and
//! a description of at most 1,024 bytes).
//!
//! - Reads need standing in the workspace (none: 404 `not_found`, which conceals it); writes
//!   need write standing (403 `not_authorized`).
//! - `user/` paths address the documents of the caller's controlling human; `workspace/` paths
//!   the workspace's.
//! - `conversation/` paths address the documents of the conversation named by
//!   `conversation_public_id` (a query parameter of list, read and delete; a body member of
//!   put). Without it they are 400 `parameter_missing`; a value that is not a UUID string is
//!   400 `parameter_invalid`; one naming no conversation of the route's workspace is 404
//!   `not_found`. When given, it is checked whatever the path, and a listing without a prefix
//!   then includes that conversation's documents.
//! - `expected_lock_version` (0 = no document yet) is optional; a mismatch is 409
//!   `stale_object`; without it the write is last-writer-wins.

use nexus_api::common::Timestamp;
use nexus_api::memory::{DeletedEnvelope, DocumentEnvelope, DocumentList, MemoryDeleted, MemoryDocument, MemoryEntry};
use nexus_core::codes::Code;
use nexus_core::results::ToolWord;
use nexus_store::prelude::*;
use nexus_store::{MemoryDelete, MemoryDocRow, MemoryPut, MemoryScope, NewMemoryDoc, WorkspaceRow};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::{DESCRIPTION_BYTES, DOCUMENT_BYTES, MemPath, Owners, parse_path, parse_prefix, scope_bound};
use crate::Memory;
use crate::auth::MemberPrincipal;
use crate::error::{KernelError, KernelResult};

/// The read shape: `{path, content, description?, lock_version, updated_at}`.
fn document_of(doc: MemoryDocRow) -> MemoryDocument {
    MemoryDocument {
        updated_at: Some(Timestamp::Text(crate::time::iso(doc.updated_at))),
        path: doc.path,
        content: doc.content,
        description: doc.description,
        lock_version: doc.lock_version,
        rest: Map::new(),
    }
}

/// The list shape: `{path, byte_size, description?, lock_version, updated_at}`.
fn entry_of(doc: MemoryDocRow) -> MemoryEntry {
    MemoryEntry {
        updated_at: Some(Timestamp::Text(crate::time::iso(doc.updated_at))),
        path: doc.path,
        byte_size: u64::try_from(doc.byte_size).unwrap_or(0),
        description: doc.description,
        lock_version: doc.lock_version,
        rest: Map::new(),
    }
}

fn path_invalid(pointer: &str, message: String) -> KernelError {
    KernelError::validation(ToolWord::MemoryPathInvalid.as_str(), pointer, message)
}

/// The query of the door's routes: `?prefix=` (list), `?path=` (read, delete),
/// `?expected_lock_version=` (delete) and `?conversation_public_id=` (every route).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryQuery<'a> {
    pub prefix: Option<&'a str>,
    pub path: Option<&'a str>,
    pub expected_lock_version: Option<&'a str>,
    pub conversation_public_id: Option<&'a str>,
}

/// The owner of `scope` among a door caller's `owners`; a `conversation/` path without a
/// conversation is 400 `parameter_missing`.
fn owner_of(owners: &Owners, scope: MemoryScope, raw: &str) -> KernelResult<i64> {
    owners.of(scope).ok_or_else(|| {
        KernelError::new(
            Code::ParameterMissing,
            format!(
                "{raw:?} is in the conversation/ scope: pass conversation_public_id naming a conversation of this workspace"
            ),
        )
    })
}

/// A `conversation_public_id` as given: absent (or null), or a UUID string (else 400
/// `parameter_invalid`).
fn conversation_param(raw: Option<&str>) -> KernelResult<Option<Uuid>> {
    match raw {
        None | Some("") => Ok(None),
        Some(s) => Uuid::parse_str(s.trim()).map(Some).map_err(|_| {
            KernelError::new(
                Code::ParameterInvalid,
                format!("conversation_public_id {s:?} is not a UUID"),
            )
        }),
    }
}

/// A required path parameter (query or body) as a document path.
fn required_path(raw: Option<&str>, pointer: &str) -> KernelResult<MemPath> {
    let raw = raw.ok_or_else(|| {
        KernelError::new(
            Code::ParameterMissing,
            format!(
                "`{}` is required: the document's path, such as workspace/notes/deploy.md",
                pointer.trim_start_matches('/')
            ),
        )
    })?;
    parse_path(raw).map_err(|m| path_invalid(pointer, m))
}

/// `expected_lock_version`: absent, or a non-negative integer.
fn expected_version(value: Option<&Value>) -> KernelResult<Option<i64>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_i64().filter(|n| *n >= 0).map(Some).ok_or_else(|| {
            KernelError::new(
                Code::ParameterInvalid,
                format!("expected_lock_version must be a non-negative integer, got {v}"),
            )
        }),
    }
}

/// The checked body of `PUT W/memory/doc` (`{path, content, description?,
/// expected_lock_version?, conversation_public_id?}`): parsed before the write, with the
/// door's codes (400 `parameter_missing` / `parameter_invalid`, 422 `memory_path_invalid`).
#[derive(Debug, Clone)]
pub struct PutDocumentRequest {
    path: MemPath,
    content: String,
    description: Option<String>,
    expected: Option<i64>,
    conversation: Option<Uuid>,
}

/// An optional string member of the put body: absent or null → `None`; else a string, or 400
/// `parameter_invalid` naming what it must be.
fn body_string<'a>(body: &'a Value, key: &str, what: &str) -> KernelResult<Option<&'a str>> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(KernelError::new(
            Code::ParameterInvalid,
            format!("{key} must be {what}, got {other}"),
        )),
    }
}

impl PutDocumentRequest {
    /// Parses the body's members in order: path, content, description,
    /// expected_lock_version, conversation_public_id.
    pub fn parse(body: &Value) -> KernelResult<PutDocumentRequest> {
        let path = required_path(body_string(body, "path", "a string")?, "/path")?;
        let content = body_string(body, "content", "a string")?.ok_or_else(|| {
            KernelError::new(
                Code::ParameterMissing,
                "`content` is required: the document's UTF-8 text",
            )
        })?;
        let content = content.to_string();
        let description = body_string(body, "description", "a string")?.map(str::to_string);
        let expected = expected_version(body.get("expected_lock_version"))?;
        let conversation = conversation_param(body_string(body, "conversation_public_id", "a UUID string")?)?;
        Ok(PutDocumentRequest {
            path,
            content,
            description,
            expected,
            conversation,
        })
    }

    /// The bounds of the content and description, and the skill grammar of a document under
    /// the reserved `skills/` prefix (422 `validation_failed`).
    fn check(&self) -> KernelResult<()> {
        let (path, content, description) = (&self.path, &self.content, self.description.as_deref());
        if content.len() > DOCUMENT_BYTES {
            return Err(KernelError::validation(
                ToolWord::MemoryDocumentTooLarge.as_str(),
                "/content",
                format!(
                    "the document is {} bytes, over the {DOCUMENT_BYTES}-byte bound",
                    content.len()
                ),
            ));
        }
        if !path.is_reserved() {
            // The description bound of every document (errors-and-auth.md §5); the spec lists
            // no reason of its own for a plain document, so it is the size word.
            if description.is_some_and(|d| d.len() > DESCRIPTION_BYTES) {
                return Err(KernelError::validation(
                    ToolWord::MemoryDocumentTooLarge.as_str(),
                    "/description",
                    format!("a description is at most {DESCRIPTION_BYTES} bytes"),
                ));
            }
            return Ok(());
        }
        if path.skill_name().filter(|n| super::valid_skill_name(n)).is_none() {
            return Err(KernelError::validation(
                ToolWord::SkillNameInvalid.as_str(),
                "/path",
                format!(
                    "{:?} is under the reserved skills/ prefix, which holds only <scope>/skills/<name> with a skill name \
                     (lowercase letters and digits with single hyphens, at most 64 characters)",
                    path.full
                ),
            ));
        }
        if !description.is_some_and(|d| !d.trim().is_empty() && d.len() <= DESCRIPTION_BYTES) {
            return Err(KernelError::validation(
                ToolWord::SkillDescriptionRequired.as_str(),
                "/description",
                format!("a skill document needs a non-blank description of at most {DESCRIPTION_BYTES} bytes"),
            ));
        }
        Ok(())
    }
}

fn stale(path: &str, current: i64) -> KernelError {
    KernelError::new(
        Code::StaleObject,
        format!("{path:?} is at lock_version {current}, not the expected one; read it again and retry"),
    )
    .with_extra("current_lock_version", json!(current))
}

impl Memory<'_> {
    /// The scope owners of a door caller in `ws`: its controlling human, the workspace, and the
    /// conversation `conversation` names (404 `not_found` unless it is one of `ws`).
    async fn door_owners(
        &self,
        principal: &MemberPrincipal,
        ws: &WorkspaceRow,
        conversation: Option<Uuid>,
    ) -> KernelResult<Owners> {
        let conversation = match conversation {
            Some(c) => Some(
                self.store
                    .conversation_by_public_id(c)
                    .await?
                    .filter(|row| row.workspace_id == ws.id)
                    .ok_or_else(|| KernelError::new(Code::NotFound, "no such conversation"))?
                    .id,
            ),
            None => None,
        };
        Ok(Owners {
            user: Some(super::controlling_human_id(&principal.member)),
            workspace: Some(ws.id),
            conversation,
        })
    }

    /// `GET W/memory?prefix=`: the documents under the prefix (or every reachable scope),
    /// sorted by path.
    pub async fn memory_list(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        query: &MemoryQuery<'_>,
    ) -> KernelResult<DocumentList> {
        let (ws, _) = self.workspace_for(principal, workspace, false).await?;
        let owners = self
            .door_owners(principal, &ws, conversation_param(query.conversation_public_id)?)
            .await?;
        let mut docs: Vec<MemoryDocRow> = Vec::new();
        match query.prefix.filter(|p| !p.is_empty()) {
            Some(raw) => {
                let prefix = parse_prefix(raw).map_err(|m| path_invalid("/prefix", m))?;
                let owner = owner_of(&owners, prefix.scope, raw)?;
                docs = self.store.memory_documents(prefix.scope, owner, false).await?;
                docs.retain(|d| d.path.starts_with(&prefix.prefix));
            }
            None => {
                for (scope, owner) in owners.available() {
                    docs.extend(self.store.memory_documents(scope, owner, false).await?);
                }
                docs.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
            }
        }
        Ok(DocumentList {
            documents: docs.into_iter().map(entry_of).collect(),
        })
    }

    /// `GET W/memory/doc?path=&conversation_public_id=`: `{document}`, or 404 `not_found`.
    pub async fn memory_read_document(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        query: &MemoryQuery<'_>,
    ) -> KernelResult<DocumentEnvelope> {
        let (ws, _) = self.workspace_for(principal, workspace, false).await?;
        let path = required_path(query.path, "/path")?;
        let owners = self
            .door_owners(principal, &ws, conversation_param(query.conversation_public_id)?)
            .await?;
        let owner = owner_of(&owners, path.scope, &path.full)?;
        let doc = self
            .store
            .memory_document(path.scope, owner, &path.full)
            .await?
            .ok_or_else(|| KernelError::new(Code::NotFound, format!("no document at {:?}", path.full)))?;
        Ok(DocumentEnvelope {
            document: document_of(doc),
        })
    }

    /// `PUT W/memory/doc`: creates or replaces the document whole; `{document}` in the read
    /// shape. Refusals after the body's ([`PutDocumentRequest::parse`]): the caller's standing,
    /// the conversation, the scope's owner, the bounds and skill grammar, then 409
    /// `stale_object` and 422 `memory_full` from the write.
    pub async fn memory_put_document(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        request: KernelResult<PutDocumentRequest>,
    ) -> KernelResult<DocumentEnvelope> {
        let (ws, _) = self.workspace_for(principal, workspace, true).await?;
        let request = request?;
        let owners = self.door_owners(principal, &ws, request.conversation).await?;
        let owner = owner_of(&owners, request.path.scope, &request.path.full)?;
        request.check()?;
        let PutDocumentRequest {
            path,
            content,
            description,
            expected,
            ..
        } = request;
        let new = NewMemoryDoc {
            scope: path.scope,
            owner_id: owner,
            path: path.full.clone(),
            content,
            description,
            now: self.now_ms(),
        };
        match self.store.memory_put(new, expected, scope_bound(path.scope)).await? {
            MemoryPut::Written { row, .. } => Ok(DocumentEnvelope {
                document: document_of(row),
            }),
            MemoryPut::Stale { current } => Err(stale(&path.full, current)),
            MemoryPut::Full { bound } => Err(KernelError::validation(
                ToolWord::MemoryFull.as_str(),
                "/path",
                format!(
                    "the {}/ scope already holds its bound of {bound} documents; delete one first",
                    path.scope.as_str()
                ),
            )),
        }
    }

    /// `DELETE W/memory/doc?path=&expected_lock_version=&conversation_public_id=`:
    /// `{document: {path, lock_version}}` with the version removed, or 404 `not_found`.
    pub async fn memory_delete_document(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        query: &MemoryQuery<'_>,
    ) -> KernelResult<DeletedEnvelope> {
        let (ws, _) = self.workspace_for(principal, workspace, true).await?;
        let path = required_path(query.path, "/path")?;
        let expected = match query.expected_lock_version {
            None | Some("") => None,
            Some(raw) => Some(raw.trim().parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
                KernelError::new(
                    Code::ParameterInvalid,
                    format!("expected_lock_version must be a non-negative integer, got {raw:?}"),
                )
            })?),
        };
        let owners = self
            .door_owners(principal, &ws, conversation_param(query.conversation_public_id)?)
            .await?;
        let owner = owner_of(&owners, path.scope, &path.full)?;
        match self
            .store
            .memory_delete(path.scope, owner, &path.full, expected)
            .await?
        {
            MemoryDelete::Deleted(row) => Ok(DeletedEnvelope {
                document: MemoryDeleted {
                    path: row.path,
                    lock_version: row.lock_version,
                },
            }),
            MemoryDelete::NotFound => Err(KernelError::new(
                Code::NotFound,
                format!("no document at {:?}", path.full),
            )),
            MemoryDelete::Stale { current } => Err(stale(&path.full, current)),
        }
    }
}
