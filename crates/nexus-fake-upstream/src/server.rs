//! The HTTP side: one handler for every path, which records the request, picks the answering
//! expectation and plays its reply, and a guard that notices when a client walks away.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

use axum::body::{Body as HttpBody, to_bytes};
use axum::extract::{Request, State as AxumState};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::sync::watch;

use crate::expect::{Slot, choose};
use crate::reply::Body;
use crate::{Mismatch, Outcome, RecordedRequest, Reply, Route, sse};

/// The paths served, for the 404 explanation.
const SERVED: &str = "the fake upstream serves POST /v1/messages (Anthropic), \
                      POST /chat/completions and POST /v1/chat/completions (OpenAI-compatible)";

/// Everything the server and the test share.
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Bumped on every recorded change, for the `wait_for_*` helpers.
    pub changed: watch::Sender<u64>,
    /// Set once, at shutdown: pending delays, hangs and streams end.
    pub closing: watch::Sender<bool>,
}

#[derive(Default)]
pub(crate) struct State {
    pub messages: Vec<Slot>,
    pub chat: Vec<Slot>,
    pub records: Vec<RecordedRequest>,
    pub mismatches: Vec<Mismatch>,
}

impl State {
    pub fn slots(&mut self, route: Route) -> &mut Vec<Slot> {
        match route {
            Route::Messages => &mut self.messages,
            Route::ChatCompletions => &mut self.chat,
        }
    }
}

impl Shared {
    pub fn new() -> Self {
        Self {
            state: Mutex::new(State::default()),
            changed: watch::Sender::new(0),
            closing: watch::Sender::new(false),
        }
    }

    /// The state; a test that panicked while holding it does not poison later reads.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn bump(&self) {
        self.changed.send_modify(|v| *v += 1);
    }

    fn set_outcome(&self, index: usize, outcome: Outcome) {
        if let Some(rec) = self.lock().records.get_mut(index) {
            rec.outcome = outcome;
        }
        self.bump();
    }
}

/// Resolves once shutdown has begun.
pub(crate) async fn closed(rx: &mut watch::Receiver<bool>) {
    // An error means the sender is gone, which is shutdown as well.
    let _ = rx.wait_for(|closing| *closing).await;
}

/// Marks the reply's request [`Outcome::Abandoned`] if it is dropped unfinished, which is what
/// happens when the client goes away: the connection ends and the handler future or the body
/// stream holding the guard is dropped. Unfinished at shutdown counts as [`Outcome::Cut`].
pub(crate) struct ReplyGuard {
    shared: Arc<Shared>,
    index: usize,
    done: bool,
}

impl ReplyGuard {
    pub fn finish(mut self, outcome: Outcome) {
        self.done = true;
        self.shared.set_outcome(self.index, outcome);
    }
}

impl Drop for ReplyGuard {
    fn drop(&mut self) {
        if !self.done {
            let outcome = if *self.shared.closing.borrow() {
                Outcome::Cut
            } else {
                Outcome::Abandoned
            };
            self.shared.set_outcome(self.index, outcome);
        }
    }
}

impl Route {
    fn of(method: &Method, path: &str) -> Option<Self> {
        if method != Method::POST {
            return None;
        }
        match path {
            "/v1/messages" => Some(Self::Messages),
            "/chat/completions" | "/v1/chat/completions" => Some(Self::ChatCompletions),
            _ => None,
        }
    }
}

/// The one handler.
pub(crate) async fn handle(AxumState(shared): AxumState<Arc<Shared>>, req: Request) -> Response {
    let at = Instant::now();
    let received_at = SystemTime::now();
    let (parts, body) = req.into_parts();
    let Ok(body) = to_bytes(body, usize::MAX).await else {
        return (
            StatusCode::BAD_REQUEST,
            "nexus-fake-upstream: the request body could not be read",
        )
            .into_response();
    };
    let route = Route::of(&parts.method, parts.uri.path());
    let mut rec = RecordedRequest {
        index: 0,
        route,
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
        at,
        received_at,
        answered_by: None,
        outcome: Outcome::Pending,
    };
    let decision = {
        let mut state = shared.lock();
        rec.index = state.records.len();
        let decision = match route {
            None => Err((StatusCode::NOT_FOUND, vec![SERVED.to_owned()])),
            Some(route) => choose(state.slots(route), &rec).map_err(|why| (StatusCode::INTERNAL_SERVER_ERROR, why)),
        };
        let decision = match decision {
            Ok((answered_by, reply)) => {
                rec.answered_by = Some(answered_by);
                Ok((rec.index, reply))
            }
            Err((status, reasons)) => {
                rec.outcome = Outcome::Completed;
                let mismatch = Mismatch {
                    request: rec.index,
                    target: format!("{} {}", rec.method, rec.path),
                    reasons,
                };
                let text = format!("nexus-fake-upstream: {mismatch}\n");
                state.mismatches.push(mismatch);
                Err((status, text))
            }
        };
        state.records.push(rec);
        decision
    };
    shared.bump();
    match decision {
        Ok((index, reply)) => play(shared, index, reply).await,
        Err((status, text)) => (status, text).into_response(),
    }
}

fn shutting_down() -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, "nexus-fake-upstream: shutting down").into_response()
}

/// Plays one canned reply.
async fn play(shared: Arc<Shared>, index: usize, reply: Reply) -> Response {
    let mut closing = shared.closing.subscribe();
    let guard = ReplyGuard {
        shared,
        index,
        done: false,
    };
    if !reply.delay.is_zero() {
        tokio::select! {
            () = tokio::time::sleep(reply.delay) => {}
            () = closed(&mut closing) => return shutting_down(),
        }
    }
    let mut builder = Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        builder = builder.header(name, value);
    }
    let body = match reply.body {
        Body::Hang => {
            closed(&mut closing).await;
            return shutting_down();
        }
        Body::Bytes(bytes) => {
            guard.finish(Outcome::Completed);
            HttpBody::from(bytes)
        }
        Body::Sse {
            frames,
            end,
            frame_delay,
        } => HttpBody::from_stream(sse::body_stream(frames, end, frame_delay, guard, closing)),
    };
    builder.body(body).unwrap_or_else(|e| {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("nexus-fake-upstream: bad canned reply: {e}"),
        )
            .into_response()
    })
}
