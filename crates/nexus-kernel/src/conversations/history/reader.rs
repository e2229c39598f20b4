//! What a history call is refused with, and what it reads of the store ([`HistoryReader`]):
//! the pool for the routes, the evaluation's unit of work for the tools.

use nexus_core::codes::Code;
use nexus_store::prelude::*;
use nexus_store::{ConversationRow, HistoryHit, HistorySearch, HistoryTurn, Store, Tx};
use serde::Serialize;
use uuid::Uuid;

use crate::error::KernelError;

/// Why a history call is refused: a tool's `parameter_invalid` / `unknown_conversation` error
/// result, a route's 400 `parameter_invalid` / 404 `not_found`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HistoryRefusal {
    Parameter(String),
    UnknownConversation(String),
}

impl HistoryRefusal {
    /// The route's error.
    pub(crate) fn into_error(self) -> KernelError {
        match self {
            HistoryRefusal::Parameter(m) => KernelError::new(Code::ParameterInvalid, m),
            HistoryRefusal::UnknownConversation(m) => KernelError::new(Code::NotFound, m),
        }
    }
}

pub(crate) type Refused<T> = Result<T, HistoryRefusal>;

pub(crate) fn parameter<T>(message: String) -> Refused<T> {
    Err(HistoryRefusal::Parameter(message))
}

/// What a history read needs of the store, on the pool or in a unit of work.
pub(crate) trait HistoryReader {
    async fn conversation(&mut self, public_id: Uuid) -> nexus_store::Result<Option<ConversationRow>>;
    async fn search(&mut self, search: &HistorySearch<'_>) -> nexus_store::Result<Vec<HistoryHit>>;
    async fn turns(
        &mut self,
        conversation_id: i64,
        position: i64,
        limit: i64,
        newest_first: bool,
        chars: i64,
    ) -> nexus_store::Result<Vec<HistoryTurn>>;
    async fn position(&mut self, conversation_id: i64, turn: Uuid) -> nexus_store::Result<Option<i64>>;
}

/// [`HistoryReader`] over a store handle with the history reads: the pool's (`Engine`) and the
/// unit of work's (`Tx`) methods share their names.
macro_rules! history_reader {
    ($reader:ty) => {
        impl HistoryReader for $reader {
            async fn conversation(&mut self, public_id: Uuid) -> nexus_store::Result<Option<ConversationRow>> {
                self.conversation_by_public_id(public_id).await
            }
            async fn search(&mut self, search: &HistorySearch<'_>) -> nexus_store::Result<Vec<HistoryHit>> {
                self.search_history(search).await
            }
            async fn turns(
                &mut self,
                conversation_id: i64,
                position: i64,
                limit: i64,
                newest_first: bool,
                chars: i64,
            ) -> nexus_store::Result<Vec<HistoryTurn>> {
                self.history_turns(conversation_id, position, limit, newest_first, chars)
                    .await
            }
            async fn position(&mut self, conversation_id: i64, turn: Uuid) -> nexus_store::Result<Option<i64>> {
                self.turn_position(conversation_id, turn).await
            }
        }
    };
}

history_reader!(&Store);
history_reader!(Tx);

/// The JSON of a page (plain structs always serialize).
pub(crate) fn json(page: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(page).expect("a history page serializes")
}
