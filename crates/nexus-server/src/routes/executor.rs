//! The executor plane's surface (executor.md): `GET X` (§2), `PUT X/announcement` (§4),
//! `POST X/progress` (§11), and discovery on the member plane, `GET /executors` (§3).

use std::collections::HashMap;

use crate::extract::{Path, Query};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use nexus_api::executors::{ExecutorDescription, ExecutorEnvelope, ExecutorList};
use nexus_kernel::executor::announce;
use nexus_kernel::executor::{ProgressOutcome, progress};

use crate::AppState;
use crate::auth::{Executor, Member};
use crate::body::JsonObject;
use crate::error::ApiResult;
use crate::routes::runs::path_id;

pub async fn describe(State(state): State<AppState>, Executor(principal): Executor) -> Json<ExecutorDescription> {
    Json(state.kernel.admin().executor_description(&principal))
}

/// `PUT X/announcement`: 200 with the `GET X` body.
pub async fn announce(
    State(state): State<AppState>,
    Executor(principal): Executor,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<ExecutorDescription>> {
    let announcement = announce::parse(&body)?;
    Ok(Json(state.kernel.executor().announce(&principal, &announcement).await?))
}

/// `POST X/progress`: 202, relayed or dropped.
pub async fn progress(
    State(state): State<AppState>,
    Executor(principal): Executor,
    JsonObject(body): JsonObject,
) -> ApiResult<(StatusCode, Json<ProgressOutcome>)> {
    let frame = progress::parse(&body)?;
    let outcome = state.kernel.executor().progress(&principal, &frame).await?;
    Ok((StatusCode::ACCEPTED, Json(outcome)))
}

/// `GET /agent_api/v1/executors?kind=runner`.
pub async fn list(
    State(state): State<AppState>,
    Member(p): Member,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<ExecutorList>> {
    Ok(Json(
        state
            .kernel
            .executor()
            .list_runners(&p, q.get("kind").map(String::as_str))
            .await?,
    ))
}

/// `GET /agent_api/v1/executors/{id}`: a malformed id is a 404 like an unknown one.
pub async fn get(
    State(state): State<AppState>,
    Member(p): Member,
    Path(id): Path<String>,
) -> ApiResult<Json<ExecutorEnvelope>> {
    Ok(Json(state.kernel.executor().get_runner(&p, path_id(&id)?).await?))
}
