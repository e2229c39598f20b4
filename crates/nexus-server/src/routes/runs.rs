//! Runs and their tasks (runs.md §2–§3, §9–§11; approvals.md §5–§6). Each handler parses the
//! path and query, calls the kernel, and returns its JSON. A malformed id in the path is a 404,
//! exactly like an unknown one.

use crate::extract::{Path, Query};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use nexus_core::codes::Code;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use nexus_api::approvals::ApprovalPage;
use nexus_api::events::EventPage;
use nexus_api::runs::{RunEnvelope, RunPage};
use nexus_api::views::{Graph, Transcript};
use nexus_kernel::runs::view::TaskReply;
use nexus_kernel::runs::{
    Answer, DefaultRunner, Deny, Idempotent, RequestRead, Retry, RunRead, RunsQuery, Stop, TracePage,
};

use crate::AppState;
use crate::auth::Member;
use crate::body::{JsonObject, OptionalJsonObject};
use crate::error::{ApiError, ApiResult};

/// Parses a path id; anything that is not a UUID is concealed as `not_found`.
pub fn path_id(raw: &str) -> ApiResult<Uuid> {
    Uuid::parse_str(raw).map_err(|_| ApiError::of(Code::NotFound))
}

/// The `Idempotency-Key` header, when present (its grammar is the kernel's to check).
pub fn idempotency_key(headers: &HeaderMap) -> ApiResult<Option<String>> {
    match headers.get("idempotency-key") {
        None => Ok(None),
        Some(v) => v.to_str().map(|s| Some(s.to_string())).map_err(|_| {
            ApiError::new(
                Code::ParameterInvalid,
                "Idempotency-Key must be 1-64 visible ASCII characters",
            )
        }),
    }
}

/// `(status, body)` from the kernel, with `Idempotency-Replayed: true` on a replay.
pub fn created(status: u16, body: Value) -> Response {
    let replayed = body.get("replayed") == Some(&Value::Bool(true));
    let mut response = (StatusCode::from_u16(status).unwrap_or(StatusCode::OK), Json(body)).into_response();
    if replayed {
        response
            .headers_mut()
            .insert("idempotency-replayed", HeaderValue::from_static("true"));
    }
    response
}

/// A member door's answer under an optional `Idempotency-Key`: `fresh` (201 for a create, 200
/// for an append) with the typed reply, or 200 with `Idempotency-Replayed: true` and the stored
/// first answer.
pub fn idempotent<T: serde::Serialize>(answer: Idempotent<T>, fresh: StatusCode) -> Response {
    match answer {
        Idempotent::Fresh(reply) => (fresh, Json(reply)).into_response(),
        Idempotent::Replayed(stored) => {
            let mut response = Json(stored).into_response();
            response
                .headers_mut()
                .insert("idempotency-replayed", HeaderValue::from_static("true"));
            response
        }
    }
}

/// Parses an integer query parameter; a non-integer is 400 `parameter_invalid`.
pub fn int_param(raw: Option<&str>, name: &str) -> ApiResult<Option<i64>> {
    raw.map(|s| {
        s.trim()
            .parse::<i64>()
            .map_err(|_| ApiError::new(Code::ParameterInvalid, format!("{name} must be an integer, got {s:?}")))
    })
    .transpose()
}

#[derive(Debug, Deserialize)]
pub struct Page {
    pub after: Option<String>,
    pub limit: Option<String>,
    pub status: Option<String>,
    /// `GET W/runs` only: `asc` (default) or `desc`.
    pub order: Option<String>,
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
    let answer = state.kernel.runs().create_run(&p, ws, &body, key.as_deref()).await?;
    Ok(idempotent(answer, StatusCode::CREATED))
}

pub async fn list(
    State(state): State<AppState>,
    Member(p): Member,
    Path(ws): Path<String>,
    Query(page): Query<Page>,
) -> ApiResult<Json<RunPage>> {
    let ws = path_id(&ws)?;
    Ok(Json(
        state
            .kernel
            .runs()
            .list_runs(
                &p,
                ws,
                &RunsQuery {
                    status: page.status.as_deref(),
                    after: page.after.as_deref(),
                    limit: int_param(page.limit.as_deref(), "limit")?,
                    order: page.order.as_deref(),
                },
            )
            .await?,
    ))
}

pub async fn get(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run)): Path<(String, String)>,
) -> ApiResult<Json<RunRead>> {
    Ok(Json(
        state.kernel.runs().get_run(&p, path_id(&ws)?, path_id(&run)?).await?,
    ))
}

pub async fn start(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run)): Path<(String, String)>,
) -> ApiResult<Json<RunEnvelope>> {
    Ok(Json(
        state.kernel.runs().start_run(&p, path_id(&ws)?, path_id(&run)?).await?,
    ))
}

pub async fn stop(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run)): Path<(String, String)>,
    OptionalJsonObject(body): OptionalJsonObject,
) -> ApiResult<Json<RunEnvelope>> {
    Ok(Json(
        state
            .kernel
            .runs()
            .stop_run(&p, path_id(&ws)?, path_id(&run)?, Stop::parse(&body))
            .await?,
    ))
}

pub async fn append(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run)): Path<(String, String)>,
    headers: HeaderMap,
    JsonObject(body): JsonObject,
) -> ApiResult<Response> {
    let key = idempotency_key(&headers)?;
    let answer = state
        .kernel
        .runs()
        .append(&p, path_id(&ws)?, path_id(&run)?, &body, key.as_deref())
        .await?;
    Ok(idempotent(answer, StatusCode::OK))
}

pub async fn list_tasks(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run)): Path<(String, String)>,
    Query(page): Query<Page>,
) -> ApiResult<Json<TracePage>> {
    Ok(Json(
        state
            .kernel
            .runs()
            .list_tasks(
                &p,
                path_id(&ws)?,
                path_id(&run)?,
                page.after.as_deref(),
                int_param(page.limit.as_deref(), "limit")?,
            )
            .await?,
    ))
}

pub async fn get_task(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run, key)): Path<(String, String, String)>,
) -> ApiResult<Json<TaskReply>> {
    Ok(Json(
        state
            .kernel
            .runs()
            .get_task(&p, path_id(&ws)?, path_id(&run)?, &key)
            .await?,
    ))
}

#[derive(Debug, Deserialize)]
pub struct RequestQuery {
    pub format: Option<String>,
    /// `?generation=`: an earlier generation's sealed record (the current one when absent).
    pub generation: Option<String>,
}

/// The header carrying the served body's SHA-256 (hex) on `?format=provider`.
pub const BODY_SHA256_HEADER: &str = "x-body-sha256";

/// `GET R/cache` → `{cache}` (the run's per-round tools digests and usage).
pub async fn get_cache(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let (ws, run) = (path_id(&ws)?, path_id(&run)?);
    let report = state.kernel.runs().run_cache(&p, ws, run).await?;
    Ok(Json(json!({ "cache": report })))
}

pub async fn get_request(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run, key)): Path<(String, String, String)>,
    Query(q): Query<RequestQuery>,
) -> ApiResult<Response> {
    let (ws, run) = (path_id(&ws)?, path_id(&run)?);
    let provider_format = match q.format.as_deref() {
        None => false,
        Some("provider") => true,
        Some(other) => {
            return Err(ApiError::new(
                Code::ParameterInvalid,
                format!("format must be `provider`, got {other:?}"),
            ));
        }
    };
    let generation = int_param(q.generation.as_deref(), "generation")?;
    match state
        .kernel
        .runs()
        .get_request_of(&p, ws, run, &key, generation, provider_format)
        .await?
    {
        RequestRead::Json(v) => Ok(Json(v).into_response()),
        RequestRead::Provider { body, body_sha256 } => Ok((
            [
                (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
                (
                    HeaderName::from_static(BODY_SHA256_HEADER),
                    HeaderValue::from_str(&body_sha256).expect("hex is a header value"),
                ),
            ],
            body,
        )
            .into_response()),
    }
}

#[derive(Debug, Deserialize)]
pub struct TranscriptQuery {
    pub include_hidden: Option<String>,
}

pub async fn transcript(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run)): Path<(String, String)>,
    Query(q): Query<TranscriptQuery>,
) -> ApiResult<Json<Transcript>> {
    let include_hidden = match q.include_hidden.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(ApiError::new(
                Code::ParameterInvalid,
                format!("include_hidden must be true or false, got {other:?}"),
            ));
        }
    };
    Ok(Json(
        state
            .kernel
            .runs()
            .transcript(&p, path_id(&ws)?, path_id(&run)?, include_hidden)
            .await?,
    ))
}

pub async fn graph(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run)): Path<(String, String)>,
) -> ApiResult<Json<Graph>> {
    Ok(Json(
        state.kernel.runs().graph(&p, path_id(&ws)?, path_id(&run)?).await?,
    ))
}

pub async fn events(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run)): Path<(String, String)>,
    Query(page): Query<Page>,
) -> ApiResult<Json<EventPage>> {
    Ok(Json(
        state
            .kernel
            .runs()
            .events(
                &p,
                path_id(&ws)?,
                path_id(&run)?,
                int_param(page.after.as_deref(), "after")?,
                int_param(page.limit.as_deref(), "limit")?,
            )
            .await?,
    ))
}

pub async fn approve(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run, key)): Path<(String, String, String)>,
    OptionalJsonObject(_body): OptionalJsonObject,
) -> ApiResult<Json<TaskReply>> {
    Ok(Json(
        state
            .kernel
            .runs()
            .approve(&p, path_id(&ws)?, path_id(&run)?, &key)
            .await?,
    ))
}

pub async fn deny(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run, key)): Path<(String, String, String)>,
    OptionalJsonObject(body): OptionalJsonObject,
) -> ApiResult<Json<TaskReply>> {
    Ok(Json(
        state
            .kernel
            .runs()
            .deny(&p, path_id(&ws)?, path_id(&run)?, &key, Deny::parse(&body))
            .await?,
    ))
}

/// `POST W/runs/{run}/tasks/{key}/resolution` (runs.md §6): answer an ask await.
pub async fn resolution(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run, key)): Path<(String, String, String)>,
    OptionalJsonObject(body): OptionalJsonObject,
) -> ApiResult<Json<TaskReply>> {
    Ok(Json(
        state
            .kernel
            .runs()
            .resolve_task(&p, path_id(&ws)?, path_id(&run)?, &key, Answer::parse(&body))
            .await?,
    ))
}

/// `POST W/runs/{run}/tasks/{key}/retry` `{model?}` (runs.md §6): a new generation of a
/// failed row.
pub async fn retry(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run, key)): Path<(String, String, String)>,
    OptionalJsonObject(body): OptionalJsonObject,
) -> ApiResult<Json<TaskReply>> {
    Ok(Json(
        state
            .kernel
            .runs()
            .retry_task(&p, path_id(&ws)?, path_id(&run)?, &key, Retry::parse(&body))
            .await?,
    ))
}

/// `POST W/runs/{run}/tasks/{key}/abandon` (runs.md §6): a failure accepted as it is.
pub async fn abandon(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run, key)): Path<(String, String, String)>,
    OptionalJsonObject(_body): OptionalJsonObject,
) -> ApiResult<Json<TaskReply>> {
    Ok(Json(
        state
            .kernel
            .runs()
            .abandon_task(&p, path_id(&ws)?, path_id(&run)?, &key)
            .await?,
    ))
}

/// `POST W/runs/{run}/tasks/{key}/cancel` (runs.md §6): branch cancel.
pub async fn cancel(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run, key)): Path<(String, String, String)>,
    OptionalJsonObject(_body): OptionalJsonObject,
) -> ApiResult<Json<TaskReply>> {
    Ok(Json(
        state
            .kernel
            .runs()
            .cancel_branch(&p, path_id(&ws)?, path_id(&run)?, &key)
            .await?,
    ))
}

/// `PUT W/runs/{run}/default_runner` (runs.md §2).
pub async fn default_runner(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run)): Path<(String, String)>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<RunEnvelope>> {
    Ok(Json(
        state
            .kernel
            .runs()
            .set_default_runner(&p, path_id(&ws)?, path_id(&run)?, DefaultRunner::parse(&body))
            .await?,
    ))
}

pub async fn list_approvals(
    State(state): State<AppState>,
    Member(p): Member,
    Path(ws): Path<String>,
    Query(page): Query<Page>,
) -> ApiResult<Json<ApprovalPage>> {
    Ok(Json(
        state
            .kernel
            .runs()
            .list_approvals(
                &p,
                path_id(&ws)?,
                page.after.as_deref(),
                int_param(page.limit.as_deref(), "limit")?,
            )
            .await?,
    ))
}
