//! [`RunRef`]: the routes under `R = W/runs/{run}`.

use futures_util::StreamExt;
use reqwest::Method;
use serde_json::{Map, Value};

use super::events::{EventStream, Frame, Reconnect};
use super::wire::{self, Route, V1};
use crate::error::Result;
use crate::http::Http;
use nexus_api::common::{Page, RunStatus, TaskEnvelope};
use nexus_api::events::EventPage;
use nexus_api::runs::{Append, Appended, Run, RunEnvelope, RunRead};
use nexus_api::tasks::{
    CacheEnvelope, CacheReport, ProviderBody, Resolution, Resolved, SealedEnvelope, SealedRequest, Task, TaskPage,
};
use nexus_api::verbs::{Deny, Retry, SetDefaultRunner, Stop};
use nexus_api::views::{Graph, Transcript};

/// The header carrying the SHA-256 of a `?format=provider` body.
const BODY_SHA256: &str = "x-body-sha256";

/// One run, seen through a member bearer. Made by [`Workspace::run`](super::Workspace::run)
/// (nothing is sent until a call); cheap to clone.
#[derive(Debug, Clone)]
pub struct RunRef {
    http: Http,
    workspace: String,
    id: String,
}

impl RunRef {
    pub(crate) fn new(http: Http, workspace: &str, id: &str) -> RunRef {
        RunRef {
            http,
            workspace: workspace.to_owned(),
            id: id.to_owned(),
        }
    }

    /// The run's id.
    pub fn public_id(&self) -> &str {
        &self.id
    }

    /// The workspace's id.
    pub fn workspace_public_id(&self) -> &str {
        &self.workspace
    }

    fn route(&self) -> Route {
        Route::new(V1)
            .lit("workspaces")
            .seg(&self.workspace)
            .lit("runs")
            .seg(&self.id)
    }

    fn task_route(&self, key: &str) -> Route {
        self.route().lit("tasks").seg(key)
    }

    /// `GET R`: the run and its usage (404 `not_found`).
    pub async fn get(&self) -> Result<RunRead> {
        wire::get(&self.http, &self.route()).await
    }

    /// `POST R/start`: `pending` → `running` (409 `not_startable` otherwise).
    pub async fn start(&self) -> Result<Run> {
        let empty = Value::Object(Map::new());
        let route = self.route().lit("start");
        let read: RunEnvelope = wire::call(&self.http, Method::POST, &route, Some(&empty), None).await?;
        Ok(read.run)
    }

    /// `POST R/stop {force}`: with `force`, every live task is canceled at once; without it,
    /// running and dispatched work finishes. 409 `already_terminal` on an ended run.
    pub async fn stop(&self, force: bool) -> Result<Run> {
        let body = wire::body(&Stop { force });
        let route = self.route().lit("stop");
        let read: RunEnvelope = wire::call(&self.http, Method::POST, &route, Some(&body), None).await?;
        Ok(read.run)
    }

    /// `POST R/tasks` (+ `Idempotency-Key`): appends an envelope of steps. Refusals (409):
    /// `run_not_appendable`, `tip_live`, `stale_revision`, `duplicate_task_key`, …
    pub async fn append(&self, append: &Append) -> Result<Appended> {
        let route = self.route().lit("tasks");
        wire::call(
            &self.http,
            Method::POST,
            &route,
            Some(&append.body()),
            append.idempotency_key.as_deref(),
        )
        .await
    }

    /// `GET R/tasks?after=&limit=`: trace rows in creation order.
    pub async fn tasks(&self, page: &Page) -> Result<TaskPage> {
        let route = self
            .route()
            .lit("tasks")
            .query("after", page.after.as_deref())
            .query("limit", page.limit);
        wire::get(&self.http, &route).await
    }

    /// `GET R/tasks/{key}`: the full read of one task (404 `not_found`).
    pub async fn task(&self, key: &str) -> Result<Task> {
        let read: TaskEnvelope = wire::get(&self.http, &self.task_route(key)).await?;
        Ok(read.task)
    }

    /// `GET R/tasks/{key}/request`: a round's sealed request (404 `request_not_sealed`).
    pub async fn request(&self, key: &str) -> Result<SealedRequest> {
        let read: SealedEnvelope = wire::get(&self.http, &self.task_route(key).lit("request")).await?;
        Ok(read.request)
    }

    /// `GET R/tasks/{key}/request?format=provider`: the exact provider body bytes and the
    /// SHA-256 the server states for them.
    pub async fn provider_body(&self, key: &str) -> Result<ProviderBody> {
        let route = self.task_route(key).lit("request").query("format", Some("provider"));
        let response = wire::checked(self.http.authed(Method::GET, route.finish()?)?).await?;
        let body_sha256 = wire::header_text(&response, BODY_SHA256).unwrap_or_default();
        let bytes = response.bytes().await?.to_vec();
        Ok(ProviderBody { bytes, body_sha256 })
    }

    /// `GET R/cache`: each round's tools digest and usage.
    pub async fn cache(&self) -> Result<CacheReport> {
        let read: CacheEnvelope = wire::get(&self.http, &self.route().lit("cache")).await?;
        Ok(read.cache)
    }

    /// `GET R/transcript?include_hidden=`.
    pub async fn transcript(&self, include_hidden: bool) -> Result<Transcript> {
        let route = self
            .route()
            .lit("transcript")
            .query("include_hidden", Some(include_hidden));
        wire::get(&self.http, &route).await
    }

    /// `GET R/graph`: nodes, edges and the Mermaid flowchart.
    pub async fn graph(&self) -> Result<Graph> {
        wire::get(&self.http, &self.route().lit("graph")).await
    }

    /// `GET R/events?after=&limit=`: durable events after sequence `after` (0 = from the
    /// start); the server defaults `limit` to 100 and caps it at 500.
    pub async fn events(&self, after: i64, limit: Option<u32>) -> Result<EventPage> {
        let route = self
            .route()
            .lit("events")
            .query("after", Some(after))
            .query("limit", limit);
        wire::get(&self.http, &route).await
    }

    /// `GET R/events/stream`: the live feed after sequence `after` (0 = from the start),
    /// reconnecting with the default [`Reconnect`] policy.
    pub async fn stream(&self, after: i64) -> Result<EventStream> {
        self.stream_with(after, Reconnect::default()).await
    }

    /// [`RunRef::stream`] with an explicit reconnection policy.
    pub async fn stream_with(&self, after: i64, policy: Reconnect) -> Result<EventStream> {
        EventStream::open(
            self.http.clone(),
            self.route().lit("events").lit("stream"),
            after,
            policy,
        )
        .await
    }

    /// Waits, following the live feed, until the run enters a status `done` accepts (for
    /// example [`RunStatus::is_terminal`]), and returns the run read then. Should the feed
    /// close for good first, returns the run as read at that moment: check its status.
    pub async fn wait_until(&self, done: impl Fn(&RunStatus) -> bool) -> Result<Run> {
        let read = self.get().await?;
        if done(&read.run.status) {
            return Ok(read.run);
        }
        // From the start: a change between the read and the open is in the backlog.
        let mut feed = self.stream(0).await?;
        while let Some(frame) = feed.next().await {
            if let Frame::Event(event) = frame?
                && event.run_status_change().is_some_and(|change| done(&change.to))
            {
                break;
            }
        }
        Ok(self.get().await?.run)
    }

    /// `POST R/tasks/{key}/approve`: releases a held row. Refusals: 409 `not_adjudicable`,
    /// `not_awaiting_approval`; 404 `not_found`.
    pub async fn approve(&self, key: &str) -> Result<Task> {
        self.task_verb(key, "approve", Value::Object(Map::new())).await
    }

    /// `POST R/tasks/{key}/deny {reason?}`: fails a held row with `approval_denied` (the
    /// reason's first 256 bytes become `error.detail`).
    pub async fn deny(&self, key: &str, reason: Option<&str>) -> Result<Task> {
        let body = wire::body(&Deny {
            reason: reason.map(str::to_owned),
        });
        self.task_verb(key, "deny", body).await
    }

    /// `POST R/tasks/{key}/resolution`: answers an ask await. A second answer is `idle`.
    /// Refusals: 409 `stale_claim` (wrong or missing token), `task_not_running`,
    /// `not_resolvable`; 422 `invalid_outcome`, …
    pub async fn resolve(&self, key: &str, resolution: &Resolution) -> Result<Resolved> {
        let route = self.task_route(key).lit("resolution");
        wire::call(&self.http, Method::POST, &route, Some(&resolution.body()), None).await
    }

    /// `POST R/tasks/{key}/retry {model?}`: a new generation of a failed, timed-out or
    /// uncertain row (a model round seals a new request; `model` only for model rows); rows
    /// skipped because of it wait again, and a run needing attention runs again. Refusals:
    /// 409 `not_retryable`; 404 `not_found`; 403 `not_authorized`.
    pub async fn retry(&self, key: &str, model: Option<&str>) -> Result<Task> {
        let body = wire::body(&Retry {
            model: model.map(str::to_owned),
        });
        self.task_verb(key, "retry", body).await
    }

    /// `POST R/tasks/{key}/abandon`: accepts a failure as it is (`failure_resolution:
    /// abandoned`). Refusals: 409 `not_abandonable`; 404 `not_found`; 403 `not_authorized`.
    pub async fn abandon(&self, key: &str) -> Result<Task> {
        self.task_verb(key, "abandon", Value::Object(Map::new())).await
    }

    /// `POST R/tasks/{key}/cancel`: cancels the branch rooted at `key`. Refusals: 409
    /// `not_a_branch`, `already_terminal`; 404 `not_found`; 403 `not_authorized`.
    pub async fn cancel_branch(&self, key: &str) -> Result<Task> {
        self.task_verb(key, "cancel", Value::Object(Map::new())).await
    }

    /// `PUT R/default_runner`: the runner later steps import from (`None` for none); accepted
    /// tasks keep their targets. Refusals: 404 `runner_not_found`; 409 `already_terminal`;
    /// 422 `runner_not_eligible`.
    pub async fn set_default_runner(&self, executor_public_id: Option<&str>) -> Result<Run> {
        let body = wire::body(&SetDefaultRunner::new(executor_public_id));
        let route = self.route().lit("default_runner");
        let read: RunEnvelope = wire::call(&self.http, Method::PUT, &route, Some(&body), None).await?;
        Ok(read.run)
    }

    async fn task_verb(&self, key: &str, verb: &str, body: Value) -> Result<Task> {
        let route = self.task_route(key).lit(verb);
        let read: TaskEnvelope = wire::call(&self.http, Method::POST, &route, Some(&body), None).await?;
        Ok(read.task)
    }
}
