//! Conversations (runs.md §12): the conversation record, its listing filter and feed, and the
//! create body.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::common::{Pagination, open_words};
/// Which conversations `GET W/conversations` lists by archive state (the server's default is
/// [`ArchivedFilter::Exclude`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchivedFilter {
    /// Live conversations only.
    Exclude,
    /// Live and archived conversations.
    Include,
    /// Archived conversations only.
    Only,
}

impl ArchivedFilter {
    /// The query word.
    pub fn as_str(self) -> &'static str {
        match self {
            ArchivedFilter::Exclude => "exclude",
            ArchivedFilter::Include => "include",
            ArchivedFilter::Only => "only",
        }
    }
}

impl std::fmt::Display for ArchivedFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The conversation record every conversation route serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Conversation {
    /// The conversation's id.
    pub public_id: String,
    /// The workspace the conversation belongs to.
    pub workspace_public_id: String,
    /// The title, when one was given.
    #[serde(default)]
    pub title: Option<String>,
    /// The member who answers its inputs (the creator unless named).
    #[serde(default)]
    pub answering_user_public_id: Option<String>,
    /// The creating member.
    #[serde(default)]
    pub created_by_public_id: Option<String>,
    /// The runner later turns import from.
    #[serde(default)]
    pub default_runner_executor_public_id: Option<String>,
    /// Set on a child conversation (a subagent's).
    #[serde(default)]
    pub parent: Option<ConversationParent>,
    /// Whether the conversation is archived.
    #[serde(default)]
    pub archived: bool,
    /// RFC 3339 time of archiving.
    #[serde(default)]
    pub archived_at: Option<String>,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// Turns and the last message at a glance: served on `GET W/conversations` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<ConversationSummary>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// A conversation at a glance (`summary` on `GET W/conversations`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConversationSummary {
    /// The conversation's turns.
    #[serde(default)]
    pub turn_count: i64,
    /// RFC 3339: the newest turn's end, else its start (`None` before the first turn).
    #[serde(default)]
    pub last_activity_at: Option<String>,
    /// The first non-blank line of the newest turn that has text (a reply still running or
    /// failed has none).
    #[serde(default)]
    pub last_message: Option<String>,
    /// That turn's role, `user` or `assistant`.
    #[serde(default)]
    pub last_role: Option<String>,
}

/// A child conversation's `parent`: `{public_id, spawn_task_key, label}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConversationParent {
    /// The parent conversation's id.
    pub public_id: String,
    /// The spawn task that opened the child, when known.
    #[serde(default)]
    pub spawn_task_key: Option<String>,
    /// The child's label.
    #[serde(default)]
    pub label: Option<String>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// `GET W/conversations` (one page) and `GET C/children` (no `pagination`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConversationPage {
    /// The conversations, oldest first.
    pub conversations: Vec<Conversation>,
    /// The cursor of the next page (always the last page for children).
    #[serde(default)]
    pub pagination: Pagination,
}

/// `POST W/conversations`: 201 `{conversation}`, or 200 with `replayed: true` for a repeated
/// key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConversationCreated {
    /// The conversation as created.
    pub conversation: Conversation,
    /// Whether this answer replays an earlier create with the same `Idempotency-Key`.
    #[serde(default)]
    pub replayed: bool,
}

/// The `{conversation}` answer of read, archive and default runner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConversationEnvelope {
    /// The conversation.
    pub conversation: Conversation,
}

/// The body of `POST W/conversations`, with its optional `Idempotency-Key`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewConversation {
    /// The title.
    pub title: Option<String>,
    /// The answering member (the creator when `None`).
    pub answering_user_public_id: Option<String>,
    /// The conversation's default runner.
    pub default_runner_executor_public_id: Option<String>,
    /// Sent as the `Idempotency-Key` header: a repeat with the same body replays the create.
    pub idempotency_key: Option<String>,
}

impl NewConversation {
    /// A conversation with nothing named: untitled, answered by its creator, no runner.
    pub fn new() -> NewConversation {
        NewConversation::default()
    }

    /// Sets the title.
    pub fn title(mut self, title: impl Into<String>) -> NewConversation {
        self.title = Some(title.into());
        self
    }

    /// Names the answering member.
    pub fn answerer(mut self, member_public_id: impl Into<String>) -> NewConversation {
        self.answering_user_public_id = Some(member_public_id.into());
        self
    }

    /// Sets the default runner.
    pub fn default_runner(mut self, executor_public_id: impl Into<String>) -> NewConversation {
        self.default_runner_executor_public_id = Some(executor_public_id.into());
        self
    }

    /// Sends the create with this `Idempotency-Key`.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> NewConversation {
        self.idempotency_key = Some(key.into());
        self
    }

    /// The JSON body, `{conversation: {…}}`, naming only what was set.
    pub fn body(&self) -> Value {
        let body = CreateConversation {
            conversation: ConversationFields {
                title: self.title.clone(),
                answering_user_public_id: self.answering_user_public_id.clone(),
                default_runner_executor_public_id: self.default_runner_executor_public_id.clone(),
            },
        };
        serde_json::to_value(body).expect("a conversation body serializes")
    }
}

/// The body of `POST W/conversations`: `{conversation}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CreateConversation {
    /// What the conversation starts with.
    pub conversation: ConversationFields,
}

/// The members of a conversation create, all optional (runs.md §12).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConversationFields {
    /// The title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The answering member (the creator when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answering_user_public_id: Option<String>,
    /// The conversation's default runner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_runner_executor_public_id: Option<String>,
}

open_words! {
    /// The type of a conversation feed event (runs.md §12).
    pub enum ConversationEventKind {
        /// An input was accepted (`data: {input_public_id, delivery_mode}`).
        InputAccepted = "input_accepted",
        /// A turn started.
        TurnStarted = "turn_started",
        /// A turn ended.
        TurnEnded = "turn_ended",
        /// A child conversation was spawned.
        ChildSpawned = "child_spawned",
        /// The conversation was archived.
        ConversationArchived = "conversation_archived",
    }
}

/// One durable event of a conversation's feed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConversationEvent {
    /// The event's sequence within the conversation, from 1.
    pub sequence: i64,
    /// What happened.
    #[serde(rename = "type")]
    pub kind: ConversationEventKind,
    /// RFC 3339 time of the event.
    pub at: String,
    /// The conversation's id.
    #[serde(default)]
    pub conversation_public_id: Option<String>,
    /// The event's data, by type.
    #[serde(default)]
    pub data: Value,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// `GET C/events`: events after a sequence, and the sequence to read after next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConversationEventPage {
    /// The events, oldest first.
    pub events: Vec<ConversationEvent>,
    /// The last sequence returned (the `after` asked when none was).
    pub next_after: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_conversation_keeps_what_it_does_not_name() {
        let conversation: Conversation = serde_json::from_value(json!({
            "public_id": "c", "workspace_public_id": "w", "title": null, "archived": false,
            "parent": {"public_id": "p", "spawn_task_key": null, "label": "scout", "depth": 1},
            "created_at": "2026-01-01T00:00:00Z", "pinned": true,
        }))
        .unwrap();
        let parent = conversation.parent.as_ref().unwrap();
        assert_eq!(parent.label.as_deref(), Some("scout"));
        assert_eq!(parent.rest.get("depth"), Some(&json!(1)));
        assert_eq!(conversation.rest.get("pinned"), Some(&json!(true)));
        let kind: ConversationEventKind = serde_json::from_str("\"turn_paused\"").unwrap();
        assert_eq!(kind, ConversationEventKind::Other("turn_paused".into()));
    }

    #[test]
    fn the_create_body_names_only_what_was_set() {
        assert_eq!(NewConversation::new().body(), json!({"conversation": {}}));
        let body = NewConversation::new()
            .title("Plans")
            .default_runner("x")
            .idempotency_key("k")
            .body();
        assert_eq!(
            body,
            json!({"conversation": {"title": "Plans", "default_runner_executor_public_id": "x"}})
        );
    }
}
