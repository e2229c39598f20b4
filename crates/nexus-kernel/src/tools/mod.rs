//! Kernel tool handlers (kernel-tools.md): one file per wire name, each a command that parses
//! the row's input into its own type (the shared checks are `params.rs`'s), then applies it.
//! [`KernelTool`] (`table.rs`) is the one table of wire names; [`Kernel::evaluate_kernel_tool`]
//! answers the row through [`KernelTool`]'s handler and settles the row with its outcome (a
//! trusted settle, no token), then runs the scheduling consequences.
//!
//! Every registered kernel tool has a handler ([`IMPLEMENTED`]): the graph tools
//! (`delegate_task`, `wait`, `ask`, `tool_call`, and the conversation family `spawn`, `send`,
//! `status`, `cancel`) act in the evaluation's unit of work; the memory family and
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
pub(crate) mod params;
mod reach;
mod runners_list;
mod search_cache;
mod send;
mod session_read;
mod session_search;
mod skill;
mod spawn;
mod status;
mod table;
mod tool_call;
mod tool_search;
mod wait;

use nexus_core::results::{self, ToolWord};
use nexus_store::{FrozenHead, LockReads, Locked, RunLock, RunRow, TaskKind, TaskRow, TaskStatus, Tx};
use serde_json::Value;

pub use handler::KernelToolOutcome;
pub(crate) use handler::{GraphCall, ToolContext};
pub use search_cache::SearchCache;
pub use table::{IMPLEMENTED, KernelTool};

use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::settle::SettleError;
use crate::runs::unit::Unit;
use crate::runs::{AfterCommit, FrozenContext, KernelToolJob};

/// Runs a handler that reads or writes the store inside the evaluation's transaction: the
/// memory family over the round's frozen memory bindings (declarations.md §8), and `skill`
/// for a catalog entry whose frozen source is `workspace` or `user`. `None`: not one of them
/// (for `skill`: not a memory source, so [`dispatch`] answers).
pub(crate) async fn dispatch_stored(
    tx: &mut nexus_store::Tx,
    tool: KernelTool,
    input: &Value,
    ctx: &ToolContext<'_>,
    memory: &Value,
    now: i64,
) -> KernelResult<Option<KernelToolOutcome>> {
    if tool == KernelTool::Skill {
        return skill::run_from_memory(tx, input, ctx, memory).await;
    }
    if !tool.is_memory() {
        return Ok(None);
    }
    let owners = crate::memory::Owners::of_frozen(tx, memory).await?;
    Ok(Some(match tool {
        KernelTool::MemoryRead => memory_read::run(tx, input, &owners).await?,
        KernelTool::MemoryWrite => memory_write::run(tx, input, &owners, now).await?,
        KernelTool::MemoryEdit => memory_edit::run(tx, input, &owners, now).await?,
        KernelTool::MemoryLs => memory_ls::run(tx, input, &owners).await?,
        KernelTool::MemoryGrep => memory_grep::run(tx, input, &owners).await?,
        KernelTool::MemoryDelete => memory_delete::run(tx, input, &owners).await?,
        _ => return Ok(None),
    }))
}

/// Runs the handler of a kernel tool that is a pure function of its input and the frozen
/// context. `None`: the tool needs the store (its handler runs in the evaluation).
pub(crate) fn dispatch(tool: KernelTool, input: &Value, ctx: &ToolContext<'_>) -> Option<KernelToolOutcome> {
    match tool {
        KernelTool::RunnersList => Some(runners_list::run(input, ctx)),
        KernelTool::Skill => Some(skill::run(input, ctx)),
        KernelTool::ToolSearch => Some(tool_search::run(input, ctx)),
        _ => None,
    }
}

/// The row being evaluated and what the evaluation reads of it: the parts every step names.
struct Evaluation<'e> {
    tool: KernelTool,
    task: &'e TaskRow,
    input: &'e Value,
    /// The head read with the run's lock, for `tool_search`.
    search_head: Option<FrozenHead>,
    now: i64,
}

impl Evaluation<'_> {
    /// Past the row's deadline nothing is placed and the row times out (executor.md §13).
    fn past_deadline(&self) -> bool {
        self.task.deadline_at.is_some_and(|d| d <= self.now)
    }
}

/// The row's stored input (an unreadable one reads as `{}`).
fn stored_input(task: &TaskRow) -> Value {
    task.tool_input
        .as_deref()
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_else(|| Value::Object(Default::default()))
}

/// The locked row, when it is still the `running` kernel tool row of `generation` on a live run.
fn live_row(lock_task: Option<TaskRow>, run: &RunRow, run_id: i64, generation: i64) -> Option<TaskRow> {
    lock_task.filter(|t| {
        t.run_id == run_id
            && t.kind == TaskKind::Tool
            && t.generation == generation
            && t.status == TaskStatus::Running
            && !run.status.is_terminal()
    })
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
        let Some((mut tx, lock)) = self.lock_kernel_row(run_id, task_id, taking_job).await? else {
            return Ok(Vec::new());
        };
        let Locked {
            mut run,
            task,
            search_head,
            ..
        } = lock;
        let Some(mut task) = live_row(task, &run, run_id, generation) else {
            tx.rollback().await?;
            return Ok(Vec::new());
        };
        let wire = task.tool_name.clone().unwrap_or_default();
        let input = stored_input(&task);
        let mut effects: Vec<AfterCommit> = Vec::new();
        let answered = match KernelTool::from_wire(&wire) {
            Some(tool) => {
                let e = Evaluation {
                    tool,
                    task: &task,
                    input: &input,
                    search_head,
                    now: self.now_ms(),
                };
                self.answer(&mut tx, &mut run, &e, &mut effects)
                    .await?
                    .map(|outcome| (outcome, e.now, e.past_deadline()))
            }
            None => None,
        };
        let Some((outcome, now, late)) = answered else {
            tracing::warn!(run_id, task_id, tool = %wire, "no kernel handler; the row times out at its deadline");
            tx.rollback().await?;
            return Ok(Vec::new());
        };
        let mut u = Unit::of(&mut tx, &mut run, now, &mut effects);
        self.settle_kernel_row(&mut u, &mut task, outcome, late).await?;
        tx.commit().await?;
        Ok(self.publish_handing_off(effects).await)
    }

    /// Opens the evaluation's transaction with the run, the row and (for `tool_search`) its
    /// declaring head locked and read. `None`: another worker took the job.
    async fn lock_kernel_row(
        &self,
        run_id: i64,
        task_id: i64,
        taking_job: Option<i64>,
    ) -> KernelResult<Option<(Tx, Locked)>> {
        Ok(match taking_job {
            Some(job_id) => self.store.take_kernel_job(job_id, run_id, task_id).await?,
            None => {
                let mut tx = self.store.begin().await?;
                let lock = tx
                    .lock(RunLock {
                        run_id,
                        with: LockReads::Evaluation(task_id),
                    })
                    .await?;
                Some((tx, lock))
            }
        })
    }

    /// The tool's outcome. `None`: no handler answers (past the deadline, only the tools that
    /// place nothing answer, and the deadline then wins in [`Self::settle_kernel_row`]).
    async fn answer(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        e: &Evaluation<'_>,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<Option<KernelToolOutcome>> {
        // `tool_search` keys the kernel's cached index on the declaring round's stored frozen
        // digest (or, on rows without one, its bytes) and reads and parses the frozen context
        // only on a miss (search_cache.rs).
        if e.tool == KernelTool::ToolSearch {
            let found = self
                .state
                .search_cache
                .tool_search_declared(tx, e.input, e.task.declaring_task_id, e.search_head.clone())
                .await?;
            return Ok(Some(found));
        }
        let frozen = self.frozen_of(tx, e.task).await?;
        let callable = e.task.tool_alias.clone().unwrap_or_else(|| e.tool.wire().to_string());
        let ctx = ToolContext {
            tool_definitions: &frozen.tool_definitions,
            environment: &frozen.environment,
            skills: &frozen.skills,
            callable: &callable,
        };
        if e.past_deadline() {
            return Ok(dispatch(e.tool, e.input, &ctx));
        }
        let placed = self.answer_in_unit(tx, run, e, &ctx, &frozen, effects).await?;
        Ok(placed.or_else(|| dispatch(e.tool, e.input, &ctx)))
    }

    /// The handlers that read or write in the evaluation's unit of work (kernel-tools.md §0:
    /// the graph tools place children in it). `None`: the tool is a pure one.
    async fn answer_in_unit(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        e: &Evaluation<'_>,
        ctx: &ToolContext<'_>,
        frozen: &FrozenContext,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<Option<KernelToolOutcome>> {
        let call = GraphCall {
            call: e.task,
            input: e.input,
            ctx,
            now: e.now,
        };
        let u = &mut Unit::of(tx, run, e.now, effects);
        Ok(Some(match e.tool {
            KernelTool::DelegateTask => delegate_task::run(self, u, &call).await?,
            KernelTool::Wait => wait::run(self, u, &call).await?,
            KernelTool::Ask => ask::run(self, u, &call).await?,
            KernelTool::ToolCall => tool_call::run(self, u, &call).await?,
            KernelTool::Spawn => spawn::run(self, u, &call).await?,
            KernelTool::Status => status::run(self, u, &call).await?,
            KernelTool::Cancel => cancel::run(self, u, &call).await?,
            KernelTool::Send => send::run(self, u, &call).await?,
            KernelTool::SessionSearch => session_search::run(u.tx, u.run, e.input).await?,
            KernelTool::SessionRead => session_read::run(u.tx, u.run, e.input).await?,
            KernelTool::Skill
            | KernelTool::MemoryRead
            | KernelTool::MemoryWrite
            | KernelTool::MemoryEdit
            | KernelTool::MemoryLs
            | KernelTool::MemoryGrep
            | KernelTool::MemoryDelete => {
                return dispatch_stored(u.tx, e.tool, e.input, ctx, &frozen.memory, e.now).await;
            }
            KernelTool::RunnersList | KernelTool::ToolSearch => return Ok(None),
        }))
    }

    /// Settles the row: `timed_out` / `tool_timeout` past its deadline (the deadline wins,
    /// executor.md §13), else `completed` with the outcome; then the scheduling consequences.
    async fn settle_kernel_row(
        &self,
        u: &mut Unit<'_>,
        task: &mut TaskRow,
        outcome: KernelToolOutcome,
        late: bool,
    ) -> KernelResult<()> {
        if late {
            return self
                .settle_with(
                    u,
                    task,
                    TaskStatus::TimedOut,
                    SettleError::new(nexus_core::codes::task_error::TOOL_TIMEOUT, None),
                )
                .await
                .map(|_| ());
        }
        let blocks = match results::normalize_content(&outcome.content) {
            Ok(b) => b,
            Err(e) => vec![results::Block::Text(format!("{}: {e}", ToolWord::InternalError))],
        };
        task.content = Some(results::blocks_to_json(&blocks).to_string());
        task.is_error = outcome.is_error;
        task.structured_present = outcome.structured_content.is_some();
        task.structured_content = outcome.structured_content.as_ref().map(Value::to_string);
        task.pairs_with = outcome.pairs_with;
        task.error_key = None;
        task.error_detail = None;
        let Unit { tx, run, now, effects } = u;
        if self.transition(tx, run, task, TaskStatus::Completed, *now).await? {
            effects.extend(self.after_settle(tx, run, task, *now).await?);
        }
        Ok(())
    }
}
