//! Readiness (runs.md §1, §5): what a settle makes happen next — skips, starts, awaits opening,
//! kernel-held waits completing. Status changes go through `settle.rs`; how the run ends is
//! `run_end.rs`.
//!
//! A waiting task is *ready* when every dependency has settled and none of them blocks it. A
//! dependency blocks when it was skipped, or when it failed (`failed | timed_out | uncertain |
//! canceled`) under `propagate` or `halt`; an `absorb` failure satisfies its dependents. A
//! blocked task is skipped (`upstream_failed`), and the skip cascades. Readiness is evaluated
//! for the dependents of a task when it settles, so a task becomes ready exactly once per
//! generation of its last dependency.
//!
//! A settle's consequences are computed over the rows they can reach (its dependents and their
//! dependencies, [`Graph::load_around`], or the rows an expansion just wrote) when that provably
//! holds the whole cascade; otherwise over the whole run ([`Graph::load`]).

use std::future::Future;
use std::pin::Pin;

use nexus_store::{JobKind, NewJob, RunRow, RunStatus, TaskKind, TaskRow, TaskStatus, Tx};
use serde_json::json;

use super::columns::Frozen;
use super::render::unpaired_envelope;
use super::rows::{Graph, Readiness, follow, readiness};
use super::unit::Unit;
use super::{AfterCommit, graph_error};
use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::settle::SettleError;

impl Kernel {
    /// Called after any settle of `task` (commit, sweep, deny, kernel tool, round), inside the
    /// same transaction: skips blocked dependents, starts ready ones, and ends the run when it
    /// is quiescent. The caller commits, then publishes the effects.
    pub(crate) fn after_settle<'a>(
        &'a self,
        tx: &'a mut Tx,
        run: &'a mut RunRow,
        task: &'a TaskRow,
        now: i64,
    ) -> Pin<Box<dyn Future<Output = KernelResult<Vec<AfterCommit>>> + Send + 'a>> {
        Box::pin(async move {
            let mut effects = vec![AfterCommit::RunEvents(run.id)];
            if let Some((mut g, quiet)) = Graph::load_around(tx, run.id, task).await? {
                self.cascade(tx, run, &mut g, vec![task.id], now, &mut effects).await?;
                self.end_if_quiescent(tx, run, &g, now, &mut effects, quiet).await?;
                return Ok(effects);
            }
            let mut g = Graph::load(tx, run.id).await?;
            g.put(task);
            self.cascade(tx, run, &mut g, vec![task.id], now, &mut effects).await?;
            self.check_run_end(tx, run, &g, now, &mut effects).await?;
            Ok(effects)
        })
    }

    /// Evaluates the dependents of each settled id in `settled` (and of every row skipped on
    /// the way).
    pub(crate) async fn cascade(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        g: &mut Graph,
        mut settled: Vec<i64>,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        while let Some(id) = settled.pop() {
            self.observe_settled(tx, run, g, id, now, &mut settled).await?;
            for d in g.dependents_of(id) {
                if g.get(d).is_some_and(|t| t.status == TaskStatus::Waiting) {
                    // Boxed: most settles have no waiting dependent, and evaluating one (which
                    // may start a row) would otherwise size every settle's boxed `after_settle`
                    // future, which is copied whole when it is created.
                    Box::pin(self.evaluate(&mut Unit::of(tx, run, now, effects), g, d, &mut settled)).await?;
                }
            }
        }
        Ok(())
    }

    /// Evaluates every waiting task (run start): rows may be ready without a settle having
    /// triggered them.
    pub(crate) async fn schedule_all(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        g: &mut Graph,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        let waiting: Vec<i64> = g
            .tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Waiting)
            .map(|t| t.id)
            .collect();
        self.schedule_ids(tx, run, g, waiting, now, effects).await
    }

    /// Evaluates the given rows (fresh appends whose dependencies may have settled already).
    pub(crate) async fn schedule_ids(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        g: &mut Graph,
        ids: Vec<i64>,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        let mut settled = Vec::new();
        for id in ids {
            if g.get(id).is_some_and(|t| t.status == TaskStatus::Waiting) {
                self.evaluate(&mut Unit::of(tx, run, now, effects), g, id, &mut settled)
                    .await?;
            }
        }
        self.cascade(tx, run, g, settled, now, effects).await
    }

    /// Evaluates one waiting row `id`: skips it, starts it, or leaves it waiting; a row that
    /// settles here joins `settled`, whose dependents the cascade evaluates next.
    async fn evaluate(&self, u: &mut Unit<'_>, g: &mut Graph, id: i64, settled: &mut Vec<i64>) -> KernelResult<()> {
        let Unit { tx, run, now, effects } = u;
        let now = *now;
        match readiness(g, id) {
            Readiness::NotYet => Ok(()),
            Readiness::Blocked => {
                let mut t = g.get(id).expect("evaluated rows exist").clone();
                if self
                    .settle_with_error(
                        tx,
                        run,
                        &mut t,
                        TaskStatus::Skipped,
                        SettleError::new(graph_error::UPSTREAM_FAILED, None),
                        now,
                    )
                    .await?
                {
                    g.put(&t);
                    settled.push(id);
                }
                Ok(())
            }
            Readiness::Ready => {
                if run.status != RunStatus::Running || !g.started.insert(id) {
                    return Ok(());
                }
                let mut t = g.get(id).expect("evaluated rows exist").clone();
                self.start_task(tx, run, g, &mut t, now, effects).await?;
                if t.kind == TaskKind::Tool && t.status.is_settled() {
                    // The gate settled the row and ran `after_settle` for it: re-read.
                    let started = std::mem::take(&mut g.started);
                    *g = Graph::load(tx, run.id).await?;
                    g.started = started;
                } else {
                    g.put(&t);
                    if t.status.is_settled() {
                        settled.push(id);
                    }
                }
                Ok(())
            }
        }
    }

    /// Starts a ready task: a model task gets its `model_call` job (the seal moves it to
    /// `running`); a tool task goes to the gate; an await opens.
    async fn start_task(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        g: &Graph,
        t: &mut TaskRow,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        match t.kind {
            TaskKind::Model => {
                tx.put_job(NewJob {
                    kind: JobKind::ModelCall,
                    run_id: run.id,
                    task_id: Some(t.id),
                    generation: t.generation,
                    // At once (a sweep may run at a clock ahead of this node's).
                    available_at: now.min(self.now_ms()),
                })
                .await?;
                effects.push(AfterCommit::WakeJobs);
            }
            TaskKind::Tool => {
                let more = self.on_tool_ready(tx, run, t, now).await?;
                effects.extend(more);
            }
            TaskKind::Await => self.open_await(tx, run, g, t, now, effects).await?,
        }
        Ok(())
    }

    /// Opens an await: a tokened `ask` is `dispatched` to the token holder; a tokenless
    /// (model-issued) `ask` is `awaiting_input` for anyone with write standing, with
    /// `attention_required {reason: awaiting_human}` and `work_available {kind: ask}` to the
    /// declaring agent's address; a `wait` (or a delegation obligation) is buffered by the kernel
    /// (`running`) until its target settles.
    async fn open_await(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        g: &Graph,
        t: &mut TaskRow,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        let frozen = Frozen::of(t);
        const DAY: i64 = 86_400_000;
        let tokenless_ask = matches!(frozen, Some(Frozen::Ask(_))) && t.resolution_token_sha256.is_none();
        let wait = match frozen {
            Some(Frozen::Wait(w)) => Some(w.task),
            _ => None,
        };
        let (to, timeout) = if wait.is_some() {
            (TaskStatus::Running, t.timeout_ms.unwrap_or(3_600_000).min(DAY))
        } else if tokenless_ask {
            (TaskStatus::AwaitingInput, t.timeout_ms.unwrap_or(DAY).min(DAY))
        } else {
            (TaskStatus::Dispatched, t.timeout_ms.unwrap_or(DAY).min(DAY))
        };
        t.await_started_at = Some(now);
        t.deadline_at = Some(now + timeout);
        if tokenless_ask {
            let address = self.declaring_address(run).await?;
            t.addressed_executor_id = address.as_ref().map(|a| a.id);
            t.addressed_role = address.as_ref().map(|_| nexus_store::ExecutorKind::AgentApplication);
            if self.transition(tx, run, t, to, now).await? {
                let data = json!({"reason": "awaiting_human", "task_key": t.key});
                self.emit(
                    &mut Unit::of(tx, run, now, effects),
                    nexus_store::EventKind::AttentionRequired,
                    Some(&t.key),
                    data,
                )
                .await?;
                if let Some(a) = address {
                    effects.push(AfterCommit::WorkAvailable {
                        executor_public_id: a.public_id,
                        kind: "ask",
                        run: run.public_id,
                        task_key: t.key.clone(),
                    });
                }
            }
            return Ok(());
        }
        self.transition(tx, run, t, to, now).await?;
        if to == TaskStatus::Running
            && let Some(target) = wait.as_deref()
            && let Some(followed) = follow(g, target)
            && followed.status.is_settled()
        {
            let followed = followed.clone();
            self.complete_wait(tx, run, t, &followed, now).await?;
        }
        Ok(())
    }

    /// Completes kernel-held `wait` awaits observing a row that just settled.
    async fn observe_settled(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        g: &mut Graph,
        id: i64,
        now: i64,
        settled: &mut Vec<i64>,
    ) -> KernelResult<()> {
        if g.get(id).is_none() {
            return Ok(());
        }
        let waiters: Vec<TaskRow> = g
            .tasks
            .iter()
            .filter(|w| w.kind == TaskKind::Await && w.status == TaskStatus::Running)
            .filter(|w| {
                Frozen::wait_of(w)
                    .and_then(|wait| follow(g, &wait.task))
                    .is_some_and(|f| f.id == id)
            })
            .cloned()
            .collect();
        if waiters.is_empty() {
            return Ok(());
        }
        // Boxed: a completed wait is rare, and its future would otherwise size every settle's
        // (the boxed `after_settle` is copied whole when it is created).
        let Some(target) = g.get(id).cloned() else {
            return Ok(());
        };
        let completed = Box::pin(self.complete_waits(tx, run, &target, waiters, now)).await?;
        for w in completed {
            g.put(&w);
            settled.push(w.id);
        }
        Ok(())
    }

    /// Completes the kernel-held waits in `waiters`, which observe the settled row `target`;
    /// returns the rows it completed.
    async fn complete_waits(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        target: &TaskRow,
        waiters: Vec<TaskRow>,
        now: i64,
    ) -> KernelResult<Vec<TaskRow>> {
        let mut completed = Vec::new();
        for mut w in waiters {
            if self.complete_wait(tx, run, &mut w, target, now).await? {
                completed.push(w);
            }
        }
        Ok(completed)
    }

    async fn complete_wait(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        w: &mut TaskRow,
        target: &TaskRow,
        now: i64,
    ) -> KernelResult<bool> {
        let output = unpaired_envelope(target);
        w.content = Some(serde_json::to_string(&json!([{"type": "text", "text": output}])).expect("blocks serialize"));
        let done = self.transition(tx, run, w, TaskStatus::Completed, now).await?;
        // A conversation-hosted run's background result is kernel mail (kernel-tools.md §0).
        if done && Frozen::wait_of(w).is_some_and(|wait| wait.delegation) {
            self.conversations()
                .mail_delegation_result(tx, run, w, &output, now)
                .await?;
        }
        Ok(done)
    }
}
