//! The conversation feed (runs.md §12): `GET C/events?after=&limit=`, the durable events a
//! conversation's changes append in their own transaction (`input_accepted`,
//! `conversation_archived`; the turn and spawn events come with turns). The live stream
//! (`GET C/events/stream`) is `stream.rs`.

use nexus_api::conversations::{ConversationEvent, ConversationEventPage};
use nexus_core::codes::Code;
use nexus_store::ConversationEventRow;
use nexus_store::prelude::*;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::refuse;
use crate::error::KernelResult;
use crate::{Conversations, MemberPrincipal, time};

/// A feed page's default and largest sizes (as a run's feed).
const EVENTS_DEFAULT: i64 = 100;
const EVENTS_MAX: i64 = 500;

/// An event as the feed serves it: `{sequence, type, at, conversation_public_id, data}`
/// (`data` is the stored JSON of the event's type; unreadable data reads as `{}`).
pub(super) fn event_of(conversation: Uuid, e: &ConversationEventRow) -> ConversationEvent {
    ConversationEvent {
        sequence: e.sequence,
        kind: e.kind.as_str().into(),
        at: time::iso(e.at),
        conversation_public_id: Some(conversation.to_string()),
        data: serde_json::from_str::<Value>(&e.data).unwrap_or_else(|_| json!({})),
        rest: Map::new(),
    }
}

impl Conversations<'_> {
    /// `GET C/events?after=&limit=` → `{events, next_after}`: events after the sequence
    /// `after` (default 0), oldest first; `next_after` is the last sequence returned (or
    /// `after` when none). A negative `after` is 400 `parameter_invalid`.
    pub async fn conversation_events(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        c: Uuid,
        after: Option<i64>,
        limit: Option<i64>,
    ) -> KernelResult<ConversationEventPage> {
        let (ws, _) = self.workspace_for(principal, workspace, false).await?;
        let conversation = self.conversation_in(&ws, c).await?;
        let after = after.unwrap_or(0);
        if after < 0 {
            return Err(refuse(Code::ParameterInvalid, "after must be a non-negative sequence"));
        }
        let limit = limit.unwrap_or(EVENTS_DEFAULT).clamp(1, EVENTS_MAX);
        let rows = self.store.conversation_events(conversation.id, after, limit).await?;
        let next = rows.last().map_or(after, |e| e.sequence);
        let events = rows.iter().map(|e| event_of(conversation.public_id, e)).collect();
        Ok(ConversationEventPage {
            events,
            next_after: next,
        })
    }
}
