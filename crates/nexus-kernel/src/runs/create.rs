//! The member doors that make and grow runs (runs.md §2, §3): create, start, stop, append; step
//! acceptance (declarations.md §7–§8); idempotency keys (errors-and-auth.md §6).

use std::collections::{HashMap, HashSet};

use base64::Engine as _;
use nexus_core::approval;
use nexus_core::codes::Code;
use nexus_core::declaration::{self, AssemblyInput, AssemblyPaths, DeclErrorKind};
use nexus_core::jcs;
use nexus_core::steps::{self, Step, StepVerb, StepsContext, ToolRoute};
use nexus_store::{
    Engine, ExecutorKind, ExecutorRow, MemberKind, MemberRow, NewReceipt, NewRun, NewTask, RunRow, StoreError, TaskRow,
    WorkspaceRow, run_status, task_status,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::read::object;
use super::rows::Graph;
use super::run_end::is_candidate;
use super::{AfterCommit, FrozenContext, RequestSurface, is_open, refuse, run_is_terminal, task_kind};
use crate::auth::MemberPrincipal;
use crate::error::{KernelError, KernelResult};
use crate::{Kernel, time};

/// Receipts are kept for 24 hours.
const RECEIPT_TTL_MS: i64 = 24 * 60 * 60 * 1000;
/// `wait` timeouts: default and per-park clamp.
const WAIT_DEFAULT_MS: u64 = 3_600_000;
const WAIT_MAX_MS: u64 = 86_400_000;

/// A validated `Idempotency-Key` bound to its scope and envelope.
struct Idempotency {
    scope_hash: String,
    envelope_sha256: String,
}

fn sha_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl Idempotency {
    /// `key`: 1–64 visible ASCII characters, else 400 `parameter_invalid`.
    fn new(member: Uuid, route: &str, ids: &[Uuid], key: &str, body: &Value) -> KernelResult<Idempotency> {
        let ok = !key.is_empty()
            && key.len() <= nexus_core::bounds::IDEMPOTENCY_KEY_CHARS
            && key.bytes().all(|b| (0x21..=0x7e).contains(&b));
        if !ok {
            return Err(refuse(
                Code::ParameterInvalid,
                "Idempotency-Key must be 1-64 visible ASCII characters",
            ));
        }
        let mut scope = format!("{member}\0{route}");
        for id in ids {
            scope.push('\0');
            scope.push_str(&id.to_string());
        }
        scope.push('\0');
        scope.push_str(key);
        Ok(Idempotency {
            scope_hash: sha_hex(scope.as_bytes()),
            envelope_sha256: sha_hex(jcs::to_string(body).as_bytes()),
        })
    }

    /// The replay of a stored receipt, or 409 on a different envelope.
    fn replay(&self, receipt: &nexus_store::ReceiptRow) -> KernelResult<(u16, Value)> {
        if receipt.envelope_sha256 != self.envelope_sha256 {
            return Err(refuse(
                Code::IdempotencyEnvelopeMismatch,
                "this Idempotency-Key was used with a different body",
            ));
        }
        let mut body: Value = serde_json::from_str(&receipt.body).unwrap_or_else(|_| json!({}));
        if let Value::Object(m) = &mut body {
            m.insert("replayed".into(), Value::Bool(true));
        }
        Ok((200, body))
    }
}

/// `/run/steps/0/model/tools/3` → `run.steps[0].model.tools[3]`.
fn dotted(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    out
}

fn invalid_steps(faults: Vec<(String, String)>) -> KernelError {
    let steps: Vec<Value> = faults
        .iter()
        .map(|(code, path)| json!({"code": code, "path": path}))
        .collect();
    let first = faults.first().map(|(c, p)| format!("{c} at {p}")).unwrap_or_default();
    KernelError::new(Code::InvalidSteps, format!("the steps were refused: {first}"))
        .with_extra("steps", Value::Array(steps))
}

/// One accepted step, ready to insert.
struct Accepted {
    step: Step,
    task: NewTask,
    /// `(key, kind)` of extra dependencies (`after`, `reads`).
    extra_deps: Vec<(String, &'static str)>,
    resolution_token: Option<String>,
}

/// What acceptance needs to know of the run.
struct AcceptCtx<'a> {
    /// Path prefix of the steps (`run.` at create, `` at append).
    prefix: &'a str,
    answering: &'a MemberRow,
    declaring_agent: Option<&'a MemberRow>,
    default_runner: Option<&'a ExecutorRow>,
    workspace: &'a WorkspaceRow,
    approval_mode: &'a str,
    approval_rules: Value,
    /// The run's public id (append), for `wait.run_public_id`.
    run_public_id: Option<Uuid>,
    /// Existing rows (append).
    graph: Option<&'a Graph>,
}

impl Kernel {
    /// The answering principal's controlling human (itself for a human).
    async fn controlling_human(&self, p: &MemberRow) -> KernelResult<Uuid> {
        match (p.kind, p.steward_id) {
            (MemberKind::Agent, Some(s)) => Ok(self.store.member_by_id(s).await?.map_or(p.public_id, |m| m.public_id)),
            _ => Ok(p.public_id),
        }
    }

    /// A runner usable as a target or default for `p`: exists, is a runner, is eligible.
    async fn eligible_runner(&self, id: Uuid, p: &MemberRow) -> KernelResult<Option<ExecutorRow>> {
        let Some(runner) = self.store.executor_by_public_id(id).await? else {
            return Ok(None);
        };
        if runner.kind != ExecutorKind::Runner || !self.runner_eligible_for(&runner, p).await? {
            return Ok(None);
        }
        Ok(Some(runner))
    }

    /// Step acceptance (runs.md §4 kernel checks, declarations.md §7–§8).
    async fn accept(&self, parsed: Vec<Step>, ctx: &AcceptCtx<'_>) -> KernelResult<Vec<Accepted>> {
        let mut faults: Vec<(String, String)> = Vec::new();
        let mut out = Vec::with_capacity(parsed.len());
        let profile: Value = ctx
            .declaring_agent
            .map(|a| crate::profile::configuration_read(a.configuration.as_deref()))
            .unwrap_or(Value::Null);
        let user_public_id = self.controlling_human(ctx.answering).await?;
        // Envelope dependency map for wait_cycle: key → dependency keys.
        let mut env_deps: HashMap<String, Vec<String>> = HashMap::new();
        let mut prev_key: Option<String> = None;
        for step in &parsed {
            let mut d: Vec<String> = step.after.clone();
            if let Some(p) = &prev_key {
                d.push(p.clone());
            }
            if let StepVerb::Model { results, .. } = &step.verb {
                d.extend(results.iter().cloned());
            }
            env_deps.insert(step.key.clone(), d);
            prev_key = Some(step.key.clone());
        }
        for step in parsed {
            let i = step.index;
            let p = format!("{}steps[{i}]", ctx.prefix);
            let mut task = NewTask {
                key: step.key.clone(),
                status: task_status::WAITING.into(),
                generation: 1,
                origin: "author".into(),
                on_failure: step.on_failure.as_str().into(),
                visibility: step.visibility.as_str().into(),
                ..Default::default()
            };
            let mut extra_deps: Vec<(String, &'static str)> = step.after.iter().map(|k| (k.clone(), "after")).collect();
            let mut resolution_token = None;
            match &step.verb {
                StepVerb::Model {
                    prompt,
                    model,
                    instructions,
                    tools,
                    kernel_tools,
                    runner_executor_public_ids,
                    runner_tool_names,
                    attachments,
                    results,
                    fan_on_failure,
                } => {
                    let model_ref = model
                        .as_ref()
                        .map(|m| m.model.clone())
                        .or_else(|| profile.get("default_model").and_then(Value::as_str).map(str::to_string));
                    match &model_ref {
                        None => faults.push(("model_required".into(), format!("{p}.model"))),
                        Some(r) => {
                            if let Err(e) = self
                                .providers
                                .catalog()
                                .resolve(r, &|var| std::env::var_os(var).is_some())
                            {
                                faults.push((e.as_str().into(), format!("{p}.model")));
                            }
                        }
                    }
                    if !attachments.is_empty() {
                        faults.push(("invalid_attachments".into(), format!("{p}.model.attachments")));
                    }
                    let base = format!(
                        "/{}",
                        format!("{p}.model")
                            .replace('.', "/")
                            .replace('[', "/")
                            .replace(']', "")
                    );
                    let mut paths = AssemblyPaths::under(&base, "tools");
                    paths.selector = format!("/{}default_runner_executor_public_id", ctx.prefix.replace('.', "/"));
                    let mut input = AssemblyInput {
                        entries: tools.clone().unwrap_or(Value::Null),
                        kernel_tools: kernel_tools.clone(),
                        runner_executor_public_ids: runner_executor_public_ids.clone(),
                        runner_tool_names: runner_tool_names.clone(),
                        default_runner_executor_public_id: ctx.default_runner.map(|r| r.public_id),
                        paths,
                        ..Default::default()
                    };
                    self.gather_facts_in(ctx.answering, Some(ctx.workspace), &mut input)
                        .await?;
                    let assembly = match declaration::assemble_owned(input) {
                        Ok(a) => Some(a),
                        Err(e) if e.kind == DeclErrorKind::TooLarge => {
                            return Err(KernelError::new(Code::ContentTooLarge, e.message).with_path(dotted(&e.path)));
                        }
                        Err(e) => {
                            faults.push((e.reason.into(), dotted(&e.path)));
                            None
                        }
                    };
                    for k in results {
                        extra_deps.push((k.clone(), "reads"));
                    }
                    if let (Some(a), Some(model_ref)) = (assembly, model_ref) {
                        let frozen = FrozenContext {
                            prompt: prompt.clone(),
                            results: results.clone(),
                            attachments: attachments.clone(),
                            tool_definitions: a.tool_definitions,
                            environment: a.environment,
                            skills: a.skills,
                            memory: json!({
                                "workspace_public_id": ctx.workspace.public_id,
                                "conversation_public_id": null,
                                "user_public_id": user_public_id,
                            }),
                            approval_mode: ctx.approval_mode.to_string(),
                            approval_rules: ctx.approval_rules.clone(),
                            fan_on_failure: fan_on_failure.as_str().to_string(),
                        };
                        let surface = RequestSurface {
                            model: model_ref,
                            reasoning_effort: model.as_ref().and_then(|m| m.reasoning_effort.clone()),
                            max_output_tokens: model.as_ref().and_then(|m| m.max_output_tokens),
                            instructions: instructions
                                .clone()
                                .or_else(|| profile.get("instructions").and_then(Value::as_str).map(str::to_string)),
                        };
                        task.frozen_context = Some(serde_json::to_string(&frozen).expect("frozen context serializes"));
                        task.request_surface = Some(serde_json::to_string(&surface).expect("surface serializes"));
                    }
                    task.kind = task_kind::MODEL.into();
                    task.mainline = true;
                }
                StepVerb::Tool {
                    name,
                    input,
                    route,
                    timeout_ms,
                    model_defaults,
                } => {
                    task.kind = task_kind::TOOL.into();
                    task.tool_name = Some(name.clone());
                    task.tool_input = Some(serde_json::to_string(input).expect("input serializes"));
                    task.timeout_ms = timeout_ms.map(|t| t as i64);
                    let target = match route {
                        None => None,
                        Some(ToolRoute::RunDefault) => match ctx.default_runner {
                            Some(r) => Some(r.public_id),
                            None => {
                                faults.push(("runner_target_required".into(), format!("{p}.tool.route")));
                                None
                            }
                        },
                        Some(ToolRoute::Runner(id)) => Some(*id),
                    };
                    if let Some(id) = target {
                        match self.eligible_runner(id, ctx.answering).await? {
                            None => faults.push(("runner_not_eligible".into(), format!("{p}.tool.route"))),
                            Some(runner) => {
                                let served: Value =
                                    serde_json::from_str(&runner.served_tools).unwrap_or(Value::Array(vec![]));
                                let serves = served.as_array().is_some_and(|a| {
                                    a.iter().any(|t| t.get("name").and_then(Value::as_str) == Some(name))
                                });
                                if serves {
                                    task.target_executor_id = Some(runner.id);
                                } else {
                                    faults.push(("tool_not_served".into(), format!("{p}.tool.name")));
                                }
                            }
                        }
                    }
                    if let Some(defaults) = model_defaults {
                        let base = format!(
                            "/{}",
                            format!("{p}.tool.model_defaults")
                                .replace('.', "/")
                                .replace('[', "/")
                                .replace(']', "")
                        );
                        let field = |k: &str| defaults.get(k).cloned().unwrap_or(Value::Null);
                        let mut input = AssemblyInput {
                            entries: field("tools"),
                            kernel_tools: field("kernel_tools"),
                            runner_executor_public_ids: field("runner_executor_public_ids"),
                            runner_tool_names: field("runner_tool_names"),
                            default_runner_executor_public_id: ctx.default_runner.map(|r| r.public_id),
                            paths: AssemblyPaths::under(&base, "tools"),
                            ..Default::default()
                        };
                        self.gather_facts_in(ctx.answering, Some(ctx.workspace), &mut input)
                            .await?;
                        if let Some(m) = defaults.get("model").and_then(Value::as_str)
                            && let Err(e) = self.providers.catalog().resolve(m, &|v| std::env::var_os(v).is_some())
                        {
                            faults.push((e.as_str().into(), format!("{p}.tool.model_defaults.model")));
                        }
                        match declaration::assemble_owned(input) {
                            Ok(a) => {
                                let mut ctx_json = a.to_response_json();
                                ctx_json["model"] = defaults.get("model").cloned().unwrap_or(Value::Null);
                                task.frozen_context = Some(json!({"model_context": ctx_json}).to_string());
                            }
                            Err(e) => faults.push((e.reason.into(), dotted(&e.path))),
                        }
                    }
                }
                StepVerb::Ask {
                    prompt,
                    options,
                    multi,
                    timeout_ms,
                } => {
                    task.kind = task_kind::AWAIT.into();
                    task.timeout_ms = timeout_ms.map(|t| t as i64);
                    task.frozen_context =
                        Some(json!({"ask": {"prompt": prompt, "options": options, "multi": multi}}).to_string());
                    let token_bytes: [u8; 32] = rand::random();
                    let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token_bytes);
                    task.resolution_token_sha256 = Some(sha_hex(token.as_bytes()));
                    resolution_token = Some(token);
                }
                StepVerb::Wait {
                    task: target,
                    run_public_id,
                    timeout_ms,
                } => {
                    task.kind = task_kind::AWAIT.into();
                    let timeout = timeout_ms.unwrap_or(WAIT_DEFAULT_MS).min(WAIT_MAX_MS);
                    task.timeout_ms = Some(timeout as i64);
                    let other_run = run_public_id
                        .as_deref()
                        .is_some_and(|r| Uuid::parse_str(r).ok() != ctx.run_public_id || ctx.run_public_id.is_none());
                    let exists = env_deps.contains_key(target) || ctx.graph.is_some_and(|g| g.by_key(target).is_some());
                    if other_run || !exists {
                        faults.push(("wait_target_not_found".into(), format!("{p}.wait.task")));
                    } else if *target == step.key || ancestors_of(&step.key, &env_deps, ctx.graph).contains(target) {
                        faults.push(("wait_cycle".into(), format!("{p}.wait.task")));
                    }
                    task.frozen_context = Some(
                        json!({"wait": {"task": target, "run_public_id": run_public_id, "timeout_ms": timeout}})
                            .to_string(),
                    );
                }
            }
            out.push(Accepted {
                step,
                task,
                extra_deps,
                resolution_token,
            });
        }
        if faults.is_empty() {
            Ok(out)
        } else {
            Err(invalid_steps(faults))
        }
    }

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
                tx.insert_edge(row.id, p, "after").await?;
            }
            for (key, kind) in &a.extra_deps {
                let dep = ids
                    .get(key)
                    .copied()
                    .or_else(|| super::rows::follow(&existing, key).map(|t| t.id));
                if let Some(dep) = dep {
                    tx.insert_edge(row.id, dep, kind).await?;
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
            tx,
            run,
            "tasks_appended",
            None,
            json!({"keys": keys, "origin": "author", "revision": revision}),
            now,
            effects,
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
            && let Some(receipt) = self.store.idempotency_get(&idem.scope_hash, time::now_ms()).await?
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
        let approval_mode = match shell.get("approval_mode").and_then(Value::as_str) {
            Some(m @ ("bypass" | "ask" | "rules")) => m.to_string(),
            _ => {
                return Err(refuse(
                    Code::InvalidApprovalMode,
                    "approval_mode is required: bypass, ask or rules",
                ));
            }
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
                    .map(|s| (s.code.to_string(), s.path))
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

        let now = time::now_ms();
        let mut tx = self.store.begin().await?;
        if let Some(idem) = &idem
            && let Some(receipt) = tx.idempotency_get(&idem.scope_hash, now).await?
        {
            drop(tx);
            return idem.replay(&receipt);
        }
        let mut run = tx
            .insert_run(NewRun {
                public_id: time::new_id(),
                workspace_id: ws.id,
                created_by_id: member.id,
                answering_member_id: member.id,
                declaring_agent_id: declaring_agent.map(|a| a.id),
                status: run_status::PENDING.into(),
                hosting: json!({"kind": "standalone"}).to_string(),
                approval_mode: approval_mode.clone(),
                approval_rules: (!approval_rules.is_null()).then(|| approval_rules.to_string()),
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

    /// Stores the receipt in `tx`; on a concurrent duplicate (the unique scope), returns the
    /// replay of the winner instead (and the caller's work is rolled back).
    async fn put_receipt(
        &self,
        tx: &mut nexus_store::Tx,
        idem: &Idempotency,
        status: u16,
        body: &Value,
        now: i64,
    ) -> KernelResult<Option<(u16, Value)>> {
        match tx
            .idempotency_put(NewReceipt {
                scope_hash: idem.scope_hash.clone(),
                envelope_sha256: idem.envelope_sha256.clone(),
                status: i64::from(status),
                body: body.to_string(),
                expires_at: now + RECEIPT_TTL_MS,
                created_at: now,
            })
            .await
        {
            Ok(_) => Ok(None),
            Err(StoreError::Conflict(_)) => {
                let receipt = self
                    .store
                    .idempotency_get(&idem.scope_hash, now)
                    .await?
                    .ok_or_else(|| refuse(Code::IdempotencyEnvelopeMismatch, "the Idempotency-Key is in use"))?;
                Ok(Some(idem.replay(&receipt)?))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// `POST R/start`: `pending → running`, then the ready rows start.
    pub async fn start_run(&self, principal: &MemberPrincipal, workspace: Uuid, run: Uuid) -> KernelResult<Value> {
        let (ws, _) = self.workspace_for(principal, workspace, true).await?;
        let found = self.run_in(&ws, run).await?;
        let now = time::now_ms();
        let mut tx = self.store.begin().await?;
        let mut run = tx.lock_run(found.id).await?;
        if run.status != run_status::PENDING {
            return Err(refuse(
                Code::NotStartable,
                format!("the run is {}, not pending", run.status),
            ));
        }
        let mut effects = Vec::new();
        self.set_run_status(&mut tx, &mut run, run_status::RUNNING, None, now, &mut effects)
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
        let now = time::now_ms();
        let mut tx = self.store.begin().await?;
        let mut run = tx.lock_run(found.id).await?;
        if run_is_terminal(&run.status) {
            return Err(refuse(
                Code::AlreadyTerminal,
                format!("the run is already {}", run.status),
            ));
        }
        let mut effects = vec![AfterCommit::RunEvents(run.id)];
        let mut g = Graph::load(&mut tx, run.id).await?;
        // The rows as they stood: an inbox row the stop cancels owes its holder `work_canceled`.
        let before: Vec<TaskRow> = g
            .tasks
            .iter()
            .filter(|t| crate::executor::push::inbox_holder(t).is_some())
            .cloned()
            .collect();
        if run.status == run_status::PENDING {
            self.cancel_live(&mut tx, &mut run, &mut g, true, now).await?;
            self.set_run_status(&mut tx, &mut run, run_status::CANCELED, None, now, &mut effects)
                .await?;
        } else {
            if run.status != run_status::CANCELING {
                self.set_run_status(&mut tx, &mut run, run_status::CANCELING, None, now, &mut effects)
                    .await?;
            }
            self.cancel_live(&mut tx, &mut run, &mut g, force, now).await?;
            self.check_run_end(&mut tx, &mut run, &g, now, &mut effects).await?;
        }
        effects.extend(
            self.work_canceled_effects(run.public_id, &before, |id| g.get(id))
                .await?,
        );
        tx.commit().await?;
        self.publish(effects).await;
        Ok(object([("run", self.run_json(ws.public_id, &run).await?)]))
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
            && let Some(receipt) = self.store.idempotency_get(&idem.scope_hash, time::now_ms()).await?
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
        .map_err(|e| invalid_steps(e.steps.into_iter().map(|s| (s.code.to_string(), s.path)).collect()))?;
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
                    approval_mode: &found.approval_mode,
                    approval_rules,
                    run_public_id: Some(found.public_id),
                    graph: Some(&g),
                },
            )
            .await?;

        let now = time::now_ms();
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
        if run.status == run_status::RUNNING {
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
        "hosting": parse(&Some(run.hosting.clone())),
        "status": run.status,
        "created_by": names.created_by,
        "answering_principal": names.answering,
        "declaring_agent": names.declaring_agent,
        "approval_mode": run.approval_mode,
        "approval_rules": parse(&run.approval_rules),
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
        run.status.as_str(),
        run_status::PENDING | run_status::RUNNING | run_status::NEEDS_ATTENTION
    ) {
        return Err(refuse(Code::RunNotAppendable, format!("the run is {}", run.status)));
    }
    let has_model = body
        .get("steps")
        .and_then(Value::as_array)
        .is_some_and(|s| s.iter().any(|st| st.get("model").is_some()));
    if has_model
        && g.tasks
            .iter()
            .any(|t| t.kind == task_kind::MODEL && t.mainline && is_open(&t.status))
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

/// Every ancestor key of `key`: through the envelope's dependencies, then the run's graph.
fn ancestors_of(key: &str, env: &HashMap<String, Vec<String>>, g: Option<&Graph>) -> HashSet<String> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut stack: Vec<String> = env.get(key).cloned().unwrap_or_default();
    while let Some(k) = stack.pop() {
        if !seen.insert(k.clone()) {
            continue;
        }
        if let Some(d) = env.get(&k) {
            stack.extend(d.iter().cloned());
        } else if let Some(g) = g
            && let Some(t) = g.by_key(&k)
        {
            for a in g.ancestors(t.id) {
                if let Some(row) = g.get(a) {
                    seen.insert(row.key.clone());
                }
            }
        }
    }
    seen
}
