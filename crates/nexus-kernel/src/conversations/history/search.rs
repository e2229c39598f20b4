//! The ranked search (`session_search`, `GET W/conversation_search`): the parameters' grammar,
//! the keyset cursor, the matches and their excerpts.

use nexus_core::bounds;
use nexus_store::{ArchivedFilter, HistoryCursor, HistoryHit, HistorySearch, SearchTerm, TurnRole};
use serde::Serialize;
use uuid::Uuid;

use super::reader::{HistoryReader, HistoryRefusal, Refused, parameter};
use crate::error::KernelResult;

/// A search as asked, typed but not yet checked against the grammar.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SearchAsk {
    pub query: String,
    pub archived: ArchivedFilter,
    pub include_auxiliary: bool,
    pub limit: i64,
    pub after: Option<String>,
}

/// The `archived` word (`None`: the default, `exclude`).
pub(crate) fn archived_word(word: Option<&str>) -> Refused<ArchivedFilter> {
    match word {
        None | Some("exclude") => Ok(ArchivedFilter::Exclude),
        Some("include") => Ok(ArchivedFilter::Include),
        Some("only") => Ok(ArchivedFilter::Only),
        Some(other) => parameter(format!(
            "`archived` {other:?} is not exclude, include or only; pass one of those words"
        )),
    }
}

/// One match of a search page.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Match {
    pub conversation_public_id: Uuid,
    pub title: Option<String>,
    pub turn_public_id: Option<Uuid>,
    pub position: Option<i64>,
    pub field: &'static str,
    pub excerpt: String,
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchPagination {
    pub next_after: Option<String>,
}

/// `{matches, pagination: {next_after}}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchPage {
    pub matches: Vec<Match>,
    pub pagination: SearchPagination,
}

/// A search cursor as issued: the last hit's score (its IEEE bits in hex), turn id (0 for a
/// title) and conversation id.
fn encode_cursor(c: HistoryCursor) -> String {
    format!("{:016x}-{}-{}", c.score.to_bits(), c.turn_id, c.conversation_id)
}

fn decode_cursor(after: &str) -> Refused<HistoryCursor> {
    let bad = || {
        HistoryRefusal::Parameter(format!(
            "`after` {after:?} is not a cursor this search issued; pass pagination.next_after of the previous \
             page, or omit it for the first page"
        ))
    };
    let mut parts = after.splitn(3, '-');
    let (Some(bits), Some(turn), Some(conversation)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    let score = u64::from_str_radix(bits, 16)
        .ok()
        .filter(|_| bits.len() == 16)
        .map(f64::from_bits)
        .filter(|s| s.is_finite())
        .ok_or_else(bad)?;
    let turn_id = turn.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(bad)?;
    let conversation_id = conversation.parse::<i64>().ok().filter(|n| *n > 0).ok_or_else(bad)?;
    Ok(HistoryCursor {
        score,
        turn_id,
        conversation_id,
    })
}

/// Runs a search over the workspace `workspace_id` (kernel-tools.md §10).
pub(crate) async fn search(
    reader: &mut impl HistoryReader,
    workspace_id: i64,
    ask: &SearchAsk,
) -> KernelResult<Refused<SearchPage>> {
    let query = ask.query.as_str();
    if query.trim().is_empty() {
        return Ok(parameter("`query` is blank; give the words to search for".into()));
    }
    if query.len() > bounds::HISTORY_QUERY_BYTES {
        return Ok(parameter(format!(
            "`query` is {} bytes; keep it to {} bytes",
            query.len(),
            bounds::HISTORY_QUERY_BYTES
        )));
    }
    let terms = SearchTerm::parse_query(query);
    if terms.is_empty() {
        return Ok(parameter(format!(
            "`query` {query:?} has no letters or digits to search for; give at least one word"
        )));
    }
    let max = bounds::HISTORY_SEARCH_MAX_LIMIT as i64;
    if !(1..=max).contains(&ask.limit) {
        return Ok(parameter(format!(
            "`limit` {} is outside 1 to {max}; pass a limit in that range",
            ask.limit
        )));
    }
    let after = match ask.after.as_deref() {
        None => None,
        Some(a) => match decode_cursor(a) {
            Ok(c) => Some(c),
            Err(refusal) => return Ok(Err(refusal)),
        },
    };
    let hits = reader
        .search(&HistorySearch {
            workspace_id,
            terms: &terms,
            archived: ask.archived,
            include_children: ask.include_auxiliary,
            after,
            limit: ask.limit,
            candidates: bounds::HISTORY_SEARCH_CANDIDATES as i64,
            text_chars: nexus_store::HISTORY_INDEXED_CHARS as i64,
        })
        .await?;
    let next_after = (hits.len() as i64 == ask.limit)
        .then(|| hits.last().map(|h| encode_cursor(h.cursor())))
        .flatten();
    let matches = hits.iter().map(|h| match_of(h, &terms[0])).collect();
    Ok(Ok(SearchPage {
        matches,
        pagination: SearchPagination { next_after },
    }))
}

fn match_of(hit: &HistoryHit, first: &SearchTerm) -> Match {
    let (field, text) = match &hit.turn {
        None => ("title", hit.title.as_deref().unwrap_or("")),
        Some(t) => (
            match t.role {
                TurnRole::User => "prompt",
                TurnRole::Assistant => "content",
            },
            hit.text.as_deref().unwrap_or(""),
        ),
    };
    let (excerpt, mut truncated) = excerpt(text, first);
    // The store hands at most the indexed characters; a text that long may go on.
    if hit.turn.is_some() && text.chars().count() >= nexus_store::HISTORY_INDEXED_CHARS {
        truncated = true;
    }
    Match {
        conversation_public_id: hit.conversation_public_id,
        title: hit.title.clone(),
        turn_public_id: hit.turn.as_ref().map(|t| t.public_id),
        position: hit.turn.as_ref().map(|t| t.position),
        field,
        excerpt,
        truncated,
    }
}

/// At most [`bounds::HISTORY_EXCERPT_CHARS`] characters of `text` around the first word that
/// `term` matches (the start of the text when none does), and whether the text goes beyond.
pub(crate) fn excerpt(text: &str, term: &SearchTerm) -> (String, bool) {
    let width = bounds::HISTORY_EXCERPT_CHARS;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let total = chars.len();
    if total <= width {
        return (text.to_string(), false);
    }
    let (at, len) = first_word(&chars, term).unwrap_or((0, 0));
    let lead = width.saturating_sub(len) / 2;
    let mut start = at.saturating_sub(lead);
    let end = (start + width).min(total);
    start = end.saturating_sub(width);
    let byte = |i: usize| chars.get(i).map_or(text.len(), |(b, _)| *b);
    (text[byte(start)..byte(end)].to_string(), true)
}

/// The character index and length of the first run of letters and digits `term` matches.
fn first_word(chars: &[(usize, char)], term: &SearchTerm) -> Option<(usize, usize)> {
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].1.is_alphanumeric() {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && chars[i].1.is_alphanumeric() {
            i += 1;
        }
        let word: String = chars[start..i].iter().flat_map(|(_, c)| c.to_lowercase()).collect();
        let hit = if term.is_prefix() {
            word.starts_with(term.text())
        } else {
            word == term.text()
        };
        if hit {
            return Some((start, i - start));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(q: &str) -> SearchTerm {
        SearchTerm::parse_query(q).remove(0)
    }

    #[test]
    fn an_excerpt_centres_the_first_matching_word() {
        assert_eq!(
            excerpt("short Deploy text", &term("deploy")),
            ("short Deploy text".into(), false)
        );
        let text = format!("{}Deployment{}", "a ".repeat(400), " b".repeat(400));
        let (cut, truncated) = excerpt(&text, &term("deploy*"));
        assert!(truncated);
        assert_eq!(cut.chars().count(), bounds::HISTORY_EXCERPT_CHARS);
        let at = cut.find("Deployment").unwrap();
        assert!((240..=250).contains(&at), "centred: {at}");
        // No word matches (only a longer one does): the start.
        let (start, _) = excerpt(&text, &term("deploy"));
        assert!(start.starts_with("a a"));
        // Near the end, the window stays full.
        let tail = format!("{}zeta", "é ".repeat(600));
        let (end, _) = excerpt(&tail, &term("ZETA"));
        assert!(end.ends_with("zeta") && end.chars().count() == bounds::HISTORY_EXCERPT_CHARS);
    }

    #[test]
    fn cursors_round_trip_and_refuse_anything_else() {
        let c = HistoryCursor {
            score: 1.25e-7,
            turn_id: 42,
            conversation_id: 7,
        };
        assert_eq!(decode_cursor(&encode_cursor(c)), Ok(c));
        for bad in [
            "",
            "x",
            "3ff0000000000000-1",
            "3ff0000000000000-1-0",
            "7ff0000000000000-1-2",
            "3ff-1-2",
        ] {
            assert!(matches!(decode_cursor(bad), Err(HistoryRefusal::Parameter(_))), "{bad}");
        }
    }
}
