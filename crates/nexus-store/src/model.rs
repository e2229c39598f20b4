//! Row types the store hands to the kernel. Internal ids are `i64`; public ids are UUIDv7;
//! timestamps are Unix milliseconds; JSON columns are `String` holding the stored bytes
//! (member order kept, never `jsonb`).

pub use nexus_core::approval::{ApprovalRules, Mode as ApprovalMode, Origin};
use uuid::Uuid;

mod status;
pub use status::{
    ConversationEventKind, EdgeKind, EventKind, ExecutorKind, ExecutorStatus, FailureResolution, JobKind, MemberRole,
    OnFailure, RunStatus, TaskKind, TaskStatus, Visibility, Wake,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberKind {
    Human,
    Agent,
}

impl MemberKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MemberKind::Human => "human",
            MemberKind::Agent => "agent",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "human" => Some(Self::Human),
            "agent" => Some(Self::Agent),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plane {
    Member,
    ExecutorTransport,
}

impl Plane {
    pub fn as_str(self) -> &'static str {
        match self {
            Plane::Member => "member",
            Plane::ExecutorTransport => "executor_transport",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "member" => Some(Self::Member),
            "executor_transport" => Some(Self::ExecutorTransport),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Standing {
    Read,
    Write,
}

impl Standing {
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::Read => "read",
            Standing::Write => "write",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "read" => Some(Self::Read),
            "write" => Some(Self::Write),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssignmentScope {
    UserPrivate,
    AccountWide,
}

impl AssignmentScope {
    pub fn as_str(self) -> &'static str {
        match self {
            AssignmentScope::UserPrivate => "user_private",
            AssignmentScope::AccountWide => "account_wide",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "user_private" => Some(Self::UserPrivate),
            "account_wide" => Some(Self::AccountWide),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountRow {
    pub id: i64,
    pub public_id: Uuid,
    pub handle: String,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceRow {
    pub id: i64,
    pub public_id: Uuid,
    pub account_id: i64,
    pub handle: String,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberRow {
    pub id: i64,
    pub public_id: Uuid,
    pub account_id: i64,
    pub kind: MemberKind,
    /// Unique per account.
    pub handle: String,
    pub display_name: String,
    pub role: MemberRole,
    /// For an agent: its controlling human.
    pub steward_id: Option<i64>,
    /// The agent profile configuration as stored JSON text (agents only).
    pub configuration: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutorRow {
    pub id: i64,
    pub public_id: Uuid,
    pub account_id: i64,
    pub kind: ExecutorKind,
    pub status: ExecutorStatus,
    /// For a runner, also its registration identifier (`--name`).
    pub display_name: String,
    pub credential_epoch: i64,
    pub assignment_scope: AssignmentScope,
    pub manager_id: Option<i64>,
    pub agent_id: Option<i64>,
    /// Stored announcement JSON: a list (sorted by name).
    pub served_tools: String,
    /// Stored announcement JSON: an object.
    pub environment: String,
    /// Stored announcement JSON: a list (sorted by name).
    pub served_documents: String,
    pub last_seen_at: Option<i64>,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialRow {
    pub id: i64,
    pub public_id: Uuid,
    pub plane: Plane,
    pub member_id: Option<i64>,
    pub executor_id: Option<i64>,
    /// The executor epoch the credential was minted at (0 for member credentials).
    pub epoch: i64,
    /// Lowercase hex SHA-256 of the secret. The secret itself is never stored.
    pub secret_sha256: String,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub created_at: i64,
}

#[derive(Debug, Clone)]
pub struct NewMember {
    pub public_id: Uuid,
    pub account_id: i64,
    pub kind: MemberKind,
    pub handle: String,
    pub display_name: String,
    pub role: MemberRole,
    pub steward_id: Option<i64>,
    /// For an agent: the public id of the agent_application executor created with it.
    pub agent_executor_public_id: Option<Uuid>,
    pub now: i64,
}

#[derive(Debug, Clone)]
pub struct NewRunner {
    pub public_id: Uuid,
    pub account_id: i64,
    pub display_name: String,
    pub assignment_scope: AssignmentScope,
    pub manager_id: i64,
    pub now: i64,
}

#[derive(Debug, Clone)]
pub struct NewCredential {
    pub public_id: Uuid,
    pub plane: Plane,
    pub member_id: Option<i64>,
    pub executor_id: Option<i64>,
    pub epoch: i64,
    pub secret_sha256: String,
    pub expires_at: Option<i64>,
    pub now: i64,
}

/// A stored announcement, written whole (executor.md §4).
#[derive(Debug, Clone)]
pub struct Announcement {
    pub served_tools: String,
    pub environment: String,
    pub served_documents: String,
}

// ---- runs (migration 0002) ----
//
// Every word with a fixed set is an enum stored as its word ([`RunStatus`], [`TaskStatus`],
// [`TaskKind`], [`ApprovalMode`], [`Origin`], [`OnFailure`], [`Visibility`], [`EdgeKind`]);
// one read back that no variant has is a corrupt row. The approval rules are held parsed
// ([`ApprovalRules`]): a stored list that does not parse is a corrupt row too. JSON columns
// hold the stored text.

/// How many statuses one conditional task update may expect (there are 11 task statuses).
pub const MAX_EXPECTED_STATUSES: usize = 12;

/// The statuses of an executor's inbox rows ([`crate::TaskStore::inbox_page`]): a runner's
/// dispatched tool call, an approval held for a person, an await for input. The partial index
/// `tasks_inbox_open` and the page's statement name exactly these.
pub const INBOX_STATUSES: [TaskStatus; 3] = [
    TaskStatus::Dispatched,
    TaskStatus::NeedsApproval,
    TaskStatus::AwaitingInput,
];

/// A run as the executor doors find it ([`crate::RunStore::run_in_account`]): the row, its
/// workspace's public id, and the standing its creator holds there now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInAccount {
    pub run: RunRow,
    pub workspace_public_id: Uuid,
    /// `None` when the creator is no longer a member of the workspace.
    pub creator_standing: Option<Standing>,
}

/// A row of `runs`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunRow {
    pub id: i64,
    pub public_id: Uuid,
    pub workspace_id: i64,
    /// The member who created the run.
    pub created_by_id: i64,
    pub answering_member_id: i64,
    pub declaring_agent_id: Option<i64>,
    pub status: RunStatus,
    pub hosting: Hosting,
    pub approval_mode: ApprovalMode,
    /// The run's rules (stored as their JSON text), when it has any.
    pub approval_rules: Option<ApprovalRules>,
    pub default_runner_id: Option<i64>,
    pub deliverable_task_id: Option<i64>,
    /// The count of authored envelopes.
    pub revision: i64,
    /// JSON `{reason, task_key}` or null.
    pub attention: Option<String>,
    /// The sequence of the run's latest event (0 before the first). Only
    /// [`crate::Tx::append_event`] moves it (on SQLite the unit of work writes it once for its
    /// appends, `tx.rs`); [`crate::Tx::update_run`] never takes it from the row it is given.
    pub last_event_sequence: i64,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub ended_at: Option<i64>,
}

/// What hosts a run (runs.md §1 `hosting`): nothing, or a conversation's turn. Stored as its
/// JSON (`{"kind":"standalone"}`, `{"kind":"conversation","conversation_public_id":…,
/// "turn_public_id":…}`) and served as stored; a column that does not read as one of these is a
/// corrupt row, never "standalone".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Hosting {
    #[default]
    Standalone,
    Conversation {
        conversation_public_id: Uuid,
        turn_public_id: Uuid,
    },
}

impl Hosting {
    /// The stored column text.
    pub fn to_text(&self) -> String {
        // A unit variant or two UUIDs: serializing cannot fail.
        serde_json::to_string(self).expect("a hosting serializes")
    }

    /// The hosting a stored column holds; `None` for any other text.
    pub fn parse(text: &str) -> Option<Self> {
        serde_json::from_str(text).ok()
    }
}

/// A new run. `deliverable_task_id` and `attention` start null, `last_event_sequence` 0.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub public_id: Uuid,
    pub workspace_id: i64,
    pub created_by_id: i64,
    pub answering_member_id: i64,
    pub declaring_agent_id: Option<i64>,
    pub status: RunStatus,
    pub hosting: Hosting,
    pub approval_mode: ApprovalMode,
    pub approval_rules: Option<ApprovalRules>,
    pub default_runner_id: Option<i64>,
    pub revision: i64,
    pub created_at: i64,
    pub started_at: Option<i64>,
}

/// A row of `tasks`: every column. JSON columns hold the stored text.
///
/// [`crate::Tx::update_task`] writes every column except the identity (`id`, `run_id`, `key`,
/// `kind`, `origin`, `created_at`) and `frozen_context`, which only the insert writes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskRow {
    pub id: i64,
    pub run_id: i64,
    pub key: String,
    pub kind: TaskKind,
    pub status: TaskStatus,
    pub generation: i64,
    pub origin: Origin,
    pub on_failure: OnFailure,
    /// How a failure was accepted (not a status).
    pub failure_resolution: Option<FailureResolution>,
    pub visibility: Visibility,
    pub mainline: bool,
    /// The `delegate_task` call key a branch round belongs to.
    pub branch_of: Option<String>,
    /// The key of the row this one pairs with.
    pub pairs_with: Option<String>,
    pub declaring_task_id: Option<i64>,
    pub tool_name: Option<String>,
    pub tool_alias: Option<String>,
    /// JSON object.
    pub tool_input: Option<String>,
    pub tool_call_id: Option<String>,
    pub target_executor_id: Option<i64>,
    pub addressed_executor_id: Option<i64>,
    pub addressed_role: Option<ExecutorKind>,
    /// JSON: the five-key effect profile.
    pub effect_profile: Option<String>,
    pub timeout_ms: Option<i64>,
    pub await_started_at: Option<i64>,
    /// Materialized `await_started_at + effective timeout`.
    pub deadline_at: Option<i64>,
    pub claim_token: Option<String>,
    pub claimed_at: Option<i64>,
    pub claimant_id: Option<i64>,
    /// JSON: the MCP-shaped content list.
    pub content: Option<String>,
    pub structured_present: bool,
    /// JSON.
    pub structured_content: Option<String>,
    pub is_error: bool,
    pub title: Option<String>,
    /// JSON.
    pub metadata: Option<String>,
    pub error_key: Option<String>,
    pub error_detail: Option<String>,
    /// JSON: `{origin, decided_by, decided_at}`.
    pub approval: Option<String>,
    /// JSON, model tasks: prompt, instructions, model, tool_definitions, environment, skills,
    /// memory… Written once, at insert. Stored once per distinct content (`frozen_contexts`,
    /// migration 0014), under the row's `frozen_digest`.
    pub frozen_context: Option<String>,
    /// JSON.
    pub request_surface: Option<String>,
    /// JSON.
    pub usage: Option<String>,
    /// JSON: the model's assistant entry (text + tool_calls).
    pub reply: Option<String>,
    pub resolution_token_sha256: Option<String>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub settled_at: Option<i64>,
}

/// What a reader keyed on a task's frozen context needs of the row, without the frozen bytes
/// ([`crate::Tx::task_frozen_head`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FrozenHead {
    pub id: i64,
    pub kind: TaskKind,
    pub declaring_task_id: Option<i64>,
    /// The SHA-256 (lowercase hex) of `frozen_context`, written by the same insert (migration
    /// 0006; rows written before it got theirs in migration 0014), the key of the body in
    /// `frozen_contexts`. `None`: no frozen context.
    pub frozen_digest: Option<String>,
}

/// A new task: every column of [`TaskRow`] but `id`. Build with `..Default::default()`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NewTask {
    pub run_id: i64,
    pub key: String,
    pub kind: TaskKind,
    pub status: TaskStatus,
    pub generation: i64,
    pub origin: Origin,
    pub on_failure: OnFailure,
    pub failure_resolution: Option<FailureResolution>,
    pub visibility: Visibility,
    pub mainline: bool,
    pub branch_of: Option<String>,
    pub pairs_with: Option<String>,
    pub declaring_task_id: Option<i64>,
    pub tool_name: Option<String>,
    pub tool_alias: Option<String>,
    pub tool_input: Option<String>,
    pub tool_call_id: Option<String>,
    pub target_executor_id: Option<i64>,
    pub addressed_executor_id: Option<i64>,
    pub addressed_role: Option<ExecutorKind>,
    pub effect_profile: Option<String>,
    pub timeout_ms: Option<i64>,
    pub await_started_at: Option<i64>,
    pub deadline_at: Option<i64>,
    pub claim_token: Option<String>,
    pub claimed_at: Option<i64>,
    pub claimant_id: Option<i64>,
    pub content: Option<String>,
    pub structured_present: bool,
    pub structured_content: Option<String>,
    pub is_error: bool,
    pub title: Option<String>,
    pub metadata: Option<String>,
    pub error_key: Option<String>,
    pub error_detail: Option<String>,
    pub approval: Option<String>,
    pub frozen_context: Option<String>,
    pub request_surface: Option<String>,
    pub usage: Option<String>,
    pub reply: Option<String>,
    pub resolution_token_sha256: Option<String>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub settled_at: Option<i64>,
}

impl NewTask {
    /// The row this insert stores under `id`: every column as given (neither engine defaults
    /// or computes one).
    pub(crate) fn into_row(self, id: i64) -> TaskRow {
        macro_rules! row {
            (; $($f:ident),*) => {
                TaskRow {
                    id,
                    run_id: self.run_id,
                    key: self.key,
                    kind: self.kind,
                    origin: self.origin,
                    frozen_context: self.frozen_context,
                    created_at: self.created_at,
                    $($f: self.$f),*
                }
            };
        }
        crate::row::task_mutable_fields!(row)
    }
}

/// What the run's end reads of each row (runs.md §1, §6): the statuses, the failure policy and
/// its resolution, and the key that names a row needing attention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskEndRow {
    pub id: i64,
    pub key: String,
    pub status: TaskStatus,
    pub on_failure: OnFailure,
    pub failure_resolution: Option<FailureResolution>,
}

/// What a settle reads next ([`crate::Tx::around_settled`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AroundSettled {
    /// The edges into the settled row, by (task_id, depends_on_id, kind); `None` when its run
    /// holds a kernel-held (`running`) await.
    pub edges: Option<Vec<EdgeRow>>,
    /// The run's end-of-run read ([`crate::Tx::tasks_if_quiescent`]) when the settled row is
    /// no round's call, none depends on it and no await is held; `None`: not read.
    pub quiescence: Option<Option<Vec<TaskEndRow>>>,
    /// Each dependent's row with the rows it depends on, by the dependent's id, as
    /// [`crate::Tx::task_and_deps`] reads them, when the settled row is a round's call; a
    /// dependent missing here was not read.
    pub dependents: std::collections::HashMap<i64, Vec<TaskRow>>,
}

impl From<&TaskRow> for TaskEndRow {
    fn from(t: &TaskRow) -> Self {
        Self {
            id: t.id,
            key: t.key.clone(),
            status: t.status,
            on_failure: t.on_failure,
            failure_resolution: t.failure_resolution,
        }
    }
}

/// A row of `task_edges`: `task_id` depends on `depends_on_id`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct EdgeRow {
    pub task_id: i64,
    pub depends_on_id: i64,
    pub kind: EdgeKind,
}

/// A row of `events` (runs.md §11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRow {
    pub run_id: i64,
    /// 1, 2, 3, … per run, without gaps.
    pub sequence: i64,
    /// The event type; the column is `type`.
    pub kind: EventKind,
    pub at: i64,
    pub task_key: Option<String>,
    /// JSON object.
    pub data: String,
}

/// A row of `jobs` (storage-and-scale.md §5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRow {
    pub id: i64,
    pub kind: JobKind,
    pub run_id: i64,
    pub task_id: Option<i64>,
    pub generation: i64,
    pub available_at: i64,
    /// The node holding the lease.
    pub locked_by: Option<String>,
    pub locked_until: Option<i64>,
    /// How many times the job was dequeued.
    pub attempts: i64,
}

/// A job the dequeue leased but cannot read (its `kind` is no [`JobKind`] word): answered
/// apart from the readable ones, so one damaged row does not fail the dequeue of every other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableJob {
    pub id: i64,
    pub run_id: i64,
    /// Why the row does not read (the column and the word).
    pub reason: String,
}

/// What one dequeue leased: the jobs that read, by id, and those that do not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dequeued {
    pub jobs: Vec<JobRow>,
    pub unreadable: Vec<UnreadableJob>,
}

impl Dequeued {
    /// How many rows the dequeue leased.
    pub fn len(&self) -> usize {
        self.jobs.len() + self.unreadable.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A new job: unlocked, no attempts yet.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub kind: JobKind,
    pub run_id: i64,
    pub task_id: Option<i64>,
    pub generation: i64,
    pub available_at: i64,
}

/// A row of `sealed_requests`: one per (task, generation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedRequestRow {
    pub id: i64,
    pub task_id: i64,
    pub generation: i64,
    /// JSON: the neutral sealed record.
    pub record: String,
    pub body_sha256: String,
    pub request_bytes: i64,
    /// SHA-256 (lowercase hex) of the tools bytes inside the body, when tools were offered.
    pub tools_sha256: Option<String>,
    /// The exact provider body bytes (stored once per digest, migration 0015).
    pub body: Vec<u8>,
    /// JSON list of attempts.
    pub attempts: String,
    pub created_at: i64,
    /// The stored record's and body's delta depths, answered by an insert (`None` from a
    /// read). A body some earlier round stored already answers that body's depth.
    pub record_depth: Option<i64>,
    pub body_depth: Option<i64>,
}

#[derive(Debug, Clone)]
pub struct NewSealedRequest {
    pub task_id: i64,
    pub generation: i64,
    /// The whole record, or (with `record_base`) the bytes after the base's first `keep`.
    pub record: String,
    pub body_sha256: String,
    pub request_bytes: i64,
    /// SHA-256 (lowercase hex) of the tools bytes inside the body, when tools were offered.
    pub tools_sha256: Option<String>,
    /// The whole body, or (with `body_base`) the bytes after the base's first `keep`.
    pub body: Vec<u8>,
    pub attempts: String,
    pub created_at: i64,
    /// The record is a delta on this sealed request (migration 0020).
    pub record_base: Option<SealedBase>,
    /// The body is a delta on this stored body (its SHA-256).
    pub body_base: Option<SealedBase>,
}

/// What a sealed delta extends: a sealed request's id (records) or a body's SHA-256 (bodies),
/// and how many of its bytes come first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedBase {
    pub id: Option<i64>,
    pub sha256: Option<String>,
    pub keep: i64,
    /// The base's stored delta depth, when the caller knows it (the insert that stored the base
    /// answered it): then the store does not read it.
    pub depth: Option<i64>,
}

/// One model round of a run as the cache report reads it ([`crate::Store::round_cache_facts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundCacheFacts {
    pub key: String,
    pub status: TaskStatus,
    /// The task's usage JSON, once the round has a reply.
    pub usage: Option<String>,
    /// The sealed generation's tools digest; `None` before the seal or without tools.
    pub tools_sha256: Option<String>,
    /// Whether the current generation is sealed.
    pub sealed: bool,
}

/// A row of `idempotency_receipts` (errors-and-auth.md §6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptRow {
    pub id: i64,
    /// Hash of (member, route template, path ids, key).
    pub scope_hash: String,
    /// SHA-256 of the canonical JSON of the request body.
    pub envelope_sha256: String,
    /// The HTTP status of the original response.
    pub status: i64,
    /// The original response body (JSON).
    pub body: String,
    pub expires_at: i64,
    pub created_at: i64,
}

#[derive(Debug, Clone)]
pub struct NewReceipt {
    pub scope_hash: String,
    pub envelope_sha256: String,
    pub status: i64,
    pub body: String,
    pub expires_at: i64,
    pub created_at: i64,
}

/// A row of `round_facts` (migration 0005): what a continuation round's expansion needs of its
/// chain, written by the transaction that authors the round.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RoundFactsRow {
    /// The continuation round.
    pub task_id: i64,
    /// The rounds of the chain up to and including the round's predecessor.
    pub chain_rounds: i64,
    /// Every `r{n}` with n below this was in use when the row was written.
    pub key_floor: i64,
    /// The predecessor's look-back history (JSON, the kernel's shape).
    pub history: String,
}

/// A round as its reply step reads it ([`crate::Tx::round_for_reply`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundForReply {
    pub task: TaskRow,
    pub facts: Option<RoundFactsRow>,
    /// Some row depends on the round (an `after`, `reads` or `pairs` edge into it).
    pub has_dependents: bool,
    /// The round's run holds a kernel-held (`running`) await.
    pub running_awaits: bool,
}
