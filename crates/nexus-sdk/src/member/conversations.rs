//! Conversations (runs.md §12): the conversation record, its listing filter and feed, the
//! create body, and [`ConversationRef`] for the routes under `C = W/conversations/{c}`.

use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::history::{History, HistoryRead};
use super::inputs::{Input, InputCreated, InputEnvelope, InputPage, NewInput};
use super::memory::MemoryDoor;
use super::types::{Page, Pagination, Rest, open_words};
use super::wire::{self, Route, V1};
use crate::error::Result;
use crate::http::Http;

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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Rest,
}

/// A child conversation's `parent`: `{public_id, spawn_task_key, label}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    pub rest: Rest,
}

/// `GET W/conversations` (one page) and `GET C/children` (no `pagination`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationPage {
    /// The conversations, oldest first.
    pub conversations: Vec<Conversation>,
    /// The cursor of the next page (always the last page for children).
    #[serde(default)]
    pub pagination: Pagination,
}

/// `POST W/conversations`: 201 `{conversation}`, or 200 with `replayed: true` for a repeated
/// key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationCreated {
    /// The conversation as created.
    pub conversation: Conversation,
    /// Whether this answer replays an earlier create with the same `Idempotency-Key`.
    #[serde(default)]
    pub replayed: bool,
}

/// The `{conversation}` answer of read, archive and default runner.
#[derive(Deserialize)]
struct ConversationEnvelope {
    conversation: Conversation,
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
        let mut conversation = Map::new();
        let named = [
            ("title", &self.title),
            ("answering_user_public_id", &self.answering_user_public_id),
            (
                "default_runner_executor_public_id",
                &self.default_runner_executor_public_id,
            ),
        ];
        for (name, value) in named {
            if let Some(value) = value {
                conversation.insert(name.into(), Value::String(value.clone()));
            }
        }
        let mut body = Map::new();
        body.insert("conversation".into(), Value::Object(conversation));
        Value::Object(body)
    }
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    pub rest: Rest,
}

/// `GET C/events`: events after a sequence, and the sequence to read after next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationEventPage {
    /// The events, oldest first.
    pub events: Vec<ConversationEvent>,
    /// The last sequence returned (the `after` asked when none was).
    pub next_after: i64,
}

/// One conversation, seen through a member bearer. Made by
/// [`Workspace::conversation`](super::Workspace::conversation) (nothing is sent until a call);
/// cheap to clone.
#[derive(Debug, Clone)]
pub struct ConversationRef {
    pub(super) http: Http,
    workspace: String,
    id: String,
}

impl ConversationRef {
    pub(crate) fn new(http: Http, workspace: &str, id: &str) -> ConversationRef {
        ConversationRef {
            http,
            workspace: workspace.to_owned(),
            id: id.to_owned(),
        }
    }

    /// The conversation's id.
    pub fn public_id(&self) -> &str {
        &self.id
    }

    /// The workspace's id.
    pub fn workspace_public_id(&self) -> &str {
        &self.workspace
    }

    pub(super) fn http(&self) -> &Http {
        &self.http
    }

    /// The member memory door with this conversation's `conversation/` scope (the
    /// workspace's `user/` and `workspace/` documents too).
    pub fn memory(&self) -> MemoryDoor {
        MemoryDoor::new(self.http.clone(), &self.workspace, Some(&self.id))
    }

    pub(super) fn route(&self) -> Route {
        Route::new(V1)
            .lit("workspaces")
            .seg(&self.workspace)
            .lit("conversations")
            .seg(&self.id)
    }

    async fn conversation(&self, method: Method, route: Route, body: Option<&Value>) -> Result<Conversation> {
        let read: ConversationEnvelope = wire::call(&self.http, method, &route, body, None).await?;
        Ok(read.conversation)
    }

    /// `GET C`: the conversation (404 `not_found`).
    pub async fn get(&self) -> Result<Conversation> {
        self.conversation(Method::GET, self.route(), None).await
    }

    /// `GET C/children`: the child conversations, each with its `parent`.
    pub async fn children(&self) -> Result<Vec<Conversation>> {
        let page: ConversationPage = wire::get(&self.http, &self.route().lit("children")).await?;
        Ok(page.conversations)
    }

    /// `POST C/archive`: archives the conversation and its children (archiving again changes
    /// nothing). Refusal: 409 `subagent_follows_parent` for a child.
    pub async fn archive(&self) -> Result<Conversation> {
        let empty = Value::Object(Map::new());
        self.conversation(Method::POST, self.route().lit("archive"), Some(&empty))
            .await
    }

    /// `POST C/unarchive`: the reverse of [`ConversationRef::archive`], with the same refusal.
    pub async fn unarchive(&self) -> Result<Conversation> {
        let empty = Value::Object(Map::new());
        self.conversation(Method::POST, self.route().lit("unarchive"), Some(&empty))
            .await
    }

    /// `PUT C/default_runner`: the runner later turns import from (`None` for none).
    /// Refusals: 404 `runner_not_found`; 422 `runner_not_eligible`.
    pub async fn set_default_runner(&self, executor_public_id: Option<&str>) -> Result<Conversation> {
        let body = serde_json::json!({"default_runner": {"executor_public_id": executor_public_id}});
        self.conversation(Method::PUT, self.route().lit("default_runner"), Some(&body))
            .await
    }

    /// `GET C/events?after=&limit=`: durable events after sequence `after` (0 = from the
    /// start); the server defaults `limit` to 100 and caps it at 500.
    pub async fn events(&self, after: i64, limit: Option<u32>) -> Result<ConversationEventPage> {
        let route = self
            .route()
            .lit("events")
            .query("after", Some(after))
            .query("limit", limit);
        wire::get(&self.http, &route).await
    }

    /// `GET C/history?around_turn_id=&after_position=&before_position=&limit=`: a window of
    /// the conversation's turns, oldest first, the text within its bounds; the shape
    /// `session_read` answers. Refusals: 400 `parameter_invalid` (more than one cursor, a turn
    /// of another conversation, a limit outside 1–50); 404 `not_found`.
    pub async fn history(&self, read: &HistoryRead) -> Result<History> {
        let route = self
            .route()
            .lit("history")
            .query("around_turn_id", read.around_turn_id.as_deref())
            .query("after_position", read.after_position)
            .query("before_position", read.before_position)
            .query("limit", read.limit);
        wire::get(&self.http, &route).await
    }

    /// `POST C/inputs` (+ `Idempotency-Key`): 201 `{input}` in state `pending`. Refusals: 409
    /// `conversation_archived`, `input_queue_full`, `idempotency_envelope_mismatch`; 422
    /// `validation_failed`, `deliver_at_ambiguous`, `deliver_at_in_past`, `deliver_at_too_far`,
    /// `deliver_at_not_steerable`, `tool_not_declared`, `answerer_not_eligible`, …
    pub async fn create_input(&self, input: &NewInput) -> Result<InputCreated> {
        let route = self.route().lit("inputs");
        wire::call(
            &self.http,
            Method::POST,
            &route,
            Some(&input.body()),
            input.idempotency_key.as_deref(),
        )
        .await
    }

    /// `GET C/inputs?after=&limit=`: every input of the conversation, oldest first.
    pub async fn inputs(&self, page: &Page) -> Result<InputPage> {
        let route = self
            .route()
            .lit("inputs")
            .query("after", page.after.as_deref())
            .query("limit", page.limit);
        wire::get(&self.http, &route).await
    }

    /// `DELETE C/inputs/{id}`: a `pending` input becomes `canceled`. Refusals: 409
    /// `input_not_pending`; 404 `not_found`.
    pub async fn delete_input(&self, input_public_id: &str) -> Result<Input> {
        let route = self.route().lit("inputs").seg(input_public_id);
        let read: InputEnvelope = wire::call(&self.http, Method::DELETE, &route, None, None).await?;
        Ok(read.input)
    }
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
