//! The apply transaction (runs.md §7): the reply's calls planned against the frozen
//! declaration (birth failures in order), the reply stored, the round completed, and the
//! expansion and its cascade run — conditional on (task, generation, `running`).

use std::collections::HashSet;

use nexus_core::codes::task_error;
use nexus_core::declaration;
use nexus_core::nul::contains_nul;
use nexus_core::rounds::{self, CallRecord, RoundRecord};
use nexus_core::{bounds, jcs};
use nexus_providers::{ModelReply, RawToolCall, StopReason};
use nexus_store::prelude::*;
use nexus_store::{
    JobRow, LockReads, Locked, RoundFactsRow, RoundForReply, RunLock, RunRow, RunStatus, TaskRow, TaskStatus, Tx,
};
use serde_json::{Value, json};

use crate::error::KernelResult;
use crate::runs::round::chain::{ChainView, PrevRecord};
use crate::runs::round::expand::{ChainFacts, Expansion, PlannedCall};
use crate::runs::rows::Graph;
use crate::runs::settle::SettleError;
use crate::runs::unit::Unit;
use crate::runs::worker::rerun_transient;
use crate::runs::{AfterCommit, FrozenContext, KernelToolJob, StoredReply, graph_error};
use crate::{Kernel, time};

/// Call ids longer than this are replaced by `call_<uuidv7>` on both sides.
pub(crate) const CALL_ID_MAX: usize = 128;

/// A model reply with what the apply transaction needs of it, planned once outside it.
#[derive(Clone, Copy)]
struct Reply<'a> {
    reply: &'a ModelReply,
    frozen: &'a FrozenContext,
    planned: &'a [PlannedCall],
}

/// One apply unit in flight: the open transaction, the run locked in it, the round the reply
/// answers, the unit's clock and the effects to hand on once it commits.
struct Applying<'a> {
    job: &'a JobRow,
    tx: Tx,
    run: RunRow,
    round: TaskRow,
    now: i64,
    effects: Vec<AfterCommit>,
}

/// What the lock read of the round besides its row.
struct RoundReads {
    facts: Option<RoundFactsRow>,
    has_dependents: bool,
    running_awaits: bool,
}

impl Kernel {
    /// Plans the fan of a reply's calls against the round's frozen declaration (runs.md §7
    /// birth failures, in order). Reads executor ids outside the transaction.
    pub(crate) async fn plan_calls(&self, declaration: &[Value], reply: &ModelReply) -> KernelResult<Vec<PlannedCall>> {
        let resolver = declaration::Resolver::new(declaration);
        let mut out = Vec::with_capacity(reply.tool_calls.len());
        let mut used_ids: HashSet<String> = HashSet::new();
        for call in &reply.tool_calls {
            let call_id = unique_call_id(call, &mut used_ids);
            out.push(self.plan_call(&resolver, &reply.stop, call, call_id).await?);
        }
        Ok(out)
    }

    /// Plans one call: its tool, input and target, or the birth failure it is born with.
    async fn plan_call(
        &self,
        resolver: &declaration::Resolver,
        stop: &StopReason,
        call: &RawToolCall,
        call_id: String,
    ) -> KernelResult<PlannedCall> {
        let name = &call.name;
        let mut p = PlannedCall {
            call_id,
            tool_name: name.clone(),
            tool_input: json!({}),
            tool_alias: None,
            target_executor_id: None,
            birth: None,
        };
        if name.is_empty() || name.chars().count() > bounds::NAME_CHARS || name.contains('\0') {
            p.tool_name = task_error::UNKNOWN_TOOL.into();
            p.birth = Some((task_error::UNKNOWN_TOOL, None));
            return Ok(p);
        }
        let args: Option<Value> = serde_json::from_str::<Value>(&call.arguments)
            .ok()
            .filter(Value::is_object);
        let Some(args) = args else {
            p.birth = Some(unparsed_arguments(stop));
            return Ok(p);
        };
        let resolved = resolver.resolve(name, &args);
        if resolved.entry.is_none() {
            p.tool_input = if contains_nul(&args) { json!({}) } else { args };
            p.birth = Some((task_error::UNKNOWN_TOOL, None));
            return Ok(p);
        }
        p.tool_name = resolved.tool_name;
        p.tool_alias = resolved.tool_alias;
        if let Some(route) = &resolved.route {
            p.target_executor_id = self
                .store
                .executor_by_public_id(route.runner_executor_public_id)
                .await?
                .map(|e| e.id);
        }
        p.birth = input_birth(&resolved.tool_input);
        if p.birth.is_none() {
            p.tool_input = resolved.tool_input;
        }
        Ok(p)
    }

    /// The apply transaction: conditional on (task, generation, `running`). `attempts`: the
    /// sealed record's attempts, stored in the same transaction. Returns the kernel tool jobs
    /// the expansion made, for the worker to evaluate at once. A unit that failed transiently
    /// (a deadlock victim) rolled back whole and runs again with the same reply
    /// ([`rerun_transient`]); a rerun reads the predecessor's record from the store.
    pub(crate) async fn apply_reply(
        &self,
        job: &JobRow,
        task: &TaskRow,
        reply: &ModelReply,
        mut prev: Option<PrevRecord>,
        attempts: &str,
    ) -> KernelResult<Vec<KernelToolJob>> {
        let frozen = FrozenContext::of(task);
        let planned = self.plan_calls(&frozen.tool_definitions, reply).await?;
        let reply = Reply {
            reply,
            frozen: &frozen,
            planned: &planned,
        };
        rerun_transient("model reply", task.id, || {
            self.apply_unit(job, task, &reply, prev.take(), attempts)
        })
        .await
    }

    /// One run of the apply transaction.
    async fn apply_unit(
        &self,
        job: &JobRow,
        task: &TaskRow,
        reply: &Reply<'_>,
        prev: Option<PrevRecord>,
        attempts: &str,
    ) -> KernelResult<Vec<KernelToolJob>> {
        let Some((mut a, mut reads)) = self.open_apply(job, task, attempts).await? else {
            return Ok(Vec::new());
        };
        // A stop without force lets a call-less reply finish; a reply with calls expands
        // nothing in a stopping run (runs.md §7): the round settles canceled.
        let finishes = a.run.status == RunStatus::Canceling && reply.planned.is_empty();
        if (a.run.status == RunStatus::Canceling || a.run.status.is_terminal()) && !finishes {
            return self.cancel_round(a).await;
        }
        store_reply(&mut a.round, reply.reply, reply.planned);
        a.effects.push(AfterCommit::RunEvents(a.run.id));
        if reply.planned.is_empty() {
            // The chain's last round: its settle is an ordinary one.
            return self.complete_last_round(a).await;
        }
        let (view, full) = self.chain_view(&mut a.tx, &a.round, reads.facts.take(), prev).await?;
        if let Some(detail) = refusal(&view, reply.planned) {
            return self.refuse_expansion(a, detail).await;
        }
        self.expand_round(a, reply, &reads, view, full).await
    }

    /// Opens the unit: the run locked with the round read, the sealed attempts stored. `None`
    /// (the job deleted, committed) when the round is no longer the running generation.
    async fn open_apply<'a>(
        &self,
        job: &'a JobRow,
        task: &TaskRow,
        attempts: &str,
    ) -> KernelResult<Option<(Applying<'a>, RoundReads)>> {
        let now = self.now_ms();
        let mut tx = self.store.begin().await?;
        let lock = RunLock {
            run_id: task.run_id,
            with: LockReads::Round(task.id),
        };
        let Locked {
            run, round: current, ..
        } = tx.lock(lock).await?;
        tx.put_sealed_attempts(task.id, task.generation, attempts).await?;
        let Some(RoundForReply {
            task: round,
            facts,
            has_dependents,
            running_awaits,
        }) = current.filter(|r| r.task.generation == task.generation && r.task.status == TaskStatus::Running)
        else {
            tx.delete_job(job.id).await?;
            tx.commit().await?;
            return Ok(None);
        };
        let a = Applying {
            job,
            tx,
            run,
            round,
            now,
            effects: Vec::new(),
        };
        let reads = RoundReads {
            facts,
            has_dependents,
            running_awaits,
        };
        Ok(Some((a, reads)))
    }

    /// A stopping (or ended) run: the round settles canceled, nothing expands.
    async fn cancel_round(&self, mut a: Applying<'_>) -> KernelResult<Vec<KernelToolJob>> {
        let error = SettleError::new(graph_error::RUN_CANCELED, None);
        if self
            .settle_with_error(&mut a.tx, &mut a.run, &mut a.round, TaskStatus::Canceled, error, a.now)
            .await?
        {
            a.effects = self.after_settle(&mut a.tx, &mut a.run, &a.round, a.now).await?;
        }
        self.finish_apply(a).await
    }

    /// A call-less reply: the round completes and settles as any other.
    async fn complete_last_round(&self, mut a: Applying<'_>) -> KernelResult<Vec<KernelToolJob>> {
        self.transition(&mut a.tx, &mut a.run, &mut a.round, TaskStatus::Completed, a.now)
            .await?;
        let settled = self.after_settle(&mut a.tx, &mut a.run, &a.round, a.now).await?;
        a.effects.extend(settled);
        self.finish_apply(a).await
    }

    /// The chain refuses to grow (its round limit, a repeat-call loop): the round fails.
    async fn refuse_expansion(&self, mut a: Applying<'_>, detail: &str) -> KernelResult<Vec<KernelToolJob>> {
        let error = SettleError::new(graph_error::ROUND_EXPANSION_REFUSED, Some(detail.into()));
        self.settle_with_error(&mut a.tx, &mut a.run, &mut a.round, TaskStatus::Failed, error, a.now)
            .await?;
        let settled = self.after_settle(&mut a.tx, &mut a.run, &a.round, a.now).await?;
        a.effects.extend(settled);
        self.finish_apply(a).await
    }

    /// The round completes and expands into its fan and continuation; the cascade runs over
    /// the rows the expansion settled.
    async fn expand_round(
        &self,
        mut a: Applying<'_>,
        reply: &Reply<'_>,
        reads: &RoundReads,
        view: ChainView,
        full: Option<Graph>,
    ) -> KernelResult<Vec<KernelToolJob>> {
        self.transition(&mut a.tx, &mut a.run, &mut a.round, TaskStatus::Completed, a.now)
            .await?;
        let (n, key_floor) = self
            .round_number(&mut a.tx, a.run.id, reply.planned.len(), view.key_floor, full.as_ref())
            .await?;
        let mut g = match full {
            Some(mut g) => {
                g.put(&a.round);
                g
            }
            None => Graph::new(vec![a.round.clone()], &[]),
        };
        let plan = Expansion {
            planned: reply.planned,
            n,
            // `frozen_context` is written once, at insert: the job's copy is the row's.
            fan_on_failure: &reply.frozen.fan_on_failure,
            has_dependents: reads.has_dependents,
            facts: ChainFacts {
                rounds: view.rounds,
                key_floor,
                history: &view.history,
            },
        };
        let mut unit = Unit::of(&mut a.tx, &mut a.run, a.now, &mut a.effects);
        let births = self.expand(&mut unit, &mut g, &a.round, &plan).await?;
        let mut settled = vec![a.round.id];
        settled.extend(births);
        self.cascade_expansion(&mut a, g, settled, reads).await?;
        self.finish_apply(a).await
    }

    /// The cascade from the expanded round and the rows failed at birth, then the run's end.
    async fn cascade_expansion(
        &self,
        a: &mut Applying<'_>,
        mut g: Graph,
        settled: Vec<i64>,
        reads: &RoundReads,
    ) -> KernelResult<()> {
        if !g.is_whole() {
            // The expansion's rows and edges are all in `g`; the cascade stays inside them
            // unless a pre-existing waiter, a kernel-held wait or a skip could reach further.
            if reads.has_dependents || reads.running_awaits || !g.contains_cascade(&settled) {
                g = Graph::load(&mut a.tx, a.run.id).await?;
            }
        }
        self.cascade(&mut a.tx, &mut a.run, &mut g, settled, a.now, &mut a.effects)
            .await?;
        if g.is_whole() {
            self.check_run_end(&mut a.tx, &mut a.run, &g, a.now, &mut a.effects)
                .await
        } else {
            self.end_if_quiescent(&mut a.tx, &mut a.run, &g, a.now, &mut a.effects, None)
                .await
        }
    }

    /// Ends the unit: the job deleted, the transaction committed, the effects published (the
    /// kernel tool jobs handed back).
    async fn finish_apply(&self, mut a: Applying<'_>) -> KernelResult<Vec<KernelToolJob>> {
        a.tx.delete_job(a.job.id).await?;
        a.tx.commit().await?;
        Ok(self.publish_handing_off(a.effects).await)
    }
}

/// The call's own id, else (empty, too long, holding NUL or already used in this reply) a
/// fresh `call_<uuidv7>`.
fn unique_call_id(call: &RawToolCall, used_ids: &mut HashSet<String>) -> String {
    let mut call_id = call.id.clone();
    if call_id.is_empty()
        || call_id.chars().count() > CALL_ID_MAX
        || call_id.contains('\0')
        || !used_ids.insert(call_id.clone())
    {
        call_id = format!("call_{}", time::new_id());
        used_ids.insert(call_id.clone());
    }
    call_id
}

/// The birth failure of a call whose arguments are not a JSON object.
fn unparsed_arguments(stop: &StopReason) -> (&'static str, Option<String>) {
    if *stop == StopReason::OutputBudgetExhausted {
        (
            task_error::TRUNCATED_TOOL_ARGUMENTS,
            Some("the output budget ran out mid-call: re-issue the call with complete arguments".into()),
        )
    } else {
        (
            task_error::INVALID_TOOL_ARGUMENTS,
            Some("the arguments are not a JSON object".into()),
        )
    }
}

/// The birth failure of a resolved input: NUL inside it, or over the size bound.
fn input_birth(input: &Value) -> Option<(&'static str, Option<String>)> {
    if contains_nul(input) {
        return Some((task_error::INVALID_TOOL_INPUT, None));
    }
    let size = jcs::to_string(input).len();
    (size > bounds::TOOL_INPUT).then(|| {
        (
            task_error::TOOL_INPUT_TOO_LARGE,
            Some(format!(
                "the input is {size} bytes of canonical JSON; the bound is {} bytes",
                bounds::TOOL_INPUT
            )),
        )
    })
}

/// Stores the reply on its round: the reply (with the planned call ids), its usage and its
/// text as content.
fn store_reply(round: &mut TaskRow, reply: &ModelReply, planned: &[PlannedCall]) {
    let calls: Vec<RawToolCall> = reply
        .tool_calls
        .iter()
        .zip(planned)
        .map(|(c, p)| RawToolCall {
            id: p.call_id.clone(),
            name: c.name.clone(),
            arguments: c.arguments.clone(),
        })
        .collect();
    let stored = StoredReply {
        text: reply.text.clone(),
        tool_calls: calls,
        native: reply.native.clone(),
        stop: reply.stop.as_str().to_string(),
    };
    round.reply = Some(serde_json::to_string(&stored).expect("a reply serializes"));
    round.usage = Some(serde_json::to_string(&reply.usage).expect("usage serializes"));
    let text = reply.text.clone().unwrap_or_default();
    round.content = Some(if text.trim().is_empty() {
        "[]".into()
    } else {
        json!([{"type": "text", "text": text}]).to_string()
    });
}

/// Why the chain may not grow by the planned calls (its round limit, a repeat-call loop).
fn refusal(view: &ChainView, planned: &[PlannedCall]) -> Option<&'static str> {
    let new_calls: Vec<String> = planned
        .iter()
        .map(|p| {
            let target = p.target_executor_id.map(|id| id.to_string());
            rounds::call_signature(&p.tool_name, &p.tool_input, target.as_deref())
        })
        .collect();
    let history: Vec<RoundRecord> = view
        .history
        .iter()
        .map(|r| RoundRecord {
            calls: r
                .calls
                .iter()
                .map(|(signature, result)| CallRecord {
                    signature: signature.clone(),
                    result: result.clone(),
                })
                .collect(),
        })
        .collect();
    rounds::expansion_refusal(view.rounds as usize, &history, &new_calls)
}
