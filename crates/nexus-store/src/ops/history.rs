//! Conversation history (migration 0019, kernel-tools.md §10), written once for both engines:
//! the ranked full-text search over conversation titles and turn text, and the bounded turn
//! windows `session_read` serves.
//!
//! **Matching.** A query is a list of [`SearchTerm`]s, each a maximal run of letters and digits
//! (Rust's `char::is_alphanumeric`), lowercased; a term written with a trailing `*` and at least
//! [`PREFIX_MIN_CHARS`] characters matches as a prefix. A field matches when every term occurs in
//! it as a word. Both engines split the stored text into words at every character that is not a
//! letter or a digit (SQLite's `unicode61` tokenizer; on PostgreSQL the ASCII punctuation is
//! turned into spaces before the `simple` parser, so `deploy.sh` and `deploy-sh` are two words on
//! both) and fold case. Only the first [`INDEXED_CHARS`] characters of a field are indexed.
//!
//! **Ranking.** The candidates are the newest `candidates` matching turns and the newest
//! `candidates` matching titles (by id) of the workspace, after the archive and child filters;
//! they are ranked by `-bm25()` on SQLite and `ts_rank()` on PostgreSQL (higher is better; the
//! two scales differ), ties broken by descending turn id (a title, which has none, counts as 0)
//! and then descending conversation id. A page is a keyset on that order ([`HistoryCursor`]).

use uuid::Uuid;

use crate::ops::conversations::ArchivedFilter;
use crate::ops::db::{Db, query, query_scalar, uid};
use crate::ops::on_conn;
use crate::ops::turns::TurnRole;
use crate::{Result, Store, StoreError};

/// The characters of a field the full-text index holds (migration 0019 writes the number in
/// both dialects; a store test holds them to it).
pub const INDEXED_CHARS: usize = 65_536;
/// The shortest term a trailing `*` makes a prefix; a shorter one matches as a whole word.
pub const PREFIX_MIN_CHARS: usize = 3;

/// One term of a history search: letters and digits only, lowercased (see the module docs).
/// Built only by [`SearchTerm::parse_query`], so a term never carries query syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchTerm {
    text: String,
    prefix: bool,
}

impl SearchTerm {
    /// The terms of a query: each whitespace-separated word splits into its runs of letters and
    /// digits; a word ending in `*` makes its last run a prefix (when it has at least
    /// [`PREFIX_MIN_CHARS`] characters). Empty when the query has no letter or digit.
    pub fn parse_query(query: &str) -> Vec<SearchTerm> {
        let mut terms = Vec::new();
        for word in query.split_whitespace() {
            let starred = word.ends_with('*');
            let first = terms.len();
            for run in word.split(|c: char| !c.is_alphanumeric()).filter(|r| !r.is_empty()) {
                terms.push(SearchTerm {
                    text: run.to_lowercase(),
                    prefix: false,
                });
            }
            if starred
                && terms.len() > first
                && let Some(last) = terms.last_mut()
            {
                last.prefix = last.text.chars().count() >= PREFIX_MIN_CHARS;
            }
        }
        terms
    }

    /// The lowercased letters and digits.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the term matches any word it begins.
    pub fn is_prefix(&self) -> bool {
        self.prefix
    }

    /// The FTS5 query: each term a quoted phrase (`"term"`, `"term"*` for a prefix), joined
    /// by FTS5's implicit AND.
    pub(crate) fn fts5_query(terms: &[SearchTerm]) -> String {
        let mut out = String::new();
        for t in terms {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push('"');
            out.push_str(&t.text.replace('"', "\"\""));
            out.push('"');
            if t.prefix {
                out.push('*');
            }
        }
        out
    }

    /// The `to_tsquery` text: each term a quoted lexeme (`'term'`, `'term':*` for a prefix),
    /// joined by `&`.
    pub(crate) fn tsquery(terms: &[SearchTerm]) -> String {
        let mut out = String::new();
        for t in terms {
            if !out.is_empty() {
                out.push_str(" & ");
            }
            out.push('\'');
            out.push_str(&t.text.replace('\\', "\\\\").replace('\'', "''"));
            out.push('\'');
            if t.prefix {
                out.push_str(":*");
            }
        }
        out
    }
}

/// Where a search page ends: the last hit's score, turn id (0 for a title) and conversation
/// id. The next page holds the hits after it in the ranked order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HistoryCursor {
    pub score: f64,
    pub turn_id: i64,
    pub conversation_id: i64,
}

/// A history search (see the module docs for matching and ranking).
#[derive(Debug, Clone)]
pub struct HistorySearch<'a> {
    pub workspace_id: i64,
    /// Non-empty (an empty list matches nothing and is refused by the store).
    pub terms: &'a [SearchTerm],
    pub archived: ArchivedFilter,
    /// Whether child conversations are searched.
    pub include_children: bool,
    pub after: Option<HistoryCursor>,
    pub limit: i64,
    /// The newest matching turns, and titles, that are ranked.
    pub candidates: i64,
    /// How many characters of a matching turn's text each hit carries.
    pub text_chars: i64,
}

/// The turn of a turn hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HitTurn {
    pub id: i64,
    pub public_id: Uuid,
    pub position: i64,
    pub role: TurnRole,
}

/// One ranked match: a conversation title (`turn` is `None`) or a turn's text.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryHit {
    /// Higher is better (the engine's own scale).
    pub score: f64,
    pub conversation_id: i64,
    pub conversation_public_id: Uuid,
    pub title: Option<String>,
    pub turn: Option<HitTurn>,
    /// A turn hit's text, its first `text_chars` characters.
    pub text: Option<String>,
}

impl HistoryHit {
    /// The cursor that continues after this hit.
    pub fn cursor(&self) -> HistoryCursor {
        HistoryCursor {
            score: self.score,
            turn_id: self.turn.as_ref().map_or(0, |t| t.id),
            conversation_id: self.conversation_id,
        }
    }
}

/// A turn as `session_read` shows it, its text cut to the characters asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryTurn {
    pub id: i64,
    pub public_id: Uuid,
    pub position: i64,
    pub role: TurnRole,
    pub created_at: i64,
    /// The user turn's text or the assistant turn's reply (none while it runs), cut.
    pub text: Option<String>,
}

/// The archive and child filters over `c`, the candidates' conversation: `$2` workspace, `$3`
/// children (1: included), `$4` archive mode (0 exclude, 1 include, 2 only).
macro_rules! history_filters {
    () => {
        " AND c.workspace_id = $2 AND (CAST($3 AS BIGINT) = 1 OR c.parent_id IS NULL) \
         AND ((CAST($4 AS BIGINT) = 0 AND c.archived_at IS NULL) OR CAST($4 AS BIGINT) = 1 \
         OR (CAST($4 AS BIGINT) = 2 AND c.archived_at IS NOT NULL))"
    };
}

/// The page over the ranked candidates `hits (turn_id, conversation_id, score)`: `$7`–`$9` the
/// cursor (score, turn id, conversation id; `+∞` for the first page), `$10` limit; then the
/// page's rows, and only theirs, read with `$6` characters of their text.
macro_rules! history_page {
    () => {
        ", page AS (SELECT turn_id, conversation_id, score FROM hits \
         WHERE score < $7 OR (score = $7 AND (turn_id < $8 OR (turn_id = $8 AND conversation_id < $9))) \
         ORDER BY score DESC, turn_id DESC, conversation_id DESC LIMIT CAST($10 AS BIGINT)) \
         SELECT p.turn_id, p.conversation_id, p.score, c.public_id AS conversation_public_id, c.title, \
         t.public_id AS turn_public_id, t.position, t.role, substr(t.content, 1, CAST($6 AS INTEGER)) AS content \
         FROM page p JOIN conversations c ON c.id = p.conversation_id LEFT JOIN turns t ON t.id = p.turn_id \
         ORDER BY p.score DESC, p.turn_id DESC, p.conversation_id DESC"
    };
}

/// SQLite: `$1` is an FTS5 query. `CROSS JOIN` keeps the FTS5 table the outer loop, so it
/// yields its matches newest first and stops at `$5` candidates, and `bm25()` scores only those.
pub(crate) const SEARCH_SQLITE: &str = concat!(
    "WITH turn_hits AS (SELECT turns_fts.rowid AS turn_id, t.conversation_id AS conversation_id, \
     -bm25(turns_fts) AS score FROM turns_fts CROSS JOIN turns t ON t.id = turns_fts.rowid \
     CROSS JOIN conversations c ON c.id = t.conversation_id WHERE turns_fts MATCH $1",
    history_filters!(),
    " ORDER BY turns_fts.rowid DESC LIMIT CAST($5 AS BIGINT)), \
     title_hits AS (SELECT 0 AS turn_id, conversations_fts.rowid AS conversation_id, \
     -bm25(conversations_fts) AS score FROM conversations_fts \
     CROSS JOIN conversations c ON c.id = conversations_fts.rowid WHERE conversations_fts MATCH $1",
    history_filters!(),
    " ORDER BY conversations_fts.rowid DESC LIMIT CAST($5 AS BIGINT)), \
     hits AS MATERIALIZED (SELECT turn_id, conversation_id, score FROM turn_hits \
     UNION ALL SELECT turn_id, conversation_id, score FROM title_hits)",
    history_page!()
);

/// PostgreSQL: `$1` is a `to_tsquery` text. The candidates come from `nexus_turn_candidates`
/// (migration 0021), which picks the cheaper way to the newest `$5` matches of `turns_fts` (a
/// walk of the primary key newest first, or the GIN index's bitmap over the newest ids) from
/// the planner's estimate, in the same round trip; `ts_rank` then reads the chosen vectors
/// only, once each (`hits` is materialized). (Ranking inside the function, as the rows are
/// read, was measured slower: the candidates' sort then carries their vectors.)
pub(crate) const SEARCH_PG: &str = concat!(
    "WITH turn_hits AS (SELECT s.turn_id, s.conversation_id, \
     CAST(ts_rank(f.document, to_tsquery('simple', $1)) AS DOUBLE PRECISION) AS score \
     FROM nexus_turn_candidates($1, $2, CAST($3 AS BIGINT) = 1, CAST($4 AS INTEGER), CAST($5 AS INTEGER)) s \
     JOIN turns_fts f ON f.turn_id = s.turn_id), \
     title_hits AS (SELECT CAST(0 AS BIGINT) AS turn_id, s.id AS conversation_id, \
     CAST(ts_rank(nexus_fts_document(s.title), to_tsquery('simple', $1)) AS DOUBLE PRECISION) AS score \
     FROM (SELECT c.id, c.title FROM conversations c \
     WHERE nexus_fts_document(c.title) @@ to_tsquery('simple', $1)",
    history_filters!(),
    " ORDER BY c.id DESC LIMIT CAST($5 AS BIGINT)) s), \
     hits AS MATERIALIZED (SELECT turn_id, conversation_id, score FROM turn_hits \
     UNION ALL SELECT turn_id, conversation_id, score FROM title_hits)",
    history_page!()
);

macro_rules! history_turn_columns {
    () => {
        "id, public_id, position, role, created_at, substr(content, 1, CAST($4 AS INTEGER)) AS content"
    };
}

/// Turns after position `$2`, ascending (`$3` limit, `$4` characters of text).
pub(crate) const HISTORY_AFTER: &str = concat!(
    "SELECT ",
    history_turn_columns!(),
    " FROM turns WHERE conversation_id = $1 AND position > $2 ORDER BY position LIMIT CAST($3 AS BIGINT)"
);
/// Turns before position `$2`, descending.
pub(crate) const HISTORY_BEFORE: &str = concat!(
    "SELECT ",
    history_turn_columns!(),
    " FROM turns WHERE conversation_id = $1 AND position < $2 ORDER BY position DESC LIMIT CAST($3 AS BIGINT)"
);
pub(crate) const TURN_POSITION: &str = "SELECT position FROM turns WHERE conversation_id = $1 AND public_id = $2";

/// The archive mode as `history_filters!` binds it.
pub(crate) fn archived_mode(filter: ArchivedFilter) -> i64 {
    match filter {
        ArchivedFilter::Exclude => 0,
        ArchivedFilter::Include => 1,
        ArchivedFilter::Only => 2,
    }
}

fn hit(r: &impl crate::row::Columns) -> Result<HistoryHit> {
    use crate::row::word;
    let turn_id = r.int("turn_id")?;
    let turn = if turn_id == 0 {
        None
    } else {
        Some(HitTurn {
            id: turn_id,
            public_id: r.public_id("turn_public_id")?,
            position: r.int("position")?,
            role: word("turns.role", &r.text("role")?, TurnRole::parse)?,
        })
    };
    Ok(HistoryHit {
        score: r.float("score")?,
        conversation_id: r.int("conversation_id")?,
        conversation_public_id: r.public_id("conversation_public_id")?,
        title: r.opt_text("title")?,
        text: if turn.is_some() { r.opt_text("content")? } else { None },
        turn,
    })
}

fn history_turn(r: &impl crate::row::Columns) -> Result<HistoryTurn> {
    use crate::row::word;
    Ok(HistoryTurn {
        id: r.int("id")?,
        public_id: r.public_id("public_id")?,
        position: r.int("position")?,
        role: word("turns.role", &r.text("role")?, TurnRole::parse)?,
        created_at: r.int("created_at")?,
        text: r.opt_text("content")?,
    })
}

/// The history reads, on the store's read pool.
#[allow(async_fn_in_trait)]
pub trait HistoryStore {
    /// One page of a ranked history search (the module docs of `ops/history.rs`).
    async fn search_history(&self, search: &HistorySearch<'_>) -> Result<Vec<HistoryHit>>;
    /// Turns after `position` ascending (`newest_first`: before it, descending), each text cut
    /// to `chars` characters.
    async fn history_turns(
        &self,
        conversation_id: i64,
        position: i64,
        limit: i64,
        newest_first: bool,
        chars: i64,
    ) -> Result<Vec<HistoryTurn>>;
    /// The position of the conversation's turn `public_id`.
    async fn turn_position(&self, conversation_id: i64, public_id: Uuid) -> Result<Option<i64>>;
}

impl HistoryStore for Store {
    async fn search_history(&self, search: &HistorySearch<'_>) -> Result<Vec<HistoryHit>> {
        on_conn!(self, read, |c| search_history(c, search))
    }
    async fn history_turns(
        &self,
        conversation_id: i64,
        position: i64,
        limit: i64,
        newest_first: bool,
        chars: i64,
    ) -> Result<Vec<HistoryTurn>> {
        on_conn!(self, read, |c| history_turns(
            c,
            conversation_id,
            position,
            limit,
            newest_first,
            chars
        ))
    }
    async fn turn_position(&self, conversation_id: i64, public_id: Uuid) -> Result<Option<i64>> {
        on_conn!(self, read, |c| turn_position(c, conversation_id, public_id))
    }
}

/// One page of a ranked history search (module docs).
pub(crate) async fn search_history<C: Db>(c: &mut C, s: &HistorySearch<'_>) -> Result<Vec<HistoryHit>> {
    if s.terms.is_empty() {
        return Err(StoreError::Config("a history search needs at least one term".into()));
    }
    let after = s.after.unwrap_or(HistoryCursor {
        score: f64::INFINITY,
        turn_id: 0,
        conversation_id: 0,
    });
    // Not kept prepared: PostgreSQL then plans each search for its terms (the titles' match,
    // and the candidates' own choice inside `nexus_turn_candidates`).
    let expression = C::search_query(s.terms);
    let rows = query(C::SEARCH_HISTORY)
        .persistent(false)
        .bind(expression)
        .bind(s.workspace_id)
        .bind(i64::from(s.include_children))
        .bind(archived_mode(s.archived))
        .bind(s.candidates)
        .bind(s.text_chars)
        .bind(after.score)
        .bind(after.turn_id)
        .bind(after.conversation_id)
        .bind(s.limit)
        .fetch_all(&mut *c)
        .await?;
    rows.iter().map(hit).collect()
}

/// Turns after `position` ascending (`newest_first`: before it, descending), each text cut to
/// `chars` characters.
pub(crate) async fn history_turns<C: Db>(
    c: &mut C,
    conversation_id: i64,
    position: i64,
    limit: i64,
    newest_first: bool,
    chars: i64,
) -> Result<Vec<HistoryTurn>> {
    let text = if newest_first { HISTORY_BEFORE } else { HISTORY_AFTER };
    let rows = query(text)
        .bind(conversation_id)
        .bind(position)
        .bind(limit)
        .bind(chars)
        .fetch_all(&mut *c)
        .await?;
    rows.iter().map(history_turn).collect()
}

/// The position of the conversation's turn `public_id`.
pub(crate) async fn turn_position<C: Db>(c: &mut C, conversation_id: i64, public_id: Uuid) -> Result<Option<i64>> {
    Ok(query_scalar(TURN_POSITION)
        .bind(conversation_id)
        .bind(uid(public_id))
        .fetch_optional(&mut *c)
        .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(terms: &[SearchTerm]) -> Vec<(&str, bool)> {
        terms.iter().map(|t| (t.text(), t.is_prefix())).collect()
    }

    #[test]
    fn terms_are_runs_of_letters_and_digits() {
        let terms = SearchTerm::parse_query("  Deploy.sh  to PROD-eu*  naïve café_2 ");
        assert_eq!(
            words(&terms),
            vec![
                ("deploy", false),
                ("sh", false),
                ("to", false),
                ("prod", false),
                ("eu", false),
                ("naïve", false),
                ("café", false),
                ("2", false)
            ]
        );
        assert_eq!(
            words(&SearchTerm::parse_query("deplo* x*")),
            vec![("deplo", true), ("x", false)]
        );
        assert!(SearchTerm::parse_query(" ?! -- ").is_empty());
        assert_eq!(words(&SearchTerm::parse_query("*")), Vec::<(&str, bool)>::new());
    }

    #[test]
    fn each_dialect_quotes_every_term() {
        let terms = SearchTerm::parse_query("Deploy notes*");
        assert_eq!(SearchTerm::fts5_query(&terms), r#""deploy" "notes"*"#);
        assert_eq!(SearchTerm::tsquery(&terms), "'deploy' & 'notes':*");
    }
}
