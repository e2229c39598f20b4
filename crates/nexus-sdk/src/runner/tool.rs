//! What a runner serves: tool specs, the call a handler receives, and the result it returns.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use nexus_core::registry::effect::{EffectKind, EffectProfile, EffectScope, Idempotency, Reconciliation};

use crate::error::Result;
use crate::executor_client::{ExecutorClient, ProgressFrame, ProgressReply};

/// The announcement's wire types (executor.md §4), defined once in `nexus_api`: a tool entry
/// ([`ToolSpec`]), a skill document ([`Document`]) and the whole body ([`Announcement`]).
pub use nexus_api::executors::{AnnouncedDocument as Document, AnnouncedTool as ToolSpec, Announcement};

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
