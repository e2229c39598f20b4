//! Conversations and their inputs (runs.md §12), under `W = /agent_api/v1/workspaces/{ws}`:
//! `POST|GET W/conversations`, `GET C`, `GET C/children`, `POST C/archive`, `POST
//! C/unarchive`, `PUT C/default_runner`, `GET C/events`, `POST|GET C/inputs`, `DELETE C/inputs/{id}`,
//! and the history routes `GET W/conversation_search` and `GET C/history` (kernel-tools.md §10). Each
//! handler parses the path, query, headers and body, calls the kernel, and returns its JSON.

use crate::extract::{Path, Query};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use nexus_api::conversations::{ConversationEnvelope, ConversationEventPage, ConversationPage};
use nexus_api::inputs::{InputEnvelope, InputPage};
use nexus_api::turns::{Cancellation, TurnPage};
use nexus_kernel::conversations::history::{HistoryQuery, ReadPage, SearchPage, SearchQuery};
use nexus_kernel::conversations::{
    ConversationChildren, CreateConversationRequest, CreateInputRequest, DefaultRunnerRequest,
};
use serde::Deserialize;

use super::runs::{idempotency_key, idempotent, int_param, path_id};
use crate::AppState;
use crate::auth::Member;
use crate::body::JsonObject;
use crate::error::ApiResult;

/// `GET W/conversation_search`'s query string.
#[derive(Debug, Deserialize)]
pub struct SearchParams {
    pub query: Option<String>,
    pub archived: Option<String>,
    pub include_auxiliary: Option<String>,
    pub limit: Option<String>,
    pub after: Option<String>,
}

/// `GET C/history`'s query string.
#[derive(Debug, Deserialize)]
pub struct HistoryParams {
    pub around_turn_id: Option<String>,
    pub after_position: Option<String>,
    pub before_position: Option<String>,
    pub limit: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct ListQuery {
    pub archived: Option<String>,
    pub after: Option<String>,
    pub limit: Option<String>,
}

pub async fn create(
    State(state): State<AppState>,
    Member(p): Member,
    Path(ws): Path<String>,
    headers: HeaderMap,
    JsonObject(body): JsonObject,
) -> ApiResult<Response> {
    let ws = path_id(&ws)?;
    let key = idempotency_key(&headers)?;
    let request = CreateConversationRequest::parse(&body);
    let reply = state
        .kernel
        .conversations()
        .create_conversation(&p, ws, request, key.as_deref())
        .await?;
    Ok(idempotent(reply, StatusCode::CREATED))
}

pub async fn list(
    State(state): State<AppState>,
    Member(p): Member,
    Path(ws): Path<String>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<ConversationPage>> {
    let limit = int_param(q.limit.as_deref(), "limit")?;
    Ok(Json(
        state
            .kernel
            .conversations()
            .list_conversations(&p, path_id(&ws)?, q.archived.as_deref(), q.after.as_deref(), limit)
            .await?,
    ))
}

pub async fn read(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, c)): Path<(String, String)>,
) -> ApiResult<Json<ConversationEnvelope>> {
    Ok(Json(
        state
            .kernel
            .conversations()
            .read_conversation(&p, path_id(&ws)?, path_id(&c)?)
            .await?,
    ))
}

pub async fn children(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, c)): Path<(String, String)>,
) -> ApiResult<Json<ConversationChildren>> {
    Ok(Json(
        state
            .kernel
            .conversations()
            .conversation_children(&p, path_id(&ws)?, path_id(&c)?)
            .await?,
    ))
}

pub async fn archive(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, c)): Path<(String, String)>,
) -> ApiResult<Json<ConversationEnvelope>> {
    Ok(Json(
        state
            .kernel
            .conversations()
            .archive_conversation(&p, path_id(&ws)?, path_id(&c)?, true)
            .await?,
    ))
}

pub async fn unarchive(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, c)): Path<(String, String)>,
) -> ApiResult<Json<ConversationEnvelope>> {
    Ok(Json(
        state
            .kernel
            .conversations()
            .archive_conversation(&p, path_id(&ws)?, path_id(&c)?, false)
            .await?,
    ))
}

pub async fn default_runner(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, c)): Path<(String, String)>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<ConversationEnvelope>> {
    let (ws, c) = (path_id(&ws)?, path_id(&c)?);
    let request = DefaultRunnerRequest::parse(&body);
    Ok(Json(
        state
            .kernel
            .conversations()
            .put_conversation_default_runner(&p, ws, c, request)
            .await?,
    ))
}

pub async fn create_input(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, c)): Path<(String, String)>,
    headers: HeaderMap,
    JsonObject(body): JsonObject,
) -> ApiResult<Response> {
    let (ws, c) = (path_id(&ws)?, path_id(&c)?);
    let key = idempotency_key(&headers)?;
    let request = CreateInputRequest::parse(&body);
    let reply = state
        .kernel
        .conversations()
        .create_input(&p, ws, c, request, key.as_deref())
        .await?;
    Ok(idempotent(reply, StatusCode::CREATED))
}

pub async fn list_inputs(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, c)): Path<(String, String)>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<InputPage>> {
    let limit = int_param(q.limit.as_deref(), "limit")?;
    Ok(Json(
        state
            .kernel
            .conversations()
            .list_inputs(&p, path_id(&ws)?, path_id(&c)?, q.after.as_deref(), limit)
            .await?,
    ))
}

pub async fn delete_input(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, c, input)): Path<(String, String, String)>,
) -> ApiResult<Json<InputEnvelope>> {
    Ok(Json(
        state
            .kernel
            .conversations()
            .delete_input(&p, path_id(&ws)?, path_id(&c)?, path_id(&input)?)
            .await?,
    ))
}

pub async fn events(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, c)): Path<(String, String)>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<ConversationEventPage>> {
    let after = int_param(q.after.as_deref(), "after")?;
    let limit = int_param(q.limit.as_deref(), "limit")?;
    Ok(Json(
        state
            .kernel
            .conversations()
            .conversation_events(&p, path_id(&ws)?, path_id(&c)?, after, limit)
            .await?,
    ))
}

pub async fn turns(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, c)): Path<(String, String)>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<TurnPage>> {
    let after = int_param(q.after.as_deref(), "after")?;
    let limit = int_param(q.limit.as_deref(), "limit")?;
    Ok(Json(
        state
            .kernel
            .conversations()
            .list_turns(&p, path_id(&ws)?, path_id(&c)?, after, limit)
            .await?,
    ))
}

pub async fn cancellation(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, c)): Path<(String, String)>,
) -> ApiResult<Json<Cancellation>> {
    Ok(Json(
        state
            .kernel
            .conversations()
            .cancel_conversation(&p, path_id(&ws)?, path_id(&c)?)
            .await?,
    ))
}

pub async fn search(
    State(state): State<AppState>,
    Member(p): Member,
    Path(ws): Path<String>,
    Query(q): Query<SearchParams>,
) -> ApiResult<Json<SearchPage>> {
    let q = SearchQuery {
        query: q.query.as_deref(),
        archived: q.archived.as_deref(),
        include_auxiliary: q.include_auxiliary.as_deref(),
        limit: q.limit.as_deref(),
        after: q.after.as_deref(),
    };
    Ok(Json(
        state
            .kernel
            .conversations()
            .conversation_search(&p, path_id(&ws)?, &q)
            .await?,
    ))
}

pub async fn history(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, c)): Path<(String, String)>,
    Query(q): Query<HistoryParams>,
) -> ApiResult<Json<ReadPage>> {
    let q = HistoryQuery {
        around_turn_id: q.around_turn_id.as_deref(),
        after_position: q.after_position.as_deref(),
        before_position: q.before_position.as_deref(),
        limit: q.limit.as_deref(),
    };
    Ok(Json(
        state
            .kernel
            .conversations()
            .conversation_history(&p, path_id(&ws)?, path_id(&c)?, &q)
            .await?,
    ))
}
