//! What ties a hosted run to its conversation (runs.md §1 `hosting`, §12): the run's typed
//! `hosting` column, and where a spawned child's first reply goes (its `reply_route`).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A conversation-hosted run's `hosting` (`{kind: "conversation", conversation_public_id,
/// turn_public_id}`); a standalone run's is `{kind: "standalone"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hosting {
    pub conversation_public_id: Uuid,
    pub turn_public_id: Uuid,
}

/// 409 `conversation_hosted` for a run a conversation hosts (its growth is the
/// conversation's): the envelope names the conversation and the turn.
pub(crate) fn refuse_hosted(hosting_column: &nexus_store::Hosting) -> crate::error::KernelResult<()> {
    match Hosting::of(hosting_column) {
        Some(h) => Err(crate::error::KernelError::new(
            nexus_core::codes::Code::ConversationHosted,
            "a conversation hosts this run; send the conversation an input instead",
        )
        .with_extra("conversation_public_id", serde_json::json!(h.conversation_public_id))
        .with_extra("turn_public_id", serde_json::json!(h.turn_public_id))),
        None => Ok(()),
    }
}

impl Hosting {
    /// The run's stored hosting.
    pub fn to_stored(self) -> nexus_store::Hosting {
        nexus_store::Hosting::Conversation {
            conversation_public_id: self.conversation_public_id,
            turn_public_id: self.turn_public_id,
        }
    }

    /// The conversation's turn hosting a run (`None`: standalone). The store reads a column
    /// that is neither as a corrupt row.
    pub fn of(hosting: &nexus_store::Hosting) -> Option<Hosting> {
        match *hosting {
            nexus_store::Hosting::Conversation {
                conversation_public_id,
                turn_public_id,
            } => Some(Hosting {
                conversation_public_id,
                turn_public_id,
            }),
            nexus_store::Hosting::Standalone => None,
        }
    }
}

/// Where a spawned child's first reply goes (kernel-tools.md §4): the spawning call, and
/// either the paired await (`wait: true`) or kernel mail to the parent (`wait: false`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ReplyRoute {
    /// The parent conversation (internal id).
    pub parent: i64,
    /// The spawning run and call (internal ids) and the call's key.
    pub run: i64,
    pub call_key: String,
    /// `wait: true`: the paired await `<call>-spawn-1` (internal id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub await_task: Option<i64>,
    /// `wait: false`: `turn | conversation`, and `auto | passive`.
    pub lifetime: String,
    pub wake: nexus_store::Wake,
    /// `lifetime: turn`: the hidden await `<call>-delegation-1` (internal id) the run holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub obligation: Option<i64>,
    pub label: String,
}

impl ReplyRoute {
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).expect("route serializes")
    }
    pub fn of(column: Option<&str>) -> Option<ReplyRoute> {
        serde_json::from_str(column?).ok()
    }
}
