//! `GET /agent_api/v1/profile` and `PUT /agent_api/v1/profile/configuration`
//! (declarations.md §12.2–§12.3).

use axum::Json;
use axum::extract::State;
use serde_json::Value;

use crate::AppState;
use crate::auth::Member;
use crate::body::JsonObject;
use crate::error::ApiResult;

pub async fn read(State(state): State<AppState>, Member(principal): Member) -> ApiResult<Json<Value>> {
    Ok(Json(state.kernel.profile(&principal).await?))
}

pub async fn put_configuration(
    State(state): State<AppState>,
    Member(principal): Member,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<Value>> {
    Ok(Json(state.kernel.put_configuration(&principal, &body).await?))
}
