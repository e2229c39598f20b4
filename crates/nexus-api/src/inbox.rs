//! The executor transport plane's wire (executor.md §5–§11): inbox rows and pages, claims and
//! their status, the commit body (the result envelope with its token) and its answer, progress
//! frames.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::common::{Pagination, open_words};
use crate::tasks::Task;
use crate::uploads::Upload;

open_words! {
    /// What a parked row waits for (executor.md §6).
    pub enum RowKind {
        /// A dispatched tool row: claim it, run it, commit.
        ToolCall = "tool_call",
        /// A tool row held for approval (not claimable).
        Approval = "approval",
        /// An ask await (answered by a commit without a token, not claimed).
        Ask = "ask",
    }
}

/// One inbox row as the kernel sends it (executor.md §6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct InboxTask {
    /// `tool_call`, `approval` or `ask`.
    pub kind: RowKind,
    /// The run the row belongs to.
    pub run_public_id: String,
    /// The row's key in that run.
    pub task_key: String,
    /// Whether the row was claimed in its current generation.
    #[serde(default)]
    pub claimed: bool,
    /// The row's budget in milliseconds (authored, else announced, else the kernel default).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// When the park expires (RFC 3339).
    #[serde(default)]
    pub deadline_at: Option<String>,
    /// The called name (tool and approval rows).
    #[serde(default)]
    pub tool_name: Option<String>,
    /// The tool input (tool and approval rows; `null` otherwise).
    #[serde(default)]
    pub tool_input: Value,
    /// Members this crate does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// `GET X/inbox`: one page of rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct InboxList {
    /// The rows, in internal-id order.
    pub tasks: Vec<InboxTask>,
    /// The cursor of the next page; `next_after` present only when this page was full.
    #[serde(default)]
    pub pagination: Option<Pagination>,
}

/// A claim's token and deadline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Grant {
    /// The token every later call on the row presents.
    pub claim_token: String,
    /// The deadline (RFC 3339).
    pub deadline_at: String,
}

/// A granted claim or extension: `{task, claim: {claim_token, deadline_at}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ClaimGrant {
    /// The claimed row.
    pub task: InboxTask,
    /// The grant.
    pub claim: Grant,
}

/// Whether a claim still holds its row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ClaimState {
    /// Whether the row is still `dispatched` under this claim.
    pub active: bool,
}

/// `GET X/inbox/{run}/{task}/claim`: `{claim: {active}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ClaimStatusReply {
    /// The claim's state.
    pub claim: ClaimState,
}

/// The body of `POST X/inbox/{run}/{task}/extend`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Extend {
    /// The claim's token.
    pub claim_token: String,
    /// The new budget from now, in milliseconds.
    pub timeout_ms: u64,
}

/// The body of `POST X/inbox/{run}/{task}/commit`: the token beside the flat result envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Commit {
    /// The claim's token (absent when answering an ask row, which is not claimed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_token: Option<String>,
    /// The result.
    #[serde(flatten)]
    pub result: ToolResult,
}

/// The commit's answer: the task read, and whether the row had already settled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CommitReply {
    /// The task as `GET R/tasks/{key}` reads it.
    pub task: Task,
    /// True when the row had settled before this commit (which then changed nothing).
    #[serde(default)]
    pub idle: bool,
}

/// One progress frame (executor.md §11): relayed, never stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ProgressFrame {
    /// The claimed row's run.
    pub run_public_id: String,
    /// The claimed row's key.
    pub task_key: String,
    /// The current claim token (only the claimant may send).
    pub claim_token: String,
    /// The tail of the tool's output so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_tail: Option<String>,
    /// Any JSON the console may render.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
}

/// The body of `POST X/progress`: `{frame}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Progress {
    /// The frame.
    pub frame: ProgressFrame,
}

/// The 202 answer to a progress frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ProgressReply {
    /// Whether the frame was relayed.
    pub relayed: bool,
    /// Why not: `settled` (the row settled) or `cadence` (at most one frame per 250 ms).
    #[serde(default)]
    pub reason: Option<String>,
}

/// One block of a result's `content` (executor.md §9.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// `{"type":"text","text":…}`.
    Text {
        /// The text.
        text: String,
    },
    /// `{"type":"resource_link","uri":"nexus://uploads/<id>","name",…}`: a staged capture.
    ResourceLink {
        /// `nexus://uploads/<public_id>`.
        uri: String,
        /// The file name (required, non-empty).
        name: String,
        /// The content type, stored verbatim.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The byte size.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
        /// A display title.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// A description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
}

impl Block {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Block {
        Block::Text { text: text.into() }
    }

    /// The `resource_link` naming a stored capture: its URI, file name, detected type and size.
    pub fn link(upload: &Upload) -> Block {
        Block::ResourceLink {
            uri: upload.uri(),
            name: upload.filename.clone(),
            mime_type: Some(upload.content_type.clone()),
            size: Some(upload.byte_size),
            title: None,
            description: None,
        }
    }
}

/// A result's `content` as a member's resolution sends it (executor.md §9.1): a string, or an
/// array of blocks. A bare string and a single text block store the same bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum ResultContent {
    /// A bare string (one text block).
    Text(String),
    /// Content blocks.
    Blocks(Vec<Block>),
}

/// `completed` or `failed` (executor.md §9).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The call ran; `is_error` says whether the tool reported an error.
    #[default]
    Completed,
    /// The call could not run; the task fails with `tool_failed` and the first text.
    Failed,
}

/// What a handler returns: the commit envelope minus the claim token.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ToolResult {
    /// The content blocks.
    #[serde(default)]
    pub content: Vec<Block>,
    /// `structured_content` (any JSON; `None` = absent, which differs from `Some(Null)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool reported an error; the model reads it wrapped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// `completed` (default) or `failed`.
    #[serde(default)]
    pub outcome: Outcome,
    /// A one-line header for people ("read src/lib.rs").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `metadata` (an object; its `checkpoint` key is reserved, see [`ToolResult::checkpoint`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl ToolResult {
    /// A completed result of one text block.
    pub fn text(text: impl Into<String>) -> ToolResult {
        ToolResult {
            content: vec![Block::Text { text: text.into() }],
            ..ToolResult::default()
        }
    }

    /// A completed result with `is_error: true` and one text block (a tool-level error the
    /// model should read and react to).
    pub fn error(text: impl Into<String>) -> ToolResult {
        ToolResult {
            is_error: true,
            ..ToolResult::text(text)
        }
    }

    /// A `failed` outcome whose first text is the reason (the call could not run).
    pub fn failed(text: impl Into<String>) -> ToolResult {
        ToolResult {
            outcome: Outcome::Failed,
            ..ToolResult::text(text)
        }
    }

    /// Appends a block.
    pub fn with_block(mut self, block: Block) -> ToolResult {
        self.content.push(block);
        self
    }

    /// Sets `structured_content`.
    pub fn with_structured(mut self, value: Value) -> ToolResult {
        self.structured_content = Some(value);
        self
    }

    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> ToolResult {
        self.title = Some(title.into());
        self
    }

    /// Sets `metadata.checkpoint = {hash, dirty}`: the workspace state just before the call.
    pub fn checkpoint(mut self, hash: impl Into<String>, dirty: bool) -> ToolResult {
        let metadata = self.metadata.get_or_insert_with(Map::new);
        metadata.insert(
            "checkpoint".into(),
            serde_json::json!({"hash": hash.into(), "dirty": dirty}),
        );
        self
    }
}
