//! What the conversation tools reach from a hosted run (kernel-tools.md §4–§7): the caller's
//! conversation, a target named by label (a child of the caller's) or by id (any conversation
//! of the workspace), and whether a target is the caller's own conversation or an ancestor.

use nexus_store::prelude::*;
use nexus_store::{ConversationRow, RunRow, Tx};
use uuid::Uuid;

use super::hosting::Hosting;
use crate::Conversations;
use crate::error::KernelResult;

impl Conversations<'_> {
    /// The conversation hosting `run` (`None`: a standalone run).
    pub(crate) async fn hosting_conversation(&self, run: &RunRow) -> KernelResult<Option<ConversationRow>> {
        let Some(h) = Hosting::of(&run.hosting) else {
            return Ok(None);
        };
        Ok(self.store.conversation_by_public_id(h.conversation_public_id).await?)
    }

    /// The target `to` names from the caller's conversation: a conversation id of the same
    /// workspace, else a child label of the caller's.
    pub(crate) async fn conversation_target(
        &self,
        tx: &mut Tx,
        caller: &ConversationRow,
        to: &str,
    ) -> KernelResult<Option<ConversationRow>> {
        if let Ok(id) = Uuid::parse_str(to) {
            return Ok(tx
                .conversation_by_public_id(id)
                .await?
                .filter(|c| c.workspace_id == caller.workspace_id));
        }
        Ok(tx.child_by_label(caller.id, to).await?)
    }

    /// Whether `target` is `caller` or one of its ancestors.
    pub(crate) async fn is_ancestor_or_self(
        &self,
        tx: &mut Tx,
        caller: &ConversationRow,
        target: &ConversationRow,
    ) -> KernelResult<bool> {
        let mut at = Some(caller.clone());
        while let Some(c) = at {
            if c.id == target.id {
                return Ok(true);
            }
            at = match c.parent_id {
                Some(p) => tx.conversation_by_id(p).await?,
                None => None,
            };
        }
        Ok(false)
    }
}
