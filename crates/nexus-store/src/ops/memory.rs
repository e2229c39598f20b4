//! Memory documents (migration 0004, kernel-tools.md §8), written once for both engines.
//!
//! Each operation is one function over either engine's connection ([`crate::ops::db::Db`]), so
//! it runs on a pooled connection (the member door, through [`MemoryStore`]) or inside a
//! [`crate::Tx`] (a kernel tool's evaluation, which settles its row in the same transaction).
//!
//! The store checks only what keeps rows consistent: the version condition, the per-scope
//! document bound and the text guard. Path grammar and size bounds are the kernel's.

use crate::ops::db::{Db, query, query_scalar, uid};
use crate::ops::on_conn;
use crate::{Result, Store, check_text, write_error};

/// A memory scope root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemoryScope {
    User,
    Workspace,
    Conversation,
}

impl MemoryScope {
    pub const ALL: [MemoryScope; 3] = [MemoryScope::User, MemoryScope::Workspace, MemoryScope::Conversation];

    pub fn as_str(self) -> &'static str {
        match self {
            MemoryScope::User => "user",
            MemoryScope::Workspace => "workspace",
            MemoryScope::Conversation => "conversation",
        }
    }

    pub fn parse(word: &str) -> Option<MemoryScope> {
        match word {
            "user" => Some(MemoryScope::User),
            "workspace" => Some(MemoryScope::Workspace),
            "conversation" => Some(MemoryScope::Conversation),
            _ => None,
        }
    }
}

/// One stored memory document. Listings without content leave `content` empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryDocRow {
    pub id: i64,
    pub scope: MemoryScope,
    pub owner_id: i64,
    /// The whole path, scope root included.
    pub path: String,
    pub content: String,
    pub description: Option<String>,
    /// UTF-8 bytes of `content`.
    pub byte_size: i64,
    pub lock_version: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A create-or-replace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMemoryDoc {
    pub scope: MemoryScope,
    pub owner_id: i64,
    pub path: String,
    pub content: String,
    pub description: Option<String>,
    pub now: i64,
}

/// What a put did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryPut {
    /// Created (`lock_version` 1) or replaced (the version incremented).
    Written { row: MemoryDocRow, created: bool },
    /// `expected_lock_version` did not match: the stored version (0 for no document).
    Stale { current: i64 },
    /// A new document would pass the scope owner's document bound.
    Full { bound: i64 },
}

/// What a delete did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryDelete {
    /// Removed; the row as it was.
    Deleted(MemoryDocRow),
    NotFound,
    /// `expected_lock_version` did not match: the stored version.
    Stale {
        current: i64,
    },
}

pub(crate) const MEMORY_GET: &str = "SELECT id, scope, owner_id, path, content, description, byte_size, lock_version, \
     created_at, updated_at FROM memory_documents WHERE scope = $1 AND owner_id = $2 AND path = $3";
pub(crate) const MEMORY_LIST_META: &str = "SELECT id, scope, owner_id, path, '' AS content, description, byte_size, \
     lock_version, created_at, updated_at FROM memory_documents WHERE scope = $1 AND owner_id = $2";
pub(crate) const MEMORY_LIST_FULL: &str = "SELECT id, scope, owner_id, path, content, description, byte_size, \
     lock_version, created_at, updated_at FROM memory_documents WHERE scope = $1 AND owner_id = $2";
pub(crate) const MEMORY_COUNT: &str = "SELECT COUNT(*) FROM memory_documents WHERE scope = $1 AND owner_id = $2";
pub(crate) const MEMORY_INSERT: &str = "INSERT INTO memory_documents \
     (scope, owner_id, path, content, description, byte_size, lock_version, created_at, updated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $7) \
     RETURNING id, scope, owner_id, path, content, description, byte_size, lock_version, created_at, updated_at";
pub(crate) const MEMORY_UPDATE: &str = "UPDATE memory_documents SET content = $4, description = $5, byte_size = $6, \
     lock_version = lock_version + 1, updated_at = $7 \
     WHERE scope = $1 AND owner_id = $2 AND path = $3 AND lock_version = $8 \
     RETURNING id, scope, owner_id, path, content, description, byte_size, lock_version, created_at, updated_at";
pub(crate) const MEMORY_DELETE: &str =
    "DELETE FROM memory_documents WHERE scope = $1 AND owner_id = $2 AND path = $3 AND lock_version = $4";
pub(crate) const MEMBER_ID_BY_PUBLIC_ID: &str = "SELECT id FROM members WHERE public_id = $1";
pub(crate) const WORKSPACE_ID_BY_PUBLIC_ID: &str = "SELECT id FROM workspaces WHERE public_id = $1";
/// Serializes writers of one (scope, owner) so the document bound holds under concurrency.
/// PostgreSQL: a transaction-scoped advisory lock; SQLite: `BEGIN IMMEDIATE` already holds the
/// database write lock, so the statement only reads its argument.
pub(crate) const MEMORY_LOCK_PG: &str = "SELECT pg_advisory_xact_lock(hashtext($1))";
pub(crate) const MEMORY_LOCK_SQLITE: &str = "SELECT $1";

pub(crate) fn memory_doc(r: &impl crate::row::Columns) -> crate::Result<MemoryDocRow> {
    Ok(MemoryDocRow {
        id: r.int("id")?,
        scope: crate::row::word("memory_documents.scope", &r.text("scope")?, MemoryScope::parse)?,
        owner_id: r.int("owner_id")?,
        path: r.text("path")?,
        content: r.text("content")?,
        description: r.opt_text("description")?,
        byte_size: r.int("byte_size")?,
        lock_version: r.int("lock_version")?,
        created_at: r.int("created_at")?,
        updated_at: r.int("updated_at")?,
    })
}

// ---- memory documents ----

pub(crate) async fn memory_get<C: Db>(
    c: &mut C,
    scope: MemoryScope,
    owner_id: i64,
    path: &str,
) -> Result<Option<MemoryDocRow>> {
    query(MEMORY_GET)
        .bind(scope.as_str())
        .bind(owner_id)
        .bind(path)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| memory_doc(&r))
        .transpose()
}

/// Every document of (scope, owner), sorted by path bytes (not by the database's
/// collation, so both engines order alike). `with_content: false` leaves content empty.
pub(crate) async fn memory_list<C: Db>(
    c: &mut C,
    scope: MemoryScope,
    owner_id: i64,
    with_content: bool,
) -> Result<Vec<MemoryDocRow>> {
    let q = if with_content {
        MEMORY_LIST_FULL
    } else {
        MEMORY_LIST_META
    };
    let rows = query(q).bind(scope.as_str()).bind(owner_id).fetch_all(&mut *c).await?;
    let mut out = rows.iter().map(memory_doc).collect::<Result<Vec<_>>>()?;
    out.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    Ok(out)
}

pub(crate) async fn memory_put<C: Db>(
    c: &mut C,
    new: &NewMemoryDoc,
    expected_lock_version: Option<i64>,
    bound: i64,
) -> Result<MemoryPut> {
    check_text(&new.path)?;
    check_text(&new.content)?;
    if let Some(d) = &new.description {
        check_text(d)?;
    }
    query(C::MEMORY_LOCK)
        .bind(format!("memory:{}:{}", new.scope.as_str(), new.owner_id))
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    let existing = memory_get(c, new.scope, new.owner_id, &new.path).await?;
    let current = existing.as_ref().map_or(0, |r| r.lock_version);
    if expected_lock_version.is_some_and(|e| e != current) {
        return Ok(MemoryPut::Stale { current });
    }
    let byte_size = new.content.len() as i64;
    match existing {
        Some(_) => {
            let r = query(MEMORY_UPDATE)
                .bind(new.scope.as_str())
                .bind(new.owner_id)
                .bind(&new.path)
                .bind(&new.content)
                .bind(&new.description)
                .bind(byte_size)
                .bind(new.now)
                .bind(current)
                .fetch_optional(&mut *c)
                .await
                .map_err(write_error)?;
            match r {
                Some(r) => Ok(MemoryPut::Written {
                    row: memory_doc(&r)?,
                    created: false,
                }),
                None => {
                    let now = memory_get(c, new.scope, new.owner_id, &new.path).await?;
                    Ok(MemoryPut::Stale {
                        current: now.map_or(0, |r| r.lock_version),
                    })
                }
            }
        }
        None => {
            let count: i64 = query_scalar(MEMORY_COUNT)
                .bind(new.scope.as_str())
                .bind(new.owner_id)
                .fetch_one(&mut *c)
                .await?;
            if count >= bound {
                return Ok(MemoryPut::Full { bound });
            }
            let r = query(MEMORY_INSERT)
                .bind(new.scope.as_str())
                .bind(new.owner_id)
                .bind(&new.path)
                .bind(&new.content)
                .bind(&new.description)
                .bind(byte_size)
                .bind(new.now)
                .fetch_one(&mut *c)
                .await
                .map_err(write_error)?;
            Ok(MemoryPut::Written {
                row: memory_doc(&r)?,
                created: true,
            })
        }
    }
}

pub(crate) async fn memory_delete<C: Db>(
    c: &mut C,
    scope: MemoryScope,
    owner_id: i64,
    path: &str,
    expected_lock_version: Option<i64>,
) -> Result<MemoryDelete> {
    let Some(existing) = memory_get(c, scope, owner_id, path).await? else {
        return Ok(MemoryDelete::NotFound);
    };
    if expected_lock_version.is_some_and(|e| e != existing.lock_version) {
        return Ok(MemoryDelete::Stale {
            current: existing.lock_version,
        });
    }
    let done = query(MEMORY_DELETE)
        .bind(scope.as_str())
        .bind(owner_id)
        .bind(path)
        .bind(existing.lock_version)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    if done.rows_affected() == 0 {
        return Ok(match memory_get(c, scope, owner_id, path).await? {
            Some(r) => MemoryDelete::Stale {
                current: r.lock_version,
            },
            None => MemoryDelete::NotFound,
        });
    }
    Ok(MemoryDelete::Deleted(existing))
}

/// The internal id of the member with this public id.
pub(crate) async fn member_id_of<C: Db>(c: &mut C, public_id: uuid::Uuid) -> Result<Option<i64>> {
    Ok(query_scalar(MEMBER_ID_BY_PUBLIC_ID)
        .bind(uid(public_id))
        .fetch_optional(&mut *c)
        .await?)
}

/// The internal id of the workspace with this public id.
pub(crate) async fn workspace_id_of<C: Db>(c: &mut C, public_id: uuid::Uuid) -> Result<Option<i64>> {
    Ok(query_scalar(WORKSPACE_ID_BY_PUBLIC_ID)
        .bind(uid(public_id))
        .fetch_optional(&mut *c)
        .await?)
}

/// The memory operations on the store (see `crate::ops`).
#[allow(async_fn_in_trait)]
pub trait MemoryStore {
    /// The document at `path` of (scope, owner).
    async fn memory_document(&self, scope: MemoryScope, owner_id: i64, path: &str) -> Result<Option<MemoryDocRow>>;
    /// Every document of (scope, owner), sorted by path bytes; `with_content: false` leaves
    /// `content` empty.
    async fn memory_documents(
        &self,
        scope: MemoryScope,
        owner_id: i64,
        with_content: bool,
    ) -> Result<Vec<MemoryDocRow>>;
    /// Creates (`lock_version` 1) or replaces (version + 1) a document in one write
    /// transaction. `expected_lock_version` (0 = no document) must equal the stored version
    /// when given (`Stale`); a new document past `bound` documents of (scope, owner) is `Full`.
    async fn memory_put(&self, new: NewMemoryDoc, expected_lock_version: Option<i64>, bound: i64) -> Result<MemoryPut>;
    /// Deletes a document, conditionally on `expected_lock_version` when given.
    async fn memory_delete(
        &self,
        scope: MemoryScope,
        owner_id: i64,
        path: &str,
        expected_lock_version: Option<i64>,
    ) -> Result<MemoryDelete>;
}

impl MemoryStore for Store {
    async fn memory_document(
        &self,
        scope: crate::ops::memory::MemoryScope,
        owner_id: i64,
        path: &str,
    ) -> Result<Option<crate::ops::memory::MemoryDocRow>> {
        on_conn!(self, read, |c| memory_get(c, scope, owner_id, path))
    }
    async fn memory_documents(
        &self,
        scope: crate::ops::memory::MemoryScope,
        owner_id: i64,
        with_content: bool,
    ) -> Result<Vec<crate::ops::memory::MemoryDocRow>> {
        on_conn!(self, read, |c| memory_list(c, scope, owner_id, with_content))
    }
    async fn memory_put(
        &self,
        new: crate::ops::memory::NewMemoryDoc,
        expected_lock_version: Option<i64>,
        bound: i64,
    ) -> Result<crate::ops::memory::MemoryPut> {
        on_conn!(self, tx, |c| memory_put(c, &new, expected_lock_version, bound))
    }
    async fn memory_delete(
        &self,
        scope: crate::ops::memory::MemoryScope,
        owner_id: i64,
        path: &str,
        expected_lock_version: Option<i64>,
    ) -> Result<crate::ops::memory::MemoryDelete> {
        on_conn!(self, tx, |c| memory_delete(
            c,
            scope,
            owner_id,
            path,
            expected_lock_version
        ))
    }
}
