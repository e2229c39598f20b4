//! Conversations and their inputs (migration 0017, runs.md §12), written once for both engines.
//!
//! The writes run in a [`crate::Tx`] (the kernel keeps an idempotency receipt in the same
//! transaction), the reads also on a pool through [`ConversationStore`]. The store keeps rows consistent (the pending-input bound under the
//! conversation's lock, a whole tree archived at once, a delete only of a pending input, the
//! text guard); grammar and eligibility are the kernel's.

use crate::ops::conversations as conv;
use crate::ops::db::{Db, query, query_scalar, uid};
use crate::ops::on_conn;
use crate::{Result, Store, StoreError, check_text, write_error};

use uuid::Uuid;

/// Which conversations a listing shows, by their archive mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchivedFilter {
    /// Live conversations only.
    Exclude,
    /// Live and archived.
    Include,
    /// Archived only.
    Only,
}

/// A stored conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationRow {
    pub id: i64,
    pub public_id: Uuid,
    pub workspace_id: i64,
    pub created_by_id: i64,
    pub answering_member_id: i64,
    pub default_runner_id: Option<i64>,
    pub title: Option<String>,
    pub parent_id: Option<i64>,
    pub spawn_task_id: Option<i64>,
    pub label: Option<String>,
    pub archived_at: Option<i64>,
    pub created_at: i64,
    /// The assistant turn whose hosted run is live (`None`: idle).
    pub running_turn_id: Option<i64>,
    /// The last turn position given (0: no turn yet).
    pub last_position: i64,
    /// While idle and live, the earliest due time of a pending input that may open a turn.
    pub wake_at: Option<i64>,
    /// Where a spawned child's first reply goes (stored JSON; the kernel's type).
    pub reply_route: Option<String>,
}

/// A conversation to insert (the kernel supplies the id and the time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewConversation {
    pub public_id: Uuid,
    pub workspace_id: i64,
    pub created_by_id: i64,
    pub answering_member_id: i64,
    pub default_runner_id: Option<i64>,
    pub title: Option<String>,
    pub parent_id: Option<i64>,
    pub spawn_task_id: Option<i64>,
    pub label: Option<String>,
    pub reply_route: Option<String>,
    pub created_at: i64,
}

/// Who queued an input: a person (`user`) or the kernel's mail (`task_result`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    User,
    TaskResult,
}

impl InputKind {
    pub fn as_str(self) -> &'static str {
        match self {
            InputKind::User => "user",
            InputKind::TaskResult => "task_result",
        }
    }
    pub fn parse(word: &str) -> Option<InputKind> {
        match word {
            "user" => Some(InputKind::User),
            "task_result" => Some(InputKind::TaskResult),
            _ => None,
        }
    }
}

/// An input's state (runs.md §12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputState {
    Pending,
    Steering,
    Consumed,
    Canceled,
}

impl InputState {
    pub fn as_str(self) -> &'static str {
        match self {
            InputState::Pending => "pending",
            InputState::Steering => "steering",
            InputState::Consumed => "consumed",
            InputState::Canceled => "canceled",
        }
    }
    pub fn parse(word: &str) -> Option<InputState> {
        match word {
            "pending" => Some(InputState::Pending),
            "steering" => Some(InputState::Steering),
            "consumed" => Some(InputState::Consumed),
            "canceled" => Some(InputState::Canceled),
            _ => None,
        }
    }
}

/// How an input enters: behind the queue, or into the running reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryMode {
    Queue,
    Steer,
}

impl DeliveryMode {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryMode::Queue => "queue",
            DeliveryMode::Steer => "steer",
        }
    }
    pub fn parse(word: &str) -> Option<DeliveryMode> {
        match word {
            "queue" => Some(DeliveryMode::Queue),
            "steer" => Some(DeliveryMode::Steer),
            _ => None,
        }
    }
}

/// A stored conversation input. `attachments` is the stored JSON array of upload public ids;
/// `tool_names` the stored JSON array of names, when given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputRow {
    pub id: i64,
    pub public_id: Uuid,
    pub conversation_id: i64,
    pub kind: InputKind,
    pub state: InputState,
    pub delivery_mode: DeliveryMode,
    pub content: Option<String>,
    pub attachments: String,
    pub model: Option<String>,
    pub tool_names: Option<String>,
    pub approval_mode: Option<crate::ApprovalMode>,
    pub created_by_id: Option<i64>,
    pub deliver_at: Option<i64>,
    pub created_at: i64,
    /// The turn a steer is bound to, or the turn that consumed the input.
    pub turn_id: Option<i64>,
    /// A mail input's `auto | passive`.
    pub wake: Option<crate::Wake>,
    /// A mail input's idempotency key (unique per conversation).
    pub mail_key: Option<String>,
}

/// An input to queue. `attachment_upload_ids` are the internal ids of the uploads the input
/// binds (their public ids are in `attachments`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewInput {
    pub public_id: Uuid,
    pub conversation_id: i64,
    pub kind: InputKind,
    pub delivery_mode: DeliveryMode,
    pub content: Option<String>,
    pub attachments: String,
    pub attachment_upload_ids: Vec<i64>,
    pub model: Option<String>,
    pub tool_names: Option<String>,
    pub approval_mode: Option<crate::ApprovalMode>,
    pub created_by_id: Option<i64>,
    pub deliver_at: Option<i64>,
    pub created_at: i64,
    /// `Pending`, or `Steering` for a steer bound to the running turn `turn_id`.
    pub state: InputState,
    pub turn_id: Option<i64>,
    pub wake: Option<crate::Wake>,
    pub mail_key: Option<String>,
}

/// One event of a conversation's feed; `data` is the stored JSON object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationEventRow {
    pub sequence: i64,
    pub kind: crate::ConversationEventKind,
    pub at: i64,
    pub data: String,
}

/// What queuing an input did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputInsert {
    /// Stored as `pending`.
    Inserted(InputRow),
    /// A `user` input would pass `bound` pending inputs (kernel mail is never refused).
    Full { bound: i64 },
    /// Mail whose `mail_key` the conversation already holds: that input, unchanged.
    Existing(InputRow),
}

pub(crate) const INSERT_CONVERSATION: &str = "INSERT INTO conversations (public_id, workspace_id, created_by_id, \
     answering_member_id, default_runner_id, title, parent_id, spawn_task_id, label, archived_at, last_event_sequence, \
     created_at, reply_route) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, 0, $10, $11) RETURNING id";
/// A conversation's columns, as every read names them.
macro_rules! conversation_columns {
    () => {
        "id, public_id, workspace_id, created_by_id, answering_member_id, default_runner_id, title, parent_id, \
         spawn_task_id, label, archived_at, created_at, running_turn_id, last_position, wake_at, reply_route"
    };
}
pub(crate) use conversation_columns;
/// Moves the conversation's feed to its next sequence (`$1` conversation) and returns it.
pub(crate) const NEXT_EVENT_SEQUENCE: &str = "UPDATE conversations SET last_event_sequence = last_event_sequence + 1 \
     WHERE id = $1 RETURNING last_event_sequence";
pub(crate) const INSERT_EVENT: &str =
    "INSERT INTO conversation_events (conversation_id, sequence, type, at, data) VALUES ($1, $2, $3, $4, $5)";
pub(crate) const LATEST_EVENT_SEQUENCE: &str = "SELECT last_event_sequence FROM conversations WHERE id = $1";
pub(crate) const EVENTS_AFTER: &str = "SELECT sequence, type, at, data FROM conversation_events \
     WHERE conversation_id = $1 AND sequence > $2 ORDER BY sequence LIMIT CAST($3 AS BIGINT)";
pub(crate) const CONVERSATION_BY_ID: &str =
    concat!("SELECT ", conversation_columns!(), " FROM conversations WHERE id = $1");
pub(crate) const CONVERSATION_BY_PUBLIC_ID: &str = concat!(
    "SELECT ",
    conversation_columns!(),
    " FROM conversations WHERE public_id = $1"
);
/// Top-level conversations of a workspace after a cursor, by archive filter: `$1` workspace,
/// `$2` after id, `$3` limit.
macro_rules! top_level_page {
    ($cond:literal) => {
        concat!(
            "SELECT ",
            conversation_columns!(),
            " FROM conversations ",
            "WHERE workspace_id = $1 AND parent_id IS NULL AND id > $2",
            $cond,
            " ORDER BY id LIMIT CAST($3 AS BIGINT)"
        )
    };
}
pub(crate) const TOP_LEVEL_EXCLUDE: &str = top_level_page!(" AND archived_at IS NULL");
pub(crate) const TOP_LEVEL_INCLUDE: &str = top_level_page!("");
pub(crate) const TOP_LEVEL_ONLY: &str = top_level_page!(" AND archived_at IS NOT NULL");
pub(crate) const CHILDREN: &str = concat!(
    "SELECT ",
    conversation_columns!(),
    " FROM conversations WHERE parent_id = $1 ORDER BY id"
);
/// Marks a conversation and every descendant archived at `$2` (those already archived keep
/// their time), or live again when `$2` is NULL.
pub(crate) const ARCHIVE_TREE: &str = "WITH RECURSIVE tree (id) AS (SELECT id FROM conversations WHERE id = $1 \
     UNION ALL SELECT c.id FROM conversations c JOIN tree t ON c.parent_id = t.id) \
     UPDATE conversations SET archived_at = CASE WHEN $2 IS NULL THEN NULL ELSE COALESCE(archived_at, $2) END \
     WHERE id IN (SELECT id FROM tree)";
pub(crate) const SET_DEFAULT_RUNNER: &str = "UPDATE conversations SET default_runner_id = $2 WHERE id = $1";
pub(crate) const LOCK_CONVERSATION_PG: &str = "SELECT id FROM conversations WHERE id = $1 FOR UPDATE";
pub(crate) const LOCK_CONVERSATION_SQLITE: &str = "SELECT id FROM conversations WHERE id = $1";
pub(crate) const PENDING_USER_INPUTS: &str =
    "SELECT COUNT(*) FROM conversation_inputs WHERE conversation_id = $1 AND state = 'pending' AND kind = 'user'";
pub(crate) const INSERT_INPUT: &str = "INSERT INTO conversation_inputs (public_id, conversation_id, kind, state, \
     delivery_mode, content, attachments, model, tool_names, approval_mode, created_by_id, deliver_at, created_at, \
     turn_id, wake, mail_key) VALUES ($1, $2, $3, $13, $4, $5, $6, $7, $8, $9, $10, $11, $12, $14, $15, $16) RETURNING id";
/// An input's columns, as every read names them.
macro_rules! input_columns {
    () => {
        "id, public_id, conversation_id, kind, state, delivery_mode, content, attachments, model, tool_names, \
         approval_mode, created_by_id, deliver_at, created_at, turn_id, wake, mail_key"
    };
}
pub(crate) use input_columns;
pub(crate) const INPUT_BY_MAIL_KEY: &str = concat!(
    "SELECT ",
    input_columns!(),
    " FROM conversation_inputs WHERE conversation_id = $1 AND mail_key = $2"
);
pub(crate) const INPUT_BY_ID: &str = concat!("SELECT ", input_columns!(), " FROM conversation_inputs WHERE id = $1");
pub(crate) const INPUT_BY_PUBLIC_ID: &str = concat!(
    "SELECT ",
    input_columns!(),
    " FROM conversation_inputs WHERE conversation_id = $1 AND public_id = $2"
);
pub(crate) const INPUT_PAGE: &str = concat!(
    "SELECT ",
    input_columns!(),
    " FROM conversation_inputs WHERE conversation_id = $1 AND id > $2 ORDER BY id LIMIT CAST($3 AS BIGINT)"
);
pub(crate) const CANCEL_PENDING_INPUT: &str =
    "UPDATE conversation_inputs SET state = 'canceled' WHERE id = $1 AND state = 'pending'";
pub(crate) const BIND_UPLOAD_TO_INPUT: &str =
    "INSERT INTO upload_bindings (upload_id, task_id, input_id, created_at) VALUES ($1, NULL, $2, $3)";
pub(crate) const MARK_UPLOAD_BOUND: &str = "UPDATE uploads SET bound_at = $2 WHERE id = $1 AND bound_at IS NULL";

/// The listing text for one archive filter.
pub(crate) fn top_level_page(filter: ArchivedFilter) -> &'static str {
    match filter {
        ArchivedFilter::Exclude => TOP_LEVEL_EXCLUDE,
        ArchivedFilter::Include => TOP_LEVEL_INCLUDE,
        ArchivedFilter::Only => TOP_LEVEL_ONLY,
    }
}

pub(crate) fn conversation(r: &impl crate::row::Columns) -> crate::Result<ConversationRow> {
    Ok(ConversationRow {
        id: r.int("id")?,
        public_id: r.public_id("public_id")?,
        workspace_id: r.int("workspace_id")?,
        created_by_id: r.int("created_by_id")?,
        answering_member_id: r.int("answering_member_id")?,
        default_runner_id: r.opt_int("default_runner_id")?,
        title: r.opt_text("title")?,
        parent_id: r.opt_int("parent_id")?,
        spawn_task_id: r.opt_int("spawn_task_id")?,
        label: r.opt_text("label")?,
        archived_at: r.opt_int("archived_at")?,
        created_at: r.int("created_at")?,
        running_turn_id: r.opt_int("running_turn_id")?,
        last_position: r.int("last_position")?,
        wake_at: r.opt_int("wake_at")?,
        reply_route: r.opt_text("reply_route")?,
    })
}

pub(crate) fn event(r: &impl crate::row::Columns) -> crate::Result<ConversationEventRow> {
    Ok(ConversationEventRow {
        sequence: r.int("sequence")?,
        kind: crate::row::word(
            "conversation_events.type",
            &r.text("type")?,
            crate::ConversationEventKind::parse,
        )?,
        at: r.int("at")?,
        data: r.text("data")?,
    })
}

pub(crate) fn input(r: &impl crate::row::Columns) -> crate::Result<InputRow> {
    use crate::row::word;
    Ok(InputRow {
        id: r.int("id")?,
        public_id: r.public_id("public_id")?,
        conversation_id: r.int("conversation_id")?,
        kind: word("conversation_inputs.kind", &r.text("kind")?, InputKind::parse)?,
        state: word("conversation_inputs.state", &r.text("state")?, InputState::parse)?,
        delivery_mode: word(
            "conversation_inputs.delivery_mode",
            &r.text("delivery_mode")?,
            DeliveryMode::parse,
        )?,
        content: r.opt_text("content")?,
        attachments: r.text("attachments")?,
        model: r.opt_text("model")?,
        tool_names: r.opt_text("tool_names")?,
        approval_mode: crate::row::opt_word(
            "conversation_inputs.approval_mode",
            r.opt_text("approval_mode")?,
            crate::ApprovalMode::from_word,
        )?,
        created_by_id: r.opt_int("created_by_id")?,
        deliver_at: r.opt_int("deliver_at")?,
        created_at: r.int("created_at")?,
        turn_id: r.opt_int("turn_id")?,
        wake: crate::row::opt_word("conversation_inputs.wake", r.opt_text("wake")?, crate::Wake::parse)?,
        mail_key: r.opt_text("mail_key")?,
    })
}

// ---- conversations and inputs (migration 0017) ----

pub(crate) async fn insert_conversation<C: Db>(c: &mut C, new: &NewConversation) -> Result<ConversationRow> {
    for t in [&new.title, &new.label, &new.reply_route].into_iter().flatten() {
        check_text(t)?;
    }
    let id: i64 = query_scalar(conv::INSERT_CONVERSATION)
        .bind(uid(new.public_id))
        .bind(new.workspace_id)
        .bind(new.created_by_id)
        .bind(new.answering_member_id)
        .bind(new.default_runner_id)
        .bind(&new.title)
        .bind(new.parent_id)
        .bind(new.spawn_task_id)
        .bind(&new.label)
        .bind(new.created_at)
        .bind(&new.reply_route)
        .fetch_one(&mut *c)
        .await
        .map_err(write_error)?;
    conversation_by_id(c, id)
        .await?
        .ok_or_else(|| StoreError::NotFound("conversation just inserted".into()))
}

pub(crate) async fn conversation_by_id<C: Db>(c: &mut C, id: i64) -> Result<Option<ConversationRow>> {
    query(conv::CONVERSATION_BY_ID)
        .bind(id)
        .fetch_optional(&mut *c)
        .await?
        .map(|r| conv::conversation(&r))
        .transpose()
}

pub(crate) async fn conversation_by_public_id<C: Db>(
    c: &mut C,
    public_id: uuid::Uuid,
) -> Result<Option<ConversationRow>> {
    query(conv::CONVERSATION_BY_PUBLIC_ID)
        .bind(uid(public_id))
        .fetch_optional(&mut *c)
        .await?
        .map(|r| conv::conversation(&r))
        .transpose()
}

pub(crate) async fn top_level_conversations<C: Db>(
    c: &mut C,
    workspace_id: i64,
    filter: ArchivedFilter,
    after_id: i64,
    limit: i64,
) -> Result<Vec<ConversationRow>> {
    let text = conv::top_level_page(filter);
    let rows = query(text)
        .bind(workspace_id)
        .bind(after_id)
        .bind(limit)
        .fetch_all(&mut *c)
        .await?;
    rows.iter().map(conv::conversation).collect()
}

pub(crate) async fn conversation_children<C: Db>(c: &mut C, parent_id: i64) -> Result<Vec<ConversationRow>> {
    let rows = query(conv::CHILDREN).bind(parent_id).fetch_all(&mut *c).await?;
    rows.iter().map(conv::conversation).collect()
}

/// Archives (`Some(at)`) or unarchives (`None`) a conversation and all its descendants;
/// returns how many rows it touched.
pub(crate) async fn archive_conversation_tree<C: Db>(c: &mut C, id: i64, at: Option<i64>) -> Result<u64> {
    let done = query(conv::ARCHIVE_TREE)
        .bind(id)
        .bind(at)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(done.rows_affected())
}

pub(crate) async fn set_conversation_default_runner<C: Db>(c: &mut C, id: i64, runner_id: Option<i64>) -> Result<bool> {
    let done = query(conv::SET_DEFAULT_RUNNER)
        .bind(id)
        .bind(runner_id)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(done.rows_affected() > 0)
}

/// Queues an input (`pending`, or `steering` bound to a turn) under the conversation's
/// lock, binding its attachments; a `user` input is refused past `bound` pending `user`
/// inputs; mail whose key is already held answers that input.
pub(crate) async fn insert_input<C: Db>(c: &mut C, new: &NewInput, bound: i64) -> Result<InputInsert> {
    for t in [&new.content, &new.model, &new.tool_names].into_iter().flatten() {
        check_text(t)?;
    }
    check_text(&new.attachments)?;
    query(C::LOCK_CONVERSATION)
        .bind(new.conversation_id)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    if let Some(key) = &new.mail_key {
        check_text(key)?;
        let existing = query(conv::INPUT_BY_MAIL_KEY)
            .bind(new.conversation_id)
            .bind(key)
            .fetch_optional(&mut *c)
            .await?;
        if let Some(row) = existing {
            return Ok(InputInsert::Existing(conv::input(&row)?));
        }
    }
    if new.kind == crate::ops::conversations::InputKind::User {
        let pending: i64 = query_scalar(conv::PENDING_USER_INPUTS)
            .bind(new.conversation_id)
            .fetch_one(&mut *c)
            .await?;
        if pending >= bound {
            return Ok(InputInsert::Full { bound });
        }
    }
    let id: i64 = query_scalar(conv::INSERT_INPUT)
        .bind(uid(new.public_id))
        .bind(new.conversation_id)
        .bind(new.kind.as_str())
        .bind(new.delivery_mode.as_str())
        .bind(&new.content)
        .bind(&new.attachments)
        .bind(&new.model)
        .bind(&new.tool_names)
        .bind(new.approval_mode.map(crate::ApprovalMode::as_str))
        .bind(new.created_by_id)
        .bind(new.deliver_at)
        .bind(new.created_at)
        .bind(new.state.as_str())
        .bind(new.turn_id)
        .bind(new.wake)
        .bind(&new.mail_key)
        .fetch_one(&mut *c)
        .await
        .map_err(write_error)?;
    for upload_id in &new.attachment_upload_ids {
        query(conv::BIND_UPLOAD_TO_INPUT)
            .bind(*upload_id)
            .bind(id)
            .bind(new.created_at)
            .execute(&mut *c)
            .await
            .map_err(write_error)?;
        query(conv::MARK_UPLOAD_BOUND)
            .bind(*upload_id)
            .bind(new.created_at)
            .execute(&mut *c)
            .await
            .map_err(write_error)?;
    }
    let row = query(conv::INPUT_BY_ID).bind(id).fetch_one(&mut *c).await?;
    Ok(InputInsert::Inserted(conv::input(&row)?))
}

pub(crate) async fn input_by_public_id<C: Db>(
    c: &mut C,
    conversation_id: i64,
    public_id: uuid::Uuid,
) -> Result<Option<InputRow>> {
    query(conv::INPUT_BY_PUBLIC_ID)
        .bind(conversation_id)
        .bind(uid(public_id))
        .fetch_optional(&mut *c)
        .await?
        .map(|r| conv::input(&r))
        .transpose()
}

pub(crate) async fn conversation_inputs<C: Db>(
    c: &mut C,
    conversation_id: i64,
    after_id: i64,
    limit: i64,
) -> Result<Vec<InputRow>> {
    let rows = query(conv::INPUT_PAGE)
        .bind(conversation_id)
        .bind(after_id)
        .bind(limit)
        .fetch_all(&mut *c)
        .await?;
    rows.iter().map(conv::input).collect()
}

/// Appends an event at the conversation's next sequence (moving its
/// `last_event_sequence`); returns the sequence.
pub(crate) async fn append_conversation_event<C: Db>(
    c: &mut C,
    conversation_id: i64,
    kind: crate::ConversationEventKind,
    at: i64,
    data: &str,
) -> Result<i64> {
    check_text(data)?;
    let sequence: i64 = query_scalar(conv::NEXT_EVENT_SEQUENCE)
        .bind(conversation_id)
        .fetch_optional(&mut *c)
        .await
        .map_err(write_error)?
        .ok_or_else(|| StoreError::NotFound(format!("conversation {conversation_id}")))?;
    query(conv::INSERT_EVENT)
        .bind(conversation_id)
        .bind(sequence)
        .bind(kind)
        .bind(at)
        .bind(data)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(sequence)
}

pub(crate) async fn conversation_events<C: Db>(
    c: &mut C,
    conversation_id: i64,
    after_sequence: i64,
    limit: i64,
) -> Result<Vec<crate::ops::conversations::ConversationEventRow>> {
    let rows = query(conv::EVENTS_AFTER)
        .bind(conversation_id)
        .bind(after_sequence)
        .bind(limit)
        .fetch_all(&mut *c)
        .await?;
    rows.iter().map(conv::event).collect()
}

pub(crate) async fn latest_conversation_event_sequence<C: Db>(c: &mut C, conversation_id: i64) -> Result<i64> {
    let s: Option<i64> = query_scalar(conv::LATEST_EVENT_SEQUENCE)
        .bind(conversation_id)
        .fetch_optional(&mut *c)
        .await?;
    s.ok_or_else(|| StoreError::NotFound(format!("conversation {conversation_id}")))
}

/// `pending → canceled`; false when the input was not pending.
pub(crate) async fn cancel_pending_input<C: Db>(c: &mut C, id: i64) -> Result<bool> {
    let done = query(conv::CANCEL_PENDING_INPUT)
        .bind(id)
        .execute(&mut *c)
        .await
        .map_err(write_error)?;
    Ok(done.rows_affected() > 0)
}

/// The conversations operations on the store (see `crate::ops`).
#[allow(async_fn_in_trait)]
pub trait ConversationStore {
    /// The conversation with this internal id.
    async fn conversation_by_id(&self, id: i64) -> Result<Option<ConversationRow>>;
    /// The conversation with this public id.
    async fn conversation_by_public_id(&self, public_id: Uuid) -> Result<Option<ConversationRow>>;
    /// A page of the workspace's top-level conversations (no parent), ids ascending after
    /// `after_id`, filtered by their archive mark.
    async fn top_level_conversations(
        &self,
        workspace_id: i64,
        filter: ArchivedFilter,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<ConversationRow>>;
    /// The direct children of a conversation, ids ascending.
    async fn conversation_children(&self, parent_id: i64) -> Result<Vec<ConversationRow>>;
    /// A page of a conversation's feed, sequences ascending after `after_sequence`.
    async fn conversation_events(
        &self,
        conversation_id: i64,
        after_sequence: i64,
        limit: i64,
    ) -> Result<Vec<ConversationEventRow>>;
    /// `conversations.last_event_sequence` (0 before the first event); `NotFound` for no such
    /// conversation.
    async fn latest_conversation_event_sequence(&self, conversation_id: i64) -> Result<i64>;
    /// A page of a conversation's inputs, ids ascending after `after_id`.
    async fn conversation_inputs(&self, conversation_id: i64, after_id: i64, limit: i64) -> Result<Vec<InputRow>>;
}

impl ConversationStore for Store {
    async fn conversation_by_id(&self, id: i64) -> Result<Option<crate::ops::conversations::ConversationRow>> {
        on_conn!(self, read, |c| conversation_by_id(c, id))
    }
    async fn conversation_by_public_id(
        &self,
        public_id: Uuid,
    ) -> Result<Option<crate::ops::conversations::ConversationRow>> {
        on_conn!(self, read, |c| conversation_by_public_id(c, public_id))
    }
    async fn top_level_conversations(
        &self,
        workspace_id: i64,
        filter: crate::ops::conversations::ArchivedFilter,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<crate::ops::conversations::ConversationRow>> {
        on_conn!(self, read, |c| top_level_conversations(
            c,
            workspace_id,
            filter,
            after_id,
            limit,
        ))
    }
    async fn conversation_children(&self, parent_id: i64) -> Result<Vec<crate::ops::conversations::ConversationRow>> {
        on_conn!(self, read, |c| conversation_children(c, parent_id))
    }
    async fn conversation_events(
        &self,
        conversation_id: i64,
        after_sequence: i64,
        limit: i64,
    ) -> Result<Vec<crate::ops::conversations::ConversationEventRow>> {
        on_conn!(self, read, |c| conversation_events(
            c,
            conversation_id,
            after_sequence,
            limit,
        ))
    }
    async fn latest_conversation_event_sequence(&self, conversation_id: i64) -> Result<i64> {
        on_conn!(self, read, |c| latest_conversation_event_sequence(c, conversation_id))
    }
    async fn conversation_inputs(
        &self,
        conversation_id: i64,
        after_id: i64,
        limit: i64,
    ) -> Result<Vec<crate::ops::conversations::InputRow>> {
        on_conn!(self, read, |c| conversation_inputs(c, conversation_id, after_id, limit))
    }
}
