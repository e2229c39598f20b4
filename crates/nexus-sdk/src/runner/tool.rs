//! What a runner serves: tool specs, the call a handler receives, and the result it returns.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

pub use nexus_core::registry::effect::{EffectKind, EffectProfile, EffectScope, Idempotency, Reconciliation};

use crate::error::Result;
use crate::executor_client::{ExecutorClient, ProgressFrame, ProgressReply};

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

pub use nexus_api::inbox::{Block, Outcome, ToolResult};

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
