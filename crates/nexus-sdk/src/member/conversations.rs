//! Conversations (runs.md §12): the conversation record, its listing filter and feed, the
//! create body, and [`ConversationRef`] for the routes under `C = W/conversations/{c}`.

use reqwest::Method;
use serde_json::{Map, Value};

use super::memory::MemoryDoor;
use super::wire::{self, Route, V1};
use crate::error::Result;
use crate::http::Http;
use nexus_api::common::Page;
use nexus_api::conversations::{Conversation, ConversationEnvelope, ConversationEventPage, ConversationPage};
use nexus_api::history::{History, HistoryRead};
use nexus_api::inputs::{Input, InputCreated, InputEnvelope, InputPage, NewInput};

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
        let body = wire::body(&nexus_api::verbs::SetDefaultRunner::new(executor_public_id));
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
