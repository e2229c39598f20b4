//! Kernel tool handlers (kernel-tools.md): one file per wire name, dispatched by
//! [`dispatch`]. A handler is a function of the row's input and the calling execution's frozen
//! context; [`Kernel::evaluate_kernel_tool`] settles the row with its outcome (a trusted
//! settle, no token) and runs the scheduling consequences.
//!
//! Handlers in this version: `runners_list`, `tool_search`, `skill` where the kernel answers
//! it (memory sources, `skill_unknown`), and the memory family (`memory_*`, through
//! [`dispatch_stored`], inside the evaluation's transaction). A kernel tool without a handler stays `running` and is
//! settled `timed_out` / `tool_timeout` by the sweep at its deadline, like a lost evaluation.

mod ask;
mod delegate_task;
mod memory_delete;
mod memory_edit;
mod memory_grep;
mod memory_ls;
mod memory_read;
mod memory_write;
mod runners_list;
mod skill;
mod tool_call;
mod tool_search;
mod wait;

use nexus_core::results;
use serde_json::Value;

use crate::error::KernelResult;
use crate::runs::AfterCommit;
use crate::{Kernel, time};

/// What a kernel tool answers. The row settles `completed` with these fields (kernel-tools.md
/// §0): an error result is `completed` with `is_error: true` and one text line
/// `<word>: <sentence>`.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelToolOutcome {
    /// A string, or a list of content blocks (the result grammar of executor.md §9.1).
    pub content: Value,
    pub is_error: bool,
    /// Stored beside the text; never reaches the model.
    pub structured_content: Option<Value>,
    /// The child key a paired tool records (kernel-tools.md §0).
    pub pairs_with: Option<String>,
}

impl KernelToolOutcome {
    /// A plain text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: Value::String(text.into()),
            is_error: false,
            structured_content: None,
            pairs_with: None,
        }
    }

    /// A JSON-text result: the compact serialization of `value`, member order kept.
    pub fn json_text(value: &Value) -> Self {
        Self::text(serde_json::to_string(value).expect("a JSON value serializes"))
    }

    /// An error result: `<word>: <sentence>`.
    pub fn error(word: &str, sentence: &str) -> Self {
        Self {
            content: Value::String(format!("{word}: {sentence}")),
            is_error: true,
            structured_content: None,
            pairs_with: None,
        }
    }
}

/// The calling execution's frozen context, as a handler reads it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolContext<'a> {
    /// The declaring round's frozen declaration (stored, rendered, sorted).
    pub tool_definitions: &'a [Value],
    /// The frozen environment (declarations.md §7 step 9).
    pub environment: &'a Value,
    /// The frozen skill catalog entries `{callable, name, description, source, executor_public_id?}`.
    pub skills: &'a [Value],
    /// The callable the model used (`tool_alias`, else `tool_name`).
    pub callable: &'a str,
}

/// The wire names this version evaluates in-kernel.
pub const IMPLEMENTED: [&str; 13] = [
    "ask",
    "delegate_task",
    "memory_delete",
    "memory_edit",
    "memory_grep",
    "memory_ls",
    "memory_read",
    "memory_write",
    "runners_list",
    "skill",
    "tool_call",
    "tool_search",
    "wait",
];

/// A graph tool's call (`delegate_task`, `wait`, `ask`, `tool_call`): the running call row, its
/// input and frozen context, and the evaluation clock. The handler may place one child row in
/// the evaluation's transaction (`tool_call::place_child`).
pub(crate) struct GraphCall<'a> {
    pub call: &'a nexus_store::TaskRow,
    pub input: &'a Value,
    pub ctx: &'a ToolContext<'a>,
    pub now: i64,
}

pub(crate) use skill::valid_skill_name;

/// Runs a handler that reads or writes the store inside the evaluation's transaction: the
/// memory family over the round's frozen memory bindings (declarations.md §8), and `skill`
/// for a catalog entry whose frozen source is `workspace` or `user`. `None`: not one of them
/// (for `skill`: not a memory source, so [`dispatch`] answers).
pub(crate) async fn dispatch_stored(
    tx: &mut nexus_store::Tx,
    wire: &str,
    input: &Value,
    ctx: &ToolContext<'_>,
    memory: &Value,
) -> KernelResult<Option<KernelToolOutcome>> {
    if wire == "skill" {
        return skill::run_from_memory(tx, input, ctx, memory).await;
    }
    if !wire.starts_with("memory_") {
        return Ok(None);
    }
    let owners = crate::memory::Owners::of_frozen(tx, memory).await?;
    Ok(Some(match wire {
        "memory_read" => memory_read::run(tx, input, &owners).await?,
        "memory_write" => memory_write::run(tx, input, &owners).await?,
        "memory_edit" => memory_edit::run(tx, input, &owners).await?,
        "memory_ls" => memory_ls::run(tx, input, &owners).await?,
        "memory_grep" => memory_grep::run(tx, input, &owners).await?,
        "memory_delete" => memory_delete::run(tx, input, &owners).await?,
        _ => return Ok(None),
    }))
}

/// Runs the handler of a kernel tool by its wire name. `None`: no handler in this version.
pub(crate) fn dispatch(wire: &str, input: &Value, ctx: &ToolContext<'_>) -> Option<KernelToolOutcome> {
    match wire {
        "runners_list" => Some(runners_list::run(input, ctx)),
        "skill" => Some(skill::run(input, ctx)),
        "tool_search" => Some(tool_search::run(input, ctx)),
        _ => None,
    }
}

impl Kernel {
    /// Evaluates a `kernel_tool` job (helper 1's worker deletes the job row first: at most
    /// once). Idle unless the row is still `running` in `generation` on a live run.
    pub(crate) async fn evaluate_kernel_tool(&self, run_id: i64, task_id: i64, generation: i64) -> KernelResult<()> {
        let mut tx = self.store.begin().await?;
        let mut run = tx.lock_run(run_id).await?;
        let task = tx.task_by_id(task_id).await?;
        let Some(mut task) = task.filter(|t| {
            t.run_id == run_id && t.kind == "tool_task" && t.generation == generation && t.status == "running"
        }) else {
            tx.rollback().await?;
            return Ok(());
        };
        if matches!(run.status.as_str(), "completed" | "canceled") {
            tx.rollback().await?;
            return Ok(());
        }
        let wire = task.tool_name.clone().unwrap_or_default();
        let input: Value = task
            .tool_input
            .as_deref()
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_else(|| Value::Object(Default::default()));
        let frozen = self.frozen_of(&mut tx, &task).await?;
        let callable = task.tool_alias.clone().unwrap_or_else(|| wire.clone());
        let ctx = ToolContext {
            tool_definitions: &frozen.tool_definitions,
            environment: &frozen.environment,
            skills: &frozen.skills,
            callable: &callable,
        };
        let now = time::now_ms();
        let mut effects: Vec<AfterCommit> = Vec::new();
        // The graph tools place children in this transaction (kernel-tools.md §0); past the
        // deadline nothing is placed and the row times out below.
        let graph = if task.deadline_at.is_some_and(|d| d <= now) {
            None
        } else {
            let call = GraphCall {
                call: &task,
                input: &input,
                ctx: &ctx,
                now,
            };
            match wire.as_str() {
                "delegate_task" => Some(delegate_task::run(self, &mut tx, &mut run, &call, &mut effects).await?),
                "wait" => Some(wait::run(self, &mut tx, &mut run, &call, &mut effects).await?),
                "ask" => Some(ask::run(self, &mut tx, &mut run, &call, &mut effects).await?),
                "tool_call" => Some(tool_call::run(self, &mut tx, &mut run, &call, &mut effects).await?),
                w @ ("skill" | "memory_read" | "memory_write" | "memory_edit" | "memory_ls" | "memory_grep"
                | "memory_delete") => dispatch_stored(&mut tx, w, &input, &ctx, &frozen.memory).await?,
                _ => None,
            }
        };
        let Some(outcome) = graph.or_else(|| dispatch(&wire, &input, &ctx)) else {
            tracing::warn!(run_id, task_id, tool = %wire, "no kernel handler; the row times out at its deadline");
            tx.rollback().await?;
            return Ok(());
        };
        if task.deadline_at.is_some_and(|d| d <= now) {
            // The deadline wins (executor.md §13).
            self.settle_with(
                &mut tx,
                &mut run,
                &mut task,
                "timed_out",
                nexus_core::codes::task_error::TOOL_TIMEOUT,
                None,
                now,
                &mut effects,
            )
            .await?;
        } else {
            let blocks = match results::normalize_content(&outcome.content) {
                Ok(b) => b,
                Err(e) => vec![results::Block::Text(format!("internal_error: {e}"))],
            };
            task.content = Some(results::blocks_to_json(&blocks).to_string());
            task.is_error = outcome.is_error;
            task.structured_present = outcome.structured_content.is_some();
            task.structured_content = outcome.structured_content.as_ref().map(Value::to_string);
            task.pairs_with = outcome.pairs_with.clone();
            task.error_key = None;
            task.error_detail = None;
            if self.transition(&mut tx, &mut run, &mut task, "completed", now).await? {
                effects.extend(self.after_settle(&mut tx, &mut run, &task, now).await?);
            }
        }
        tx.commit().await?;
        self.publish(effects).await;
        Ok(())
    }
}
