//! `GET /agent_api/v1/executor` (executor.md §2): the transport plane's self-read.

use axum::Json;
use axum::extract::State;
use serde_json::Value;

use crate::AppState;
use crate::auth::Executor;

pub async fn describe(State(state): State<AppState>, Executor(principal): Executor) -> Json<Value> {
    Json(state.kernel.executor_description(&principal))
}
