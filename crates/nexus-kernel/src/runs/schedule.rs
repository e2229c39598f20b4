//! Scheduling (runs.md §1, §5, §6): the one status-change path, readiness, skipping, and how a
//! run ends.
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

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;

use nexus_store::{EdgeRow, NewJob, RunRow, TaskEndRow, TaskRow, Tx, run_status, task_status};
use serde_json::{Value, json};

use super::{AfterCommit, graph_error, is_open, is_settled, job_kind, task_kind};
use crate::Kernel;
use crate::error::KernelResult;

/// The run's tasks and edges as one transaction sees them.
pub(crate) struct Graph {
    pub tasks: Vec<TaskRow>,
    index: HashMap<i64, usize>,
    /// task id → the ids it depends on.
    deps: HashMap<i64, Vec<i64>>,
    /// task id → the ids that depend on it.
    dependents: HashMap<i64, Vec<i64>>,
    /// Tasks started in this transaction (a model task's job is inserted once).
    started: HashSet<i64>,
    /// Every row and edge of the run ([`Graph::load`]), not a neighbourhood.
    whole: bool,
}

impl Graph {
    pub async fn load(tx: &mut Tx, run_id: i64) -> KernelResult<Graph> {
        let tasks = tx.tasks_of_run(run_id).await?;
        let edges = tx.edges_of_run(run_id).await?;
        let mut g = Graph::new(tasks, &edges);
        g.whole = true;
        Ok(g)
    }

    /// Whether this is the whole run ([`Graph::load`]) rather than a neighbourhood.
    pub fn is_whole(&self) -> bool {
        self.whole
    }

    /// Whether a cascade from the settled rows `settled` provably stays inside this graph (the
    /// caller has checked that no kernel-held wait observes rows of the run, and that every
    /// dependent of a settled row is here with all its dependencies): no waiting dependent is
    /// an await or blocked (a skip cascades further).
    pub fn contains_cascade(&self, settled: &[i64]) -> bool {
        settled.iter().all(|&id| {
            self.dependents_of(id).into_iter().all(|d| match self.get(d) {
                None => false,
                Some(t) if t.status != task_status::WAITING => true,
                Some(t) => t.kind != task_kind::AWAIT && !matches!(readiness(self, d), Readiness::Blocked),
            })
        })
    }

    /// The rows a settle of `task` can reach without leaving them: `task`, its dependents and
    /// their dependencies. `None` (load the whole graph) unless the cascade provably stays
    /// inside: no kernel-held wait observes rows in the run, and no waiting dependent is an
    /// await or blocked (a skip cascades further).
    pub async fn load_around(tx: &mut Tx, run_id: i64, task: &TaskRow) -> KernelResult<Option<Graph>> {
        if tx.any_running_await(run_id).await? {
            return Ok(None);
        }
        let mut edges = tx.edges_into(task.id).await?;
        let mut dependents: Vec<i64> = edges.iter().map(|e| e.task_id).collect();
        dependents.dedup();
        let mut seen = HashSet::from([task.id]);
        let mut tasks = vec![task.clone()];
        for &d in &dependents {
            // One read per dependent: its row and the rows it depends on.
            let mut rows = tx.task_and_deps(d).await?;
            let Some(at) = rows.iter().position(|t| t.id == d) else {
                return Ok(None);
            };
            let row = rows.remove(at);
            for dep in &rows {
                edges.push(EdgeRow {
                    task_id: d,
                    depends_on_id: dep.id,
                    kind: String::new(),
                });
            }
            for t in std::iter::once(row).chain(rows) {
                if t.run_id != run_id {
                    return Ok(None);
                }
                if seen.insert(t.id) {
                    tasks.push(t);
                }
            }
        }
        edges.sort_by(|a, b| (a.task_id, a.depends_on_id, &a.kind).cmp(&(b.task_id, b.depends_on_id, &b.kind)));
        edges.dedup_by(|a, b| (a.task_id, a.depends_on_id, &a.kind) == (b.task_id, b.depends_on_id, &b.kind));
        let g = Graph::new(tasks, &edges);
        Ok(g.contains_cascade(&[task.id]).then_some(g))
    }

    pub fn new(tasks: Vec<TaskRow>, edges: &[EdgeRow]) -> Graph {
        let index = tasks.iter().enumerate().map(|(i, t)| (t.id, i)).collect();
        let mut g = Graph {
            tasks,
            index,
            deps: HashMap::new(),
            dependents: HashMap::new(),
            started: HashSet::new(),
            whole: false,
        };
        for e in edges {
            g.add_edge(e.task_id, e.depends_on_id);
        }
        g
    }

    pub fn add_edge(&mut self, task_id: i64, depends_on_id: i64) {
        let d = self.deps.entry(task_id).or_default();
        if !d.contains(&depends_on_id) {
            d.push(depends_on_id);
            self.dependents.entry(depends_on_id).or_default().push(task_id);
        }
    }

    /// Replaces (or adds) a row.
    pub fn put(&mut self, task: &TaskRow) {
        match self.index.get(&task.id) {
            Some(&i) => self.tasks[i] = task.clone(),
            None => {
                self.index.insert(task.id, self.tasks.len());
                self.tasks.push(task.clone());
            }
        }
    }

    pub fn get(&self, id: i64) -> Option<&TaskRow> {
        self.index.get(&id).map(|&i| &self.tasks[i])
    }

    pub fn by_key(&self, key: &str) -> Option<&TaskRow> {
        self.tasks.iter().find(|t| t.key == key)
    }

    pub fn deps_of(&self, id: i64) -> &[i64] {
        self.deps.get(&id).map_or(&[], Vec::as_slice)
    }

    pub fn dependents_of(&self, id: i64) -> Vec<i64> {
        self.dependents.get(&id).cloned().unwrap_or_default()
    }

    /// Every ancestor of `id` (transitively), excluding `id`.
    pub fn ancestors(&self, id: i64) -> HashSet<i64> {
        let mut seen = HashSet::new();
        let mut stack = self.deps_of(id).to_vec();
        while let Some(d) = stack.pop() {
            if seen.insert(d) {
                stack.extend_from_slice(self.deps_of(d));
            }
        }
        seen
    }
}

/// Whether a settled dependency lets its dependents run.
fn satisfies(dep: &TaskRow) -> bool {
    match dep.status.as_str() {
        "completed" => true,
        "skipped" => false,
        _ => dep.on_failure == "absorb",
    }
}

/// An adjudication candidate (runs.md §6).
pub(crate) fn is_candidate(t: &TaskRow) -> bool {
    EndView::from(t).is_candidate()
}

/// What the run's end reads of one row, borrowed from a whole row or from a [`TaskEndRow`]
/// (the narrow read a settle makes when its neighbourhood went quiet).
#[derive(Clone, Copy)]
struct EndView<'a> {
    id: i64,
    key: &'a str,
    status: &'a str,
    on_failure: &'a str,
    resolved: bool,
}

/// The same five fields of a whole row and of an end row.
macro_rules! end_view_from {
    ($row:ty) => {
        impl<'a> From<&'a $row> for EndView<'a> {
            fn from(t: &'a $row) -> Self {
                Self {
                    id: t.id,
                    key: &t.key,
                    status: &t.status,
                    on_failure: &t.on_failure,
                    resolved: t.failure_resolution.is_some(),
                }
            }
        }
    };
}
end_view_from!(TaskRow);
end_view_from!(TaskEndRow);

impl EndView<'_> {
    fn is_candidate(&self) -> bool {
        matches!(self.status, "failed" | "timed_out" | "uncertain") && !self.resolved && self.on_failure != "absorb"
    }
}

/// How a run ends, decided from its rows (runs.md §1, §6).
#[derive(Debug, PartialEq, Eq)]
enum RunEnd {
    /// Not quiescent, or not a status that ends.
    Stays,
    /// A drained cancel.
    Canceled,
    /// A halt failure, or an unadjudicated failure without a completed deliverable: the key of
    /// the row that needs attention.
    Attention(String),
    Completed,
}

/// The run's end from `rows`, every row of the run in id order (walked a few times, never
/// collected).
fn run_end<'a>(run: &RunRow, rows: impl Iterator<Item = EndView<'a>> + Clone) -> RunEnd {
    if rows.clone().any(|t| is_open(t.status)) {
        return RunEnd::Stays;
    }
    match run.status.as_str() {
        run_status::CANCELING => RunEnd::Canceled,
        run_status::RUNNING => {
            let mut candidates = rows.clone().filter(|t| t.is_candidate());
            let first = candidates.clone().next();
            let halt = candidates.find(|t| t.on_failure == "halt");
            let deliverable_completed = run
                .deliverable_task_id
                .and_then(|id| rows.clone().find(|t| t.id == id))
                .is_some_and(|t| t.status == task_status::COMPLETED);
            match (halt, deliverable_completed) {
                (Some(h), _) => RunEnd::Attention(h.key.to_string()),
                (None, false) => first.map_or(RunEnd::Completed, |t| RunEnd::Attention(t.key.to_string())),
                (None, true) => RunEnd::Completed,
            }
        }
        _ => RunEnd::Stays,
    }
}

enum Readiness {
    NotYet,
    Ready,
    Blocked,
}

fn readiness(g: &Graph, id: i64) -> Readiness {
    let mut blocked = false;
    for &d in g.deps_of(id) {
        let Some(dep) = g.get(d) else { continue };
        if !is_settled(&dep.status) {
            return Readiness::NotYet;
        }
        if !satisfies(dep) {
            blocked = true;
        }
    }
    if blocked { Readiness::Blocked } else { Readiness::Ready }
}

impl Kernel {
    /// The single way a task changes status: a conditional update on (generation, current
    /// status) plus its `task_status_changed {from, to, generation, error?}` event, in `tx`.
    /// Other columns the caller changed on `task` (error, content, reply…) are written in the
    /// same statement. Returns false (and leaves `task` as it was) when the row was not in the
    /// expected state (idle).
    pub(crate) async fn transition(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        task: &mut TaskRow,
        to: &str,
        now: i64,
    ) -> KernelResult<bool> {
        self.transition_via(tx, run, task, None, to, now).await
    }

    /// [`Kernel::transition`] through an intermediate status: `from → via → to` in one
    /// conditional update (the row is never seen at `via` outside the transaction), with both
    /// `task_status_changed` events, in order.
    pub(crate) async fn transition_via(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        task: &mut TaskRow,
        via: Option<&str>,
        to: &str,
        now: i64,
    ) -> KernelResult<bool> {
        let from = task.status.clone();
        let mut next = task.clone();
        next.status = to.to_string();
        if is_settled(to) || via.is_some_and(is_settled) {
            next.settled_at = Some(now);
        }
        if (to == task_status::RUNNING || via == Some(task_status::RUNNING)) && next.started_at.is_none() {
            next.started_at = Some(now);
        }
        if !tx.update_task(&next, task.generation, &[from.as_str()]).await? {
            return Ok(false);
        }
        let hops = match via {
            Some(via) => vec![(from.as_str(), via), (via, to)],
            None => vec![(from.as_str(), to)],
        };
        for (hop_from, hop_to) in hops {
            let mut data = json!({"from": hop_from, "to": hop_to, "generation": next.generation});
            if is_settled(hop_to)
                && let Some(key) = &next.error_key
            {
                let mut error = json!({"key": key});
                if let Some(detail) = &next.error_detail {
                    error["detail"] = json!(detail);
                }
                data["error"] = error;
            }
            let row = tx
                .append_event(run.id, "task_status_changed", Some(&next.key), &data, now)
                .await?;
            run.last_event_sequence = row.sequence;
        }
        *task = next;
        Ok(true)
    }

    /// Sets `error` and settles `task` into `to` (`failed`, `canceled`, `skipped`, …).
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn settle_with_error(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        task: &mut TaskRow,
        to: &str,
        key: &str,
        detail: Option<String>,
        now: i64,
    ) -> KernelResult<bool> {
        let before = (task.error_key.clone(), task.error_detail.clone());
        task.error_key = Some(key.to_string());
        task.error_detail = detail;
        let done = self.transition(tx, run, task, to, now).await?;
        if !done {
            (task.error_key, task.error_detail) = before;
        }
        Ok(done)
    }

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
            if let Some(mut g) = Graph::load_around(tx, run.id, task).await? {
                self.cascade(tx, run, &mut g, vec![task.id], now, &mut effects).await?;
                self.end_if_quiescent(tx, run, &g, now, &mut effects).await?;
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
            self.observe_settled(tx, run, g, id, now, effects, &mut settled).await?;
            for d in g.dependents_of(id) {
                if g.get(d).is_some_and(|t| t.status == task_status::WAITING) {
                    // Boxed: most settles have no waiting dependent, and evaluating one (which
                    // may start a row) would otherwise size every settle's boxed `after_settle`
                    // future, which is copied whole when it is created.
                    Box::pin(self.evaluate(tx, run, g, d, now, effects, &mut settled)).await?;
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
            .filter(|t| t.status == task_status::WAITING)
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
            if g.get(id).is_some_and(|t| t.status == task_status::WAITING) {
                self.evaluate(tx, run, g, id, now, effects, &mut settled).await?;
            }
        }
        self.cascade(tx, run, g, settled, now, effects).await
    }

    #[allow(clippy::too_many_arguments)]
    async fn evaluate(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        g: &mut Graph,
        id: i64,
        now: i64,
        effects: &mut Vec<AfterCommit>,
        settled: &mut Vec<i64>,
    ) -> KernelResult<()> {
        match readiness(g, id) {
            Readiness::NotYet => Ok(()),
            Readiness::Blocked => {
                let mut t = g.get(id).expect("evaluated rows exist").clone();
                if self
                    .settle_with_error(
                        tx,
                        run,
                        &mut t,
                        task_status::SKIPPED,
                        graph_error::UPSTREAM_FAILED,
                        None,
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
                if run.status != run_status::RUNNING || !g.started.insert(id) {
                    return Ok(());
                }
                let mut t = g.get(id).expect("evaluated rows exist").clone();
                self.start_task(tx, run, g, &mut t, now, effects).await?;
                if t.kind == task_kind::TOOL && is_settled(&t.status) {
                    // The gate settled the row and ran `after_settle` for it: re-read.
                    let started = std::mem::take(&mut g.started);
                    *g = Graph::load(tx, run.id).await?;
                    g.started = started;
                } else {
                    g.put(&t);
                    if is_settled(&t.status) {
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
        match t.kind.as_str() {
            task_kind::MODEL => {
                tx.insert_job(NewJob {
                    kind: job_kind::MODEL_CALL.into(),
                    run_id: run.id,
                    task_id: Some(t.id),
                    generation: t.generation,
                    // At once (a sweep may run at a clock ahead of this node's).
                    available_at: now.min(crate::time::now_ms()),
                })
                .await?;
                effects.push(AfterCommit::WakeJobs);
            }
            task_kind::TOOL => {
                let more = self.on_tool_ready(tx, run, t, now).await?;
                effects.extend(more);
            }
            _ => self.open_await(tx, run, g, t, now, effects).await?,
        }
        Ok(())
    }

    /// Opens an await: a tokened `ask` is `dispatched` to the token holder; a tokenless
    /// (model-issued) `ask` is `awaiting_input` for anyone with write standing, with
    /// `attention_required {reason: awaiting_human}` and `work_available {kind: ask}` to the
    /// declaring agent's address; a `wait` (or a delegation obligation) is held by the kernel
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
        let ctx: Value = t
            .frozen_context
            .as_deref()
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or(Value::Null);
        const DAY: i64 = 86_400_000;
        let tokenless_ask = ctx.get("ask").is_some() && t.resolution_token_sha256.is_none();
        let (to, timeout) = if ctx.get("wait").is_some() {
            (task_status::RUNNING, t.timeout_ms.unwrap_or(3_600_000).min(DAY))
        } else if tokenless_ask {
            (task_status::AWAITING_INPUT, t.timeout_ms.unwrap_or(DAY).min(DAY))
        } else {
            (task_status::DISPATCHED, t.timeout_ms.unwrap_or(DAY).min(DAY))
        };
        t.await_started_at = Some(now);
        t.deadline_at = Some(now + timeout);
        if tokenless_ask {
            let address = self.declaring_address(run).await?;
            t.addressed_executor_id = address.as_ref().map(|a| a.id);
            t.addressed_role = address.as_ref().map(|_| "agent_application".to_string());
            if self.transition(tx, run, t, to, now).await? {
                let data = json!({"reason": "awaiting_human", "task_key": t.key});
                self.emit(tx, run, "attention_required", Some(&t.key), data, now, effects)
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
        if to == task_status::RUNNING
            && let Some(target) = ctx.pointer("/wait/task").and_then(Value::as_str)
            && let Some(followed) = follow(g, target)
            && is_settled(&followed.status)
        {
            let followed = followed.clone();
            self.complete_wait(tx, run, t, &followed, now).await?;
        }
        Ok(())
    }

    /// Completes kernel-held `wait` awaits observing a row that just settled.
    #[allow(clippy::too_many_arguments)]
    async fn observe_settled(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        g: &mut Graph,
        id: i64,
        now: i64,
        _effects: &mut [AfterCommit],
        settled: &mut Vec<i64>,
    ) -> KernelResult<()> {
        if g.get(id).is_none() {
            return Ok(());
        }
        let waiters: Vec<TaskRow> = g
            .tasks
            .iter()
            .filter(|w| w.kind == task_kind::AWAIT && w.status == task_status::RUNNING)
            .filter(|w| {
                let ctx: Value = w
                    .frozen_context
                    .as_deref()
                    .and_then(|s| serde_json::from_str(s).ok())
                    .unwrap_or(Value::Null);
                ctx.pointer("/wait/task")
                    .and_then(Value::as_str)
                    .and_then(|k| follow(g, k))
                    .is_some_and(|f| f.id == id)
            })
            .cloned()
            .collect();
        if waiters.is_empty() {
            return Ok(());
        }
        // Boxed: a completed wait is rare, and its future would otherwise size every settle's
        // (the boxed `after_settle` is copied whole when it is created).
        Box::pin(self.complete_waits(tx, run, g, id, waiters, now, settled)).await
    }

    /// Completes the kernel-held waits in `waiters`, which observe the settled row `id`.
    #[allow(clippy::too_many_arguments)]
    async fn complete_waits(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        g: &mut Graph,
        id: i64,
        waiters: Vec<TaskRow>,
        now: i64,
        settled: &mut Vec<i64>,
    ) -> KernelResult<()> {
        let Some(target) = g.get(id).cloned() else {
            return Ok(());
        };
        for mut w in waiters {
            if self.complete_wait(tx, run, &mut w, &target, now).await? {
                g.put(&w);
                settled.push(w.id);
            }
        }
        Ok(())
    }

    async fn complete_wait(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        w: &mut TaskRow,
        target: &TaskRow,
        now: i64,
    ) -> KernelResult<bool> {
        let output = super::request::unpaired_envelope(target);
        w.content = Some(serde_json::to_string(&json!([{"type": "text", "text": output}])).expect("blocks serialize"));
        self.transition(tx, run, w, task_status::COMPLETED, now).await
    }

    /// Ends the run when it is quiescent (runs.md §1, §6), or finishes a cancel when drained.
    pub(crate) async fn check_run_end(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        g: &Graph,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        let end = run_end(run, g.tasks.iter().map(EndView::from));
        self.end_run(tx, run, end, now, effects).await
    }

    /// Writes what [`run_end`] decided.
    async fn end_run(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        end: RunEnd,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        match end {
            RunEnd::Stays => Ok(()),
            RunEnd::Canceled => {
                self.set_run_status(tx, run, run_status::CANCELED, None, now, effects)
                    .await
            }
            RunEnd::Attention(key) => {
                run.attention = Some(json!({"reason": "halt_failure", "task_key": key}).to_string());
                self.set_run_status(tx, run, run_status::NEEDS_ATTENTION, Some("halt_failure"), now, effects)
                    .await
            }
            RunEnd::Completed => {
                self.set_run_status(tx, run, run_status::COMPLETED, None, now, effects)
                    .await
            }
        }
    }

    /// [`Self::check_run_end`] after a cascade over a neighbourhood `g` (not the whole run):
    /// an open row in `g` is an open row of the run, so the run is not quiescent and nothing
    /// more is read; otherwise one read answers whether the run has gone quiet, with its rows.
    pub(crate) async fn end_if_quiescent(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        g: &Graph,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        if g.tasks.iter().any(|t| is_open(&t.status)) {
            return Ok(());
        }
        let Some(rows) = tx.tasks_if_quiescent(run.id).await? else {
            return Ok(());
        };
        // The run's end reads rows only (statuses, failure policy, the deliverable).
        let end = run_end(run, rows.iter().map(EndView::from));
        self.end_run(tx, run, end, now, effects).await
    }

    /// Writes a run status change and its `run_status_changed {from, to, reason?}` event.
    pub(crate) async fn set_run_status(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        to: &str,
        reason: Option<&str>,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        let from = std::mem::replace(&mut run.status, to.to_string());
        match to {
            run_status::RUNNING if run.started_at.is_none() => run.started_at = Some(now),
            run_status::COMPLETED | run_status::CANCELED => run.ended_at = Some(now),
            _ => {}
        }
        if to != run_status::NEEDS_ATTENTION {
            run.attention = None;
        }
        let mut data = json!({"from": from, "to": to});
        if let Some(r) = reason {
            data["reason"] = json!(r);
        }
        // The event first: on SQLite the run's update then writes the unit's event sequence
        // with it, instead of a separate write before the commit (nexus-store's tx.rs).
        self.emit(tx, run, "run_status_changed", None, data, now, effects)
            .await?;
        tx.update_run(run).await?;
        Ok(())
    }

    /// Cancels the run's live rows (runs.md §2 stop): every open row when `force`, otherwise
    /// the rows nobody is working on yet (`waiting`, `needs_approval`, `awaiting_input`).
    pub(crate) async fn cancel_live(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        g: &mut Graph,
        force: bool,
        now: i64,
    ) -> KernelResult<()> {
        let live: Vec<TaskRow> = g
            .tasks
            .iter()
            .filter(|t| is_open(&t.status))
            .filter(|t| {
                force
                    || matches!(
                        t.status.as_str(),
                        task_status::WAITING | task_status::NEEDS_APPROVAL | task_status::AWAITING_INPUT
                    )
            })
            .cloned()
            .collect();
        for mut t in live {
            let was_running_model = t.kind == task_kind::MODEL && t.status == task_status::RUNNING;
            if self
                .settle_with_error(
                    tx,
                    run,
                    &mut t,
                    task_status::CANCELED,
                    graph_error::RUN_CANCELED,
                    None,
                    now,
                )
                .await?
            {
                g.put(&t);
                if was_running_model {
                    self.state.signals.abort_model_call(t.id);
                }
            }
        }
        Ok(())
    }
}

/// The final logical work a key names (kernel-tools.md §1): a round that expanded is followed
/// along its continuation chain; a completed call that pairs with a child is followed to the
/// child; a `delegate_task` call row is followed to its branch.
pub(crate) fn follow<'g>(g: &'g Graph, key: &str) -> Option<&'g TaskRow> {
    let mut t = g.by_key(key)?;
    for _ in 0..4096 {
        match next_logical(&g.tasks, t, |k| g.by_key(k)) {
            Some(c) => t = c,
            None => return Some(t),
        }
    }
    Some(t)
}

/// One step of [`follow`]: the continuation of a round, the paired child of a completed call,
/// or the branch root of a `delegate_task` call row.
pub(crate) fn next_logical<'g>(
    tasks: &'g [TaskRow],
    t: &TaskRow,
    by_key: impl Fn(&str) -> Option<&'g TaskRow>,
) -> Option<&'g TaskRow> {
    if t.kind == task_kind::MODEL {
        return tasks
            .iter()
            .find(|c| c.kind == task_kind::MODEL && c.declaring_task_id == Some(t.id));
    }
    if t.kind == task_kind::TOOL && t.status == task_status::COMPLETED {
        if let Some(child) = t.pairs_with.as_deref() {
            return by_key(child).filter(|c| c.id != t.id);
        }
        return tasks.iter().find(|c| {
            c.kind == task_kind::MODEL && c.declaring_task_id == Some(t.id) && c.branch_of.as_deref() == Some(&t.key)
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: i64, key: &str, status: &str, on_failure: &str) -> TaskEndRow {
        TaskEndRow {
            id,
            key: key.into(),
            status: status.into(),
            on_failure: on_failure.into(),
            failure_resolution: None,
        }
    }

    fn end(status: &str, deliverable: Option<i64>, rows: &[TaskEndRow]) -> RunEnd {
        let run = RunRow {
            status: status.into(),
            deliverable_task_id: deliverable,
            ..RunRow::default()
        };
        run_end(&run, rows.iter().map(EndView::from))
    }

    /// The run's end (runs.md §1, §6) from the rows it reads.
    #[test]
    fn the_run_end_rule() {
        let done = row(1, "a", "completed", "propagate");
        let failed = row(2, "b", "failed", "propagate");
        let halted = row(3, "c", "timed_out", "halt");
        let absorbed = row(4, "d", "failed", "absorb");
        // An open row keeps the run as it is, whatever else.
        let open = row(5, "e", "dispatched", "propagate");
        assert_eq!(end("running", None, &[done.clone(), open.clone()]), RunEnd::Stays);
        assert_eq!(end("canceling", None, &[open]), RunEnd::Stays);
        assert_eq!(end("canceling", None, std::slice::from_ref(&done)), RunEnd::Canceled);
        assert_eq!(end("completed", None, std::slice::from_ref(&done)), RunEnd::Stays);
        assert_eq!(end("running", Some(1), std::slice::from_ref(&done)), RunEnd::Completed);
        assert_eq!(
            end("running", None, &[done.clone(), absorbed.clone()]),
            RunEnd::Completed
        );
        // An unadjudicated failure needs attention unless the deliverable completed; the first
        // candidate in id order is named.
        assert_eq!(
            end("running", None, &[done.clone(), failed.clone(), absorbed.clone()]),
            RunEnd::Attention("b".into())
        );
        assert_eq!(
            end("running", Some(1), &[done.clone(), failed.clone()]),
            RunEnd::Completed
        );
        // A halt failure needs attention even then, and is named before earlier candidates.
        assert_eq!(
            end("running", Some(1), &[done.clone(), failed.clone(), halted]),
            RunEnd::Attention("c".into())
        );
        // A resolved failure is no candidate.
        let mut resolved = failed;
        resolved.failure_resolution = Some("accepted".into());
        assert_eq!(end("running", None, &[done, resolved]), RunEnd::Completed);
    }
}
