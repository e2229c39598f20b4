//! The executor inbox (executor.md §6–§9): `GET X/inbox`, claim, claim status, extend and
//! commit. Each handler parses the path, query and headers, calls the kernel and returns its
//! JSON. A malformed run id in the path is a 404, exactly like an unknown one.
//!
//! Two codes carry a different status on the executor plane (errors-and-auth.md §3):
//! `not_authorized` (the run's creator lost standing) and `tool_not_served` (claim) are 409
//! here, where the member plane answers 403 and acceptance 422.

use crate::extract::{Path, Query};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use nexus_core::codes::Code;
use nexus_kernel::KernelError;
use nexus_kernel::executor::claim::Extend;
use nexus_kernel::executor::commit::{CommitReply, CommitRequest};
use nexus_kernel::executor::inbox::{ClaimReply, InboxPage};

use crate::AppState;
use crate::auth::Executor;
use crate::body::JsonObject;
use crate::error::{ApiError, envelope};
use crate::routes::runs::{Page, idempotency_key, int_param, path_id};

/// An executor-plane failure: the envelope, with the plane's statuses.
pub struct InboxError(pub KernelError);

impl From<KernelError> for InboxError {
    fn from(err: KernelError) -> Self {
        Self(err)
    }
}

impl From<ApiError> for InboxError {
    fn from(err: ApiError) -> Self {
        Self(err.0)
    }
}

/// The status the inbox routes answer `code` with: a claim refused because the executor may
/// not take the row, or does not serve its tool, is a 409 conflict there (executor.md §6);
/// every other code keeps its status.
pub fn status(code: Code) -> u16 {
    match code {
        Code::NotAuthorized | Code::ToolNotServed => 409,
        other => other.status(),
    }
}

impl IntoResponse for InboxError {
    fn into_response(self) -> Response {
        match status(self.0.code) {
            409 if self.0.code.status() != 409 => (StatusCode::CONFLICT, Json(envelope(&self.0))).into_response(),
            _ => ApiError(self.0).into_response(),
        }
    }
}

type InboxResult<T> = Result<T, InboxError>;

/// `GET X/inbox?after=&limit=`.
pub async fn list(
    State(state): State<AppState>,
    Executor(p): Executor,
    Query(page): Query<Page>,
) -> InboxResult<Json<InboxPage>> {
    let limit = int_param(page.limit.as_deref(), "limit")?;
    Ok(Json(
        state.kernel.executor().inbox(&p, page.after.as_deref(), limit).await?,
    ))
}

/// `POST X/inbox/{run}/{task}/claim`, with an optional `Idempotency-Key` (a repeat by the
/// claimant answers the standing grant).
pub async fn claim(
    State(state): State<AppState>,
    Executor(p): Executor,
    Path((run, key)): Path<(String, String)>,
    headers: HeaderMap,
) -> InboxResult<Json<ClaimReply>> {
    let idempotency = idempotency_key(&headers)?;
    let reply = state
        .kernel
        .executor()
        .claim_keyed(&p, path_id(&run)?, &key, idempotency.as_deref())
        .await?;
    Ok(Json(reply))
}

/// `GET X/inbox/{run}/{task}/claim` with `Claim-Token`: no side effects, `no-store`.
pub async fn claim_status(
    State(state): State<AppState>,
    Executor(p): Executor,
    Path((run, key)): Path<(String, String)>,
    headers: HeaderMap,
) -> InboxResult<Response> {
    let token = headers
        .get("claim-token")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| KernelError::new(Code::ParameterMissing, "the Claim-Token header is required"))?;
    let body = state
        .kernel
        .executor()
        .claim_status(&p, path_id(&run)?, &key, token)
        .await;
    let mut response = match body {
        Ok(body) => Json(body).into_response(),
        Err(e) => InboxError(e).into_response(),
    };
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// `POST X/inbox/{run}/{task}/extend` with `{claim_token, timeout_ms}`.
pub async fn extend(
    State(state): State<AppState>,
    Executor(p): Executor,
    Path((run, key)): Path<(String, String)>,
    JsonObject(body): JsonObject,
) -> InboxResult<Json<ClaimReply>> {
    let extend = Extend::parse(&body);
    Ok(Json(
        state
            .kernel
            .executor()
            .extend(&p, path_id(&run)?, &key, &extend)
            .await?,
    ))
}

/// `POST X/inbox/{run}/{task}/commit` with the flat result envelope.
pub async fn commit(
    State(state): State<AppState>,
    Executor(p): Executor,
    Path((run, key)): Path<(String, String)>,
    JsonObject(body): JsonObject,
) -> InboxResult<Json<CommitReply>> {
    let run = path_id(&run)?;
    let commit = CommitRequest::parse(&body)?;
    Ok(Json(state.kernel.executor().commit(&p, run, &key, &commit).await?))
}
