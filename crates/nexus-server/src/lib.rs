//! The Nexus HTTP server: thin axum handlers that parse, call the kernel, and map typed errors
//! to the envelope.
//!
//! Architecture Invariant: handlers hold no business rules and no SQL. A handler that needs a
//! decision asks the kernel.

pub mod auth;
pub mod body;
pub mod console;
pub mod edges;
pub mod error;
pub mod extract;
pub mod routes;

use std::sync::Arc;

use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use nexus_core::codes::Code;
use nexus_kernel::Kernel;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;

use crate::error::ApiError;

/// What every handler can reach, behind one `Arc`: axum clones the state for every request
/// (and each extractor that takes it), so a clone is one reference count, not one per shared
/// part of the kernel.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

/// The parts of [`AppState`] (reached through it by `Deref`).
pub struct Shared {
    pub kernel: Kernel,
    pub catalog: routes::tools::CatalogBytes,
    /// How long a client may take to send a request ([`edges::Timeouts`]).
    pub timeouts: edges::Timeouts,
}

impl AppState {
    pub fn new(kernel: Kernel) -> Self {
        Self::with_timeouts(kernel, edges::Timeouts::default())
    }

    /// A state whose server gives clients `timeouts` to send their requests.
    pub fn with_timeouts(kernel: Kernel, timeouts: edges::Timeouts) -> Self {
        Self(Arc::new(Shared {
            kernel,
            catalog: routes::tools::CatalogBytes::render(),
            timeouts,
        }))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The whole API as one router.
pub fn router(state: AppState) -> Router {
    let timeouts = state.timeouts;
    let api = Router::new()
        .route("/healthz", get(routes::health::healthz))
        .route("/agent_api/v1/tools", get(routes::tools::list))
        .route("/agent_api/v1/tools/assembly", post(routes::assembly::preview))
        .route("/agent_api/v1/profile", get(routes::profile::read))
        .route(
            "/agent_api/v1/profile/configuration",
            put(routes::profile::put_configuration),
        )
        .route("/agent_api/v1/executor", get(routes::executor::describe))
        .route("/agent_api/v1/executor/inbox", get(routes::inbox::list))
        .route(
            "/agent_api/v1/executor/inbox/{run}/{task}/claim",
            post(routes::inbox::claim).get(routes::inbox::claim_status),
        )
        .route(
            "/agent_api/v1/executor/inbox/{run}/{task}/extend",
            post(routes::inbox::extend),
        )
        .route(
            "/agent_api/v1/executor/inbox/{run}/{task}/commit",
            post(routes::inbox::commit),
        )
        .route("/agent_api/v1/executor/announcement", put(routes::executor::announce))
        .route("/agent_api/v1/executor/progress", post(routes::executor::progress))
        .route("/agent_api/v1/executor/channel", get(routes::channel::channel))
        .route("/agent_api/v1/executors", get(routes::executor::list))
        .route("/agent_api/v1/executors/{id}", get(routes::executor::get))
        .merge(upload_routes())
        .merge(console::routes())
        .nest("/agent_api/v1/workspaces/{ws}", workspace_routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed);
    edges::bounded(api, nexus_core::bounds::REQUEST_BODY)
        .layer(axum::Extension(timeouts))
        .layer(axum::middleware::from_fn(edges::envelope_backstop))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// Uploads and captures (uploads.md §1, §3; executor.md §12). Ingest takes up to the upload
/// bound plus multipart framing; the handler refuses past the bound as it streams.
fn upload_routes() -> Router<AppState> {
    use routes::uploads;
    let ingest_limit = edges::bound_layers(uploads::INGEST_BODY_LIMIT);
    Router::new()
        .route("/agent_api/v1/uploads", post(uploads::create).layer(ingest_limit))
        .route("/agent_api/v1/uploads/{id}", get(uploads::get))
        .route("/agent_api/v1/uploads/{id}/bytes", get(uploads::bytes))
        .route(
            "/agent_api/v1/executor/uploads",
            post(uploads::create_capture).layer(ingest_limit),
        )
        .route("/agent_api/v1/executor/uploads/{id}", get(uploads::get_capture))
        .route(
            "/agent_api/v1/executor/inbox/{run}/{task}/attachments/{upload}",
            get(uploads::claim_attachment),
        )
        .route(
            "/agent_api/v1/executor/inbox/{run}/{task}/attachments/{upload}/bytes",
            get(uploads::claim_attachment_bytes),
        )
}

/// Routes under `W = /agent_api/v1/workspaces/{ws}`.
fn workspace_routes() -> Router<AppState> {
    use routes::runs;
    // The create and append doors take at most 1 MiB (errors-and-auth.md §5).
    let door_limit = edges::bound_layers(nexus_core::bounds::REQUEST_BODY_CREATE_APPEND);
    Router::new()
        .route("/runs", post(runs::create).layer(door_limit).get(runs::list))
        .route("/approvals", get(runs::list_approvals))
        .route("/runs/{run}", get(runs::get))
        .route("/runs/{run}/start", post(runs::start))
        .route("/runs/{run}/stop", post(runs::stop))
        .route(
            "/runs/{run}/tasks",
            post(runs::append).layer(door_limit).get(runs::list_tasks),
        )
        .route("/runs/{run}/tasks/{key}", get(runs::get_task))
        .route("/runs/{run}/tasks/{key}/request", get(runs::get_request))
        .route("/runs/{run}/cache", get(runs::get_cache))
        .route("/runs/{run}/tasks/{key}/approve", post(runs::approve))
        .route("/runs/{run}/tasks/{key}/deny", post(runs::deny))
        .route("/runs/{run}/tasks/{key}/resolution", post(runs::resolution))
        .route("/runs/{run}/tasks/{key}/retry", post(runs::retry))
        .route("/runs/{run}/tasks/{key}/abandon", post(runs::abandon))
        .route("/runs/{run}/tasks/{key}/cancel", post(runs::cancel))
        .route("/runs/{run}/default_runner", put(runs::default_runner))
        .route("/runs/{run}/transcript", get(runs::transcript))
        .route("/runs/{run}/graph", get(runs::graph))
        .route("/runs/{run}/events", get(runs::events))
        .route("/runs/{run}/events/stream", get(routes::stream::stream))
        .route(
            "/conversations/{c}/events/stream",
            get(routes::stream::conversation_stream),
        )
        .route("/memory", get(routes::memory::list))
        .route(
            "/memory/doc",
            get(routes::memory::read)
                .put(routes::memory::put)
                .delete(routes::memory::delete),
        )
        .merge(routes::conversations::routes())
}

async fn not_found() -> ApiError {
    ApiError::new(Code::NotFound, "no such route")
}

async fn method_not_allowed() -> ApiError {
    ApiError::of(Code::MethodNotAllowed)
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a handler panicked");
    ApiError::of(Code::InternalError).into_response()
}

/// Serves the API on `listener` until `shutdown` resolves, then drains in-flight requests
/// (HTTP/1.1, with the state's read timeouts: [`edges::serve_with`]).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    edges::serve_state(listener, state, shutdown).await
}
