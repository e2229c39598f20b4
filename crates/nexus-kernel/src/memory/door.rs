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

use nexus_core::codes::Code;
use nexus_core::results::ToolWord;
use nexus_store::{Engine, MemoryDelete, MemoryDocRow, MemoryPut, MemoryScope, NewMemoryDoc, WorkspaceRow};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::{DESCRIPTION_BYTES, DOCUMENT_BYTES, MemPath, Owners, parse_path, parse_prefix, scope_bound};
use crate::Kernel;
use crate::auth::MemberPrincipal;
use crate::error::{KernelError, KernelResult};

/// The read shape: `{path, content, description?, lock_version, updated_at}`.
fn document_json(doc: &MemoryDocRow) -> Value {
    let mut m = Map::new();
    m.insert("path".into(), json!(doc.path));
    m.insert("content".into(), json!(doc.content));
    if let Some(d) = &doc.description {
        m.insert("description".into(), json!(d));
    }
    m.insert("lock_version".into(), json!(doc.lock_version));
    m.insert("updated_at".into(), json!(crate::time::iso(doc.updated_at)));
    Value::Object(m)
}

/// The list shape: `{path, byte_size, description?, lock_version, updated_at}`.
fn summary_json(doc: &MemoryDocRow) -> Value {
    let mut m = Map::new();
    m.insert("path".into(), json!(doc.path));
    m.insert("byte_size".into(), json!(doc.byte_size));
    if let Some(d) = &doc.description {
        m.insert("description".into(), json!(d));
    }
    m.insert("lock_version".into(), json!(doc.lock_version));
    m.insert("updated_at".into(), json!(crate::time::iso(doc.updated_at)));
    Value::Object(m)
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

fn stale(path: &str, current: i64) -> KernelError {
    KernelError::new(
        Code::StaleObject,
        format!("{path:?} is at lock_version {current}, not the expected one; read it again and retry"),
    )
    .with_extra("current_lock_version", json!(current))
}

impl Kernel {
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
    ) -> KernelResult<Value> {
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
        Ok(json!({"documents": docs.iter().map(summary_json).collect::<Vec<_>>()}))
    }

    /// `GET W/memory/doc?path=&conversation_public_id=`: `{document}`, or 404 `not_found`.
    pub async fn memory_read_document(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        query: &MemoryQuery<'_>,
    ) -> KernelResult<Value> {
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
        Ok(json!({"document": document_json(&doc)}))
    }

    /// `PUT W/memory/doc {path, content, description?, expected_lock_version?,
    /// conversation_public_id?}`: creates or replaces the document whole; `{document}` in the
    /// read shape.
    pub async fn memory_put_document(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        body: &Value,
    ) -> KernelResult<Value> {
        let (ws, _) = self.workspace_for(principal, workspace, true).await?;
        let path = match body.get("path") {
            None | Some(Value::Null) => required_path(None, "/path")?,
            Some(Value::String(s)) => required_path(Some(s), "/path")?,
            Some(other) => {
                return Err(KernelError::new(
                    Code::ParameterInvalid,
                    format!("path must be a string, got {other}"),
                ));
            }
        };
        let content = match body.get("content") {
            Some(Value::String(s)) => s.as_str(),
            None | Some(Value::Null) => {
                return Err(KernelError::new(
                    Code::ParameterMissing,
                    "`content` is required: the document's UTF-8 text",
                ));
            }
            Some(other) => {
                return Err(KernelError::new(
                    Code::ParameterInvalid,
                    format!("content must be a string, got {other}"),
                ));
            }
        };
        let description = match body.get("description") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                return Err(KernelError::new(
                    Code::ParameterInvalid,
                    format!("description must be a string, got {other}"),
                ));
            }
        };
        let expected = expected_version(body.get("expected_lock_version"))?;
        let conversation = match body.get("conversation_public_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => conversation_param(Some(s))?,
            Some(other) => {
                return Err(KernelError::new(
                    Code::ParameterInvalid,
                    format!("conversation_public_id must be a UUID string, got {other}"),
                ));
            }
        };
        let owners = self.door_owners(principal, &ws, conversation).await?;
        let owner = owner_of(&owners, path.scope, &path.full)?;
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
        if path.is_reserved() {
            let name = path.skill_name().filter(|n| super::valid_skill_name(n));
            if name.is_none() {
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
            let ok = description
                .as_deref()
                .is_some_and(|d| !d.trim().is_empty() && d.len() <= DESCRIPTION_BYTES);
            if !ok {
                return Err(KernelError::validation(
                    ToolWord::SkillDescriptionRequired.as_str(),
                    "/description",
                    format!("a skill document needs a non-blank description of at most {DESCRIPTION_BYTES} bytes"),
                ));
            }
        } else if description.as_deref().is_some_and(|d| d.len() > DESCRIPTION_BYTES) {
            // The description bound of every document (errors-and-auth.md §5); the spec lists
            // no reason of its own for a plain document, so it is the size word.
            return Err(KernelError::validation(
                ToolWord::MemoryDocumentTooLarge.as_str(),
                "/description",
                format!("a description is at most {DESCRIPTION_BYTES} bytes"),
            ));
        }
        let new = NewMemoryDoc {
            scope: path.scope,
            owner_id: owner,
            path: path.full.clone(),
            content: content.to_string(),
            description,
            now: self.now_ms(),
        };
        match self.store.memory_put(new, expected, scope_bound(path.scope)).await? {
            MemoryPut::Written { row, .. } => Ok(json!({"document": document_json(&row)})),
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
    ) -> KernelResult<Value> {
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
            MemoryDelete::Deleted(row) => Ok(json!({"document": {"path": row.path, "lock_version": row.lock_version}})),
            MemoryDelete::NotFound => Err(KernelError::new(
                Code::NotFound,
                format!("no document at {:?}", path.full),
            )),
            MemoryDelete::Stale { current } => Err(stale(&path.full, current)),
        }
    }
}
