//! Memory documents, the member door (kernel-tools.md §8): `GET W/memory?prefix=`,
//! `GET W/memory/doc?path=`, `PUT W/memory/doc`, `DELETE W/memory/doc?path=&expected_lock_version=`.
//! Each handler parses the path, query and body, calls the kernel, and returns its JSON.
//! `conversation/` paths name their conversation with `conversation_public_id` (a query
//! parameter; a body member of `PUT`).

use crate::extract::{Path, Query};
use axum::Json;
use axum::extract::State;
use nexus_api::memory::{DeletedEnvelope, DocumentEnvelope, DocumentList};
use nexus_kernel::memory::door::{MemoryQuery, PutDocumentRequest};
use serde::Deserialize;

use super::runs::path_id;
use crate::AppState;
use crate::auth::Member;
use crate::body::JsonObject;
use crate::error::ApiResult;

#[derive(Debug, Deserialize)]
pub struct ListQuery {
    pub prefix: Option<String>,
    pub conversation_public_id: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct DocQuery {
    pub path: Option<String>,
    pub expected_lock_version: Option<String>,
    pub conversation_public_id: Option<String>,
}

impl DocQuery {
    fn as_query(&self) -> MemoryQuery<'_> {
        MemoryQuery {
            prefix: None,
            path: self.path.as_deref(),
            expected_lock_version: self.expected_lock_version.as_deref(),
            conversation_public_id: self.conversation_public_id.as_deref(),
        }
    }
}

pub async fn list(
    State(state): State<AppState>,
    Member(p): Member,
    Path(ws): Path<String>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<DocumentList>> {
    let query = MemoryQuery {
        prefix: q.prefix.as_deref(),
        conversation_public_id: q.conversation_public_id.as_deref(),
        ..MemoryQuery::default()
    };
    Ok(Json(
        state.kernel.memory().memory_list(&p, path_id(&ws)?, &query).await?,
    ))
}

pub async fn read(
    State(state): State<AppState>,
    Member(p): Member,
    Path(ws): Path<String>,
    Query(q): Query<DocQuery>,
) -> ApiResult<Json<DocumentEnvelope>> {
    Ok(Json(
        state
            .kernel
            .memory()
            .memory_read_document(&p, path_id(&ws)?, &q.as_query())
            .await?,
    ))
}

pub async fn put(
    State(state): State<AppState>,
    Member(p): Member,
    Path(ws): Path<String>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<DocumentEnvelope>> {
    let ws = path_id(&ws)?;
    let request = PutDocumentRequest::parse(&body);
    Ok(Json(state.kernel.memory().memory_put_document(&p, ws, request).await?))
}

pub async fn delete(
    State(state): State<AppState>,
    Member(p): Member,
    Path(ws): Path<String>,
    Query(q): Query<DocQuery>,
) -> ApiResult<Json<DeletedEnvelope>> {
    Ok(Json(
        state
            .kernel
            .memory()
            .memory_delete_document(&p, path_id(&ws)?, &q.as_query())
            .await?,
    ))
}
