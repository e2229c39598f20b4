//! The adjudication verbs (runs.md §6): `POST R/tasks/{k}/retry`, `/abandon` and `/cancel`.
//!
//! Each checks, in order: write standing (403; no standing conceals the workspace: 404), the
//! key (404), then its own refusal (409), under the run lock.
//! - **retry** `{model?}`: the candidate starts a new generation in `waiting` (a model round
//!   seals a new request for it; the old generation's sealed record stays), the rows skipped
//!   because of it (`upstream_failed`, reached through skipped rows) return to `waiting` in
//!   their generation, and a run in `needs_attention` returns to `running`
//!   (`attention_resolved`). Refused with `not_retryable` when the row is no candidate or the
//!   run is not `running` / `needs_attention`; `model` on a non-model row, or one that does not
//!   resolve, is 400 `parameter_invalid`.
//! - **abandon**: `failure_resolution: abandoned`; when no candidate remains, a run in
//!   `needs_attention` returns to `running` and is appendable; a hosted run, which cannot be
//!   appended to, then ends at once (completed, its turn `failed`:
//!   docs/decisions/020-turns-without-an-answer.md).
//!   `not_abandonable` otherwise.
//! - **cancel**: branch cancel. `k` must be a branch's root round (`not_a_branch`); every live
//!   row of the branch (nested branches included) settles `canceled` with
//!   `failure_resolution: canceled` and `error.key: task_canceled`; `already_terminal` when
//!   the run is canceling or ended, or no row of the branch is live.

use std::collections::HashSet;

use nexus_core::codes::Code;
use nexus_store::{RunRow, RunStatus, TaskKind, TaskRow, TaskStatus, Tx};
use serde_json::{Value, json};
use uuid::Uuid;

use super::columns::RequestSurface;
use super::rows::Graph;
use super::run_end::is_candidate;
use super::unit::Unit;
use super::view::TaskReply;
use super::{AfterCommit, refuse};
use crate::Runs;
use crate::auth::MemberPrincipal;
use crate::conversations::hosting::Hosting;
use crate::error::KernelResult;
use crate::runs::settle::SettleError;

/// The error key of a row settled by a branch cancel.
const TASK_CANCELED: &str = "task_canceled";

/// Whether the run is one whose candidates may be adjudicated.
fn adjudicable(run: &RunRow) -> bool {
    matches!(run.status, RunStatus::Running | RunStatus::NeedsAttention)
}

/// The rows skipped because of `root`: its dependents skipped with `upstream_failed`, and
/// theirs, transitively (only through skipped rows), in id order.
fn skipped_by(g: &Graph, root: i64) -> Vec<i64> {
    let mut seen = HashSet::new();
    let mut stack = g.dependents_of(root);
    while let Some(id) = stack.pop() {
        let skipped = g.get(id).is_some_and(|t| {
            t.status == TaskStatus::Skipped && t.error_key.as_deref() == Some(super::graph_error::UPSTREAM_FAILED)
        });
        if skipped && seen.insert(id) {
            stack.extend(g.dependents_of(id));
        }
    }
    let mut ids: Vec<i64> = seen.into_iter().collect();
    ids.sort_unstable();
    ids
}

/// The rows of the branch whose call key is `call`, nested branches included, in id order.
fn branch_rows(g: &Graph, call: &str) -> Vec<i64> {
    let mut calls: HashSet<&str> = HashSet::from([call]);
    loop {
        let before = calls.len();
        for t in &g.tasks {
            if t.branch_of.as_deref().is_some_and(|b| calls.contains(b)) {
                calls.insert(&t.key);
            }
        }
        if calls.len() == before {
            break;
        }
    }
    g.tasks
        .iter()
        .filter(|t| t.branch_of.as_deref().is_some_and(|b| calls.contains(b)))
        .map(|t| t.id)
        .collect()
}

/// Whether `task` is a branch's root round: a model row whose declaring row is the
/// `delegate_task` call its `branch_of` names.
fn is_branch_root(g: &Graph, task: &TaskRow) -> bool {
    let Some(call) = task.branch_of.as_deref() else {
        return false;
    };
    task.kind == TaskKind::Model
        && task
            .declaring_task_id
            .and_then(|d| g.get(d))
            .is_some_and(|c| c.key == call)
}

/// A `POST R/tasks/{key}/retry` body, parsed: `{model?}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Retry {
    /// A model round's new `provider/model` (absent or null keeps the row's).
    pub model: Option<String>,
}

impl Retry {
    /// The body as sent: `model`, when present and not null, must be a string (400
    /// `parameter_invalid`). Whether it resolves, and whether the row is a round, is the
    /// retry's to check at its turn.
    pub fn parse(body: &Value) -> KernelResult<Retry> {
        match body.get("model") {
            None | Some(Value::Null) => Ok(Retry::default()),
            Some(Value::String(m)) => Ok(Retry { model: Some(m.clone()) }),
            Some(other) => Err(refuse(
                Code::ParameterInvalid,
                format!("model must be a provider/model string, got {other}"),
            )),
        }
    }
}

impl Runs<'_> {
    /// `POST R/tasks/{key}/retry` with `{model?}` ([`Retry::parse`]) → 200 `{task}` (the row
    /// in its new generation). The body is answered after the row's candidacy.
    pub async fn retry_task(
        &self,
        p: &MemberPrincipal,
        ws: Uuid,
        run: Uuid,
        key: &str,
        request: KernelResult<Retry>,
    ) -> KernelResult<TaskReply> {
        let (mut tx, mut run, mut task) = self.adjudicated_row(p, ws, run, key).await?;
        let now = self.now_ms();
        if !is_candidate(&task) || !adjudicable(&run) {
            tx.rollback().await?;
            return Err(refuse(Code::NotRetryable, not_candidate(key, &task, &run)));
        }
        if let Some(model) = self.retry_model(&task, request?)? {
            let mut surface = RequestSurface::of(&task);
            surface.model = model;
            task.request_surface = Some(serde_json::to_string(&surface).expect("a surface serializes"));
        }
        let mut g = Graph::load(&mut tx, run.id).await?;
        let mut effects = vec![AfterCommit::RunEvents(run.id)];
        {
            let mut u = Unit::of(&mut tx, &mut run, now, &mut effects);
            if !self.reopen(&mut u, &mut task, true).await? {
                return Err(refuse(
                    Code::NotRetryable,
                    format!("{key:?} moved while it was retried"),
                ));
            }
            g.put(&task);
            for id in skipped_by(&g, task.id) {
                let Some(mut row) = g.get(id).cloned() else { continue };
                if self.reopen(&mut u, &mut row, false).await? {
                    g.put(&row);
                }
            }
        }
        if run.status == RunStatus::NeedsAttention {
            self.resume(&mut tx, &mut run, now, &mut effects).await?;
        }
        self.schedule_ids(&mut tx, &mut run, &mut g, vec![task.id], now, &mut effects)
            .await?;
        self.check_run_end(&mut tx, &mut run, &g, now, &mut effects).await?;
        tx.commit().await?;
        self.publish(effects).await;
        Ok(TaskReply::of(self.task_view(&run, task.id).await?))
    }

    /// `POST R/tasks/{key}/abandon` `{}` → 200 `{task}`.
    pub async fn abandon_task(&self, p: &MemberPrincipal, ws: Uuid, run: Uuid, key: &str) -> KernelResult<TaskReply> {
        let (mut tx, mut run, task) = self.adjudicated_row(p, ws, run, key).await?;
        let now = self.now_ms();
        if !is_candidate(&task) || !adjudicable(&run) {
            tx.rollback().await?;
            return Err(refuse(Code::NotAbandonable, not_candidate(key, &task, &run)));
        }
        let next = TaskRow {
            failure_resolution: Some(nexus_store::FailureResolution::Abandoned),
            ..task.clone()
        };
        if !tx
            .update_task(nexus_store::TaskUpdate::new(&next, task.generation, &[task.status]))
            .await?
        {
            drop(tx);
            return Err(refuse(
                Code::NotAbandonable,
                format!("{key:?} moved while it was abandoned"),
            ));
        }
        let mut effects = vec![AfterCommit::RunEvents(run.id)];
        if run.status == RunStatus::NeedsAttention {
            let g = Graph::load(&mut tx, run.id).await?;
            if !g.tasks.iter().any(is_candidate) {
                self.resume(&mut tx, &mut run, now, &mut effects).await?;
                // A run nothing can grow (a hosted run refuses the append door) is left with
                // nothing to do: it ends now, as any quiescent run without a candidate ends,
                // and its turn with it (runs.md §6, §12).
                if Hosting::of(&run.hosting).is_some() {
                    self.check_run_end(&mut tx, &mut run, &g, now, &mut effects).await?;
                }
            }
        }
        tx.commit().await?;
        self.publish(effects).await;
        Ok(TaskReply::of(self.task_view(&run, task.id).await?))
    }

    /// `POST R/tasks/{key}/cancel` `{}` → 200 `{task}` (the branch's root round).
    pub async fn cancel_branch(&self, p: &MemberPrincipal, ws: Uuid, run: Uuid, key: &str) -> KernelResult<TaskReply> {
        let (mut tx, mut run, root) = self.adjudicated_row(p, ws, run, key).await?;
        let now = self.now_ms();
        let mut g = Graph::load(&mut tx, run.id).await?;
        if !is_branch_root(&g, &root) {
            tx.rollback().await?;
            return Err(refuse(
                Code::NotABranch,
                format!("{key:?} is not the root round of a branch: only a branch is canceled"),
            ));
        }
        let call = root.branch_of.clone().unwrap_or_default();
        let live: Vec<TaskRow> = branch_rows(&g, &call)
            .into_iter()
            .filter_map(|id| g.get(id))
            .filter(|t| t.status.is_open())
            .cloned()
            .collect();
        if !adjudicable(&run) || live.is_empty() {
            tx.rollback().await?;
            let why = if adjudicable(&run) {
                format!("every row of the branch rooted at {key:?} has already settled")
            } else {
                format!("the run is {}", run.status)
            };
            return Err(refuse(Code::AlreadyTerminal, why));
        }
        // The rows as they stood: an inbox row the cancel settles owes its holder `work_canceled`.
        let before: Vec<TaskRow> = live
            .iter()
            .filter(|t| crate::executor::push::inbox_holder(t).is_some())
            .cloned()
            .collect();
        let mut settled = Vec::new();
        for mut t in live {
            let was_running_model = t.kind == TaskKind::Model && t.status == TaskStatus::Running;
            t.failure_resolution = Some(nexus_store::FailureResolution::Canceled);
            let error = SettleError::new(TASK_CANCELED, None);
            if self
                .settle_with_error(&mut tx, &mut run, &mut t, TaskStatus::Canceled, error, now)
                .await?
            {
                g.put(&t);
                settled.push(t.id);
                if was_running_model {
                    self.state.signals.abort_model_call(t.id);
                }
            }
        }
        let mut effects = vec![AfterCommit::RunEvents(run.id)];
        self.cascade(&mut tx, &mut run, &mut g, settled, now, &mut effects)
            .await?;
        self.check_run_end(&mut tx, &mut run, &g, now, &mut effects).await?;
        effects.extend(
            self.work_canceled_effects(run.public_id, &before, |id| g.get(id))
                .await?,
        );
        tx.commit().await?;
        self.publish(effects).await;
        Ok(TaskReply::of(self.task_view(&run, root.id).await?))
    }

    /// The verbs' first checks: write standing (403), the run and the key (404 `not_found`).
    /// Returns the open unit of work with the run locked in it, and the row.
    async fn adjudicated_row(
        &self,
        p: &MemberPrincipal,
        ws: Uuid,
        run: Uuid,
        key: &str,
    ) -> KernelResult<(Tx, RunRow, TaskRow)> {
        let (ws_row, _) = self.workspace_for(p, ws, true).await?;
        let run_row = self.run_in(&ws_row, run).await?;
        let mut tx = self.store.begin().await?;
        let run = tx.lock_run(run_row.id).await?;
        let Some(task) = tx.task_by_key(run.id, key).await? else {
            return Err(refuse(Code::NotFound, format!("no task {key:?} in this run")));
        };
        Ok((tx, run, task))
    }

    /// The retry's `model`: absent or null keeps the row's model; a string must resolve and is
    /// for model rows only (400 `parameter_invalid` otherwise).
    fn retry_model(&self, task: &TaskRow, request: Retry) -> KernelResult<Option<String>> {
        let Some(model) = request.model else {
            return Ok(None);
        };
        let model = &model;
        if task.kind != TaskKind::Model {
            return Err(refuse(
                Code::ParameterInvalid,
                format!("{:?} is a {} row: model is for model rounds only", task.key, task.kind),
            ));
        }
        if let Err(e) = self.providers.resolve(model) {
            let why = self.providers.catalog().explain(model, e);
            return Err(refuse(
                Code::ParameterInvalid,
                format!("model {model:?} does not resolve: {}: {why}", e.as_str()),
            ));
        }
        Ok(Some(model.clone()))
    }

    /// A run in `needs_attention` returns to `running`: `attention_resolved {reason, task_key}`
    /// (the attention it held), then `run_status_changed`.
    async fn resume(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        let attention = run
            .attention
            .as_deref()
            .and_then(|a| serde_json::from_str::<Value>(a).ok())
            .unwrap_or_else(|| json!({"reason": "halt_failure", "task_key": null}));
        let key = attention.get("task_key").and_then(Value::as_str).map(str::to_string);
        self.emit(
            &mut Unit::of(tx, run, now, effects),
            nexus_store::EventKind::AttentionResolved,
            key.as_deref(),
            attention,
        )
        .await?;
        self.set_run_status(tx, run, RunStatus::Running, None, now, effects)
            .await
    }
}

/// Why a row is neither retryable nor abandonable.
fn not_candidate(key: &str, task: &TaskRow, run: &RunRow) -> String {
    if adjudicable(run) {
        format!(
            "{key:?} is {}{}: only an unresolved failure that is not absorbed is adjudicated",
            task.status,
            task.failure_resolution.map(|r| format!(" ({r})")).unwrap_or_default()
        )
    } else {
        format!("the run is {}", run.status)
    }
}
