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
use nexus_store::{JobRow, LockReads, Locked, RoundForReply, RunLock, RunStatus, TaskRow, TaskStatus};
use serde_json::{Value, json};

use crate::error::KernelResult;
use crate::runs::round::chain::PrevRecord;
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

impl Kernel {
    /// Plans the fan of a reply's calls against the round's frozen declaration (runs.md §7
    /// birth failures, in order). Reads executor ids outside the transaction.
    pub(crate) async fn plan_calls(&self, declaration: &[Value], reply: &ModelReply) -> KernelResult<Vec<PlannedCall>> {
        let resolver = declaration::Resolver::new(declaration);
        let mut out = Vec::with_capacity(reply.tool_calls.len());
        let mut used_ids: HashSet<String> = HashSet::new();
        for call in &reply.tool_calls {
            let mut call_id = call.id.clone();
            if call_id.is_empty()
                || call_id.chars().count() > CALL_ID_MAX
                || call_id.contains('\0')
                || !used_ids.insert(call_id.clone())
            {
                call_id = format!("call_{}", time::new_id());
                used_ids.insert(call_id.clone());
            }
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
                out.push(p);
                continue;
            }
            let args: Option<Value> = serde_json::from_str::<Value>(&call.arguments)
                .ok()
                .filter(Value::is_object);
            let Some(args) = args else {
                p.birth = Some(if reply.stop == StopReason::OutputBudgetExhausted {
                    (
                        task_error::TRUNCATED_TOOL_ARGUMENTS,
                        Some("the output budget ran out mid-call: re-issue the call with complete arguments".into()),
                    )
                } else {
                    (
                        task_error::INVALID_TOOL_ARGUMENTS,
                        Some("the arguments are not a JSON object".into()),
                    )
                });
                out.push(p);
                continue;
            };
            let resolved = resolver.resolve(name, &args);
            if resolved.entry.is_none() {
                p.tool_input = if contains_nul(&args) { json!({}) } else { args };
                p.birth = Some((task_error::UNKNOWN_TOOL, None));
                out.push(p);
                continue;
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
            if contains_nul(&resolved.tool_input) {
                p.birth = Some((task_error::INVALID_TOOL_INPUT, None));
                out.push(p);
                continue;
            }
            let size = jcs::to_string(&resolved.tool_input).len();
            if size > bounds::TOOL_INPUT {
                p.birth = Some((
                    task_error::TOOL_INPUT_TOO_LARGE,
                    Some(format!(
                        "the input is {size} bytes of canonical JSON; the bound is {} bytes",
                        bounds::TOOL_INPUT
                    )),
                ));
                out.push(p);
                continue;
            }
            p.tool_input = resolved.tool_input;
            out.push(p);
        }
        Ok(out)
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
        let Reply { reply, frozen, planned } = *reply;
        let now = self.now_ms();
        let mut tx = self.store.begin().await?;
        let lock = RunLock {
            run_id: task.run_id,
            with: LockReads::Round(task.id),
        };
        let Locked {
            mut run,
            round: current,
            ..
        } = tx.lock(lock).await?;
        tx.put_sealed_attempts(task.id, task.generation, attempts).await?;
        let mut effects = Vec::new();
        let Some(RoundForReply {
            task: mut round,
            facts,
            has_dependents,
            running_awaits,
        }) = current.filter(|r| r.task.generation == task.generation && r.task.status == TaskStatus::Running)
        else {
            tx.delete_job(job.id).await?;
            tx.commit().await?;
            return Ok(Vec::new());
        };
        // A stop without force lets a call-less reply finish; a reply with calls expands
        // nothing in a stopping run (runs.md §7): the round settles canceled.
        let finishes = run.status == RunStatus::Canceling && planned.is_empty();
        if (run.status == RunStatus::Canceling || run.status.is_terminal()) && !finishes {
            if self
                .settle_with_error(
                    &mut tx,
                    &mut run,
                    &mut round,
                    TaskStatus::Canceled,
                    SettleError::new(graph_error::RUN_CANCELED, None),
                    now,
                )
                .await?
            {
                effects = self.after_settle(&mut tx, &mut run, &round, now).await?;
            }
            tx.delete_job(job.id).await?;
            tx.commit().await?;
            return Ok(self.publish_handing_off(effects).await);
        }

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

        effects.push(AfterCommit::RunEvents(run.id));
        if planned.is_empty() {
            // The chain's last round: its settle is an ordinary one.
            self.transition(&mut tx, &mut run, &mut round, TaskStatus::Completed, now)
                .await?;
            effects.extend(self.after_settle(&mut tx, &mut run, &round, now).await?);
            tx.delete_job(job.id).await?;
            tx.commit().await?;
            return Ok(self.publish_handing_off(effects).await);
        }

        let (view, full) = self.chain_view(&mut tx, &round, facts, prev).await?;
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
        if let Some(detail) = rounds::expansion_refusal(view.rounds as usize, &history, &new_calls) {
            self.settle_with_error(
                &mut tx,
                &mut run,
                &mut round,
                TaskStatus::Failed,
                SettleError::new(graph_error::ROUND_EXPANSION_REFUSED, Some(detail.into())),
                now,
            )
            .await?;
            effects.extend(self.after_settle(&mut tx, &mut run, &round, now).await?);
            tx.delete_job(job.id).await?;
            tx.commit().await?;
            return Ok(self.publish_handing_off(effects).await);
        }

        self.transition(&mut tx, &mut run, &mut round, TaskStatus::Completed, now)
            .await?;
        let (n, key_floor) = self
            .round_number(&mut tx, run.id, planned.len(), view.key_floor, full.as_ref())
            .await?;
        let mut g = match full {
            Some(mut g) => {
                g.put(&round);
                g
            }
            None => Graph::new(vec![round.clone()], &[]),
        };
        let plan = Expansion {
            planned,
            n,
            // `frozen_context` is written once, at insert: the job's copy is the row's.
            fan_on_failure: &frozen.fan_on_failure,
            has_dependents,
            facts: ChainFacts {
                rounds: view.rounds,
                key_floor,
                history: &view.history,
            },
        };
        let births = self
            .expand(
                &mut Unit::of(&mut tx, &mut run, now, &mut effects),
                &mut g,
                &round,
                &plan,
            )
            .await?;
        let mut settled = vec![round.id];
        settled.extend(births);
        if !g.is_whole() {
            // The expansion's rows and edges are all in `g`; the cascade stays inside them
            // unless a pre-existing waiter, a kernel-held wait or a skip could reach further.
            if has_dependents || running_awaits || !g.contains_cascade(&settled) {
                g = Graph::load(&mut tx, run.id).await?;
            }
        }
        self.cascade(&mut tx, &mut run, &mut g, settled, now, &mut effects)
            .await?;
        if g.is_whole() {
            self.check_run_end(&mut tx, &mut run, &g, now, &mut effects).await?;
        } else {
            self.end_if_quiescent(&mut tx, &mut run, &g, now, &mut effects, None)
                .await?;
        }
        tx.delete_job(job.id).await?;
        tx.commit().await?;
        Ok(self.publish_handing_off(effects).await)
    }
}
