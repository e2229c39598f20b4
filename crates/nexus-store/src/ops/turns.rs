//! Turns and the conversation state that drives them (migration 0018, runs.md §12), written
//! once for both engines.
//!
//! The store keeps the rows consistent: positions given under the conversation's lock, a turn
//! ended once (a conditional update from `running`), an input consumed once, the materialized
//! `wake_at` recomputed by one statement wherever inputs or the running turn change. Which
//! input opens a turn, what a turn holds and when it ends are the kernel's.

use crate::ops::all::*;
use crate::ops::db::{Db, query, query_scalar, uid};
use crate::ops::on_conn;
use crate::row;
use crate::{Result, Store, StoreError, check_text, write_error};

use uuid::Uuid;

/// A turn's role on the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnRole {
    User,
    Assistant,
}

impl TurnRole {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnRole::User => "user",
            TurnRole::Assistant => "assistant",
        }
    }
    pub fn parse(word: &str) -> Option<TurnRole> {
        match word {
            "user" => Some(TurnRole::User),
            "assistant" => Some(TurnRole::Assistant),
            _ => None,
        }
    }
}

/// A turn's status: a user turn is born `completed`; an assistant turn runs with its hosted
/// run and ends with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnStatus {
    Running,
    Completed,
    Failed,
    Canceled,
}

impl TurnStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnStatus::Running => "running",
            TurnStatus::Completed => "completed",
            TurnStatus::Failed => "failed",
            TurnStatus::Canceled => "canceled",
        }
    }
    pub fn parse(word: &str) -> Option<TurnStatus> {
        match word {
            "running" => Some(TurnStatus::Running),
            "completed" => Some(TurnStatus::Completed),
            "failed" => Some(TurnStatus::Failed),
            "canceled" => Some(TurnStatus::Canceled),
            _ => None,
        }
    }
}

/// A stored turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnRow {
    pub id: i64,
    pub public_id: Uuid,
    pub conversation_id: i64,
    pub position: i64,
    pub role: TurnRole,
    pub status: TurnStatus,
    /// The input a user turn records.
    pub input_id: Option<i64>,
    /// The run hosting an assistant turn.
    pub run_id: Option<i64>,
    /// A user turn's text, or an assistant turn's reply once it ends.
    pub content: Option<String>,
    pub error_key: Option<String>,
    /// How many history entries preceded the prompt in the turn's first request.
    pub replay_from: Option<i64>,
    /// The mainline round whose reply ended the turn.
    pub final_task_id: Option<i64>,
    pub created_at: i64,
    pub ended_at: Option<i64>,
}

/// A turn to insert: the store gives it the conversation's next position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTurn {
    pub public_id: Uuid,
    pub conversation_id: i64,
    pub role: TurnRole,
    pub status: TurnStatus,
    pub input_id: Option<i64>,
    pub run_id: Option<i64>,
    pub content: Option<String>,
    pub error_key: Option<String>,
    pub created_at: i64,
}

/// How a running turn ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnEnd {
    pub status: TurnStatus,
    pub content: Option<String>,
    pub error_key: Option<String>,
    pub final_task_id: Option<i64>,
    pub at: i64,
}

macro_rules! turn_columns {
    () => {
        "id, public_id, conversation_id, position, role, status, input_id, run_id, content, error_key, replay_from, \
         final_task_id, created_at, ended_at"
    };
}

pub(crate) const NEXT_POSITION: &str =
    "UPDATE conversations SET last_position = last_position + 1 WHERE id = $1 RETURNING last_position";
pub(crate) const INSERT_TURN: &str = "INSERT INTO turns (public_id, conversation_id, position, role, status, \
     input_id, run_id, content, error_key, created_at, ended_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, CASE WHEN $5 = 'running' THEN NULL ELSE $10 END) RETURNING id";
pub(crate) const TURN_BY_ID: &str = concat!("SELECT ", turn_columns!(), " FROM turns WHERE id = $1");
pub(crate) const TURN_BY_PUBLIC_ID: &str = concat!(
    "SELECT ",
    turn_columns!(),
    " FROM turns WHERE conversation_id = $1 AND public_id = $2"
);
pub(crate) const TURN_OF_RUN: &str = concat!("SELECT ", turn_columns!(), " FROM turns WHERE run_id = $1");
pub(crate) const TURNS_AFTER: &str = concat!(
    "SELECT ",
    turn_columns!(),
    " FROM turns WHERE conversation_id = $1 AND position > $2 ORDER BY position LIMIT CAST($3 AS BIGINT)"
);
pub(crate) const TURNS_BEFORE: &str = concat!(
    "SELECT ",
    turn_columns!(),
    " FROM turns WHERE conversation_id = $1 AND position < $2 ORDER BY position DESC LIMIT CAST($3 AS BIGINT)"
);
pub(crate) const LAST_REPLY: &str = concat!(
    "SELECT ",
    turn_columns!(),
    " FROM turns WHERE conversation_id = $1 AND role = 'assistant' AND status <> 'running' \
     ORDER BY position DESC LIMIT 1"
);
/// The round the next turn's history starts from: the final round of the latest ended assistant
/// turn that left a sealed request to replay (a turn failed at birth, or one that ended before
/// its first round was sent, left none).
pub(crate) const HISTORY_ROUND: &str = "SELECT t.final_task_id FROM turns t JOIN tasks k ON k.id = t.final_task_id \
     WHERE t.conversation_id = $1 AND t.role = 'assistant' AND t.status <> 'running' AND EXISTS \
     (SELECT 1 FROM sealed_requests s WHERE s.task_id = k.id AND s.generation = k.generation) \
     ORDER BY t.position DESC LIMIT 1";
pub(crate) const END_TURN: &str = "UPDATE turns SET status = $2, content = $3, error_key = $4, ended_at = $5, \
     final_task_id = $6 WHERE id = $1 AND status = 'running'";
pub(crate) const SET_REPLAY_FROM: &str = "UPDATE turns SET replay_from = $2 WHERE run_id = $1 AND replay_from IS NULL";
pub(crate) const SET_RUNNING_TURN: &str = "UPDATE conversations SET running_turn_id = $2 WHERE id = $1";
/// Recomputes `wake_at` (migration 0018's comment says what it holds).
pub(crate) const REFRESH_WAKE: &str = "UPDATE conversations SET wake_at = CASE \
     WHEN running_turn_id IS NULL AND archived_at IS NULL THEN (SELECT MIN(COALESCE(i.deliver_at, i.created_at)) \
     FROM conversation_inputs i WHERE i.conversation_id = conversations.id AND i.state = 'pending' \
     AND (i.wake IS NULL OR i.wake = 'auto')) ELSE NULL END WHERE id = $1";
pub(crate) const DUE_CONVERSATIONS: &str =
    "SELECT id FROM conversations WHERE wake_at <= $1 ORDER BY wake_at, id LIMIT CAST($2 AS BIGINT)";
/// The head of the queue: the earliest due pending input that may open a turn.
pub(crate) const HEAD_INPUT: &str = concat!(
    "SELECT ",
    crate::ops::conversations::input_columns!(),
    " FROM conversation_inputs WHERE conversation_id = $1 AND state = 'pending' \
     AND (wake IS NULL OR wake = 'auto') AND COALESCE(deliver_at, created_at) <= $2 \
     ORDER BY COALESCE(deliver_at, created_at), id LIMIT 1"
);
/// What rides along with a turn: due mail (either wake) and due passive inputs.
pub(crate) const DUE_MAIL: &str = concat!(
    "SELECT ",
    crate::ops::conversations::input_columns!(),
    " FROM conversation_inputs WHERE conversation_id = $1 AND state = 'pending' \
     AND (kind = 'task_result' OR wake = 'passive') AND COALESCE(deliver_at, created_at) <= $2 ORDER BY id"
);
pub(crate) const STEERS_OF_TURN: &str = concat!(
    "SELECT ",
    crate::ops::conversations::input_columns!(),
    " FROM conversation_inputs WHERE turn_id = $1 AND state = 'steering' ORDER BY id"
);
pub(crate) const CONSUME_INPUT: &str = "UPDATE conversation_inputs SET state = 'consumed', turn_id = $2 \
     WHERE id = $1 AND (state = 'pending' OR state = 'steering')";
pub(crate) const RELEASE_STEERS: &str =
    "UPDATE conversation_inputs SET state = 'pending', turn_id = NULL WHERE turn_id = $1 AND state = 'steering'";
pub(crate) const PENDING_INPUTS: &str =
    "SELECT COUNT(*) FROM conversation_inputs WHERE conversation_id = $1 AND state = 'pending'";
pub(crate) const CHILD_BY_LABEL: &str = concat!(
    "SELECT ",
    crate::ops::conversations::conversation_columns!(),
    " FROM conversations WHERE parent_id = $1 AND label = $2"
);
pub(crate) const CHILDREN_OF_RUN: &str = concat!(
    "SELECT ",
    crate::ops::conversations::conversation_columns!(),
    " FROM conversations WHERE spawn_task_id IN (SELECT id FROM tasks WHERE run_id = $1) ORDER BY id"
);
pub(crate) const CHILD_OF_SPAWN: &str = concat!(
    "SELECT ",
    crate::ops::conversations::conversation_columns!(),
    " FROM conversations WHERE spawn_task_id = $1"
);

pub(crate) fn turn(r: &impl crate::row::Columns) -> crate::Result<TurnRow> {
    use crate::row::word;
    Ok(TurnRow {
        id: r.int("id")?,
        public_id: r.public_id("public_id")?,
        conversation_id: r.int("conversation_id")?,
        position: r.int("position")?,
        role: word("turns.role", &r.text("role")?, TurnRole::parse)?,
        status: word("turns.status", &r.text("status")?, TurnStatus::parse)?,
        input_id: r.opt_int("input_id")?,
        run_id: r.opt_int("run_id")?,
        content: r.opt_text("content")?,
        error_key: r.opt_text("error_key")?,
        replay_from: r.opt_int("replay_from")?,
        final_task_id: r.opt_int("final_task_id")?,
        created_at: r.int("created_at")?,
        ended_at: r.opt_int("ended_at")?,
    })
}

// ---- turns (migration 0018) ----

/// Inserts a turn at the conversation's next position.
pub(crate) async fn insert_turn<C: Db>(c: &mut C, new: &NewTurn) -> Result<TurnRow> {
    if let Some(t) = &new.content {
        check_text(t)?;
    }
    let position: i64 = query_scalar(crate::ops::turns::NEXT_POSITION)
        .bind(new.conversation_id)
        .fetch_one(&mut *c)
        .await
        .map_err(write_error)?;
    let id: i64 = query_scalar(crate::ops::turns::INSERT_TURN)
        .bind(uid(new.public_id))
        .bind(new.conversation_id)
        .bind(position)
        .bind(new.role.as_str())
        .bind(new.status.as_str())
        .bind(new.input_id)
        .bind(new.run_id)
        .bind(&new.content)
        .bind(&new.error_key)
        .bind(new.created_at)
        .fetch_one(&mut *c)
        .await
        .map_err(write_error)?;
    turn_by_id(c, id)
        .await?
        .ok_or_else(|| StoreError::NotFound("turn just inserted".into()))
}

pub(crate) async fn turn_by_id<C: Db>(c: &mut C, id: i64) -> Result<Option<TurnRow>> {
    query(crate::ops::turns::TURN_BY_ID)
        .bind(id)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| crate::ops::turns::turn(&r))
        .transpose()
}

pub(crate) async fn turn_by_public_id<C: Db>(
    c: &mut C,
    conversation_id: i64,
    public_id: uuid::Uuid,
) -> Result<Option<TurnRow>> {
    query(crate::ops::turns::TURN_BY_PUBLIC_ID)
        .bind(conversation_id)
        .bind(uid(public_id))
        .fetch_optional(&mut *c)
        .await?
        .map(|r| crate::ops::turns::turn(&r))
        .transpose()
}

pub(crate) async fn turn_of_run<C: Db>(c: &mut C, run_id: i64) -> Result<Option<TurnRow>> {
    query(crate::ops::turns::TURN_OF_RUN)
        .bind(run_id)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| crate::ops::turns::turn(&r))
        .transpose()
}

/// Turns after `position`, ascending (`newest_first`: before `position`, descending).
pub(crate) async fn turns_page<C: Db>(
    c: &mut C,
    conversation_id: i64,
    position: i64,
    limit: i64,
    newest_first: bool,
) -> Result<Vec<TurnRow>> {
    let text = if newest_first {
        crate::ops::turns::TURNS_BEFORE
    } else {
        crate::ops::turns::TURNS_AFTER
    };
    let rows = query(text)
        .bind(conversation_id)
        .bind(position)
        .bind(limit)
        .fetch_all(&mut *c)
        .await?;
    rows.iter().map(crate::ops::turns::turn).collect()
}

pub(crate) async fn last_reply<C: Db>(c: &mut C, conversation_id: i64) -> Result<Option<TurnRow>> {
    query(crate::ops::turns::LAST_REPLY)
        .bind(conversation_id)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| crate::ops::turns::turn(&r))
        .transpose()
}

pub(crate) async fn history_round<C: Db>(c: &mut C, conversation_id: i64) -> Result<Option<i64>> {
    Ok(query_scalar(crate::ops::turns::HISTORY_ROUND)
        .bind(conversation_id)
        .fetch_optional(&mut *c)
        .await?)
}

/// `running → end.status`; false when the turn had already ended.
pub(crate) async fn end_turn<C: Db>(c: &mut C, id: i64, end: &TurnEnd) -> Result<bool> {
    if let Some(t) = &end.content {
        check_text(t)?;
    }
    let done = query(crate::ops::turns::END_TURN)
        .bind(id)
        .bind(end.status.as_str())
        .bind(&end.content)
        .bind(&end.error_key)
        .bind(end.at)
        .bind(end.final_task_id)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(done.rows_affected() > 0)
}

/// Records the history length before the prompt of the turn a run hosts (first write wins).
pub(crate) async fn set_replay_from<C: Db>(c: &mut C, run_id: i64, entries: i64) -> Result<()> {
    query(crate::ops::turns::SET_REPLAY_FROM)
        .bind(run_id)
        .bind(entries)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(())
}

/// Sets or clears the running turn, then recomputes `wake_at`.
pub(crate) async fn set_running_turn<C: Db>(c: &mut C, conversation_id: i64, turn_id: Option<i64>) -> Result<()> {
    query(crate::ops::turns::SET_RUNNING_TURN)
        .bind(conversation_id)
        .bind(turn_id)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    refresh_wake(c, conversation_id).await
}

pub(crate) async fn refresh_wake<C: Db>(c: &mut C, conversation_id: i64) -> Result<()> {
    query(crate::ops::turns::REFRESH_WAKE)
        .bind(conversation_id)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(())
}

pub(crate) async fn due_conversations<C: Db>(c: &mut C, now: i64, limit: i64) -> Result<Vec<i64>> {
    let rows = query(crate::ops::turns::DUE_CONVERSATIONS)
        .bind(now)
        .bind(limit)
        .fetch_all(&mut *c)
        .await?;
    rows.iter().map(|r| row::Columns::int(r, "id")).collect()
}

/// The conversation row locked for the unit of work.
pub(crate) async fn lock_conversation<C: Db>(
    c: &mut C,
    id: i64,
) -> Result<Option<crate::ops::conversations::ConversationRow>> {
    query(C::LOCK_CONVERSATION)
        .bind(id)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    conversation_by_id(c, id).await
}

async fn inputs_of<C: Db>(
    c: &mut C,
    text: &'static str,
    key: i64,
    now: Option<i64>,
) -> Result<Vec<crate::ops::conversations::InputRow>> {
    let q = query(text).bind(key);
    let q = match now {
        Some(now) => q.bind(now),
        None => q,
    };
    let rows = q.fetch_all(&mut *c).await?;
    rows.iter().map(crate::ops::conversations::input).collect()
}

pub(crate) async fn head_input<C: Db>(
    c: &mut C,
    conversation_id: i64,
    now: i64,
) -> Result<Option<crate::ops::conversations::InputRow>> {
    Ok(inputs_of(c, crate::ops::turns::HEAD_INPUT, conversation_id, Some(now))
        .await?
        .pop())
}

pub(crate) async fn due_mail<C: Db>(
    c: &mut C,
    conversation_id: i64,
    now: i64,
) -> Result<Vec<crate::ops::conversations::InputRow>> {
    inputs_of(c, crate::ops::turns::DUE_MAIL, conversation_id, Some(now)).await
}

pub(crate) async fn steers_of_turn<C: Db>(c: &mut C, turn_id: i64) -> Result<Vec<crate::ops::conversations::InputRow>> {
    inputs_of(c, crate::ops::turns::STEERS_OF_TURN, turn_id, None).await
}

/// `pending | steering → consumed` by `turn_id`; false when it was neither.
pub(crate) async fn consume_input<C: Db>(c: &mut C, id: i64, turn_id: i64) -> Result<bool> {
    let done = query(crate::ops::turns::CONSUME_INPUT)
        .bind(id)
        .bind(turn_id)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(done.rows_affected() > 0)
}

/// The steers still bound to `turn_id` fall back to the queue (`pending`).
pub(crate) async fn release_steers<C: Db>(c: &mut C, turn_id: i64) -> Result<u64> {
    let done = query(crate::ops::turns::RELEASE_STEERS)
        .bind(turn_id)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(done.rows_affected())
}

pub(crate) async fn pending_input_count<C: Db>(c: &mut C, conversation_id: i64) -> Result<i64> {
    Ok(query_scalar(crate::ops::turns::PENDING_INPUTS)
        .bind(conversation_id)
        .fetch_one(&mut *c)
        .await?)
}

pub(crate) async fn child_by_label<C: Db>(
    c: &mut C,
    parent_id: i64,
    label: &str,
) -> Result<Option<crate::ops::conversations::ConversationRow>> {
    query(crate::ops::turns::CHILD_BY_LABEL)
        .bind(parent_id)
        .bind(label)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| crate::ops::conversations::conversation(&r))
        .transpose()
}

/// The child conversations spawned by the tasks of a run.
pub(crate) async fn children_of_run<C: Db>(
    c: &mut C,
    run_id: i64,
) -> Result<Vec<crate::ops::conversations::ConversationRow>> {
    let rows = query(crate::ops::turns::CHILDREN_OF_RUN)
        .bind(run_id)
        .fetch_all(&mut *c)
        .await?;
    rows.iter().map(crate::ops::conversations::conversation).collect()
}

/// The child conversation a spawn call created.
pub(crate) async fn child_of_spawn<C: Db>(
    c: &mut C,
    task_id: i64,
) -> Result<Option<crate::ops::conversations::ConversationRow>> {
    query(crate::ops::turns::CHILD_OF_SPAWN)
        .bind(task_id)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| crate::ops::conversations::conversation(&r))
        .transpose()
}

/// The turns operations on the store (see `crate::ops`).
#[allow(async_fn_in_trait)]
pub trait TurnStore {
    async fn turn_by_public_id(&self, conversation_id: i64, public_id: Uuid) -> Result<Option<TurnRow>>;
    /// The assistant turn a run hosts.
    async fn turn_of_run(&self, run_id: i64) -> Result<Option<TurnRow>>;
    /// Turns after `position` ascending, or (`newest_first`) before it descending.
    async fn turns_page(
        &self,
        conversation_id: i64,
        position: i64,
        limit: i64,
        newest_first: bool,
    ) -> Result<Vec<TurnRow>>;
    /// The latest ended assistant turn.
    async fn last_reply(&self, conversation_id: i64) -> Result<Option<TurnRow>>;
    /// The round a new turn's history starts from: the final round of the latest ended
    /// assistant turn that has a sealed request (turns that left none are passed over).
    async fn history_round(&self, conversation_id: i64) -> Result<Option<i64>>;
    /// Conversations whose `wake_at` has come, earliest first.
    async fn due_conversations(&self, now: i64, limit: i64) -> Result<Vec<i64>>;
    /// How many inputs of the conversation are `pending`.
    async fn pending_input_count(&self, conversation_id: i64) -> Result<i64>;
    /// The child of `parent_id` with this label.
    async fn child_by_label(&self, parent_id: i64, label: &str) -> Result<Option<ConversationRow>>;
    async fn turn_by_id(&self, id: i64) -> Result<Option<TurnRow>>;
    /// The steers bound to a turn and not yet delivered, oldest first.
    async fn steers_of_turn(&self, turn_id: i64) -> Result<Vec<InputRow>>;
}

impl TurnStore for Store {
    async fn turn_by_public_id(
        &self,
        conversation_id: i64,
        public_id: Uuid,
    ) -> Result<Option<crate::ops::turns::TurnRow>> {
        on_conn!(self, read, |c| turn_by_public_id(c, conversation_id, public_id))
    }
    async fn turn_of_run(&self, run_id: i64) -> Result<Option<crate::ops::turns::TurnRow>> {
        on_conn!(self, read, |c| turn_of_run(c, run_id))
    }
    async fn turns_page(
        &self,
        conversation_id: i64,
        position: i64,
        limit: i64,
        newest_first: bool,
    ) -> Result<Vec<crate::ops::turns::TurnRow>> {
        on_conn!(self, read, |c| turns_page(
            c,
            conversation_id,
            position,
            limit,
            newest_first,
        ))
    }
    async fn last_reply(&self, conversation_id: i64) -> Result<Option<crate::ops::turns::TurnRow>> {
        on_conn!(self, read, |c| last_reply(c, conversation_id))
    }
    async fn history_round(&self, conversation_id: i64) -> Result<Option<i64>> {
        on_conn!(self, read, |c| history_round(c, conversation_id))
    }
    async fn due_conversations(&self, now: i64, limit: i64) -> Result<Vec<i64>> {
        on_conn!(self, read, |c| due_conversations(c, now, limit))
    }
    async fn pending_input_count(&self, conversation_id: i64) -> Result<i64> {
        on_conn!(self, read, |c| pending_input_count(c, conversation_id))
    }
    async fn child_by_label(
        &self,
        parent_id: i64,
        label: &str,
    ) -> Result<Option<crate::ops::conversations::ConversationRow>> {
        on_conn!(self, read, |c| child_by_label(c, parent_id, label))
    }
    async fn turn_by_id(&self, id: i64) -> Result<Option<crate::ops::turns::TurnRow>> {
        on_conn!(self, read, |c| turn_by_id(c, id))
    }
    async fn steers_of_turn(&self, turn_id: i64) -> Result<Vec<crate::ops::conversations::InputRow>> {
        on_conn!(self, read, |c| steers_of_turn(c, turn_id))
    }
}
