//! Conversation history reads (migration 0019, kernel-tools.md §10) inside the unit of work:
//! a kernel tool reads history in its evaluation's transaction.

use super::*;
use crate::{HistoryHit, HistorySearch, HistoryTurn};

impl Tx {
    /// One page of the ranked history search ([`crate::HistoryStore::search_history`]).
    pub async fn search_history(&mut self, search: &HistorySearch<'_>) -> Result<Vec<HistoryHit>> {
        tx_dispatch!(self, history::search_history(search))
    }

    /// Turns after `position` ascending, or (`newest_first`) before it descending, each text
    /// cut to `chars` characters.
    pub async fn history_turns(
        &mut self,
        conversation_id: i64,
        position: i64,
        limit: i64,
        newest_first: bool,
        chars: i64,
    ) -> Result<Vec<HistoryTurn>> {
        tx_dispatch!(
            self,
            history::history_turns(conversation_id, position, limit, newest_first, chars)
        )
    }

    /// The position of the conversation's turn `public_id`.
    pub async fn turn_position(&mut self, conversation_id: i64, public_id: uuid::Uuid) -> Result<Option<i64>> {
        tx_dispatch!(self, history::turn_position(conversation_id, public_id))
    }
}
