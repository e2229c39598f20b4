//! The turn windows (`session_read`, `GET C/history`): the one cursor, the window in fill order,
//! and the field and page bounds.

use nexus_core::bounds;
use nexus_store::{HistoryTurn, TurnRole};
use serde::Serialize;
use uuid::Uuid;

use super::reader::{HistoryReader, HistoryRefusal, Refused, parameter};
use crate::error::KernelResult;
use crate::time;

/// Where a read starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReadCursor {
    Newest,
    After(i64),
    Before(i64),
    Around(String),
}

/// A read as asked, typed but not yet checked against the grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadAsk {
    pub session_id: String,
    pub cursor: ReadCursor,
    pub limit: i64,
}

/// The one cursor of a read: at most one of the three may be given.
pub(crate) fn read_cursor(
    around_turn_id: Option<String>,
    after_position: Option<i64>,
    before_position: Option<i64>,
) -> Refused<ReadCursor> {
    let given = usize::from(around_turn_id.is_some())
        + usize::from(after_position.is_some())
        + usize::from(before_position.is_some());
    if given > 1 {
        return parameter(
            "give at most one of around_turn_id, after_position and before_position; omit all for the newest turns"
                .into(),
        );
    }
    for (name, p) in [("after_position", after_position), ("before_position", before_position)] {
        if let Some(p) = p.filter(|p| *p < 0) {
            return parameter(format!("`{name}` {p} is negative; pass a position of 0 or more"));
        }
    }
    Ok(match (around_turn_id, after_position, before_position) {
        (Some(t), _, _) => ReadCursor::Around(t),
        (_, Some(p), _) => ReadCursor::After(p),
        (_, _, Some(p)) => ReadCursor::Before(p),
        _ => ReadCursor::Newest,
    })
}

/// One turn of a read page: `prompt` for a user turn, `content` for an assistant's reply.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReadTurn {
    pub public_id: Uuid,
    pub position: i64,
    pub role: &'static str,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReadConversation {
    pub public_id: Uuid,
    pub title: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReadPagination {
    pub before_position: i64,
    pub after_position: i64,
    pub has_older: bool,
    pub has_newer: bool,
}

/// `{conversation, turns, pagination, truncated}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReadPage {
    pub conversation: ReadConversation,
    pub turns: Vec<ReadTurn>,
    pub pagination: ReadPagination,
    pub truncated: bool,
}

/// Reads a window of a conversation of the workspace `workspace_id` (kernel-tools.md §10).
pub(crate) async fn read(
    reader: &mut impl HistoryReader,
    workspace_id: i64,
    ask: &ReadAsk,
) -> KernelResult<Refused<ReadPage>> {
    let unknown = || {
        Err(HistoryRefusal::UnknownConversation(format!(
            "{:?} is not a conversation of this workspace; pass a conversation_public_id, such as one from a search",
            ask.session_id
        )))
    };
    let Ok(id) = Uuid::parse_str(&ask.session_id) else {
        return Ok(unknown());
    };
    let Some(conversation) = reader
        .conversation(id)
        .await?
        .filter(|c| c.workspace_id == workspace_id)
    else {
        return Ok(unknown());
    };
    let max = bounds::HISTORY_READ_MAX_LIMIT as i64;
    if !(1..=max).contains(&ask.limit) {
        return Ok(parameter(format!(
            "`limit` {} is outside 1 to {max}; pass a limit in that range",
            ask.limit
        )));
    }
    let chars = bounds::HISTORY_FIELD_CHARS as i64 + 1;
    let (cid, limit) = (conversation.id, ask.limit);
    // Each window in fill order: the cursor's near edge first (around: the target, then its
    // neighbours by distance).
    let (window, empty_at) = match &ask.cursor {
        ReadCursor::Newest => (reader.turns(cid, i64::MAX, limit, true, chars).await?, 1),
        ReadCursor::After(p) => (reader.turns(cid, *p, limit, false, chars).await?, p.saturating_add(1)),
        ReadCursor::Before(p) => (reader.turns(cid, *p, limit, true, chars).await?, (*p).max(1)),
        ReadCursor::Around(turn) => {
            let Some(p) = (match Uuid::parse_str(turn) {
                Ok(t) => reader.position(cid, t).await?,
                Err(_) => None,
            }) else {
                return Ok(parameter(format!(
                    "`around_turn_id` {turn:?} is not a turn of conversation {}; pass a turn_public_id of it",
                    conversation.public_id
                )));
            };
            let newer = reader.turns(cid, p - 1, limit, false, chars).await?;
            let older = reader.turns(cid, p, limit - 1, true, chars).await?;
            (around(newer, older, limit as usize), p)
        }
    };
    let (mut turns, cut) = fill(window);
    turns.sort_by_key(|t| t.position);
    let (before_position, after_position) = match (turns.first(), turns.last()) {
        (Some(first), Some(last)) => (first.position, last.position),
        _ => (empty_at, empty_at - 1),
    };
    let last = conversation.last_position;
    Ok(Ok(ReadPage {
        conversation: ReadConversation {
            public_id: conversation.public_id,
            title: conversation.title.clone(),
        },
        pagination: ReadPagination {
            before_position,
            after_position,
            has_older: (before_position - 1).min(last) >= 1,
            has_newer: after_position < last,
        },
        truncated: cut,
        turns,
    }))
}

/// The around-window in fill order: the target (`newer[0]`), then the nearest neighbours,
/// older and newer in turn, `limit` in all.
fn around(newer: Vec<HistoryTurn>, older: Vec<HistoryTurn>, limit: usize) -> Vec<HistoryTurn> {
    let mut newer = newer.into_iter();
    let mut older = older.into_iter();
    let mut out: Vec<HistoryTurn> = newer.next().into_iter().collect();
    let mut from_older = true;
    while out.len() < limit {
        let next = if from_older {
            older.next().or_else(|| newer.next())
        } else {
            newer.next().or_else(|| older.next())
        };
        let Some(next) = next else { break };
        out.push(next);
        from_older = !from_older;
    }
    out
}

/// Gives each turn of `window` (in fill order) its text within the field and page bounds. A
/// turn that would get no text because the page's characters are spent is left out, with every
/// turn after it, so the page stays contiguous and the next page starts there. Returns the
/// turns and whether any text was cut or any turn left out.
fn fill(window: Vec<HistoryTurn>) -> (Vec<ReadTurn>, bool) {
    let mut budget = bounds::HISTORY_PAGE_CHARS;
    let mut cut = false;
    let mut out = Vec::with_capacity(window.len());
    let count = window.len();
    for turn in window {
        let text = match turn.text {
            None => None,
            Some(text) => {
                let have = text.chars().count();
                if budget == 0 && have > 0 {
                    cut = true;
                    break;
                }
                let keep = have.min(bounds::HISTORY_FIELD_CHARS).min(budget);
                budget -= keep;
                Some((head_chars(&text, keep), keep < have))
            }
        };
        let truncated = text.as_ref().is_some_and(|(_, t)| *t);
        cut |= truncated;
        let text = text.map(|(t, _)| t);
        let (prompt, content) = match turn.role {
            TurnRole::User => (text, None),
            TurnRole::Assistant => (None, text),
        };
        out.push(ReadTurn {
            public_id: turn.public_id,
            position: turn.position,
            role: turn.role.as_str(),
            created_at: time::iso(turn.created_at),
            prompt,
            content,
            truncated,
        });
    }
    cut |= out.len() < count;
    (out, cut)
}

/// The first `n` characters of `s`.
fn head_chars(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((at, _)) => s[..at].to_string(),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(position: i64, role: TurnRole, text: Option<&str>) -> HistoryTurn {
        HistoryTurn {
            id: position,
            public_id: Uuid::now_v7(),
            position,
            role,
            created_at: 0,
            text: text.map(String::from),
        }
    }

    #[test]
    fn a_page_fills_from_its_near_edge_within_the_bounds() {
        let long = "x".repeat(bounds::HISTORY_FIELD_CHARS + 1);
        let window: Vec<HistoryTurn> = (1..=8)
            .map(|p| {
                turn(
                    p,
                    if p % 2 == 1 {
                        TurnRole::User
                    } else {
                        TurnRole::Assistant
                    },
                    Some(&long),
                )
            })
            .collect();
        let (turns, cut) = fill(window);
        assert!(cut);
        assert_eq!(turns.len(), bounds::HISTORY_PAGE_CHARS / bounds::HISTORY_FIELD_CHARS);
        assert!(turns.iter().all(|t| t.truncated));
        assert_eq!(turns[0].prompt.as_ref().unwrap().len(), bounds::HISTORY_FIELD_CHARS);
        assert_eq!(turns[1].content.as_ref().unwrap().len(), bounds::HISTORY_FIELD_CHARS);
        assert!(turns[1].prompt.is_none());
        let (turns, cut) = fill(vec![
            turn(1, TurnRole::User, Some("hi")),
            turn(2, TurnRole::Assistant, None),
        ]);
        assert!(!cut && turns.len() == 2 && turns[1].content.is_none() && !turns[1].truncated);
    }

    #[test]
    fn an_around_window_alternates_by_distance() {
        let newer = (5..=9).map(|p| turn(p, TurnRole::User, None)).collect();
        let older = (1..=4).rev().map(|p| turn(p, TurnRole::User, None)).collect();
        let order: Vec<i64> = around(newer, older, 5).iter().map(|t| t.position).collect();
        assert_eq!(order, vec![5, 4, 6, 3, 7]);
        let newer = (2..=9).map(|p| turn(p, TurnRole::User, None)).collect();
        let older = vec![turn(1, TurnRole::User, None)];
        let order: Vec<i64> = around(newer, older, 4).iter().map(|t| t.position).collect();
        assert_eq!(order, vec![2, 1, 3, 4]);
    }

    #[test]
    fn at_most_one_cursor_and_no_negative_position() {
        assert_eq!(read_cursor(None, None, None), Ok(ReadCursor::Newest));
        assert_eq!(read_cursor(None, Some(3), None), Ok(ReadCursor::After(3)));
        assert!(read_cursor(Some("t".into()), Some(3), None).is_err());
        assert!(read_cursor(None, Some(1), Some(2)).is_err());
        assert!(read_cursor(None, None, Some(-1)).is_err());
    }
}
