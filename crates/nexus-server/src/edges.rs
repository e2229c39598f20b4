//! The edges of HTTP (issue 28, deliverable 6): what the server does before and around a
//! handler, so that every answer is the envelope and no client can hold the process's memory
//! or connections by being slow.
//!
//! - [`Timeouts`]: how long a client may take to send a request's head and its body. The head
//!   timeout is hyper's (it also closes a keep-alive connection that stays idle that long); the
//!   body deadline is enforced where a body is read ([`read_within`]).
//! - [`bounded`]: a route's body bound, refused from the declared `Content-Length` before a
//!   byte of the body is read, and by the stream's length when there is no declaration.
//! - [`envelope_backstop`]: any error answer that is not already JSON (a rejection produced by
//!   axum or tower before a handler ran) leaves as the envelope of its status.
//! - [`serve_with`]: the accept loop, HTTP/1.1 with the head timeout and upgrades.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use nexus_core::codes::Code;
use tower::ServiceExt;

use crate::AppState;
use crate::error::ApiError;

/// How long a client may take to send what it sends. See
/// docs/decisions/190-read-timeouts-and-body-bounds.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// From the first byte a connection may read (or the end of its previous answer) to the
    /// end of the request's head; a connection idle that long is closed.
    pub head: Duration,
    /// From the handler's start to the last byte of a JSON body.
    pub body: Duration,
    /// From the handler's start to the last byte of an upload (at most
    /// [`nexus_core::bounds::UPLOAD`] bytes).
    pub upload: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            head: Duration::from_secs(30),
            body: Duration::from_secs(30),
            upload: Duration::from_secs(600),
        }
    }
}

/// The refusal of a body that did not arrive in time. The client is gone or stalling: the
/// answer is for the log as much as for it, and the connection closes after it.
pub fn too_slow() -> ApiError {
    ApiError::new(
        Code::BadRequest,
        "the request body did not arrive within the read timeout",
    )
}

/// Runs `read` (a body read) within `limit`: past it, [`too_slow`].
pub async fn read_within<T>(limit: Duration, read: impl Future<Output = Result<T, ApiError>>) -> Result<T, ApiError> {
    tokio::time::timeout(limit, read)
        .await
        .unwrap_or_else(|_| Err(too_slow()))
}

/// The body bound of the routes it wraps, for [`declared_over`].
#[derive(Debug, Clone, Copy)]
pub struct BodyBound(pub usize);

/// A route's body bound: axum's limit on the stream (a chunked body is cut one frame past the
/// bound), and [`BodyBound`] for the extractors' check of the declared length. The innermost
/// layer wins, so a route's own bound replaces the router's.
pub fn bounded<S: Clone + Send + Sync + 'static>(router: Router<S>, limit: usize) -> Router<S> {
    router
        .layer(axum::Extension(BodyBound(limit)))
        .layer(DefaultBodyLimit::max(limit))
}

/// The `tower` layers of [`bounded`], for a single method route.
pub fn bound_layers(limit: usize) -> (axum::Extension<BodyBound>, DefaultBodyLimit) {
    (axum::Extension(BodyBound(limit)), DefaultBodyLimit::max(limit))
}

/// 413 when the request declares a `Content-Length` over its route's bound: refused before the
/// body is read (hyper then closes the connection rather than read the rest).
pub fn declared_over(req: &Request) -> Result<(), ApiError> {
    check_declared(req.headers(), req.extensions())
}

fn check_declared(headers: &axum::http::HeaderMap, extensions: &axum::http::Extensions) -> Result<(), ApiError> {
    let Some(BodyBound(limit)) = extensions.get::<BodyBound>().copied() else {
        return Ok(());
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match declared {
        Some(n) if n > limit as u64 => Err(ApiError::new(
            Code::ContentTooLarge,
            format!("the request body exceeds its size bound of {limit} bytes"),
        )),
        _ => Ok(()),
    }
}

/// An extractor for routes that stream their body themselves (uploads): refuses a declared
/// `Content-Length` over the route's bound ([`declared_over`]) before the handler reads.
#[derive(Debug)]
pub struct WithinBound;

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for WithinBound {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, _: &S) -> Result<Self, ApiError> {
        check_declared(&parts.headers, &parts.extensions).map(|()| WithinBound)
    }
}

/// The code an error status gets when something other than a handler answered with it.
fn code_for(status: StatusCode) -> Code {
    match status.as_u16() {
        404 => Code::NotFound,
        405 => Code::MethodNotAllowed,
        413 => Code::ContentTooLarge,
        415 => Code::UnsupportedMediaType,
        401 => Code::Unauthorized,
        503 => Code::Unavailable,
        400..=499 => Code::BadRequest,
        _ => Code::InternalError,
    }
}

fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        })
}

/// Middleware: an error answer (4xx, 5xx) that is not JSON becomes the envelope of its status.
/// Handlers already answer with the envelope; this catches what the framework answers before a
/// handler runs. The framework's text is not read (it is dropped with the old body).
pub async fn envelope_backstop(req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(&response) {
        return response;
    }
    let (mut parts, _) = response.into_parts();
    let fresh = ApiError::of(code_for(status)).into_response();
    let (fresh_parts, body) = fresh.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.remove(header::CONTENT_ENCODING);
    parts
        .headers
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (name, value) in fresh_parts.headers.iter() {
        if name != header::CONTENT_TYPE {
            parts.headers.insert(name.clone(), value.clone());
        }
    }
    Response::from_parts(parts, body)
}

/// Serves `router` on `listener` (HTTP/1.1, with upgrades for the push channel) until
/// `shutdown` resolves, then lets the open connections finish their requests.
///
/// Each connection has `timeouts.head` to send a request's head; a connection idle that long
/// between requests is closed too, so idle or stalled sockets cannot pile up.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    router: Router,
    timeouts: Timeouts,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (closing_tx, closing_rx) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
            // Reap finished connections so the set does not grow with the server's age.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors and the like: wait instead of spinning on the error.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // `TCP_NODELAY`: hyper writes a response's head and body in separate segments, and with
        // Nagle's algorithm on, the second waits for the peer's delayed ACK (up to 40 ms).
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY on an accepted stream");
        }
        let service = TowerToHyperService::new(
            router
                .clone()
                .map_request(|req: Request<hyper::body::Incoming>| req.map(axum::body::Body::new)),
        );
        let mut closing = closing_rx.clone();
        connections.spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(timeouts.head);
            let conn = builder.serve_connection(TokioIo::new(stream), service).with_upgrades();
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                result = conn.as_mut() => {
                    if let Err(e) = result {
                        tracing::trace!(error = %e, "connection ended with an error");
                    }
                    return;
                }
                _ = closing.wait_for(|c| *c) => conn.as_mut().graceful_shutdown(),
            }
            if let Err(e) = conn.await {
                tracing::trace!(error = %e, "connection ended with an error while draining");
            }
        });
    }
    drop(listener);
    let _ = closing_tx.send(true);
    while connections.join_next().await.is_some() {}
    Ok(())
}

/// [`serve_with`] the whole API with the state's timeouts.
pub async fn serve_state(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let timeouts = state.timeouts;
    serve_with(listener, crate::router(state), timeouts, shutdown).await
}
