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
pub mod openapi;
pub mod routes;
pub mod table;

use std::sync::Arc;

use axum::Router;
use axum::response::{IntoResponse, Response};
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

/// The whole API as one router: the routes of [`table::ROUTES`], and nothing else.
pub fn router(state: AppState) -> Router {
    let timeouts = state.timeouts;
    let mut api = table::mount();
    if openapi::guard::log_path().is_some() {
        api = api.layer(axum::middleware::from_fn(openapi::guard::check));
    }
    let api = api.fallback(not_found).method_not_allowed_fallback(method_not_allowed);
    edges::bounded(api, nexus_core::bounds::REQUEST_BODY)
        .layer(axum::Extension(timeouts))
        .layer(axum::middleware::from_fn(edges::envelope_backstop))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
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
