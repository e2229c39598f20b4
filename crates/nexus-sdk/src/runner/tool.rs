//! What a runner serves: tool specs, the call a handler receives, and the result it returns.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

pub use nexus_core::registry::effect::{EffectKind, EffectProfile, EffectScope, Idempotency, Reconciliation};

use crate::error::Result;
use crate::executor_client::{ExecutorClient, ProgressFrame, ProgressReply, Upload};

/// One announced tool entry (executor.md §4): `name`, `effect_profile`, `timeout_ms?`,
/// `description?`, `input_schema?`. An entry without a description or a schema is
/// operator-only: authored steps may call it, a model never sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// The served name, `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: String,
    /// The five-key effect profile the kernel freezes on each call.
    pub effect_profile: EffectProfile,
    /// The announced budget per call, in milliseconds (the kernel's default is 600,000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// What the model reads about the tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A JSON Schema object with `"type": "object"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
}

impl ToolSpec {
    /// An operator-only entry; add [`ToolSpec::description`] and [`ToolSpec::input_schema`]
    /// so a model can call it.
    pub fn new(name: impl Into<String>, effect_profile: EffectProfile) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            effect_profile,
            timeout_ms: None,
            description: None,
            input_schema: None,
        }
    }

    /// Sets the description.
    pub fn description(mut self, text: impl Into<String>) -> ToolSpec {
        self.description = Some(text.into());
        self
    }

    /// Sets the input schema.
    pub fn input_schema(mut self, schema: Value) -> ToolSpec {
        self.input_schema = Some(schema);
        self
    }

    /// Sets the announced timeout.
    pub fn timeout_ms(mut self, ms: u64) -> ToolSpec {
        self.timeout_ms = Some(ms);
        self
    }
}

/// A skill document a runner announces (`documents[]`): `{name, description}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Document {
    /// The skill name (kernel-tools.md §9 grammar).
    pub name: String,
    /// One paragraph, at most 1,024 bytes.
    pub description: String,
}

/// The whole announcement: `PUT X/announcement` replaces all three lists at once.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Announcement {
    /// The served tools.
    pub tools: Vec<ToolSpec>,
    /// Free-form facts about where the runner runs (`{os, arch, hostname, …}`).
    pub environment: Map<String, Value>,
    /// Skill documents (announce `skill` too, or loads fail `tool_not_served`).
    pub documents: Vec<Document>,
}

/// One claimed tool call, handed to a handler.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The run the row belongs to.
    pub run_public_id: String,
    /// The row's key in that run.
    pub task_key: String,
    /// The served name that was called.
    pub tool_name: String,
    /// The tool input (a JSON object).
    pub input: Value,
    /// The whole inbox row as the kernel sent it (executor.md §6).
    pub row: Value,
    /// The claim token; the framework extends and commits with it.
    pub claim_token: String,
    /// Canceled when the kernel sends `work_canceled` for this row, or the claim is lost.
    /// The framework drops the handler's future at the same time; the token lets a handler
    /// clean up what outlives its future (a child process, say).
    pub cancel: CancellationToken,
    pub(crate) client: ExecutorClient,
}

impl ToolCall {
    /// The executor client the call was claimed with (captures, attachments, progress).
    pub fn client(&self) -> &ExecutorClient {
        &self.client
    }

    /// Stores `bytes` as a capture and returns the `resource_link` block that names it, for
    /// the result's `content` (the kernel binds the capture when the result commits).
    pub async fn stage_capture(&self, bytes: impl Into<Vec<u8>>, filename: &str) -> Result<Block> {
        let upload = self.client.upload_capture(bytes.into(), filename).await?;
        Ok(Block::link(&upload))
    }

    /// Sends an ephemeral progress frame with `text` as the output tail (executor.md §11); at
    /// most one frame per 250 ms is relayed, the rest are dropped.
    pub async fn progress(&self, text: impl Into<String>) -> Result<ProgressReply> {
        let frame = ProgressFrame {
            run_public_id: self.run_public_id.clone(),
            task_key: self.task_key.clone(),
            claim_token: self.claim_token.clone(),
            text_tail: Some(text.into()),
            structured: None,
        };
        self.client.progress(&frame).await
    }

    /// The bytes of an upload the claimed run can read (a step attachment, an earlier
    /// capture, or one named as `nexus://uploads/<id>` in the input), read under this claim.
    pub async fn attachment_bytes(&self, upload_id: &str) -> Result<Vec<u8>> {
        self.client
            .attachment_bytes(&self.run_public_id, &self.task_key, &self.claim_token, upload_id)
            .await
    }
}

/// One block of a result's `content` (executor.md §9.1).
#[derive(Debug, Clone, PartialEq, Serialize)]
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
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The byte size.
        #[serde(skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
        /// A display title.
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// A description.
        #[serde(skip_serializing_if = "Option::is_none")]
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

/// `completed` or `failed` (executor.md §9).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The call ran; `is_error` says whether the tool reported an error.
    #[default]
    Completed,
    /// The call could not run; the task fails with `tool_failed` and the first text.
    Failed,
}

/// What a handler returns: the commit envelope minus the claim token.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolResult {
    /// The content blocks.
    pub content: Vec<Block>,
    /// `structured_content` (any JSON; `None` = absent, which differs from `Some(Null)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool reported an error; the model reads it wrapped.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// `completed` (default) or `failed`.
    pub outcome: Outcome,
    /// A one-line header for people ("read src/lib.rs").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `metadata` (an object; its `checkpoint` key is reserved, see [`ToolResult::checkpoint`]).
    #[serde(skip_serializing_if = "Option::is_none")]
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

/// The future a handler returns.
pub type HandlerFuture = Pin<Box<dyn Future<Output = ToolResult> + Send + 'static>>;

/// What a runner serves. The framework calls [`Service::announcement`] at start and after
/// each [`crate::runner::RunnerHandle::reannounce`], and [`Service::call`] once per claim.
pub trait Service: Send + Sync + 'static {
    /// The current announcement.
    fn announcement(&self) -> Announcement;
    /// Runs one claimed call. Dropping the future aborts it.
    fn call(&self, call: ToolCall) -> HandlerFuture;
}

/// A handler as a shared closure.
pub type HandlerFn = Arc<dyn Fn(ToolCall) -> HandlerFuture + Send + Sync>;
