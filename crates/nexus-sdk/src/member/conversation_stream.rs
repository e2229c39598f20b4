//! [`ConversationEventStream`], the `GET C/events/stream` Server-Sent Events feed (runs.md
//! §12) as a `Stream` of typed [`ConversationEvent`]s that reconnects with `Last-Event-ID`
//! when the connection drops, as a run's [`EventStream`](super::EventStream) does.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::task::{Context, Poll};

use futures_util::stream::{BoxStream, Stream};
use serde::Deserialize;

use super::conversations::ConversationRef;
use super::events::{FeedItem, Reconnect, open_feed};
use crate::error::Result;
use nexus_api::conversations::ConversationEvent;

impl FeedItem for ConversationEvent {
    /// A message whose data is not a conversation event (a frame a newer kernel sends) is
    /// skipped.
    fn decode(message: eventsource_stream::Event) -> Option<ConversationEvent> {
        let data: serde_json::Value = serde_json::from_str(&message.data).ok()?;
        ConversationEvent::deserialize(&data).ok()
    }

    fn sequence(&self) -> Option<i64> {
        Some(self.sequence)
    }
}

/// The live feed of one conversation (`GET C/events/stream`): its durable events in sequence
/// order, with no gaps and no repeats.
///
/// When the connection drops, the stream reconnects with `Last-Event-ID` set to the last
/// sequence it handed out ([`Reconnect`] says how often); once it gives up it yields the last
/// connection error, if any, and ends. A typed refusal (404 `not_found`) is final. The feed
/// stays open while the conversation is idle or archived: drop the stream to stop.
pub struct ConversationEventStream {
    inner: BoxStream<'static, Result<ConversationEvent>>,
    last: Arc<AtomicI64>,
}

impl std::fmt::Debug for ConversationEventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConversationEventStream")
            .field("last_sequence", &self.last_sequence())
            .finish_non_exhaustive()
    }
}

impl ConversationEventStream {
    /// The sequence of the last event handed out (the `after` given at open before any): pass
    /// it to reopen the feed later without repeats.
    pub fn last_sequence(&self) -> i64 {
        self.last.load(Ordering::SeqCst)
    }
}

impl Stream for ConversationEventStream {
    type Item = Result<ConversationEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl ConversationRef {
    /// `GET C/events/stream`: the live feed after sequence `after` (0 = from the start),
    /// reconnecting with the default [`Reconnect`] policy. Refusal at open: 404 `not_found`.
    pub async fn events_stream(&self, after: i64) -> Result<ConversationEventStream> {
        self.events_stream_with(after, Reconnect::default()).await
    }

    /// [`ConversationRef::events_stream`] with an explicit reconnection policy.
    pub async fn events_stream_with(&self, after: i64, policy: Reconnect) -> Result<ConversationEventStream> {
        let route = self.route().lit("events").lit("stream");
        let (inner, last) = open_feed(self.http().clone(), route, after, policy).await?;
        Ok(ConversationEventStream { inner, last })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(event: &str, data: &str) -> eventsource_stream::Event {
        eventsource_stream::Event {
            event: event.into(),
            data: data.into(),
            id: "1".into(),
            retry: None,
        }
    }

    #[test]
    fn events_decode_and_other_frames_are_skipped() {
        let data = json!({"sequence": 1, "type": "input_accepted", "at": "t", "conversation_public_id": "c",
                          "data": {"input_public_id": "i", "delivery_mode": "queue"}});
        let event = ConversationEvent::decode(message("input_accepted", &data.to_string())).unwrap();
        assert_eq!(event.sequence, 1);
        assert_eq!(event.kind, super::super::ConversationEventKind::InputAccepted);
        assert_eq!(FeedItem::sequence(&event), Some(1));
        assert_eq!(
            ConversationEvent::decode(message("model_delta", "{\"text\":\"hi\"}")),
            None
        );
        assert_eq!(ConversationEvent::decode(message("x", "not json")), None);
    }
}
