//! `GET R/events/stream` (runs.md §11) and `GET C/events/stream` (runs.md §12): Server-Sent
//! Events. Durable events carry `id: <sequence>`, `event: <type>`, `data: <json>`; a client
//! resumes with `Last-Event-ID` or `?after=` (`Last-Event-ID` wins). A run's ephemeral
//! `executor_progress` and `model_delta` frames carry no id. A comment heartbeat goes out every
//! 15 s.

use std::convert::Infallible;
use std::time::Duration;

use crate::extract::{Path, Query};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use nexus_core::codes::Code;
use serde::Deserialize;

use nexus_kernel::conversations::stream::ConversationStream;
use nexus_kernel::runs::stream::{EventStream, FeedItem};

use crate::AppState;
use crate::auth::Member;
use crate::error::{ApiError, ApiResult};
use crate::routes::runs::path_id;

#[derive(Debug, Deserialize)]
pub struct StreamQuery {
    pub after: Option<String>,
}

fn cursor(raw: Option<&str>, what: &str) -> ApiResult<Option<i64>> {
    raw.map(|s| {
        s.trim().parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
            ApiError::new(
                Code::ParameterInvalid,
                format!("{what} must be a non-negative event sequence"),
            )
        })
    })
    .transpose()
}

/// The resume cursor: `Last-Event-ID`, else `?after=`, else 0.
fn resume_after(headers: &HeaderMap, q: &StreamQuery) -> ApiResult<i64> {
    let last_event_id = headers.get("last-event-id").and_then(|v| v.to_str().ok());
    Ok(cursor(last_event_id, "Last-Event-ID")?
        .or(cursor(q.after.as_deref(), "after")?)
        .unwrap_or(0))
}

/// The SSE response over a kernel feed, with the 15 s heartbeat.
fn sse(feed: impl Feed) -> Sse<impl futures_core::Stream<Item = Result<Event, Infallible>>> {
    Sse::new(sse_events(feed)).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)).text("heartbeat"))
}

pub async fn stream(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, run)): Path<(String, String)>,
    Query(q): Query<StreamQuery>,
    headers: HeaderMap,
) -> ApiResult<Sse<impl futures_core::Stream<Item = Result<Event, Infallible>>>> {
    let after = resume_after(&headers, &q)?;
    let feed = state
        .kernel
        .runs()
        .event_stream(&p, path_id(&ws)?, path_id(&run)?, after)
        .await?;
    Ok(sse(feed))
}

/// `GET C/events/stream`: the conversation's feed (no ephemeral frames).
pub async fn conversation_stream(
    State(state): State<AppState>,
    Member(p): Member,
    Path((ws, c)): Path<(String, String)>,
    Query(q): Query<StreamQuery>,
    headers: HeaderMap,
) -> ApiResult<Sse<impl futures_core::Stream<Item = Result<Event, Infallible>>>> {
    let after = resume_after(&headers, &q)?;
    let feed = state
        .kernel
        .conversations()
        .conversation_event_stream(&p, path_id(&ws)?, path_id(&c)?, after)
        .await?;
    Ok(sse(feed))
}

/// A kernel feed, frame by frame as SSE events.
trait Feed: Send + 'static {
    /// The next frame; `None` when the feed closed.
    fn next_event(&mut self) -> impl std::future::Future<Output = Option<Event>> + Send;
}

impl Feed for EventStream {
    async fn next_event(&mut self) -> Option<Event> {
        Some(match self.next().await? {
            FeedItem::Durable { sequence, kind, json } => Event::default()
                .id(sequence.to_string())
                .event(kind.as_str())
                .data(json.to_string()),
            FeedItem::Ephemeral { kind, json } => Event::default().event(kind).data(json.to_string()),
        })
    }
}

impl Feed for ConversationStream {
    async fn next_event(&mut self) -> Option<Event> {
        let item = self.next().await?;
        Some(
            Event::default()
                .id(item.sequence.to_string())
                .event(item.kind.as_str())
                .data(serde_json::to_string(&item.event).unwrap_or_default()),
        )
    }
}

/// Turns a kernel feed into an SSE stream; the pump task ends when the client goes away.
fn sse_events(mut feed: impl Feed) -> impl futures_core::Stream<Item = Result<Event, Infallible>> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Event, Infallible>>(64);
    tokio::spawn(async move {
        while let Some(event) = feed.next_event().await {
            if tx.send(Ok(event)).await.is_err() {
                break;
            }
        }
    });
    ReceiverStream(rx)
}

/// A minimal `Stream` over an mpsc receiver (avoids a dependency for one adapter).
struct ReceiverStream<T>(tokio::sync::mpsc::Receiver<T>);

impl<T> futures_core::Stream for ReceiverStream<T> {
    type Item = T;
    fn poll_next(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<T>> {
        self.0.poll_recv(cx)
    }
}
