//! Kernel tool handlers (kernel-tools.md): one file per wire name, dispatched by
//! [`dispatch`]. A handler is a function of the row's input and the calling execution's frozen
//! context; [`Kernel::evaluate_kernel_tool`] settles the row with its outcome (a trusted
//! settle, no token) and runs the scheduling consequences.
//!
//! Every registered kernel tool has a handler ([`IMPLEMENTED`]): the graph tools
//! (`delegate_task`, `wait`, `ask`, `tool_call`, and the conversation family `spawn`, `send`,
//! `status`, `cancel`) act in the evaluation's transaction; the memory family and
//! memory-sourced `skill` run through [`dispatch_stored`]; `session_search` and `session_read`
//! read the workspace's conversation history in the evaluation's transaction
//! (`conversations/history/`); the rest are pure functions of the input and the frozen context
//! ([`dispatch`]).

// An error result travels as a value, once per call, through the parameter checks: boxing it
// would buy nothing on a path that is never hot.
#![allow(clippy::result_large_err)]

mod ask;
mod cancel;
mod delegate_task;
mod handler;
mod memory_delete;
mod memory_edit;
mod memory_grep;
mod memory_ls;
mod memory_read;
#[cfg(test)]
mod memory_scope_tests;
mod memory_write;
mod params;
mod runners_list;
mod search_cache;
mod send;
mod session_read;
mod session_search;
mod skill;
mod spawn;
mod status;
mod tool_call;
mod tool_search;
mod wait;

use nexus_core::results;
use nexus_store::{LockReads, Locked, RunLock, TaskKind, TaskStatus};
use serde_json::Value;

pub use handler::KernelToolOutcome;
pub(crate) use handler::{GraphCall, ToolContext};
pub use search_cache::SearchCache;

use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::settle::SettleError;
use crate::runs::unit::Unit;
use crate::runs::{AfterCommit, KernelToolJob};

/// The wire names this version evaluates in-kernel: every registered kernel tool
/// (registry.md §3: every registered name is live).
pub const IMPLEMENTED: [&str; 19] = [
    "ask",
    "cancel",
    "delegate_task",
    "memory_delete",
    "memory_edit",
    "memory_grep",
    "memory_ls",
    "memory_read",
    "memory_write",
    "runners_list",
    "send",
    "session_read",
    "session_search",
    "skill",
    "spawn",
    "status",
    "tool_call",
    "tool_search",
    "wait",
];

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
    now: i64,
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
        "memory_write" => memory_write::run(tx, input, &owners, now).await?,
        "memory_edit" => memory_edit::run(tx, input, &owners, now).await?,
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
    /// Evaluates a `kernel_tool` job. With `taking_job`, the job row is claimed first (deleted,
    /// and the delete committed, before the evaluation starts: at most once;
    /// `Store::take_kernel_job`), and nothing is evaluated when another worker claimed it.
    /// Idle unless the row is still `running` in `generation` on a live run. Returns the kernel
    /// tool jobs its settle made, for the worker to evaluate next.
    pub(crate) async fn evaluate_kernel_tool(
        &self,
        run_id: i64,
        task_id: i64,
        generation: i64,
        taking_job: Option<i64>,
    ) -> KernelResult<Vec<KernelToolJob>> {
        let (mut tx, lock) = match taking_job {
            Some(job_id) => match self.store.take_kernel_job(job_id, run_id, task_id).await? {
                Some(taken) => taken,
                None => return Ok(Vec::new()),
            },
            None => {
                let mut tx = self.store.begin().await?;
                let lock = tx
                    .lock(RunLock {
                        run_id,
                        with: LockReads::Evaluation(task_id),
                    })
                    .await?;
                (tx, lock)
            }
        };
        let Locked {
            mut run,
            task,
            search_head,
            ..
        } = lock;
        let Some(mut task) = task.filter(|t| {
            t.run_id == run_id
                && t.kind == TaskKind::Tool
                && t.generation == generation
                && t.status == TaskStatus::Running
        }) else {
            tx.rollback().await?;
            return Ok(Vec::new());
        };
        if run.status.is_terminal() {
            tx.rollback().await?;
            return Ok(Vec::new());
        }
        let wire = task.tool_name.clone().unwrap_or_default();
        let input: Value = task
            .tool_input
            .as_deref()
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_else(|| Value::Object(Default::default()));
        // `tool_search` keys the kernel's cached index on the declaring round's stored frozen
        // digest (or, on rows without one, its bytes) and reads and parses the frozen context
        // only on a miss (search_cache.rs).
        let searched = if wire == "tool_search" {
            Some(
                self.state
                    .search_cache
                    .tool_search_declared(&mut tx, &input, task.declaring_task_id, search_head)
                    .await?,
            )
        } else {
            None
        };
        let frozen = match searched {
            Some(_) => crate::runs::FrozenContext::default(),
            None => self.frozen_of(&mut tx, &task).await?,
        };
        let callable = task.tool_alias.clone().unwrap_or_else(|| wire.clone());
        let ctx = ToolContext {
            tool_definitions: &frozen.tool_definitions,
            environment: &frozen.environment,
            skills: &frozen.skills,
            callable: &callable,
        };
        let now = self.now_ms();
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
                "spawn" => Some(spawn::run(self, &mut tx, &mut run, &call, &mut effects).await?),
                "status" => Some(status::run(self, &mut tx, &run, &call).await?),
                "cancel" => Some(cancel::run(self, &mut tx, &run, &call, &mut effects).await?),
                "send" => Some(send::run(self, &mut tx, &run, &call, &mut effects).await?),
                "session_search" => Some(session_search::run(&mut tx, &run, &input).await?),
                "session_read" => Some(session_read::run(&mut tx, &run, &input).await?),
                w @ ("skill" | "memory_read" | "memory_write" | "memory_edit" | "memory_ls" | "memory_grep"
                | "memory_delete") => dispatch_stored(&mut tx, w, &input, &ctx, &frozen.memory, now).await?,
                _ => None,
            }
        };
        let Some(outcome) = graph.or(searched).or_else(|| dispatch(&wire, &input, &ctx)) else {
            tracing::warn!(run_id, task_id, tool = %wire, "no kernel handler; the row times out at its deadline");
            tx.rollback().await?;
            return Ok(Vec::new());
        };
        if task.deadline_at.is_some_and(|d| d <= now) {
            // The deadline wins (executor.md §13).
            self.settle_with(
                &mut Unit::of(&mut tx, &mut run, now, &mut effects),
                &mut task,
                TaskStatus::TimedOut,
                SettleError::new(nexus_core::codes::task_error::TOOL_TIMEOUT, None),
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
            if self
                .transition(&mut tx, &mut run, &mut task, TaskStatus::Completed, now)
                .await?
            {
                effects.extend(self.after_settle(&mut tx, &mut run, &task, now).await?);
            }
        }
        tx.commit().await?;
        Ok(self.publish_handing_off(effects).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_kernel_tool_has_a_handler() {
        let mut wires: Vec<&str> = nexus_core::registry::entries().iter().map(|t| t.wire).collect();
        wires.sort_unstable();
        assert_eq!(wires, IMPLEMENTED);
    }
}
