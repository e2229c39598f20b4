//! The live feed behind `GET C/events/stream` (runs.md §12, framed as runs.md §11): the
//! durable backlog after a cursor, then every event published after its commit, in sequence
//! order, with no gaps and no repeats. Events come from the signals seam
//! (`Signals::subscribe_conversation`), fed by `runs::AfterCommit::ConversationEvents`; a
//! subscriber that falls behind the channel's buffer, or is handed a row past the next
//! sequence, re-reads the store. A conversation's feed has no ephemeral frames.

use std::collections::VecDeque;

use nexus_api::conversations::ConversationEvent;
use nexus_core::codes::Code;
use nexus_store::ConversationEventRow;
use nexus_store::prelude::*;
use uuid::Uuid;

use super::feed::event_of;
use super::refuse;
use crate::error::KernelResult;
use crate::signals::{RecvError, Subscription};
use crate::{Conversations, Kernel, MemberPrincipal};

/// How many stored events one backlog read takes.
const PAGE: i64 = 500;

/// One event of the feed: `id: <sequence>`, `event: <type>`, `data: <json>`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationFeedItem {
    pub sequence: i64,
    pub kind: nexus_store::ConversationEventKind,
    /// The event as `GET C/events` serves it.
    pub event: ConversationEvent,
}

/// One conversation's feed from a cursor on.
pub struct ConversationStream {
    kernel: Kernel,
    conversation_id: i64,
    conversation_public_id: Uuid,
    /// The last sequence handed out.
    last: i64,
    backlog: VecDeque<ConversationEventRow>,
    /// Whether the last store read filled its page (more may be stored after it).
    more: bool,
    rx: Subscription<ConversationEventRow>,
}

impl Conversations<'_> {
    /// Opens the feed of conversation `c` after sequence `after` (0 = from the start). Read
    /// standing; 404 `not_found` for a conversation outside the workspace; 400
    /// `parameter_invalid` for a negative cursor.
    pub async fn conversation_event_stream(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        c: Uuid,
        after: i64,
    ) -> KernelResult<ConversationStream> {
        let (ws, _) = self.workspace_for(principal, workspace, false).await?;
        let conversation = self.conversation_in(&ws, c).await?;
        if after < 0 {
            return Err(refuse(Code::ParameterInvalid, "after must be a non-negative sequence"));
        }
        // Subscribe before reading the backlog, so nothing committed in between is missed.
        let rx = self.state.signals.subscribe_conversation(conversation.id).await;
        let mut stream = ConversationStream {
            kernel: Kernel::clone(self),
            conversation_id: conversation.id,
            conversation_public_id: conversation.public_id,
            last: after,
            backlog: VecDeque::new(),
            more: false,
            rx,
        };
        stream.reread().await?;
        Ok(stream)
    }
}

impl ConversationStream {
    /// Replaces the backlog with the stored events after the last one handed out.
    async fn reread(&mut self) -> KernelResult<()> {
        let rows = self
            .kernel
            .store
            .conversation_events(self.conversation_id, self.last, PAGE)
            .await?;
        self.more = rows.len() as i64 == PAGE;
        self.backlog = rows.into();
        Ok(())
    }

    /// The next event; `None` when the feed closed (or the store failed while catching up).
    pub async fn next(&mut self) -> Option<ConversationFeedItem> {
        loop {
            if self.backlog.is_empty() && self.more && self.reread().await.is_err() {
                return None;
            }
            if let Some(row) = self.backlog.pop_front() {
                if row.sequence <= self.last {
                    continue;
                }
                self.last = row.sequence;
                return Some(ConversationFeedItem {
                    sequence: row.sequence,
                    event: event_of(self.conversation_public_id, &row),
                    kind: row.kind,
                });
            }
            // The backlog is the store's, in order; a published row past the next sequence
            // means events were missed in between, so the store is read again.
            let gap = match self.rx.recv().await {
                Ok(row) if row.sequence <= self.last.saturating_add(1) => {
                    self.backlog.push_back(row);
                    false
                }
                Ok(_) | Err(RecvError::Lagged(_)) => true,
                Err(RecvError::Closed) => return None,
            };
            if gap && self.reread().await.is_err() {
                return None;
            }
        }
    }

    /// The sequence of the last event handed out (the cursor given at open before any).
    pub fn last_sequence(&self) -> i64 {
        self.last
    }
}

#[cfg(test)]
mod tests {
    use nexus_store::testing::engines;
    use serde_json::json;

    use crate::booted::Booted;
    use crate::runs::AfterCommit;

    /// More events in one commit than the channel buffers (1,024) and than one store read
    /// takes (500): a following stream lags and re-reads, a new one pages through its backlog,
    /// and both hand out every sequence once, in order.
    #[tokio::test]
    async fn a_lagging_or_long_feed_is_read_again_from_the_store() {
        for ts in engines().await {
            let Booted { kernel, agent, ws, .. } = Booted::new(&ts.store).await;
            let request = crate::conversations::CreateConversationRequest::parse(&json!({"conversation": {}})).unwrap();
            let made = kernel
                .conversations()
                .create_conversation(&agent, ws, Ok(request), None)
                .await
                .unwrap();
            let made = made.fresh().expect("a new conversation");
            let c = uuid::Uuid::parse_str(&made.conversation.public_id).unwrap();
            let mut following = kernel
                .conversations()
                .conversation_event_stream(&agent, ws, c, 0)
                .await
                .unwrap();
            let id = following.conversation_id;

            let n = 1_100;
            let mut tx = kernel.store.begin().await.unwrap();
            for _ in 0..n {
                tx.append_conversation_event(id, nexus_store::ConversationEventKind::InputAccepted, 1, "{}")
                    .await
                    .unwrap();
            }
            tx.commit().await.unwrap();
            kernel.publish(vec![AfterCommit::ConversationEvents(id)]).await;

            let mut fresh = kernel
                .conversations()
                .conversation_event_stream(&agent, ws, c, 0)
                .await
                .unwrap();
            for stream in [&mut following, &mut fresh] {
                for want in 1..=n {
                    let item = stream.next().await.expect("an event");
                    assert_eq!(item.sequence, want, "on {}", ts.dialect);
                    assert_eq!(item.event.sequence, want);
                    assert_eq!(item.event.conversation_public_id, Some(c.to_string()));
                }
                assert_eq!(stream.last_sequence(), n);
            }
            let mut resumed = kernel
                .conversations()
                .conversation_event_stream(&agent, ws, c, n - 1)
                .await
                .unwrap();
            assert_eq!(resumed.next().await.unwrap().sequence, n, "on {}", ts.dialect);
        }
    }
}
