//! The member doors that make and grow runs (runs.md §2, §3): create, start, stop, append, and
//! the envelope insert they share; the append door's refusals, in the spec's table order.

use std::collections::{HashMap, HashSet};

use nexus_api::runs::{Appended, Created, Receipt, RunEnvelope};
use nexus_core::approval;
use nexus_core::codes::Code;
use nexus_core::declaration::ApprovalMode;
use nexus_core::steps::{self, Step, StepsContext};
use nexus_store::prelude::*;
use nexus_store::{
    EdgeKind, ExecutorRow, MemberKind, MemberRow, NewRun, RunRow, RunStatus, StoreError, TaskKind, TaskRow,
    WorkspaceRow,
};
use serde_json::{Value, json};
use uuid::Uuid;

use super::accept::{AcceptCtx, Accepted, Fault, invalid_steps};
use super::idempotency::{FirstAnswer, Idempotency, Idempotent, replay_in};
use crate::auth::MemberPrincipal;
use crate::error::{KernelError, KernelResult};
use crate::runs::rows::Graph;
use crate::runs::run_end::is_candidate;
use crate::runs::unit::Unit;
use crate::runs::view::{RunNames, run_record};
use crate::runs::{AfterCommit, refuse};
use crate::{Kernel, Runs, time};

/// A `POST R/stop` body, parsed: `{force?: bool}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop {
    /// Cancel the run's live rows at once (the default); `false` lets them drain.
    pub force: bool,
}

impl Stop {
    /// The body's grammar: `force` absent or `null` is `true`; anything but a boolean is 400.
    pub fn parse(body: &Value) -> KernelResult<Stop> {
        match body.get("force") {
            None | Some(Value::Null) => Ok(Stop { force: true }),
            Some(Value::Bool(b)) => Ok(Stop { force: *b }),
            Some(_) => Err(refuse(Code::ParameterInvalid, "force must be a boolean")),
        }
    }
}

/// What a create writes once its shell is checked and its steps accepted.
struct CreatePlan {
    approval_mode: String,
    approval_rules: Value,
    default_runner: Option<ExecutorRow>,
    accepted: Vec<Accepted>,
}

/// What an append writes once its steps are accepted: the rows and the run's next revision.
struct AppendPlan {
    accepted: Vec<Accepted>,
    revision: i64,
}

/// The members a run's appended steps are accepted for.
struct RunParties {
    answering: MemberRow,
    declaring_agent: Option<MemberRow>,
    default_runner: Option<ExecutorRow>,
}

const CREATE_ROUTE: &str = "POST /workspaces/{workspace}/runs";
const APPEND_ROUTE: &str = "POST /workspaces/{workspace}/runs/{run}/tasks";

fn raw_graph_field(path: String) -> KernelError {
    refuse(
        Code::EdgeAuthoringRefused,
        format!("{path} is a raw graph field: edges come only from written order, after and results"),
    )
    .with_path(path)
}

/// A create shell's approval mode (its word) and rules (`null` when it has none).
fn shell_approval(shell: &Value) -> KernelResult<(String, Value)> {
    let given = shell.get("approval_mode");
    let approval_mode = match given.and_then(Value::as_str).and_then(ApprovalMode::from_word) {
        Some(mode) => mode.as_str().to_string(),
        None => return Err(refuse(Code::InvalidApprovalMode, ApprovalMode::refusal(given))),
    };
    let approval_rules = match shell.get("approval_rules") {
        None | Some(Value::Null) => Value::Null,
        Some(rules) => {
            approval::parse_rules(rules).map_err(|e| {
                refuse(Code::InvalidApprovalRules, format!("approval_rules: {}", e.reason))
                    .with_reason(e.reason)
                    .with_path(format!("/run/approval_rules{}", e.path))
            })?;
            rules.clone()
        }
    };
    Ok((approval_mode, approval_rules))
}

/// The step grammar's refusals as the doors answer them.
fn steps_refused(e: steps::StepsError) -> KernelError {
    invalid_steps(
        e.steps
            .into_iter()
            .map(|s| Fault::new(s.code.to_string(), s.path))
            .collect(),
    )
}

impl Runs<'_> {
    /// Inserts accepted steps, their edges (written order, `after`, `results`) and the
    /// `tasks_appended` event; moves the deliverable to the last step. Returns the receipt.
    async fn insert_envelope(
        &self,
        tx: &mut nexus_store::Tx,
        run: &mut RunRow,
        accepted: Vec<Accepted>,
        revision: i64,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<(Receipt, Vec<i64>)> {
        let existing = Graph::load(tx, run.id).await?;
        let mut ids: HashMap<String, i64> = HashMap::new();
        let mut prev: Option<i64> = run.deliverable_task_id;
        let mut keys = Vec::new();
        let mut steps_json = Vec::new();
        let mut tokens = serde_json::Map::new();
        let mut new_ids = Vec::new();
        for a in accepted {
            let mut new = a.task;
            new.run_id = run.id;
            new.created_at = now;
            let row = tx.insert_task(new).await.map_err(|e| match e {
                StoreError::Conflict(_) => refuse(
                    Code::DuplicateTaskKey,
                    format!("the key {:?} is already used in this run", a.step.key),
                ),
                other => other.into(),
            })?;
            if let Some(p) = prev {
                tx.put_edge(row.id, p, EdgeKind::After).await?;
            }
            for (key, kind) in &a.extra_deps {
                let dep = ids
                    .get(key)
                    .copied()
                    .or_else(|| crate::runs::rows::follow(&existing, key).map(|t| t.id));
                if let Some(dep) = dep {
                    tx.put_edge(row.id, dep, *kind).await?;
                }
            }
            ids.insert(row.key.clone(), row.id);
            prev = Some(row.id);
            keys.push(row.key.clone());
            new_ids.push(row.id);
            steps_json.push(json!({"key": row.key, "verb": a.step.verb.word()}));
            if let Some(t) = a.resolution_token {
                tokens.insert(row.key.clone(), Value::String(t));
            }
        }
        run.deliverable_task_id = prev;
        run.revision = revision;
        tx.update_run(run).await?;
        self.emit(
            &mut Unit::of(tx, run, now, effects),
            nexus_store::EventKind::TasksAppended,
            None,
            json!({"keys": keys, "origin": "author", "revision": revision}),
        )
        .await?;
        let receipt = Receipt {
            deliverable_task_key: keys.last().cloned(),
            accepted_task_keys: keys,
            steps: Value::Array(steps_json),
            revision,
            resolution_tokens: tokens,
            rest: serde_json::Map::new(),
        };
        Ok((receipt, new_ids))
    }

    /// `POST W/runs` (runs.md §2): the run and its first receipt, or the replay of an earlier
    /// create with the same key.
    pub async fn create_run(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        body: &Value,
        idempotency_key: Option<&str>,
    ) -> KernelResult<Idempotent<Created>> {
        let (ws, _) = self.workspace_for(principal, workspace, true).await?;
        let Some(shell) = body.get("run").filter(|r| r.is_object()) else {
            return Err(refuse(Code::ParameterMissing, "the body needs a `run` object"));
        };
        let member = principal.member.public_id;
        let idem = Idempotency::of_door(member, CREATE_ROUTE, &[workspace], idempotency_key, body)?;
        if let Some(replay) = self.stored_replay(idem.as_ref()).await? {
            return Ok(Idempotent::Replayed(replay));
        }
        let plan = self.plan_create(&principal.member, &ws, shell).await?;
        self.write_create(&principal.member, &ws, plan, idem.as_ref()).await
    }

    /// A create shell's checks (runs.md §2 order) and its steps' acceptance.
    async fn plan_create(&self, member: &MemberRow, ws: &WorkspaceRow, shell: &Value) -> KernelResult<CreatePlan> {
        steps::check_edge_authoring(shell).map_err(raw_graph_field)?;
        let (approval_mode, approval_rules) = shell_approval(shell)?;
        let default_runner = self.shell_default_runner(shell, member).await?;
        let no_keys = |_: &str| false;
        let parsed = steps::parse_steps(
            shell.get("steps").unwrap_or(&Value::Null),
            &StepsContext {
                revision: 1,
                existing_keys: &no_keys,
            },
        )
        .map_err(|e| steps_refused(e.prefixed("run.")))?;
        check_duplicates(&parsed, None)?;
        let declaring_agent = (member.kind == MemberKind::Agent).then_some(member);
        let accepted = self
            .accept(
                parsed,
                &AcceptCtx {
                    prefix: "run.",
                    answering: member,
                    declaring_agent,
                    default_runner: default_runner.as_ref(),
                    workspace: ws,
                    approval_mode: &approval_mode,
                    approval_rules: approval_rules.clone(),
                    run_public_id: None,
                    graph: None,
                },
            )
            .await?;
        Ok(CreatePlan {
            approval_mode,
            approval_rules,
            default_runner,
            accepted,
        })
    }

    /// The shell's `default_runner_executor_public_id`, when given: an eligible runner or 422.
    async fn shell_default_runner(&self, shell: &Value, member: &MemberRow) -> KernelResult<Option<ExecutorRow>> {
        let v = match shell.get("default_runner_executor_public_id") {
            None | Some(Value::Null) => return Ok(None),
            Some(v) => v,
        };
        let not_eligible = || {
            refuse(
                Code::RunnerNotEligible,
                "the default runner is not eligible for this run",
            )
            .with_path("run.default_runner_executor_public_id")
        };
        let id = v
            .as_str()
            .and_then(|s| Uuid::parse_str(s).ok())
            .ok_or_else(not_eligible)?;
        Ok(Some(self.eligible_runner(id, member).await?.ok_or_else(not_eligible)?))
    }

    /// Writes the planned run and its first envelope, keeps the receipt, commits.
    async fn write_create(
        &self,
        member: &MemberRow,
        ws: &WorkspaceRow,
        plan: CreatePlan,
        idem: Option<&Idempotency>,
    ) -> KernelResult<Idempotent<Created>> {
        let now = self.now_ms();
        let mut tx = self.store.begin().await?;
        if let Some(replay) = replay_in(&mut tx, idem, now).await? {
            drop(tx);
            return Ok(Idempotent::Replayed(replay));
        }
        let declaring_agent = (member.kind == MemberKind::Agent).then_some(member);
        let (approval_mode, approval_rules) =
            crate::runs::gate::stored_approval(&plan.approval_mode, &plan.approval_rules)?;
        let mut run = tx
            .insert_run(NewRun {
                public_id: time::new_id(),
                workspace_id: ws.id,
                created_by_id: member.id,
                answering_member_id: member.id,
                declaring_agent_id: declaring_agent.map(|a| a.id),
                status: RunStatus::Pending,
                hosting: nexus_store::Hosting::Standalone,
                approval_mode,
                approval_rules,
                default_runner_id: plan.default_runner.as_ref().map(|r| r.id),
                revision: 0,
                created_at: now,
                started_at: None,
            })
            .await?;
        let mut effects = Vec::new();
        let (receipt, _) = self
            .insert_envelope(&mut tx, &mut run, plan.accepted, 1, now, &mut effects)
            .await?;
        let names = RunNames {
            workspace_public_id: ws.public_id,
            created_by: Some(member.public_id),
            answering: Some(member.public_id),
            declaring_agent: declaring_agent.map(|a| a.public_id),
            default_runner: plan.default_runner.as_ref().map(|r| r.public_id),
            deliverable_task_key: receipt.deliverable_task_key.clone(),
        };
        let reply = Created {
            run: run_record(&run, names),
            receipt,
            replayed: false,
        };
        if let Some(replay) = self
            .keep_receipt(&mut tx, idem, FirstAnswer::Created, &reply, now)
            .await?
        {
            return Ok(Idempotent::Replayed(replay));
        }
        tx.commit().await?;
        self.publish(effects).await;
        Ok(Idempotent::Fresh(reply))
    }

    /// `POST R/start`: `pending → running`, then the ready rows start.
    pub async fn start_run(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        run: Uuid,
    ) -> KernelResult<RunEnvelope> {
        let (ws, _) = self.workspace_for(principal, workspace, true).await?;
        let found = self.run_in(&ws, run).await?;
        let now = self.now_ms();
        let mut tx = self.store.begin().await?;
        let mut run = tx.lock_run(found.id).await?;
        if run.status != RunStatus::Pending {
            return Err(refuse(
                Code::NotStartable,
                format!("the run is {}, not pending", run.status),
            ));
        }
        let mut effects = Vec::new();
        self.set_run_status(&mut tx, &mut run, RunStatus::Running, None, now, &mut effects)
            .await?;
        let mut g = Graph::load(&mut tx, run.id).await?;
        self.schedule_all(&mut tx, &mut run, &mut g, now, &mut effects).await?;
        self.check_run_end(&mut tx, &mut run, &g, now, &mut effects).await?;
        tx.commit().await?;
        self.publish(effects).await;
        self.run_envelope(ws.public_id, &run).await
    }

    /// `POST R/stop` `{force?}` ([`Stop::parse`]): a pending run is canceled at once; a live
    /// one passes through `canceling` until it drains. A body that does not parse is refused
    /// once the run is found.
    pub async fn stop_run(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        run: Uuid,
        body: KernelResult<Stop>,
    ) -> KernelResult<RunEnvelope> {
        let (ws, _) = self.workspace_for(principal, workspace, true).await?;
        let found = self.run_in(&ws, run).await?;
        let force = body?.force;
        let now = self.now_ms();
        let mut tx = self.store.begin().await?;
        let mut run = tx.lock_run(found.id).await?;
        if run.status.is_terminal() {
            return Err(refuse(
                Code::AlreadyTerminal,
                format!("the run is already {}", run.status),
            ));
        }
        let mut effects = Vec::new();
        self.stop_in(&mut tx, &mut run, force, now, &mut effects).await?;
        tx.commit().await?;
        self.publish(effects).await;
        self.run_envelope(ws.public_id, &run).await
    }
}

impl Kernel {
    /// The stop of runs.md §2 inside the caller's unit of work, on a locked run that has not
    /// ended: a pending run is canceled at once; a live one passes through `canceling` (its
    /// live rows canceled by `force`) until it drains.
    pub(crate) async fn stop_in(
        &self,
        tx: &mut nexus_store::Tx,
        run: &mut RunRow,
        force: bool,
        now: i64,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<()> {
        effects.push(AfterCommit::RunEvents(run.id));
        let mut g = Graph::load(tx, run.id).await?;
        // The rows as they stood: an inbox row the stop cancels owes its holder `work_canceled`.
        let before: Vec<TaskRow> = g
            .tasks
            .iter()
            .filter(|t| crate::executor::push::inbox_holder(t).is_some())
            .cloned()
            .collect();
        if run.status == RunStatus::Pending {
            self.cancel_live(tx, run, &mut g, true, now).await?;
            self.set_run_status(tx, run, RunStatus::Canceled, None, now, effects)
                .await?;
        } else {
            if run.status != RunStatus::Canceling {
                self.set_run_status(tx, run, RunStatus::Canceling, None, now, effects)
                    .await?;
            }
            self.cancel_live(tx, run, &mut g, force, now).await?;
            self.check_run_end(tx, run, &g, now, effects).await?;
        }
        effects.extend(
            self.work_canceled_effects(run.public_id, &before, |id| g.get(id))
                .await?,
        );
        Ok(())
    }
}

impl Runs<'_> {
    /// `POST R/tasks` `{steps, expected_revision?}` (runs.md §3): the receipt, or the replay of
    /// an earlier append with the same key.
    pub async fn append(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        run: Uuid,
        body: &Value,
        idempotency_key: Option<&str>,
    ) -> KernelResult<Idempotent<Appended>> {
        let (ws, _) = self.workspace_for(principal, workspace, true).await?;
        let found = self.run_in(&ws, run).await?;
        let member = principal.member.public_id;
        let idem = Idempotency::of_door(member, APPEND_ROUTE, &[workspace, run], idempotency_key, body)?;
        if let Some(replay) = self.stored_replay(idem.as_ref()).await? {
            return Ok(Idempotent::Replayed(replay));
        }
        if !body.is_object() {
            return Err(refuse(Code::ParameterMissing, "the body needs `steps`"));
        }
        let plan = self.plan_append(&ws, &found, body).await?;
        self.write_append(&found, plan, body, idem.as_ref()).await
    }

    /// The append door's checks (runs.md §3 table order) and its steps' acceptance, on the
    /// run as last read (the write checks the door again under the run's lock).
    async fn plan_append(&self, ws: &WorkspaceRow, found: &RunRow, body: &Value) -> KernelResult<AppendPlan> {
        let tasks = self.all_tasks(found.id).await?;
        let edges = self.store.edges_of_run(found.id).await?;
        let g = Graph::new(tasks, &edges);
        door_checks(found, &g, body)?;
        steps::check_append_edge_authoring(body).map_err(raw_graph_field)?;
        let revision = found.revision + 1;
        let existing = |k: &str| g.by_key(k).is_some();
        let parsed = steps::parse_steps(
            body.get("steps").unwrap_or(&Value::Null),
            &StepsContext {
                revision: revision as u64,
                existing_keys: &existing,
            },
        )
        .map_err(steps_refused)?;
        check_duplicates(&parsed, Some(&g))?;
        let parties = self.run_parties(found).await?;
        let approval_rules: Value = found
            .approval_rules
            .as_deref()
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or(Value::Null);
        let accepted = self
            .accept(
                parsed,
                &AcceptCtx {
                    prefix: "",
                    answering: &parties.answering,
                    declaring_agent: parties.declaring_agent.as_ref(),
                    default_runner: parties.default_runner.as_ref(),
                    workspace: ws,
                    approval_mode: found.approval_mode.as_str(),
                    approval_rules,
                    run_public_id: Some(found.public_id),
                    graph: Some(&g),
                },
            )
            .await?;
        Ok(AppendPlan { accepted, revision })
    }

    /// The run's answering member, declaring agent and default runner.
    async fn run_parties(&self, run: &RunRow) -> KernelResult<RunParties> {
        let answering = self
            .store
            .member_by_id(run.answering_member_id)
            .await?
            .ok_or_else(|| refuse(Code::NotFound, "the run's answering member is gone"))?;
        let declaring_agent = match run.declaring_agent_id {
            Some(id) => self.store.member_by_id(id).await?,
            None => None,
        };
        let default_runner = match run.default_runner_id {
            Some(id) => self.store.executor_by_id(id).await?,
            None => None,
        };
        Ok(RunParties {
            answering,
            declaring_agent,
            default_runner,
        })
    }

    /// Under the run's lock: the door again, then the envelope, the receipt, and the rows whose
    /// dependencies already settled start now.
    async fn write_append(
        &self,
        found: &RunRow,
        plan: AppendPlan,
        body: &Value,
        idem: Option<&Idempotency>,
    ) -> KernelResult<Idempotent<Appended>> {
        let now = self.now_ms();
        let mut tx = self.store.begin().await?;
        if let Some(replay) = replay_in(&mut tx, idem, now).await? {
            drop(tx);
            return Ok(Idempotent::Replayed(replay));
        }
        let mut run = tx.lock_run(found.id).await?;
        let g = Graph::load(&mut tx, run.id).await?;
        door_checks(&run, &g, body)?;
        if run.revision + 1 != plan.revision {
            return Err(stale_revision(run.revision));
        }
        check_duplicates_keys(plan.accepted.iter().map(|a| a.step.key.as_str()), &g)?;
        let mut effects = Vec::new();
        let (receipt, new_ids) = self
            .insert_envelope(&mut tx, &mut run, plan.accepted, plan.revision, now, &mut effects)
            .await?;
        let reply = Appended {
            receipt,
            replayed: false,
        };
        if let Some(replay) = self.keep_receipt(&mut tx, idem, FirstAnswer::Done, &reply, now).await? {
            return Ok(Idempotent::Replayed(replay));
        }
        if run.status == RunStatus::Running {
            let mut g = Graph::load(&mut tx, run.id).await?;
            self.schedule_ids(&mut tx, &mut run, &mut g, new_ids, now, &mut effects)
                .await?;
            self.check_run_end(&mut tx, &mut run, &g, now, &mut effects).await?;
        }
        tx.commit().await?;
        self.publish(effects).await;
        Ok(Idempotent::Fresh(reply))
    }
}

fn stale_revision(current: i64) -> KernelError {
    refuse(
        Code::StaleRevision,
        format!("expected_revision does not match the current revision {current}"),
    )
    .with_extra("current_revision", json!(current))
}

/// The append door's refusals that need no grammar (runs.md §3 table order).
fn door_checks(run: &RunRow, g: &Graph, body: &Value) -> KernelResult<()> {
    if !matches!(
        run.status,
        RunStatus::Pending | RunStatus::Running | RunStatus::NeedsAttention
    ) {
        return Err(refuse(Code::RunNotAppendable, format!("the run is {}", run.status)));
    }
    crate::conversations::hosting::refuse_hosted(&run.hosting)?;
    let has_model = body
        .get("steps")
        .and_then(Value::as_array)
        .is_some_and(|s| s.iter().any(|st| st.get("model").is_some()));
    if has_model
        && g.tasks
            .iter()
            .any(|t| t.kind == TaskKind::Model && t.mainline && t.status.is_open())
    {
        return Err(refuse(Code::TipLive, "the latest mainline round is still live"));
    }
    if let Some(d) = run.deliverable_task_id.and_then(|id| g.get(id))
        && is_candidate(d)
    {
        return Err(refuse(
            Code::TipUnresolved,
            format!(
                "the deliverable {} is an unadjudicated failure: retry or abandon it first",
                d.key
            ),
        ));
    }
    match body.get("expected_revision") {
        None | Some(Value::Null) => {}
        Some(v) => {
            if v.as_i64() != Some(run.revision) {
                return Err(stale_revision(run.revision));
            }
        }
    }
    Ok(())
}

fn check_duplicates(parsed: &[Step], g: Option<&Graph>) -> KernelResult<()> {
    let mut seen = HashSet::new();
    for s in parsed {
        if !seen.insert(s.key.as_str()) || g.is_some_and(|g| g.by_key(&s.key).is_some()) {
            return Err(refuse(
                Code::DuplicateTaskKey,
                format!(
                    "the key {:?} is already used in this run or repeated in the envelope",
                    s.key
                ),
            ));
        }
    }
    Ok(())
}

fn check_duplicates_keys<'a>(keys: impl Iterator<Item = &'a str>, g: &Graph) -> KernelResult<()> {
    for k in keys {
        if g.by_key(k).is_some() {
            return Err(refuse(
                Code::DuplicateTaskKey,
                format!("the key {k:?} is already used in this run"),
            ));
        }
    }
    Ok(())
}
