//! Read-only summaries for list pages (the console's runs and conversations lists), written
//! once for both engines: one statement per page, over the ids of the page's rows.
//!
//! The ids travel as one TEXT parameter, a JSON array of integers (`[3,7,9]`), which each
//! dialect unnests (`json_each` on SQLite, `jsonb_array_elements_text` on PostgreSQL), so the
//! statement is prepared once whatever the page's length. Token sums read each round's `usage`
//! JSON with the dialect's JSON operator.

use crate::ops::db::{Db, query};
use crate::ops::on_conn;
use crate::{Result, Store};

/// The per-run aggregate of [`crate::SummaryStore::run_summaries`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSummaryRow {
    pub run_id: i64,
    /// Model rounds, every branch and generation's row counted once.
    pub rounds: i64,
    /// Tool tasks.
    pub tool_calls: i64,
    /// Tool tasks held for approval (`needs_approval`).
    pub held_for_approval: i64,
    /// Tool tasks dispatched to a runner and not settled (`dispatched`).
    pub waiting_on_runner: i64,
    /// Await tasks waiting on a child or an input (`awaiting_input`).
    pub waiting_on_child: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// The first round's `provider/model`.
    pub model: Option<String>,
    /// The first round's prompt, cut to [`SUMMARY_PROMPT_CHARS`] characters.
    pub prompt: Option<String>,
    /// The hosting conversation's title and the hosted turn's position, for a turn's run.
    pub conversation_title: Option<String>,
    pub turn_position: Option<i64>,
}

/// The per-conversation aggregate of [`crate::SummaryStore::conversation_summaries`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConversationSummaryRow {
    pub conversation_id: i64,
    pub turn_count: i64,
    /// The newest turn's end (else its creation), epoch ms.
    pub last_activity_at: Option<i64>,
    /// The newest turn's text that has text, cut to [`SUMMARY_PROMPT_CHARS`] characters.
    pub last_text: Option<String>,
    /// That turn's role.
    pub last_role: Option<crate::TurnRole>,
}

/// The characters of a prompt or a turn's text a summary carries.
pub const SUMMARY_PROMPT_CHARS: i64 = 240;

macro_rules! run_summaries_sql {
    ($ids:literal, $input:literal, $output:literal, $model:literal, $prompt:literal) => {
        concat!(
            "WITH s AS (SELECT t.run_id, \
             CAST(SUM(CASE WHEN t.kind = 'model_task' THEN 1 ELSE 0 END) AS BIGINT) AS rounds, \
             CAST(SUM(CASE WHEN t.kind = 'tool_task' THEN 1 ELSE 0 END) AS BIGINT) AS tool_calls, \
             CAST(SUM(CASE WHEN t.status = 'needs_approval' THEN 1 ELSE 0 END) AS BIGINT) AS held, \
             CAST(SUM(CASE WHEN t.status = 'dispatched' THEN 1 ELSE 0 END) AS BIGINT) AS on_runner, \
             CAST(SUM(CASE WHEN t.status = 'awaiting_input' THEN 1 ELSE 0 END) AS BIGINT) AS awaiting, \
             CAST(SUM(CASE WHEN t.kind = 'model_task' AND t.usage IS NOT NULL THEN ",
            $input,
            " ELSE 0 END) AS BIGINT) AS input_tokens, \
             CAST(SUM(CASE WHEN t.kind = 'model_task' AND t.usage IS NOT NULL THEN ",
            $output,
            " ELSE 0 END) AS BIGINT) AS output_tokens, \
             MIN(CASE WHEN t.kind = 'model_task' THEN t.id END) AS first_round \
             FROM tasks t WHERE t.run_id IN (",
            $ids,
            ") GROUP BY t.run_id) \
             SELECT s.run_id, s.rounds, s.tool_calls, s.held, s.on_runner, s.awaiting, \
             s.input_tokens, s.output_tokens, ",
            $model,
            " AS model, substr(",
            $prompt,
            ", 1, CAST($2 AS INTEGER)) AS prompt, \
             (SELECT c.title FROM turns tu JOIN conversations c ON c.id = tu.conversation_id \
              WHERE tu.run_id = s.run_id ORDER BY tu.id LIMIT 1) AS conversation_title, \
             (SELECT tu.position FROM turns tu WHERE tu.run_id = s.run_id ORDER BY tu.id LIMIT 1) AS turn_position \
             FROM s LEFT JOIN tasks f ON f.id = s.first_round \
             LEFT JOIN frozen_contexts fc ON fc.digest = f.frozen_digest"
        )
    };
}

/// SQLite: `$1` the run ids as a JSON array, `$2` the prompt's characters.
pub(crate) const RUN_SUMMARIES_SQLITE: &str = run_summaries_sql!(
    "SELECT value FROM json_each($1)",
    "COALESCE(json_extract(t.usage, '$.input_tokens'), 0)",
    "COALESCE(json_extract(t.usage, '$.output_tokens'), 0)",
    "json_extract(f.request_surface, '$.model')",
    "json_extract(fc.body, '$.prompt')"
);

/// PostgreSQL: as [`RUN_SUMMARIES_SQLITE`].
pub(crate) const RUN_SUMMARIES_PG: &str = run_summaries_sql!(
    "SELECT CAST(value AS BIGINT) FROM jsonb_array_elements_text(CAST($1 AS jsonb))",
    "COALESCE(CAST(CAST(t.usage AS jsonb) ->> 'input_tokens' AS BIGINT), 0)",
    "COALESCE(CAST(CAST(t.usage AS jsonb) ->> 'output_tokens' AS BIGINT), 0)",
    "CAST(f.request_surface AS jsonb) ->> 'model'",
    "CAST(fc.body AS jsonb) ->> 'prompt'"
);

macro_rules! conversation_summaries_sql {
    ($ids:literal) => {
        concat!(
            "SELECT c.id AS conversation_id, \
             (SELECT CAST(COUNT(*) AS BIGINT) FROM turns t WHERE t.conversation_id = c.id) AS turn_count, \
             (SELECT MAX(COALESCE(t.ended_at, t.created_at)) FROM turns t WHERE t.conversation_id = c.id) AS last_activity_at, \
             substr(l.content, 1, CAST($2 AS INTEGER)) AS last_text, l.role AS last_role \
             FROM conversations c LEFT JOIN turns l ON l.id = (SELECT t.id FROM turns t \
             WHERE t.conversation_id = c.id AND t.content IS NOT NULL ORDER BY t.position DESC LIMIT 1) \
             WHERE c.id IN (",
            $ids,
            ")"
        )
    };
}

/// SQLite: `$1` the conversation ids as a JSON array, `$2` the text's characters. The last
/// activity is the latest turn end (else start); the last message is the newest turn with text
/// (a reply still running, or one that failed, has none).
pub(crate) const CONVERSATION_SUMMARIES_SQLITE: &str = conversation_summaries_sql!("SELECT value FROM json_each($1)");
/// PostgreSQL: as [`CONVERSATION_SUMMARIES_SQLITE`].
pub(crate) const CONVERSATION_SUMMARIES_PG: &str =
    conversation_summaries_sql!("SELECT CAST(value AS BIGINT) FROM jsonb_array_elements_text(CAST($1 AS jsonb))");

/// The ids as the statements bind them: a JSON array.
pub(crate) fn id_list(ids: &[i64]) -> String {
    let items: Vec<String> = ids.iter().map(i64::to_string).collect();
    format!("[{}]", items.join(","))
}

pub(crate) fn run_summary(r: &impl crate::row::Columns) -> crate::Result<RunSummaryRow> {
    Ok(RunSummaryRow {
        run_id: r.int("run_id")?,
        rounds: r.int("rounds")?,
        tool_calls: r.int("tool_calls")?,
        held_for_approval: r.int("held")?,
        waiting_on_runner: r.int("on_runner")?,
        waiting_on_child: r.int("awaiting")?,
        input_tokens: r.int("input_tokens")?,
        output_tokens: r.int("output_tokens")?,
        model: r.opt_text("model")?,
        prompt: r.opt_text("prompt")?,
        conversation_title: r.opt_text("conversation_title")?,
        turn_position: r.opt_int("turn_position")?,
    })
}

pub(crate) fn conversation_summary(r: &impl crate::row::Columns) -> crate::Result<ConversationSummaryRow> {
    Ok(ConversationSummaryRow {
        conversation_id: r.int("conversation_id")?,
        turn_count: r.int("turn_count")?,
        last_activity_at: r.opt_int("last_activity_at")?,
        last_text: r.opt_text("last_text")?,
        last_role: crate::row::opt_word("turns.role", r.opt_text("last_role")?, crate::TurnRole::parse)?,
    })
}

// ---- list summaries (read only) ----

pub(crate) async fn run_summaries<C: Db>(c: &mut C, run_ids: &[i64]) -> Result<Vec<RunSummaryRow>> {
    if run_ids.is_empty() {
        return Ok(Vec::new());
    }
    query(C::RUN_SUMMARIES)
        .bind(crate::ops::summaries::id_list(run_ids))
        .bind(crate::ops::summaries::SUMMARY_PROMPT_CHARS)
        .fetch_all_as(&mut *c, |r| crate::ops::summaries::run_summary(r))
        .await
}

pub(crate) async fn conversation_summaries<C: Db>(
    c: &mut C,
    conversation_ids: &[i64],
) -> Result<Vec<ConversationSummaryRow>> {
    if conversation_ids.is_empty() {
        return Ok(Vec::new());
    }
    query(C::CONVERSATION_SUMMARIES)
        .bind(crate::ops::summaries::id_list(conversation_ids))
        .bind(crate::ops::summaries::SUMMARY_PROMPT_CHARS)
        .fetch_all_as(&mut *c, |r| crate::ops::summaries::conversation_summary(r))
        .await
}

/// The summaries operations on the store (see `crate::ops`).
#[allow(async_fn_in_trait)]
pub trait SummaryStore {
    /// One summary per run of `run_ids` that has tasks (`GET W/runs`; one read for a page).
    async fn run_summaries(&self, run_ids: &[i64]) -> Result<Vec<RunSummaryRow>>;
    /// One summary per conversation of `conversation_ids` (`GET W/conversations`).
    async fn conversation_summaries(&self, conversation_ids: &[i64]) -> Result<Vec<ConversationSummaryRow>>;
}

impl SummaryStore for Store {
    async fn run_summaries(&self, run_ids: &[i64]) -> Result<Vec<crate::ops::summaries::RunSummaryRow>> {
        on_conn!(self, read, |c| run_summaries(c, run_ids))
    }
    async fn conversation_summaries(
        &self,
        conversation_ids: &[i64],
    ) -> Result<Vec<crate::ops::summaries::ConversationSummaryRow>> {
        on_conn!(self, read, |c| conversation_summaries(c, conversation_ids))
    }
}
