//! A conversation's timeline (runs.md §12): `GET C/turns` and `POST C/cancellation`, on
//! [`ConversationRef`].

use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::conversations::ConversationRef;
use super::types::{Rest, open_words};
use super::wire;
use crate::error::Result;

open_words! {
    /// Who a turn speaks for.
    pub enum TurnRole {
        /// An input (or kernel mail) the conversation consumed.
        User = "user",
        /// The answerer's reply, hosted by a run.
        Assistant = "assistant",
    }
}

open_words! {
    /// A turn's status: a user turn is born `completed`; an assistant turn ends with its run.
    pub enum TurnStatus {
        /// Its run is live.
        Running = "running",
        /// Its run completed; `content` is the reply.
        Completed = "completed",
        /// It could not start (`error.key` says why).
        Failed = "failed",
        /// Its run was stopped.
        Canceled = "canceled",
    }
}

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// The turn's id.
    pub public_id: String,
    /// Its place on the timeline, from 1.
    pub position: i64,
    /// User or assistant.
    pub role: TurnRole,
    /// The run hosting an assistant turn.
    #[serde(default)]
    pub run_public_id: Option<String>,
    /// Its status.
    pub status: TurnStatus,
    /// A user turn's text, or an assistant turn's reply once it ends.
    #[serde(default)]
    pub content: Option<String>,
    /// `{key}` when the turn failed or was canceled.
    #[serde(default)]
    pub error: Option<Value>,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// RFC 3339 time the turn ended.
    #[serde(default)]
    pub ended_at: Option<String>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Rest,
}

/// `GET C/turns`: one page of turns, by position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnPage {
    /// The turns, ascending.
    pub turns: Vec<Turn>,
    /// `next_after`: the last position, when the page was full.
    #[serde(default)]
    pub pagination: Value,
}

/// `POST C/cancellation`: which turn was stopped (`None`: the conversation was idle).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cancellation {
    /// The conversation.
    pub conversation_public_id: String,
    /// The running turn that was stopped.
    #[serde(default)]
    pub canceled_turn_public_id: Option<String>,
}

impl ConversationRef {
    /// `GET C/turns?after=&limit=`: turns after position `after` (0 = from the first); the
    /// server defaults `limit` to 50 and caps it at 200.
    pub async fn turns(&self, after: i64, limit: Option<u32>) -> Result<TurnPage> {
        let route = self
            .route()
            .lit("turns")
            .query("after", Some(after))
            .query("limit", limit);
        wire::get(&self.http, &route).await
    }

    /// `POST C/cancellation`: stops the running turn's run and the children that turn spawned
    /// with `lifetime: turn`.
    pub async fn cancel(&self) -> Result<Cancellation> {
        let empty = Value::Object(Map::new());
        wire::call(
            &self.http,
            Method::POST,
            &self.route().lit("cancellation"),
            Some(&empty),
            None,
        )
        .await
    }
}
