//! Durable events and the live feed (runs.md §11): the event record, its pages, and
//! [`EventStream`], the `GET R/events/stream` Server-Sent Events feed as a `Stream` of typed
//! [`Frame`]s that reconnects with `Last-Event-ID` when the connection drops.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::stream::{self, BoxStream, Stream, StreamExt};
use reqwest::Method;
use serde::Deserialize;
use serde_json::Value;

use super::wire::{self, Route};
use crate::error::{Error, Result};
use crate::http::Http;
use nexus_api::events::Event;

/// One frame of the live feed.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// A durable event (it has an `id:`, its sequence).
    Event(Event),
    /// An ephemeral frame (`executor_progress`, `model_delta`): never stored, no id; a client
    /// that missed one lost nothing durable.
    Ephemeral(Ephemeral),
}

/// An ephemeral frame's SSE event name and its JSON data.
#[derive(Debug, Clone, PartialEq)]
pub struct Ephemeral {
    /// `executor_progress`, `model_delta`, or a name a newer kernel sends.
    pub kind: String,
    /// The frame's data (a JSON string holding the raw text when it is not JSON).
    pub data: Value,
}

/// SSE names that are ephemeral on the wire, whatever their data looks like.
const EPHEMERAL: [&str; 2] = ["executor_progress", "model_delta"];

/// What a live feed's Server-Sent Events decode into: a run's [`Frame`], a conversation's
/// event.
pub(crate) trait FeedItem: Sized + Send + 'static {
    /// Decodes one SSE message (`None`: not an item of this feed, skipped).
    fn decode(message: eventsource_stream::Event) -> Option<Self>;
    /// The durable sequence (`None` for an ephemeral frame).
    fn sequence(&self) -> Option<i64>;
}

impl FeedItem for Frame {
    fn decode(message: eventsource_stream::Event) -> Option<Frame> {
        Some(Frame::of(message))
    }

    fn sequence(&self) -> Option<i64> {
        match self {
            Frame::Event(event) => Some(event.sequence),
            Frame::Ephemeral(_) => None,
        }
    }
}

impl Frame {
    /// Classifies one SSE message: a known ephemeral name, or data that is not an event of
    /// this run's shape, is ephemeral; the rest is a durable event.
    fn of(message: eventsource_stream::Event) -> Frame {
        let data: Value = serde_json::from_str(&message.data).unwrap_or(Value::String(message.data));
        if !EPHEMERAL.contains(&message.event.as_str())
            && let Ok(event) = Event::deserialize(&data)
        {
            return Frame::Event(event);
        }
        Frame::Ephemeral(Ephemeral {
            kind: message.event,
            data,
        })
    }
}

/// How a live feed ([`EventStream`], a conversation's) reconnects after its connection drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reconnect {
    /// Consecutive attempts without a frame before the stream gives up (0: never reconnect).
    pub max_attempts: u32,
    /// The wait before the first attempt; doubled on each next one.
    pub initial_delay: Duration,
    /// The longest wait between attempts.
    pub max_delay: Duration,
}

impl Default for Reconnect {
    /// 8 attempts, from 100 ms up to 5 s apart.
    fn default() -> Self {
        Reconnect {
            max_attempts: 8,
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(5),
        }
    }
}

impl Reconnect {
    /// Never reconnect: the stream ends with its first connection.
    pub fn never() -> Reconnect {
        Reconnect {
            max_attempts: 0,
            ..Reconnect::default()
        }
    }

    fn delay(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.initial_delay.saturating_mul(factor).min(self.max_delay)
    }
}

type Sse = BoxStream<'static, std::result::Result<eventsource_stream::Event, Box<dyn std::error::Error + Send + Sync>>>;

/// What the feed needs to (re)open its connection.
struct Connector {
    http: Http,
    route: Route,
}

impl Connector {
    /// Opens one connection after `after`: `?after=` on the first, `Last-Event-ID` on a
    /// reconnect. A non-2xx answer is the typed refusal.
    async fn connect(&self, after: i64, reconnect: bool) -> Result<Sse> {
        let request = if reconnect {
            let request = self.http.authed(Method::GET, self.route.finish()?)?;
            wire::header(request, "last-event-id", Some(&after.to_string()))?
        } else {
            let route = self.route.clone().query("after", (after > 0).then_some(after));
            self.http.authed(Method::GET, route.finish()?)?
        };
        let response = wire::checked(request).await?;
        Ok(response
            .bytes_stream()
            .eventsource()
            .map(|item| item.map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>))
            .boxed())
    }
}

/// A feed's state between items.
struct Feed<T> {
    _items: std::marker::PhantomData<fn() -> T>,
    connector: Connector,
    policy: Reconnect,
    /// The last durable sequence handed out (shared with [`EventStream::last_sequence`]).
    last: Arc<AtomicI64>,
    sse: Option<Sse>,
    /// Reconnect attempts since the last frame.
    attempts: u32,
    done: bool,
}

impl<T: FeedItem> Feed<T> {
    /// The next item, reconnecting as the policy allows; `None` once the feed is over.
    async fn next(&mut self) -> Option<Result<T>> {
        loop {
            if self.done {
                return None;
            }
            let Some(sse) = self.sse.as_mut() else {
                if self.attempts > self.policy.max_attempts {
                    self.done = true;
                    return None;
                }
                tokio::time::sleep(self.policy.delay(self.attempts)).await;
                match self.connector.connect(self.last.load(Ordering::SeqCst), true).await {
                    Ok(sse) => self.sse = Some(sse),
                    Err(e) => {
                        // A typed refusal is final; so is the last allowed attempt.
                        self.attempts += 1;
                        if matches!(e, Error::Api(_)) || self.attempts > self.policy.max_attempts {
                            self.done = true;
                            return Some(Err(e));
                        }
                    }
                }
                continue;
            };
            match sse.next().await {
                Some(Ok(message)) => {
                    self.attempts = 0;
                    let Some(item) = T::decode(message) else {
                        continue;
                    };
                    if let Some(sequence) = item.sequence() {
                        // A replayed event after a reconnect is not handed out twice.
                        if sequence <= self.last.load(Ordering::SeqCst) {
                            continue;
                        }
                        self.last.store(sequence, Ordering::SeqCst);
                    }
                    return Some(Ok(item));
                }
                Some(Err(_)) | None => {
                    self.sse = None;
                    self.attempts += 1;
                }
            }
        }
    }
}

/// The live feed of one run (`GET R/events/stream`): durable events in sequence order, with no
/// gaps and no repeats, interleaved with ephemeral frames.
///
/// When the connection drops, the stream reconnects with `Last-Event-ID` set to the last
/// sequence it handed out ([`Reconnect`] says how often); once it gives up it yields the last
/// connection error, if any, and ends. A typed refusal (404 `not_found`) is final. The feed of
/// a run stays open after the run ends: drop the stream to stop. A `reqwest` client with a
/// whole-request timeout cuts the feed at that timeout (and it then reconnects).
pub struct EventStream {
    inner: BoxStream<'static, Result<Frame>>,
    last: Arc<AtomicI64>,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream")
            .field("last_sequence", &self.last_sequence())
            .finish_non_exhaustive()
    }
}

/// Opens the live feed at `route` after sequence `after` (0 = from the start): its items, and
/// the last durable sequence handed out. The first connection is made here, so a refusal is
/// this call's error.
pub(crate) async fn open_feed<T: FeedItem>(
    http: Http,
    route: Route,
    after: i64,
    policy: Reconnect,
) -> Result<(BoxStream<'static, Result<T>>, Arc<AtomicI64>)> {
    let last = Arc::new(AtomicI64::new(after.max(0)));
    let mut feed = Feed {
        _items: std::marker::PhantomData,
        connector: Connector { http, route },
        policy,
        last: last.clone(),
        sse: None,
        attempts: 0,
        done: false,
    };
    feed.sse = Some(feed.connector.connect(after.max(0), false).await?);
    let inner = stream::unfold(feed, |mut feed| async move {
        let item = feed.next().await?;
        Some((item, feed))
    })
    .boxed();
    Ok((inner, last))
}

impl EventStream {
    /// Opens the feed at `route` after sequence `after` (0 = from the start). The first
    /// connection is made here, so a refusal is this call's error.
    pub(crate) async fn open(http: Http, route: Route, after: i64, policy: Reconnect) -> Result<EventStream> {
        let (inner, last) = open_feed(http, route, after, policy).await?;
        Ok(EventStream { inner, last })
    }

    /// The sequence of the last durable event handed out (the `after` given at open before
    /// any): pass it to reopen the feed later without repeats.
    pub fn last_sequence(&self) -> i64 {
        self.last.load(Ordering::SeqCst)
    }
}

impl Stream for EventStream {
    type Item = Result<Frame>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nexus_api::common::TaskStatus;
    use serde_json::json;

    fn message(event: &str, id: &str, data: Value) -> eventsource_stream::Event {
        eventsource_stream::Event {
            event: event.into(),
            data: data.to_string(),
            id: id.into(),
            retry: None,
        }
    }

    #[test]
    fn frames_are_classified_by_name_and_shape() {
        let durable = json!({"sequence": 3, "type": "task_status_changed", "at": "t",
                             "run_public_id": "r", "task_key": "k",
                             "data": {"from": "waiting", "to": "running", "generation": 1}});
        let Frame::Event(event) = Frame::of(message("task_status_changed", "3", durable)) else {
            panic!("a durable event");
        };
        assert_eq!(event.sequence, 3);
        let change = event.task_status_change().unwrap();
        assert_eq!(
            (change.from, change.to),
            (Some(TaskStatus::Waiting), TaskStatus::Running)
        );
        assert_eq!(event.run_status_change(), None);

        // The SSE id persists across messages, so an ephemeral frame carries the last one.
        let progress = json!({"task_key": "k", "message": "half", "sequence": 3});
        let frame = Frame::of(message("executor_progress", "3", progress.clone()));
        assert_eq!(
            frame,
            Frame::Ephemeral(Ephemeral {
                kind: "executor_progress".into(),
                data: progress
            })
        );
    }

    #[test]
    fn the_backoff_doubles_up_to_its_cap() {
        let policy = Reconnect::default();
        assert_eq!(policy.delay(0), Duration::from_millis(100));
        assert_eq!(policy.delay(1), Duration::from_millis(100));
        assert_eq!(policy.delay(2), Duration::from_millis(200));
        assert_eq!(policy.delay(12), Duration::from_secs(5));
    }
}
