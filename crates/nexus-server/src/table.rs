//! The route table: every route of the API, once, with the plane its bearer must belong to and
//! the standing a member needs (errors-and-auth.md §2).
//!
//! [`crate::router`] is built from [`ROUTES`] and nothing else, and the authorization matrix
//! test (`tests/matrix.rs`) walks the same slice: a route cannot exist without an entry, and an
//! entry cannot name a method its handler does not serve (the `route!` macro builds both from
//! one token).

use axum::Router;
use axum::http::Method;
use axum::routing::MethodRouter;
use tower_http::compression::CompressionLayer;

use crate::routes::{
    assembly, channel, conversations, executor, health, inbox, memory, profile, runs, stream, tools, uploads,
};
use crate::{AppState, console, edges, openapi};

/// Whose bearer a route takes (errors-and-auth.md §2, "Credentials and planes").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plane {
    /// No bearer: health and the console's files.
    Public,
    /// A member credential.
    Member,
    /// An executor transport credential.
    Transport,
}

/// What the caller needs beyond an authenticated bearer of the route's plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Nothing: public routes, and routes that answer the caller's own view (its profile, its
    /// account's catalog, executors and uploads; its executor's inbox, claims and captures).
    /// Resources of another account are 404 `not_found`.
    Own,
    /// `read` standing in the workspace `{ws}` (none: 404 `not_found`).
    Read,
    /// `write` standing in the workspace `{ws}`: a verb (read only: 403 `not_authorized`).
    Write,
}

/// One route: `method path`, its plane, its standing, and how its handler is mounted.
pub struct Route {
    pub method: Method,
    /// The path template, axum syntax (`{param}`, `{*rest}`).
    pub path: &'static str,
    pub plane: Plane,
    pub standing: Standing,
    mount: fn() -> MethodRouter<AppState>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} ({:?}, {:?})",
            self.method, self.path, self.plane, self.standing
        )
    }
}

/// `W = /agent_api/v1/workspaces/{ws}`.
macro_rules! w {
    ($rest:literal) => {
        concat!("/agent_api/v1/workspaces/{ws}", $rest)
    };
}

/// `route!(VERB path, Plane, Standing, handler [, layer])`: the method and the mounting come
/// from the same `VERB` token.
macro_rules! route {
    ($verb:ident $path:expr, $plane:ident, $standing:ident, $handler:expr $(, $layer:expr)?) => {
        Route {
            method: Method::$verb,
            path: $path,
            plane: Plane::$plane,
            standing: Standing::$standing,
            mount: || route!(@mount $verb, $handler)$(.layer($layer))?,
        }
    };
    (@mount GET, $h:expr) => { axum::routing::get($h) };
    (@mount POST, $h:expr) => { axum::routing::post($h) };
    (@mount PUT, $h:expr) => { axum::routing::put($h) };
    (@mount DELETE, $h:expr) => { axum::routing::delete($h) };
}

/// The create and append doors take at most 1 MiB (errors-and-auth.md §5).
fn door() -> (axum::Extension<edges::BodyBound>, axum::extract::DefaultBodyLimit) {
    edges::bound_layers(nexus_core::bounds::REQUEST_BODY_CREATE_APPEND)
}

/// Ingest takes up to the upload bound plus multipart framing; the handler refuses past the
/// bound as it streams (uploads.md §1).
fn ingest() -> (axum::Extension<edges::BodyBound>, axum::extract::DefaultBodyLimit) {
    edges::bound_layers(uploads::INGEST_BODY_LIMIT)
}

fn gzip() -> CompressionLayer {
    CompressionLayer::new().gzip(true)
}

/// Every route of the API.
pub static ROUTES: &[Route] = &[
    route!(GET "/healthz", Public, Own, health::healthz),
    route!(GET "/agent_api/v1/openapi.json", Public, Own, openapi::serve),
    route!(GET "/console", Public, Own, console::index, gzip()),
    route!(GET "/console/", Public, Own, console::index, gzip()),
    route!(GET "/console/{*path}", Public, Own, console::asset, gzip()),
    // Member plane, outside any workspace: the caller's own view.
    route!(GET "/agent_api/v1/tools", Member, Own, tools::list),
    route!(POST "/agent_api/v1/tools/assembly", Member, Own, assembly::preview),
    route!(GET "/agent_api/v1/profile", Member, Own, profile::read),
    route!(PUT "/agent_api/v1/profile/configuration", Member, Own, profile::put_configuration),
    route!(GET "/agent_api/v1/executors", Member, Own, executor::list),
    route!(GET "/agent_api/v1/executors/{id}", Member, Own, executor::get),
    route!(POST "/agent_api/v1/uploads", Member, Own, uploads::create, ingest()),
    route!(GET "/agent_api/v1/uploads/{id}", Member, Own, uploads::get),
    route!(GET "/agent_api/v1/uploads/{id}/bytes", Member, Own, uploads::bytes),
    // Transport plane (`X = /agent_api/v1/executor`).
    route!(GET "/agent_api/v1/executor", Transport, Own, executor::describe),
    route!(PUT "/agent_api/v1/executor/announcement", Transport, Own, executor::announce),
    route!(POST "/agent_api/v1/executor/progress", Transport, Own, executor::progress),
    route!(GET "/agent_api/v1/executor/channel", Transport, Own, channel::channel),
    route!(GET "/agent_api/v1/executor/inbox", Transport, Own, inbox::list),
    route!(POST "/agent_api/v1/executor/inbox/{run}/{task}/claim", Transport, Own, inbox::claim),
    route!(GET "/agent_api/v1/executor/inbox/{run}/{task}/claim", Transport, Own, inbox::claim_status),
    route!(POST "/agent_api/v1/executor/inbox/{run}/{task}/extend", Transport, Own, inbox::extend),
    route!(POST "/agent_api/v1/executor/inbox/{run}/{task}/commit", Transport, Own, inbox::commit),
    route!(
        GET "/agent_api/v1/executor/inbox/{run}/{task}/attachments/{upload}",
        Transport, Own, uploads::claim_attachment
    ),
    route!(
        GET "/agent_api/v1/executor/inbox/{run}/{task}/attachments/{upload}/bytes",
        Transport, Own, uploads::claim_attachment_bytes
    ),
    route!(POST "/agent_api/v1/executor/uploads", Transport, Own, uploads::create_capture, ingest()),
    route!(GET "/agent_api/v1/executor/uploads/{id}", Transport, Own, uploads::get_capture),
    // Member plane, under `W`: runs and tasks (runs.md), approvals (approvals.md).
    route!(POST w!("/runs"), Member, Write, runs::create, door()),
    route!(GET w!("/runs"), Member, Read, runs::list),
    route!(GET w!("/approvals"), Member, Read, runs::list_approvals),
    route!(GET w!("/runs/{run}"), Member, Read, runs::get),
    route!(POST w!("/runs/{run}/start"), Member, Write, runs::start),
    route!(POST w!("/runs/{run}/stop"), Member, Write, runs::stop),
    route!(POST w!("/runs/{run}/tasks"), Member, Write, runs::append, door()),
    route!(GET w!("/runs/{run}/tasks"), Member, Read, runs::list_tasks),
    route!(GET w!("/runs/{run}/tasks/{key}"), Member, Read, runs::get_task),
    route!(GET w!("/runs/{run}/tasks/{key}/request"), Member, Read, runs::get_request),
    route!(GET w!("/runs/{run}/cache"), Member, Read, runs::get_cache),
    route!(POST w!("/runs/{run}/tasks/{key}/approve"), Member, Write, runs::approve),
    route!(POST w!("/runs/{run}/tasks/{key}/deny"), Member, Write, runs::deny),
    route!(POST w!("/runs/{run}/tasks/{key}/resolution"), Member, Write, runs::resolution),
    route!(POST w!("/runs/{run}/tasks/{key}/retry"), Member, Write, runs::retry),
    route!(POST w!("/runs/{run}/tasks/{key}/abandon"), Member, Write, runs::abandon),
    route!(POST w!("/runs/{run}/tasks/{key}/cancel"), Member, Write, runs::cancel),
    route!(PUT w!("/runs/{run}/default_runner"), Member, Write, runs::default_runner),
    route!(GET w!("/runs/{run}/transcript"), Member, Read, runs::transcript),
    route!(GET w!("/runs/{run}/graph"), Member, Read, runs::graph),
    route!(GET w!("/runs/{run}/events"), Member, Read, runs::events),
    route!(GET w!("/runs/{run}/events/stream"), Member, Read, stream::stream),
    // Conversations (runs.md §12) and their history (kernel-tools.md §10).
    route!(POST w!("/conversations"), Member, Write, conversations::create),
    route!(GET w!("/conversations"), Member, Read, conversations::list),
    route!(GET w!("/conversations/{c}"), Member, Read, conversations::read),
    route!(GET w!("/conversations/{c}/children"), Member, Read, conversations::children),
    route!(POST w!("/conversations/{c}/archive"), Member, Write, conversations::archive),
    route!(POST w!("/conversations/{c}/unarchive"), Member, Write, conversations::unarchive),
    route!(PUT w!("/conversations/{c}/default_runner"), Member, Write, conversations::default_runner),
    route!(GET w!("/conversations/{c}/events"), Member, Read, conversations::events),
    route!(GET w!("/conversations/{c}/events/stream"), Member, Read, stream::conversation_stream),
    route!(POST w!("/conversations/{c}/inputs"), Member, Write, conversations::create_input),
    route!(GET w!("/conversations/{c}/inputs"), Member, Read, conversations::list_inputs),
    route!(DELETE w!("/conversations/{c}/inputs/{input}"), Member, Write, conversations::delete_input),
    route!(GET w!("/conversations/{c}/turns"), Member, Read, conversations::turns),
    route!(POST w!("/conversations/{c}/cancellation"), Member, Write, conversations::cancellation),
    route!(GET w!("/conversation_search"), Member, Read, conversations::search),
    route!(GET w!("/conversations/{c}/history"), Member, Read, conversations::history),
    // Who is in the workspace (runs.md §12: whom a conversation may ask).
    route!(GET w!("/members"), Member, Read, profile::members),
    // Workspace memory (kernel-tools.md, memory).
    route!(GET w!("/memory"), Member, Read, memory::list),
    route!(GET w!("/memory/doc"), Member, Read, memory::read),
    route!(PUT w!("/memory/doc"), Member, Write, memory::put),
    route!(DELETE w!("/memory/doc"), Member, Write, memory::delete),
];

/// The routes of [`ROUTES`] as one router (a path with several methods merges them).
pub fn mount() -> Router<AppState> {
    ROUTES
        .iter()
        .fold(Router::new(), |router, route| router.route(route.path, (route.mount)()))
}
