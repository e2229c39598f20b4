//! Conversation history (kernel-tools.md §10): the ranked search of a workspace
//! (the SDK's `Workspace::conversation_search`) and the turn
//! windows of one conversation (the SDK's `ConversationRef::history`),
//! the same shapes the `session_search` and `session_read` kernel tools answer.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::common::{Pagination, open_words};
use crate::conversations::ArchivedFilter;
use crate::turns::TurnRole;

/// The query of `GET W/conversation_search`: every word must occur in a field (a title, a
/// user turn's prompt or an assistant's reply), ignoring case; a trailing `*` on a word of three
/// or more characters matches it as a prefix. Matches come best first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistorySearch {
    /// Non-blank, at most 1,024 bytes.
    pub query: String,
    /// Which conversations by archive state (the server's default skips archived ones).
    pub archived: Option<ArchivedFilter>,
    /// Also search child conversations (the server's default: no).
    pub include_auxiliary: Option<bool>,
    /// 1 to 50 (the server's default: 20).
    pub limit: Option<u32>,
    /// The `pagination.next_after` of the previous page.
    pub after: Option<String>,
}

impl HistorySearch {
    /// A first page for `query`, with the server's defaults.
    pub fn new(query: impl Into<String>) -> HistorySearch {
        HistorySearch {
            query: query.into(),
            archived: None,
            include_auxiliary: None,
            limit: None,
            after: None,
        }
    }

    /// Searches these conversations by archive state.
    pub fn archived(mut self, filter: ArchivedFilter) -> HistorySearch {
        self.archived = Some(filter);
        self
    }

    /// Also searches child conversations.
    pub fn include_auxiliary(mut self, include: bool) -> HistorySearch {
        self.include_auxiliary = Some(include);
        self
    }

    /// At most `limit` matches.
    pub fn limit(mut self, limit: u32) -> HistorySearch {
        self.limit = Some(limit);
        self
    }

    /// The page after `cursor` (a `pagination.next_after`).
    pub fn after(mut self, cursor: impl Into<String>) -> HistorySearch {
        self.after = Some(cursor.into());
        self
    }

    /// The next page's search, or `None` when `page` was the last.
    pub fn next(&self, page: &SearchPage) -> Option<HistorySearch> {
        page.pagination.next_after.as_ref().map(|after| HistorySearch {
            after: Some(after.clone()),
            ..self.clone()
        })
    }
}

open_words! {
    /// Which field of a conversation matched.
    pub enum MatchField {
        /// The conversation's title (the match has no turn).
        Title = "title",
        /// A user turn's text.
        Prompt = "prompt",
        /// An assistant turn's reply.
        Content = "content",
    }
}

/// One match of a history search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SearchMatch {
    /// The conversation that matched.
    pub conversation_public_id: String,
    /// Its title.
    #[serde(default)]
    pub title: Option<String>,
    /// The matching turn (`None` for a title match).
    #[serde(default)]
    pub turn_public_id: Option<String>,
    /// The matching turn's position (`None` for a title match).
    #[serde(default)]
    pub position: Option<i64>,
    /// The field that matched.
    pub field: MatchField,
    /// At most 500 characters of the field around the first word of the query.
    pub excerpt: String,
    /// Whether the field goes on beyond the excerpt.
    #[serde(default)]
    pub truncated: bool,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// `GET W/conversation_search`: one page of matches, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SearchPage {
    /// The matches.
    pub matches: Vec<SearchMatch>,
    /// The cursor of the next page.
    #[serde(default)]
    pub pagination: Pagination,
}

/// Which turns `GET C/history` reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryRead {
    /// The turns around this turn id (the target first, then its nearest neighbours).
    pub around_turn_id: Option<String>,
    /// The turns after this position (newer).
    pub after_position: Option<i64>,
    /// The turns before this position (older).
    pub before_position: Option<i64>,
    /// 1 to 50 (the server's default: 20).
    pub limit: Option<u32>,
}

impl HistoryRead {
    /// The newest turns.
    pub fn newest() -> HistoryRead {
        HistoryRead::default()
    }

    /// The turns around `turn_public_id`, such as a search match's.
    pub fn around(turn_public_id: impl Into<String>) -> HistoryRead {
        HistoryRead {
            around_turn_id: Some(turn_public_id.into()),
            ..HistoryRead::default()
        }
    }

    /// The turns after `position`, such as a page's `pagination.after_position`.
    pub fn after(position: i64) -> HistoryRead {
        HistoryRead {
            after_position: Some(position),
            ..HistoryRead::default()
        }
    }

    /// The turns before `position`, such as a page's `pagination.before_position`.
    pub fn before(position: i64) -> HistoryRead {
        HistoryRead {
            before_position: Some(position),
            ..HistoryRead::default()
        }
    }

    /// At most `limit` turns.
    pub fn limit(mut self, limit: u32) -> HistoryRead {
        self.limit = Some(limit);
        self
    }
}

/// One turn of a history page, its text within the page's bounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HistoryTurn {
    /// The turn's id.
    pub public_id: String,
    /// Its position in the conversation, from 1.
    pub position: i64,
    /// `user` or `assistant`.
    pub role: TurnRole,
    /// RFC 3339 time the turn opened.
    pub created_at: String,
    /// A user turn's text.
    #[serde(default)]
    pub prompt: Option<String>,
    /// An assistant turn's reply (none while it runs, or when it failed).
    #[serde(default)]
    pub content: Option<String>,
    /// Whether the text was cut (2,000 characters a field, 12,000 a page).
    #[serde(default)]
    pub truncated: bool,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// The conversation a history page reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HistoryConversation {
    /// The conversation's id.
    pub public_id: String,
    /// Its title.
    #[serde(default)]
    pub title: Option<String>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// Where a history page sits: pass `before_position` for older turns, `after_position` for
/// newer ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HistoryPagination {
    /// The lowest position on the page (one past the cursor on an empty page).
    pub before_position: i64,
    /// The highest position on the page.
    pub after_position: i64,
    /// Whether older turns exist.
    pub has_older: bool,
    /// Whether newer turns exist.
    pub has_newer: bool,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// `GET C/history`: turns in ascending position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct History {
    /// The conversation.
    pub conversation: HistoryConversation,
    /// The turns, oldest first.
    pub turns: Vec<HistoryTurn>,
    /// Where the page sits.
    pub pagination: HistoryPagination,
    /// Whether any text was cut or any turn left for the next page by the page bound.
    #[serde(default)]
    pub truncated: bool,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn history_records_keep_what_they_do_not_name() {
        let page: SearchPage = serde_json::from_value(json!({"matches": [{"conversation_public_id": "c",
            "title": null, "turn_public_id": null, "position": null, "field": "summary", "excerpt": "x",
            "truncated": false, "score": 1.5}], "pagination": {"next_after": "n"}}))
        .unwrap();
        assert_eq!(page.matches[0].field, MatchField::Other("summary".into()));
        assert_eq!(page.matches[0].rest.get("score"), Some(&json!(1.5)));
        let next = HistorySearch::new("q").limit(5).next(&page).unwrap();
        assert_eq!((next.after.as_deref(), next.limit), (Some("n"), Some(5)));
        let history: History = serde_json::from_value(json!({"conversation": {"public_id": "c", "title": "t"},
            "turns": [{"public_id": "t1", "position": 1, "role": "user", "created_at": "2026-01-01T00:00:00Z",
                "prompt": "hi", "truncated": false, "tokens": 3}],
            "pagination": {"before_position": 1, "after_position": 1, "has_older": false, "has_newer": false},
            "truncated": false, "cost": 0}))
        .unwrap();
        assert_eq!(history.turns[0].role, TurnRole::User);
        assert_eq!(history.turns[0].rest.get("tokens"), Some(&json!(3)));
        assert_eq!(history.rest.get("cost"), Some(&json!(0)));
    }
}
