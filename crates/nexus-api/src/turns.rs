//! A conversation's timeline (runs.md §12): the turns of `GET C/turns` and the answer of
//! `POST C/cancellation`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::common::open_words;

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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
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
    pub rest: Map<String, Value>,
}

/// `GET C/turns`: one page of turns, by position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TurnPage {
    /// The turns, ascending.
    pub turns: Vec<Turn>,
    /// `next_after`: the last position, when the page was full.
    #[serde(default)]
    pub pagination: Value,
}

/// `POST C/cancellation`: which turn was stopped (`None`: the conversation was idle).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Cancellation {
    /// The conversation.
    pub conversation_public_id: String,
    /// The running turn that was stopped.
    #[serde(default)]
    pub canceled_turn_public_id: Option<String>,
}
