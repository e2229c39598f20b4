//! Conversation history (kernel-tools.md §10): the ranked search (`session_search`, `GET
//! W/conversation_search`) and the turn windows (`session_read`, `GET C/history`). The tools
//! and the routes parse their own inputs into [`SearchAsk`] / [`ReadAsk`] and answer with the
//! same shapes from [`search`] and [`read`]; a refusal is a [`HistoryRefusal`], which a tool
//! renders as its error result and a route as its error envelope.
//!
//! The tools read in their evaluation's unit of work, the routes through the pool: both through
//! `reader::HistoryReader`.

mod read;
mod reader;
mod routes;
mod search;

#[cfg(test)]
pub(crate) use read::ReadCursor;
pub(crate) use read::{ReadAsk, read, read_cursor};
pub use read::{ReadConversation, ReadPage, ReadPagination, ReadTurn};
pub(crate) use reader::{HistoryRefusal, json};
pub use routes::{HistoryQuery, SearchQuery};
pub use search::{Match, SearchPage, SearchPagination};
pub(crate) use search::{SearchAsk, archived_word, search};
