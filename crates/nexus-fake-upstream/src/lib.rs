//! A fake model upstream for tests (providers.md §9): an HTTP server on `127.0.0.1:0` that
//! speaks just enough of Anthropic's Messages API and of OpenAI-compatible Chat Completions to
//! answer with canned replies, and records every request it receives.
//!
//! It serves:
//!
//! | path | [`Route`] | configure the adapter with |
//! | --- | --- | --- |
//! | `POST /v1/messages` | [`Route::Messages`] (Anthropic) | `base_url = server.base_url()` |
//! | `POST /chat/completions` | [`Route::ChatCompletions`] (OpenAI-compatible) | `base_url = server.base_url()` |
//! | `POST /v1/chat/completions` | [`Route::ChatCompletions`], the same list | `base_url = server.openai_base_url()` (`…/v1`) |
//!
//! Anything else is answered `404`, and recorded as a [`Mismatch`].
//!
//! A test starts the server, queues [`Expectation`]s (a [`Matcher`] and a canned [`Reply`],
//! answering `times` requests), points an adapter at [`FakeUpstream::base_url`], and then
//! reads what arrived with [`FakeUpstream::requests`]. The [`anthropic`] and [`openai`]
//! modules build the replies, so tests do not write wire JSON.
//!
//! ```
//! use std::time::Duration;
//! use nexus_fake_upstream::{anthropic, Expectation, FakeUpstream, Matcher, Route};
//! use serde_json::json;
//!
//! # async fn demo() {
//! let server = FakeUpstream::start().await;
//! server
//!     .expect(Route::Messages, Expectation::any(anthropic::overloaded()).times(2))
//!     .expect(
//!         Route::Messages,
//!         Expectation::new(
//!             Matcher::json().pointer_eq("/model", json!("claude-sonnet-4-5")),
//!             anthropic::Message::new("claude-sonnet-4-5").text("Done.").usage(120, 18).reply(),
//!         ),
//!     );
//! // … run the adapter against server.base_url() …
//! let sent = server.requests();
//! assert_eq!(sent.len(), 3);
//! assert_eq!(sent[2].sha256_hex(), sent[0].sha256_hex()); // every attempt sends the same bytes
//! server.assert_no_mismatches();
//! server.assert_all_used();
//! # }
//! ```
//!
//! To prove a stop aborted an in-flight call, answer with [`Reply::hang`] (or a stream that
//! [hangs](Reply::hang_after)), stop, and wait for [`FakeUpstream::wait_for_abandoned`]: the
//! server notices the client dropping the connection and marks the request
//! [`Outcome::Abandoned`].

#![warn(missing_docs)]

pub mod anthropic;
mod expect;
pub mod openai;
mod record;
mod reply;
pub mod schema;
mod server;
mod sse;

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use expect::{Expectation, Matcher, Times};
pub use record::{Mismatch, Outcome, RecordedRequest};
pub use reply::{Reply, SseFrame, StreamEnd};
pub use sse::split_pieces;

use server::{Shared, closed};

/// Which API a request went to; each route has its own list of expectations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// Anthropic Messages: `POST /v1/messages`.
    Messages,
    /// OpenAI-compatible Chat Completions: `POST /chat/completions` or
    /// `POST /v1/chat/completions` (one list for both).
    ChatCompletions,
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Messages => "POST /v1/messages",
            Self::ChatCompletions => "POST /chat/completions",
        })
    }
}

/// The running fake upstream. It serves in a background task of the current tokio runtime
/// and stops when dropped (or by [`FakeUpstream::shutdown`]); pending delays, hangs and
/// streams then end, their requests marked [`Outcome::Cut`].
pub struct FakeUpstream {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: Option<JoinHandle<()>>,
}

impl fmt::Debug for FakeUpstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeUpstream")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl FakeUpstream {
    /// Binds `127.0.0.1:0` and starts serving; panics if the port cannot be bound.
    pub async fn start() -> Self {
        Self::try_start().await.expect("nexus-fake-upstream: bind 127.0.0.1:0")
    }

    /// [`FakeUpstream::start`], returning the bind error instead of panicking.
    pub async fn try_start() -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        // Frames with delays between them must leave at once, not wait on Nagle.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let shared = Arc::new(Shared::new());
        let app = Router::new().fallback(server::handle).with_state(Arc::clone(&shared));
        let mut closing = shared.closing.subscribe();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move { closed(&mut closing).await })
                .await;
        });
        Ok(Self {
            addr,
            shared,
            task: Some(task),
        })
    }

    /// `http://127.0.0.1:PORT`, with no trailing slash: the `base_url` for Anthropic (which
    /// appends `/v1/messages`) and for an OpenAI-compatible adapter (`/chat/completions`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`: an OpenAI-style `base_url` (the adapter appends
    /// `/chat/completions`).
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    /// The full URL of a route: `…/v1/messages` or `…/v1/chat/completions`.
    pub fn url(&self, route: Route) -> String {
        match route {
            Route::Messages => format!("{}/v1/messages", self.base_url()),
            Route::ChatCompletions => format!("{}/chat/completions", self.openai_base_url()),
        }
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Appends an expectation to `route`'s list (see [`Expectation`] for the order of
    /// matching). Returns `self` so calls chain.
    pub fn expect(&self, route: Route, expectation: Expectation) -> &Self {
        self.shared
            .lock()
            .slots(route)
            .push(expect::Slot { expectation, used: 0 });
        self
    }

    /// Every request received so far, in arrival order, with the current [`Outcome`] of each.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().records.clone()
    }

    /// The requests received on one route.
    pub fn requests_on(&self, route: Route) -> Vec<RecordedRequest> {
        let state = self.shared.lock();
        state
            .records
            .iter()
            .filter(|r| r.route == Some(route))
            .cloned()
            .collect()
    }

    /// The request with this index, if it has arrived.
    pub fn request(&self, index: usize) -> Option<RecordedRequest> {
        self.shared.lock().records.get(index).cloned()
    }

    /// The requests no expectation matched (answered `500`, or `404` for an unserved path).
    pub fn mismatches(&self) -> Vec<Mismatch> {
        self.shared.lock().mismatches.clone()
    }

    /// Panics, listing each mismatch and why, if any request went unmatched.
    #[track_caller]
    pub fn assert_no_mismatches(&self) {
        let mismatches = self.mismatches();
        if !mismatches.is_empty() {
            let list: Vec<String> = mismatches.iter().map(ToString::to_string).collect();
            panic!(
                "nexus-fake-upstream: {} unmatched request(s):\n{}",
                list.len(),
                list.join("\n")
            );
        }
    }

    /// Expectations with answers left (those with [`Times::Exactly`] not yet used up), as
    /// `route #index "label": answered k of n`.
    pub fn unused(&self) -> Vec<String> {
        let state = self.shared.lock();
        let routes = [
            (Route::Messages, &state.messages),
            (Route::ChatCompletions, &state.chat),
        ];
        let mut out = Vec::new();
        for (route, slots) in routes {
            for (index, slot) in slots.iter().enumerate() {
                if let Times::Exactly(n) = slot.expectation.times
                    && slot.used < n
                {
                    let name = slot.expectation.describe(index);
                    out.push(format!("{route} {name}: answered {} of {n}", slot.used));
                }
            }
        }
        out
    }

    /// Panics, listing them, if any expectation has answers left.
    #[track_caller]
    pub fn assert_all_used(&self) {
        let unused = self.unused();
        if !unused.is_empty() {
            panic!(
                "nexus-fake-upstream: expectations not used up:\n  {}",
                unused.join("\n  ")
            );
        }
    }

    /// Indices of the requests whose client went away before the reply was over.
    pub fn abandoned(&self) -> Vec<usize> {
        let state = self.shared.lock();
        state
            .records
            .iter()
            .filter(|r| r.outcome == Outcome::Abandoned)
            .map(|r| r.index)
            .collect()
    }

    /// How many replies were abandoned by their client.
    pub fn abandoned_count(&self) -> usize {
        self.abandoned().len()
    }

    /// Waits until `cond` holds for the recorded requests, or `timeout` passes; returns
    /// whether it held. Re-checked on every arrival and every change of an outcome. `cond`
    /// runs under the server's lock: it must not call the server.
    pub async fn wait_until(&self, timeout: Duration, mut cond: impl FnMut(&[RecordedRequest]) -> bool) -> bool {
        let mut changed = self.shared.changed.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if cond(&self.shared.lock().records) {
                return true;
            }
            if !matches!(tokio::time::timeout_at(deadline, changed.changed()).await, Ok(Ok(()))) {
                return cond(&self.shared.lock().records);
            }
        }
    }

    /// Waits until at least `n` requests have arrived; returns whether they did in time.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |records| records.len() >= n).await
    }

    /// Waits until at least `n` replies have been abandoned by their client; returns whether
    /// they were in time. Noticing takes the server a moment after the client lets go.
    pub async fn wait_for_abandoned(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |records| {
            records.iter().filter(|r| r.outcome == Outcome::Abandoned).count() >= n
        })
        .await
    }

    /// Stops serving and waits for the server task to end: pending replies are cut, open
    /// connections closed. Recordings stay readable until the value is dropped.
    pub async fn shutdown(&mut self) {
        self.shared.closing.send_replace(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for FakeUpstream {
    fn drop(&mut self) {
        // The task sees the signal and winds down on its own; nothing here blocks.
        self.shared.closing.send_replace(true);
    }
}
