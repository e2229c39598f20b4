//! The member routes `GET W/conversation_search` and `GET C/history`: their query strings,
//! read standing, and the refusals as error envelopes.

use nexus_core::bounds;
use nexus_core::codes::Code;
use uuid::Uuid;

use super::read::{ReadAsk, ReadPage, read, read_cursor};
use super::reader::HistoryRefusal;
use super::search::{SearchAsk, SearchPage, archived_word, search};
use crate::error::{KernelError, KernelResult};
use crate::{Conversations, MemberPrincipal};

/// A route's integer parameter as given (`None`: absent); anything else is 400.
fn route_int(value: Option<&str>, name: &str) -> KernelResult<Option<i64>> {
    value
        .map(|v| {
            v.parse::<i64>()
                .map_err(|_| KernelError::new(Code::ParameterInvalid, format!("`{name}` {v:?} is not an integer")))
        })
        .transpose()
}

/// The query string of `GET W/conversation_search`.
#[derive(Debug, Clone, Default)]
pub struct SearchQuery<'a> {
    pub query: Option<&'a str>,
    pub archived: Option<&'a str>,
    pub include_auxiliary: Option<&'a str>,
    pub limit: Option<&'a str>,
    pub after: Option<&'a str>,
}

/// The query string of `GET C/history`.
#[derive(Debug, Clone, Default)]
pub struct HistoryQuery<'a> {
    pub around_turn_id: Option<&'a str>,
    pub after_position: Option<&'a str>,
    pub before_position: Option<&'a str>,
    pub limit: Option<&'a str>,
}

impl Conversations<'_> {
    /// `GET W/conversation_search`: the ranked search of the workspace's history
    /// (kernel-tools.md §10), as `session_search` answers it. Needs read standing; refusals
    /// are 400 `parameter_invalid`.
    pub async fn conversation_search(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        q: &SearchQuery<'_>,
    ) -> KernelResult<SearchPage> {
        let (ws, _) = self.workspace_for(principal, workspace, false).await?;
        let Some(query) = q.query else {
            return Err(KernelError::new(
                Code::ParameterInvalid,
                "`query` is missing; give the words to search for",
            ));
        };
        let include_auxiliary = match q.include_auxiliary {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(KernelError::new(
                    Code::ParameterInvalid,
                    format!("`include_auxiliary` {other:?} is not true or false"),
                ));
            }
        };
        let ask = SearchAsk {
            query: query.to_string(),
            archived: archived_word(q.archived).map_err(HistoryRefusal::into_error)?,
            include_auxiliary,
            limit: route_int(q.limit, "limit")?.unwrap_or(bounds::HISTORY_SEARCH_DEFAULT_LIMIT as i64),
            after: q.after.map(String::from),
        };
        search(&mut &self.store, ws.id, &ask)
            .await?
            .map_err(HistoryRefusal::into_error)
    }

    /// `GET C/history`: a window of the conversation's turns (kernel-tools.md §10), as
    /// `session_read` answers it. Needs read standing; 404 `not_found` for a conversation of
    /// another workspace, 400 `parameter_invalid` for the parameters.
    pub async fn conversation_history(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        c: Uuid,
        q: &HistoryQuery<'_>,
    ) -> KernelResult<ReadPage> {
        let (ws, _) = self.workspace_for(principal, workspace, false).await?;
        let cursor = read_cursor(
            q.around_turn_id.map(String::from),
            route_int(q.after_position, "after_position")?,
            route_int(q.before_position, "before_position")?,
        )
        .map_err(HistoryRefusal::into_error)?;
        let ask = ReadAsk {
            session_id: c.to_string(),
            cursor,
            limit: route_int(q.limit, "limit")?.unwrap_or(bounds::HISTORY_READ_DEFAULT_LIMIT as i64),
        };
        read(&mut &self.store, ws.id, &ask)
            .await?
            .map_err(HistoryRefusal::into_error)
    }
}
