//! Addressing (executor.md §5), the approval gate (approvals.md §3–§4) and release.
//!
//! A tool row that becomes ready is addressed once, then crosses `needs_approval` in the same
//! transaction (even under `bypass`): the event stream reads
//! `waiting → needs_approval → dispatched | running | failed`, or stays at `needs_approval`
//! (a HOLD). An addressing refusal fails the row `tool_not_served` from `waiting`, with no park.
//!
//! Budgets (executor.md §13): `timeout_ms` is always the current park's budget, so
//! `deadline_at = await_started_at + timeout_ms` on every parked tool row. A hold writes
//! 86,400,000; release writes the row's own budget (authored, else announced, else 600,000).
//! The authored budget the step set (the `timeout_ms` column at insert) is kept, the first time
//! the gate sees the row, in the tool row's otherwise unused `request_surface` as
//! `{"authored_timeout_ms": n|null}` ([`authored_timeout`]), so a hold, a re-hold or a retry
//! never loses it.

use nexus_core::approval::{self, Decision, GrantOrigin};
use nexus_core::codes::task_error;
use nexus_core::registry::{self, EffectProfile};
use nexus_store::prelude::*;
use nexus_store::{
    ApprovalMode, ApprovalRules, ExecutorKind, ExecutorRow, ExecutorStatus, NewJob, RunRow, TaskKind, TaskRow,
    TaskStatus, Tx,
};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::{AfterCommit, FrozenContext, KernelToolJob};
use crate::error::KernelResult;
use crate::runs::settle::SettleError;
use crate::runs::unit::Unit;
use crate::tools::KernelTool;
use crate::{Kernel, time};

/// The approval hold's budget (approvals.md §4).
pub(crate) const HOLD_TIMEOUT_MS: i64 = 86_400_000;
/// A tool row's budget when neither the step nor the announcement sets one (executor.md §13).
pub(crate) const DEFAULT_TOOL_TIMEOUT_MS: i64 = 600_000;

/// Where a row goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Addressee {
    /// The kernel runs it: no addressee.
    Kernel,
    /// An executor address.
    Executor {
        id: i64,
        public_id: Uuid,
        role: ExecutorKind,
    },
}

/// The addressing decision (executor.md §5).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Addressing {
    pub addressee: Addressee,
    /// The frozen five-key profile: the addressee's announced entry, or the registry's.
    pub effect_profile: Value,
    /// The announced entry's `timeout_ms`, if any.
    pub announced_timeout_ms: Option<i64>,
}

fn parse_json(text: Option<&str>) -> Value {
    text.and_then(|t| serde_json::from_str(t).ok()).unwrap_or(Value::Null)
}

/// The announced entry of `name` in an executor's stored `served_tools`.
pub(crate) fn served_entry(executor: &ExecutorRow, name: &str) -> Option<Value> {
    let tools: Value = serde_json::from_str(&executor.served_tools).ok()?;
    tools
        .as_array()?
        .iter()
        .find(|e| e.get("name").and_then(Value::as_str) == Some(name))
        .cloned()
}

/// An entry of a stored announcement list read for its name only: the rest of the entry
/// (schemas, profiles, document bodies) is skipped, not built.
#[derive(serde::Deserialize)]
struct Named<'a> {
    #[serde(borrow, default)]
    name: Option<std::borrow::Cow<'a, str>>,
}

/// Whether the stored announcement list `stored` (a JSON array of objects, as the announcement
/// door writes it) holds an entry named `name`. A list that does not parse holds nothing.
fn lists_name(stored: &str, name: &str) -> bool {
    serde_json::from_str::<Vec<Named<'_>>>(stored)
        .is_ok_and(|entries| entries.iter().any(|e| e.name.as_deref() == Some(name)))
}

/// Whether the executor's current announcement serves the tool `name` (the claim door's check:
/// it needs the answer, not the entry).
pub(crate) fn serves(executor: &ExecutorRow, name: &str) -> bool {
    lists_name(&executor.served_tools, name)
}

fn announces_document(executor: &ExecutorRow, name: &str) -> bool {
    lists_name(&executor.served_documents, name)
}

/// The five-key profile of an announced entry (reduced at the announcement door), and its
/// `timeout_ms`.
fn announced_profile(entry: &Value) -> (Value, Option<i64>) {
    let profile = entry
        .get("effect_profile")
        .and_then(|p| EffectProfile::parse(p).ok())
        .map(|p| p.to_json())
        .unwrap_or(Value::Null);
    (profile, entry.get("timeout_ms").and_then(Value::as_i64))
}

/// A tool row being addressed: its tool name and input, read once.
struct Call<'a> {
    task: &'a TaskRow,
    tool_name: String,
    input: Value,
}

impl<'a> Call<'a> {
    fn of(task: &'a TaskRow) -> Call<'a> {
        Call {
            task,
            tool_name: task.tool_name.clone().unwrap_or_default(),
            input: parse_json(task.tool_input.as_deref()),
        }
    }

    /// A `skill` call's document name (`""` when absent).
    fn document(&self) -> &str {
        self.input.get("name").and_then(Value::as_str).unwrap_or("")
    }
}

/// An executor address serving the call under its announced entry.
fn executor_addressing(executor: &ExecutorRow, role: ExecutorKind, entry: &Value) -> Addressing {
    let (effect_profile, announced_timeout_ms) = announced_profile(entry);
    Addressing {
        addressee: Addressee::Executor {
            id: executor.id,
            public_id: executor.public_id,
            role,
        },
        effect_profile,
        announced_timeout_ms,
    }
}

fn kernel_addressing(tool: &registry::KernelTool) -> Addressing {
    Addressing {
        addressee: Addressee::Kernel,
        effect_profile: tool.effect.to_json(),
        announced_timeout_ms: None,
    }
}

/// The budget the step authored for this tool row (`None`: the announcement or the default
/// decides). Recorded on first sight from the insert-time `timeout_ms` column.
pub(crate) fn authored_timeout(task: &mut TaskRow) -> Option<i64> {
    if let Some(v) = task
        .request_surface
        .as_deref()
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        && let Some(obj) = v.as_object()
        && obj.contains_key("authored_timeout_ms")
    {
        return obj.get("authored_timeout_ms").and_then(Value::as_i64);
    }
    let authored = task.timeout_ms;
    task.request_surface = Some(json!({"authored_timeout_ms": authored}).to_string());
    authored
}

/// `approval` fact JSON: `{origin, decided_by?, decided_at}`.
pub(crate) fn approval_fact(origin: &str, decided_by: Option<Uuid>, now: i64) -> String {
    let mut m = Map::new();
    m.insert("origin".into(), json!(origin));
    if let Some(by) = decided_by {
        m.insert("decided_by".into(), json!(by.to_string()));
    }
    m.insert("decided_at".into(), json!(time::iso(now)));
    Value::Object(m).to_string()
}

fn grant_word(origin: GrantOrigin) -> &'static str {
    match origin {
        GrantOrigin::Mode => "mode",
        GrantOrigin::Rule => "rule",
        GrantOrigin::Author => "author",
        GrantOrigin::Kernel => "kernel",
    }
}

/// A new run's approval inputs as the store keeps them: the mode by its word, the rules
/// parsed once (`null`: none). Inputs a door validated always convert; a word or a rule list
/// that does not (a profile stored before a grammar change) refuses the run as a corrupt
/// input rather than running it under no rules.
pub(crate) fn stored_approval(mode: &str, rules: &Value) -> KernelResult<(ApprovalMode, Option<ApprovalRules>)> {
    let corrupt = |what: String| nexus_store::StoreError::Corrupt(what);
    let mode = ApprovalMode::from_word(mode).ok_or_else(|| corrupt(format!("approval mode {mode:?}")))?;
    let rules = match rules {
        Value::Null => None,
        rules => Some(ApprovalRules::of_value(rules).map_err(|e| corrupt(e.to_string()))?),
    };
    Ok((mode, rules))
}

/// The verdict of approvals.md §3 for this row under the run's frozen mode and rules, as the
/// store read them: typed, so an unknown mode or a rule list that does not parse never gets
/// here (the read is a corrupt row, and the run stops in `needs_attention`).
pub(crate) fn verdict(run: &RunRow, task: &TaskRow) -> Decision {
    let rules = run.approval_rules.as_ref().map_or(&[][..], |r| r.rules());
    let input = parse_json(task.tool_input.as_deref());
    approval::evaluate(
        rules,
        run.approval_mode,
        task.origin,
        task.tool_name.as_deref().unwrap_or(""),
        &input,
    )
}

impl Kernel {
    /// The frozen context the row executes under: the model round that declared it (a
    /// `tool_call` child's declaring row is a tool row: followed up to its round).
    pub(crate) async fn frozen_of(&self, tx: &mut Tx, task: &TaskRow) -> KernelResult<FrozenContext> {
        let mut row = if task.kind == TaskKind::Model {
            Some(task.clone())
        } else {
            None
        };
        let mut declaring = task.declaring_task_id;
        for _ in 0..16 {
            if row.is_some() {
                break;
            }
            let Some(id) = declaring else { break };
            let Some(r) = tx.task_by_id(id).await? else { break };
            declaring = r.declaring_task_id;
            if r.kind == TaskKind::Model {
                row = Some(r);
            }
        }
        let Some(round) = row else {
            return Ok(FrozenContext {
                environment: json!({}),
                ..FrozenContext::default()
            });
        };
        let mut f = FrozenContext::of(&round);
        if !f.environment.is_object() {
            f.environment = json!({});
        }
        Ok(f)
    }

    /// Whether an agent_application address may take this run's work: it is the declaring
    /// agent's own address, and active.
    fn agent_address_eligible(run: &RunRow, executor: &ExecutorRow) -> bool {
        executor.kind == ExecutorKind::AgentApplication
            && executor.status == ExecutorStatus::Active
            && executor.agent_id.is_some()
            && executor.agent_id == run.declaring_agent_id
    }

    /// Addresses a tool row (executor.md §5). `Ok(Err(detail))` is a `tool_not_served`
    /// refusal.
    pub(crate) async fn address(
        &self,
        tx: &mut Tx,
        run: &RunRow,
        task: &TaskRow,
    ) -> KernelResult<Result<Addressing, String>> {
        let call = Call::of(task);
        // 1. A frozen runner target.
        if let Some(target) = task.target_executor_id {
            return self.address_runner(tx, run, &call, target).await;
        }
        if let Some(tool) = registry::resolve_wire(&call.tool_name) {
            // 2. The skill tool: the frozen catalog entry's source.
            if tool.canonical == "nexus.skill.load" {
                return self.address_skill(tx, run, &call, tool).await;
            }
            // 3. Any other kernel name.
            return Ok(Ok(kernel_addressing(tool)));
        }
        // 4. A non-kernel name: the declaring agent's address.
        if let Some(agent) = run.declaring_agent_id
            && let Some(app) = self.store.agent_application_of(agent).await?
            && Self::agent_address_eligible(run, &app)
            && let Some(entry) = served_entry(&app, &call.tool_name)
        {
            return Ok(Ok(executor_addressing(&app, ExecutorKind::AgentApplication, &entry)));
        }
        // 5. Nobody serves it.
        Ok(Err(format!("no executor serves `{}` for this run", call.tool_name)))
    }

    /// Step 1 of [`Kernel::address`]: the frozen runner target, still eligible and serving
    /// the tool (and, for `skill`, announcing the document; a document not in the frozen
    /// catalog is the kernel's to refuse).
    async fn address_runner(
        &self,
        tx: &mut Tx,
        run: &RunRow,
        call: &Call<'_>,
        target: i64,
    ) -> KernelResult<Result<Addressing, String>> {
        let tool_name = &call.tool_name;
        let Some(runner) = self.store.executor_by_id(target).await? else {
            return Ok(Err(format!("runner {target} no longer exists")));
        };
        let answering = self.store.member_by_id(run.answering_member_id).await?;
        let eligible = match &answering {
            Some(m) => self.runner_eligible_for(&runner, m).await?,
            None => false,
        };
        if runner.kind != ExecutorKind::Runner || !eligible {
            return Ok(Err(format!(
                "runner {} is not eligible for this run any more",
                runner.public_id
            )));
        }
        let Some(entry) = served_entry(&runner, tool_name) else {
            return Ok(Err(format!(
                "runner {} no longer serves `{tool_name}`",
                runner.public_id
            )));
        };
        if KernelTool::from_wire(tool_name) == Some(KernelTool::Skill) {
            let doc = call.document();
            if self.catalog_skill(tx, call).await?.is_none() {
                // Answered by the kernel with `skill_unknown` (kernel-tools.md §9).
                let tool = registry::resolve_wire(KernelTool::Skill.wire()).expect("skill is a kernel tool");
                return Ok(Ok(kernel_addressing(tool)));
            }
            if !announces_document(&runner, doc) {
                return Ok(Err(format!(
                    "runner {} no longer announces the skill `{doc}`",
                    runner.public_id
                )));
            }
        }
        Ok(Ok(executor_addressing(&runner, ExecutorKind::Runner, &entry)))
    }

    /// Step 2 of [`Kernel::address`]: a skill whose frozen catalog entry names an
    /// agent_application source goes to that address while it is eligible, serves `skill` and
    /// announces the document; memory sources and unknown documents are the kernel's.
    async fn address_skill(
        &self,
        tx: &mut Tx,
        run: &RunRow,
        call: &Call<'_>,
        tool: &'static registry::KernelTool,
    ) -> KernelResult<Result<Addressing, String>> {
        let doc = call.document();
        let entry = self.catalog_skill(tx, call).await?;
        let source = entry.as_ref().and_then(|e| e.get("source")).and_then(Value::as_str);
        if source != Some("agent_application") {
            return Ok(Ok(kernel_addressing(tool)));
        }
        let id = entry
            .as_ref()
            .and_then(|e| e.get("executor_public_id"))
            .and_then(Value::as_str)
            .and_then(|s| Uuid::parse_str(s).ok());
        let app = match id {
            Some(id) => self.store.executor_by_public_id(id).await?,
            None => None,
        };
        let Some(app) = app.filter(|a| Self::agent_address_eligible(run, a)) else {
            return Ok(Err(format!("the skill source of `{doc}` is no longer eligible")));
        };
        let Some(served) = served_entry(&app, KernelTool::Skill.wire()) else {
            return Ok(Err(format!("{} no longer serves `skill`", app.public_id)));
        };
        if !announces_document(&app, doc) {
            return Ok(Err(format!("{} no longer announces the skill `{doc}`", app.public_id)));
        }
        Ok(Ok(executor_addressing(&app, ExecutorKind::AgentApplication, &served)))
    }

    /// The frozen skill catalog's entry for the call's callable and document, if any.
    async fn catalog_skill(&self, tx: &mut Tx, call: &Call<'_>) -> KernelResult<Option<Value>> {
        let doc = call.document();
        let frozen = self.frozen_of(tx, call.task).await?;
        let callable = call.task.tool_alias.as_deref().unwrap_or(&call.tool_name);
        Ok(frozen.skills.into_iter().find(|s| {
            s.get("callable").and_then(Value::as_str) == Some(callable)
                && s.get("name").and_then(Value::as_str) == Some(doc)
        }))
    }

    /// The declaring agent's agent_application address, for holds and tokenless asks
    /// (`None` on a human's run, or when the address is revoked).
    pub(crate) async fn declaring_address(&self, run: &RunRow) -> KernelResult<Option<ExecutorRow>> {
        let Some(agent) = run.declaring_agent_id else {
            return Ok(None);
        };
        Ok(self
            .store
            .agent_application_of(agent)
            .await?
            .filter(|a| Self::agent_address_eligible(run, a)))
    }

    /// helper 2 → helper 1 hand-off: a tool row became ready (inside the scheduling tx). The
    /// row is at `waiting`.
    pub(crate) async fn on_tool_ready(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        task: &mut TaskRow,
        now: i64,
    ) -> KernelResult<Vec<AfterCommit>> {
        let mut effects = Vec::new();
        authored_timeout(task);
        let addressing = match self.address(tx, run, task).await? {
            Ok(a) => a,
            Err(detail) => {
                self.fail(
                    &mut Unit::of(tx, run, now, &mut effects),
                    task,
                    SettleError::new(task_error::TOOL_NOT_SERVED, Some(detail)),
                )
                .await?;
                return Ok(effects);
            }
        };
        task.effect_profile = Some(addressing.effect_profile.to_string());
        match verdict(run, task) {
            Decision::Hold => {
                self.hold(tx, run, task, now, true, &mut effects).await?;
            }
            Decision::Grant(origin) => {
                // `waiting → needs_approval → running | dispatched` in one update.
                let fact = approval_fact(grant_word(origin), None, now);
                self.release_from(
                    &mut Unit::of(tx, run, now, &mut effects),
                    task,
                    &addressing,
                    fact,
                    Some(TaskStatus::NeedsApproval),
                )
                .await?;
            }
            Decision::Deny { detail } => {
                self.transition(tx, run, task, TaskStatus::NeedsApproval, now).await?;
                self.fail(
                    &mut Unit::of(tx, run, now, &mut effects),
                    task,
                    SettleError::new(task_error::APPROVAL_DENIED, Some(detail)),
                )
                .await?;
            }
        }
        Ok(effects)
    }

    /// HOLD (approvals.md §4): the row sits at `needs_approval` on a fresh 24 h clock,
    /// addressed to the declaring agent's address (none on a human's run), with its effect
    /// profile frozen. `from_waiting`: the row crosses into `needs_approval` now; otherwise
    /// it is re-held in place (approve found a changed profile).
    pub(crate) async fn hold(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        task: &mut TaskRow,
        now: i64,
        from_waiting: bool,
        effects: &mut Vec<AfterCommit>,
    ) -> KernelResult<bool> {
        let address = self.declaring_address(run).await?;
        task.addressed_executor_id = address.as_ref().map(|a| a.id);
        task.addressed_role = address.as_ref().map(|_| ExecutorKind::AgentApplication);
        authored_timeout(task);
        task.await_started_at = Some(now);
        task.timeout_ms = Some(HOLD_TIMEOUT_MS);
        task.deadline_at = Some(now + HOLD_TIMEOUT_MS);
        let moved = if from_waiting {
            self.transition(tx, run, task, TaskStatus::NeedsApproval, now).await?
        } else {
            tx.update_task(nexus_store::TaskUpdate::new(
                task,
                task.generation,
                &[TaskStatus::NeedsApproval],
            ))
            .await?
        };
        if !moved {
            return Ok(false);
        }
        let data = json!({"reason": "approval_required", "task_key": task.key});
        self.emit(
            &mut Unit::of(tx, run, now, effects),
            nexus_store::EventKind::AttentionRequired,
            Some(&task.key),
            data,
        )
        .await?;
        if let Some(a) = address {
            effects.push(AfterCommit::WorkAvailable {
                executor_public_id: a.public_id,
                kind: "approval",
                run: run.public_id,
                task_key: task.key.clone(),
            });
        }
        Ok(true)
    }

    /// Release (approvals.md §5 step 8): the one grant path for mode, rule and human grants.
    /// The row is at `needs_approval`.
    pub(crate) async fn release(
        &self,
        u: &mut Unit<'_>,
        task: &mut TaskRow,
        addressing: &Addressing,
        approval: String,
    ) -> KernelResult<bool> {
        let Unit { tx, run, now, effects } = u;
        let now = *now;
        self.release_from(&mut Unit::of(tx, run, now, effects), task, addressing, approval, None)
            .await
    }

    /// [`Kernel::release`] of a row that crosses `via` (`needs_approval`) on the way: a mode
    /// or rule grant releases a `waiting` row in the same update that crosses the gate.
    async fn release_from(
        &self,
        u: &mut Unit<'_>,
        task: &mut TaskRow,
        addressing: &Addressing,
        approval: String,
        via: Option<TaskStatus>,
    ) -> KernelResult<bool> {
        let Unit { tx, run, now, effects } = u;
        let now = *now;
        effects.push(AfterCommit::RunEvents(run.id));
        task.approval = Some(approval);
        task.effect_profile = Some(addressing.effect_profile.to_string());
        task.await_started_at = Some(now);
        let authored = authored_timeout(task);
        match &addressing.addressee {
            Addressee::Kernel => {
                let budget = authored.unwrap_or(DEFAULT_TOOL_TIMEOUT_MS);
                task.addressed_executor_id = None;
                task.addressed_role = None;
                task.timeout_ms = Some(budget);
                task.deadline_at = Some(now + budget);
                task.started_at = task.started_at.or(Some(now));
                if !self
                    .transition_via(tx, run, task, via, TaskStatus::Running, now)
                    .await?
                {
                    return Ok(false);
                }
                let job_id = tx
                    .insert_job(NewJob {
                        kind: nexus_store::JobKind::KernelTool,
                        run_id: run.id,
                        task_id: Some(task.id),
                        generation: task.generation,
                        available_at: now,
                    })
                    .await?;
                effects.push(AfterCommit::KernelTool(KernelToolJob {
                    job_id,
                    run_id: run.id,
                    task_id: task.id,
                    generation: task.generation,
                }));
            }
            Addressee::Executor { id, public_id, role } => {
                let budget = authored
                    .or(addressing.announced_timeout_ms)
                    .unwrap_or(DEFAULT_TOOL_TIMEOUT_MS);
                task.addressed_executor_id = Some(*id);
                task.addressed_role = Some(*role);
                task.timeout_ms = Some(budget);
                task.deadline_at = Some(now + budget);
                task.started_at = task.started_at.or(Some(now));
                if !self
                    .transition_via(tx, run, task, via, TaskStatus::Dispatched, now)
                    .await?
                {
                    return Ok(false);
                }
                effects.push(AfterCommit::WorkAvailable {
                    executor_public_id: *public_id,
                    kind: "tool_call",
                    run: run.public_id,
                    task_key: task.key.clone(),
                });
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::lists_name;

    #[test]
    fn a_stored_list_is_read_for_its_names_only() {
        let stored = r#"[{"name":"echo","input_schema":{"type":"object","properties":{"x":{"type":"string"}}}},
                        {"description":"no name"},{"name":"git\u002dlog","timeout_ms":5}]"#;
        assert!(lists_name(stored, "echo"));
        // An escaped name is decoded before it is compared.
        assert!(lists_name(stored, "git-log"));
        assert!(!lists_name(stored, "git\\u002dlog"));
        assert!(!lists_name(stored, "no name"));
        assert!(!lists_name(stored, "ech"));
        assert!(!lists_name("[]", "echo"));
        assert!(!lists_name("", "echo"));
        assert!(!lists_name("{\"name\":\"echo\"}", "echo"));
    }
}
