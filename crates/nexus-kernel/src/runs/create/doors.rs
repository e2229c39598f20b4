//! The member doors that make and grow runs (runs.md §2, §3): create, start, stop, append, and
//! the envelope insert they share; the append door's refusals, in the spec's table order.

use std::collections::{HashMap, HashSet};

use nexus_core::approval;
use nexus_core::codes::Code;
use nexus_core::declaration::ApprovalMode;
use nexus_core::steps::{self, Step, StepsContext};
use nexus_store::{EdgeKind, Engine, MemberKind, NewRun, RunRow, RunStatus, StoreError, TaskKind, TaskRow};
use serde_json::{Value, json};
use uuid::Uuid;

use super::accept::{AcceptCtx, Accepted, Fault, invalid_steps};
use super::idempotency::Idempotency;
use crate::auth::MemberPrincipal;
use crate::error::{KernelError, KernelResult};
use crate::runs::read::object;
use crate::runs::rows::Graph;
use crate::runs::run_end::is_candidate;
use crate::runs::unit::Unit;
use crate::runs::{AfterCommit, refuse};
use crate::{Kernel, time};

impl Kernel {
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
    ) -> KernelResult<(Value, Vec<i64>)> {
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
                tx.insert_edge_with_unit(row.id, p, EdgeKind::After).await?;
            }
            for (key, kind) in &a.extra_deps {
                let dep = ids
                    .get(key)
                    .copied()
                    .or_else(|| crate::runs::rows::follow(&existing, key).map(|t| t.id));
                if let Some(dep) = dep {
                    tx.insert_edge_with_unit(row.id, dep, *kind).await?;
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
        let deliverable_key = keys.last().cloned();
        self.emit(
            &mut Unit::of(tx, run, now, effects),
            nexus_store::EventKind::TasksAppended,
            None,
            json!({"keys": keys, "origin": "author", "revision": revision}),
        )
        .await?;
        let receipt = json!({
            "accepted_task_keys": keys,
            "steps": steps_json,
            "deliverable_task_key": deliverable_key,
            "revision": revision,
            "resolution_tokens": tokens,
        });
        Ok((receipt, new_ids))
    }

    /// `POST W/runs` (runs.md §2): 201 `{run, receipt}`, or 200 with `replayed: true`.
    pub async fn create_run(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        body: &Value,
        idempotency_key: Option<&str>,
    ) -> KernelResult<(u16, Value)> {
        let (ws, _) = self.workspace_for(principal, workspace, true).await?;
        let Some(shell) = body.get("run").filter(|r| r.is_object()) else {
            return Err(refuse(Code::ParameterMissing, "the body needs a `run` object"));
        };
        let idem = match idempotency_key {
            Some(k) => Some(Idempotency::new(
                principal.member.public_id,
                "POST /workspaces/{workspace}/runs",
                &[workspace],
                k,
                body,
            )?),
            None => None,
        };
        if let Some(idem) = &idem
            && let Some(receipt) = self.store.idempotency_get(&idem.scope_hash, self.now_ms()).await?
        {
            return idem.replay(&receipt);
        }
        if let Err(path) = steps::check_edge_authoring(shell) {
            return Err(refuse(
                Code::EdgeAuthoringRefused,
                format!("{path} is a raw graph field: edges come only from written order, after and results"),
            )
            .with_path(path));
        }
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
        let member = &principal.member;
        let default_runner = match shell.get("default_runner_executor_public_id") {
            None | Some(Value::Null) => None,
            Some(v) => {
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
                Some(self.eligible_runner(id, member).await?.ok_or_else(not_eligible)?)
            }
        };
        let no_keys = |_: &str| false;
        let parsed = steps::parse_steps(
            shell.get("steps").unwrap_or(&Value::Null),
            &StepsContext {
                revision: 1,
                existing_keys: &no_keys,
            },
        )
        .map_err(|e| {
            invalid_steps(
                e.prefixed("run.")
                    .steps
                    .into_iter()
                    .map(|s| Fault::new(s.code.to_string(), s.path))
                    .collect(),
            )
        })?;
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
                    workspace: &ws,
                    approval_mode: &approval_mode,
                    approval_rules: approval_rules.clone(),
                    run_public_id: None,
                    graph: None,
                },
            )
            .await?;

        let now = self.now_ms();
        let mut tx = self.store.begin().await?;
        if let Some(idem) = &idem
            && let Some(receipt) = tx.idempotency_get(&idem.scope_hash, now).await?
        {
            drop(tx);
            return idem.replay(&receipt);
        }
        let (approval_mode, approval_rules) = crate::runs::gate::stored_approval(&approval_mode, &approval_rules)?;
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
                default_runner_id: default_runner.as_ref().map(|r| r.id),
                revision: 0,
                created_at: now,
                started_at: None,
            })
            .await?;
        let mut effects = Vec::new();
        let (receipt, _) = self
            .insert_envelope(&mut tx, &mut run, accepted, 1, now, &mut effects)
            .await?;
        let deliverable_key = receipt["deliverable_task_key"].as_str().map(str::to_string);
        let run_json = run_body(
            &run,
            &RunNames {
                workspace_public_id: ws.public_id,
                created_by: member.public_id,
                answering: member.public_id,
                declaring_agent: declaring_agent.map(|a| a.public_id),
                default_runner: default_runner.as_ref().map(|r| r.public_id),
                deliverable_task_key: deliverable_key,
            },
        );
        let response = object([("run", run_json), ("receipt", receipt)]);
        if let Some(idem) = &idem
            && let Some(replay) = self.put_receipt(&mut tx, idem, 201, &response, now).await?
        {
            return Ok(replay);
        }
        tx.commit().await?;
        self.publish(effects).await;
        Ok((201, response))
    }

    /// `POST R/start`: `pending → running`, then the ready rows start.
    pub async fn start_run(&self, principal: &MemberPrincipal, workspace: Uuid, run: Uuid) -> KernelResult<Value> {
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
        Ok(object([("run", self.run_json(ws.public_id, &run).await?)]))
    }

    /// `POST R/stop` `{force?}` (default true): a pending run is canceled at once; a live one
    /// passes through `canceling` until it drains.
    pub async fn stop_run(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        run: Uuid,
        body: &Value,
    ) -> KernelResult<Value> {
        let (ws, _) = self.workspace_for(principal, workspace, true).await?;
        let found = self.run_in(&ws, run).await?;
        let force = match body.get("force") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(refuse(Code::ParameterInvalid, "force must be a boolean")),
        };
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
        Ok(object([("run", self.run_json(ws.public_id, &run).await?)]))
    }

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

    /// `POST R/tasks` `{steps, expected_revision?}` (runs.md §3): 200 `{receipt}`, or 200 with
    /// `replayed: true`.
    pub async fn append(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        run: Uuid,
        body: &Value,
        idempotency_key: Option<&str>,
    ) -> KernelResult<(u16, Value)> {
        let (ws, _) = self.workspace_for(principal, workspace, true).await?;
        let found = self.run_in(&ws, run).await?;
        let idem = match idempotency_key {
            Some(k) => Some(Idempotency::new(
                principal.member.public_id,
                "POST /workspaces/{workspace}/runs/{run}/tasks",
                &[workspace, run],
                k,
                body,
            )?),
            None => None,
        };
        if let Some(idem) = &idem
            && let Some(receipt) = self.store.idempotency_get(&idem.scope_hash, self.now_ms()).await?
        {
            return idem.replay(&receipt);
        }
        if !body.is_object() {
            return Err(refuse(Code::ParameterMissing, "the body needs `steps`"));
        }
        let tasks = self.all_tasks(found.id).await?;
        let edges = self.store.edges_of_run(found.id).await?;
        let g = Graph::new(tasks, &edges);
        door_checks(&found, &g, body)?;
        if let Err(path) = steps::check_append_edge_authoring(body) {
            return Err(refuse(
                Code::EdgeAuthoringRefused,
                format!("{path} is a raw graph field: edges come only from written order, after and results"),
            )
            .with_path(path));
        }
        let revision = found.revision + 1;
        let existing = |k: &str| g.by_key(k).is_some();
        let parsed = steps::parse_steps(
            body.get("steps").unwrap_or(&Value::Null),
            &StepsContext {
                revision: revision as u64,
                existing_keys: &existing,
            },
        )
        .map_err(|e| {
            invalid_steps(
                e.steps
                    .into_iter()
                    .map(|s| Fault::new(s.code.to_string(), s.path))
                    .collect(),
            )
        })?;
        check_duplicates(&parsed, Some(&g))?;
        let answering = self
            .store
            .member_by_id(found.answering_member_id)
            .await?
            .ok_or_else(|| refuse(Code::NotFound, "the run's answering member is gone"))?;
        let declaring_agent = match found.declaring_agent_id {
            Some(id) => self.store.member_by_id(id).await?,
            None => None,
        };
        let default_runner = match found.default_runner_id {
            Some(id) => self.store.executor_by_id(id).await?,
            None => None,
        };
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
                    answering: &answering,
                    declaring_agent: declaring_agent.as_ref(),
                    default_runner: default_runner.as_ref(),
                    workspace: &ws,
                    approval_mode: found.approval_mode.as_str(),
                    approval_rules,
                    run_public_id: Some(found.public_id),
                    graph: Some(&g),
                },
            )
            .await?;

        let now = self.now_ms();
        let mut tx = self.store.begin().await?;
        if let Some(idem) = &idem
            && let Some(receipt) = tx.idempotency_get(&idem.scope_hash, now).await?
        {
            drop(tx);
            return idem.replay(&receipt);
        }
        let mut run = tx.lock_run(found.id).await?;
        let g = Graph::load(&mut tx, run.id).await?;
        door_checks(&run, &g, body)?;
        if run.revision + 1 != revision {
            return Err(stale_revision(run.revision));
        }
        check_duplicates_keys(accepted.iter().map(|a| a.step.key.as_str()), &g)?;
        let mut effects = Vec::new();
        let (receipt, new_ids) = self
            .insert_envelope(&mut tx, &mut run, accepted, revision, now, &mut effects)
            .await?;
        let response = json!({"receipt": receipt});
        if let Some(idem) = &idem
            && let Some(replay) = self.put_receipt(&mut tx, idem, 200, &response, now).await?
        {
            return Ok(replay);
        }
        // Rows whose dependencies already settled start now.
        if run.status == RunStatus::Running {
            let mut g = Graph::load(&mut tx, run.id).await?;
            self.schedule_ids(&mut tx, &mut run, &mut g, new_ids, now, &mut effects)
                .await?;
            self.check_run_end(&mut tx, &mut run, &g, now, &mut effects).await?;
        }
        tx.commit().await?;
        self.publish(effects).await;
        Ok((200, response))
    }
}

/// The public names a run projection shows.
pub(crate) struct RunNames {
    pub workspace_public_id: Uuid,
    pub created_by: Uuid,
    pub answering: Uuid,
    pub declaring_agent: Option<Uuid>,
    pub default_runner: Option<Uuid>,
    pub deliverable_task_key: Option<String>,
}

/// The run projection (runs.md §1).
pub(crate) fn run_body(run: &RunRow, names: &RunNames) -> Value {
    let parse = |s: &Option<String>| {
        s.as_deref()
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
            .unwrap_or(Value::Null)
    };
    json!({
        "public_id": run.public_id,
        "workspace_public_id": names.workspace_public_id,
        "hosting": run.hosting,
        "status": run.status,
        "created_by": names.created_by,
        "answering_principal": names.answering,
        "declaring_agent": names.declaring_agent,
        "approval_mode": run.approval_mode,
        "approval_rules": parse(&run.approval_rules.as_deref().map(str::to_string)),
        "default_runner_executor_public_id": names.default_runner,
        "deliverable_task_key": names.deliverable_task_key,
        "revision": run.revision,
        "attention": parse(&run.attention),
        "created_at": time::iso(run.created_at),
        "started_at": run.started_at.map(time::iso),
        "ended_at": run.ended_at.map(time::iso),
    })
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
