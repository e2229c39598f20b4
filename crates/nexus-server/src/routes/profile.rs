//! `GET /agent_api/v1/profile` and `PUT /agent_api/v1/profile/configuration`
//! (declarations.md §12.2–§12.3).

use std::collections::HashMap;

use axum::Json;
use axum::extract::{Path, Query, State};
use nexus_api::profile::MemberList;
use nexus_kernel::declarations::NewConfiguration;
use nexus_kernel::profile::ProfileReply;

use super::runs::path_id;
use crate::AppState;
use crate::auth::Member;
use crate::body::JsonObject;
use crate::error::ApiResult;

pub async fn read(State(state): State<AppState>, Member(principal): Member) -> ApiResult<Json<ProfileReply>> {
    Ok(Json(state.kernel.admin().profile(&principal).await?))
}

/// `GET W/members?kind=agent|human`.
pub async fn members(
    State(state): State<AppState>,
    Member(principal): Member,
    Path(ws): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<MemberList>> {
    let kind = q.get("kind").map(String::as_str);
    Ok(Json(
        state
            .kernel
            .admin()
            .workspace_members(&principal, path_id(&ws)?, kind)
            .await?,
    ))
}

pub async fn put_configuration(
    State(state): State<AppState>,
    Member(principal): Member,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<ProfileReply>> {
    Ok(Json(
        state
            .kernel
            .admin()
            .put_configuration(&principal, NewConfiguration::parse(&body))
            .await?,
    ))
}
