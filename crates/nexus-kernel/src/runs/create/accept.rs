//! Step acceptance (runs.md §4 kernel checks, declarations.md §7–§8): each step of a create or
//! append envelope becomes a task to insert, or a fault (`{code, path}`) — one function per
//! verb. Every fault of the envelope is reported together (`invalid_steps`).

use std::collections::{HashMap, HashSet};

use base64::Engine as _;
use nexus_core::codes::Code;
use nexus_core::declaration::{self, AssemblyInput, AssemblyPaths, DeclErrorKind};
use nexus_core::results::ToolWord;
use nexus_core::steps::{Step, StepVerb, ToolRoute};
use nexus_store::prelude::*;
use nexus_store::{
    EdgeKind, ExecutorKind, ExecutorRow, MemberKind, MemberRow, NewTask, Origin, TaskKind, TaskStatus, WorkspaceRow,
};
use serde_json::{Value, json};
use uuid::Uuid;

use super::idempotency::sha_hex;
use crate::Kernel;
use crate::error::{KernelError, KernelResult};
use crate::runs::columns::{AskContext, Frozen, WaitContext};
use crate::runs::rows::Graph;
use crate::runs::{FrozenContext, RequestSurface};

/// `wait` timeouts: default and per-park clamp.
const WAIT_DEFAULT_MS: u64 = 3_600_000;
const WAIT_MAX_MS: u64 = 86_400_000;

/// One accepted step, ready to insert.
pub(super) struct Accepted {
    pub(super) step: Step,
    pub(super) task: NewTask,
    /// `(key, kind)` of extra dependencies (`after`, `reads`).
    pub(super) extra_deps: Vec<(String, EdgeKind)>,
    pub(super) resolution_token: Option<String>,
}

/// What acceptance needs to know of the run.
pub(super) struct AcceptCtx<'a> {
    /// Path prefix of the steps (`run.` at create, `` at append).
    pub(super) prefix: &'a str,
    pub(super) answering: &'a MemberRow,
    pub(super) declaring_agent: Option<&'a MemberRow>,
    pub(super) default_runner: Option<&'a ExecutorRow>,
    pub(super) workspace: &'a WorkspaceRow,
    pub(super) approval_mode: &'a str,
    pub(super) approval_rules: Value,
    /// The run's public id (append), for `wait.run_public_id`.
    pub(super) run_public_id: Option<Uuid>,
    /// Existing rows (append).
    pub(super) graph: Option<&'a Graph>,
}

/// What every step of the envelope shares: the declaring agent's profile, the controlling
/// human, and the envelope's dependency map (key → dependency keys, for `wait_cycle`).
struct Envelope {
    profile: Value,
    user_public_id: Uuid,
    deps: HashMap<String, Vec<String>>,
}

/// One step being accepted: its path prefix (`run.steps[0]`), the task it becomes, its extra
/// dependencies and, for a tokened ask, the resolution token to hand back once.
struct Draft {
    path: String,
    task: NewTask,
    extra_deps: Vec<(String, EdgeKind)>,
    resolution_token: Option<String>,
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

/// `run.steps[0].model` → `/run/steps/0/model` (the inverse of [`dotted`]).
fn pointer_of(dotted: &str) -> String {
    format!("/{}", dotted.replace(['.', '['], "/").replace(']', ""))
}

/// One refused step member: the spec word, the dotted path, and, when the word alone does not
/// say what was wrong or what would work, a sentence that does (the message, not the `steps`).
pub(super) struct Fault {
    code: String,
    path: String,
    detail: Option<String>,
}

impl Fault {
    pub(super) fn new(code: impl Into<String>, path: impl Into<String>) -> Fault {
        Fault {
            code: code.into(),
            path: path.into(),
            detail: None,
        }
    }

    fn detail(mut self, detail: impl Into<String>) -> Fault {
        self.detail = Some(detail.into());
        self
    }
}

pub(super) fn invalid_steps(faults: Vec<Fault>) -> KernelError {
    let steps: Vec<Value> = faults.iter().map(|f| json!({"code": f.code, "path": f.path})).collect();
    let first = faults
        .first()
        .map(|f| match &f.detail {
            Some(detail) => format!("{} at {}: {detail}", f.code, f.path),
            None => format!("{} at {}", f.code, f.path),
        })
        .unwrap_or_default();
    KernelError::new(Code::InvalidSteps, format!("the steps were refused: {first}"))
        .with_extra("steps", Value::Array(steps))
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
    pub(super) async fn eligible_runner(&self, id: Uuid, p: &MemberRow) -> KernelResult<Option<ExecutorRow>> {
        let Some(runner) = self.store.executor_by_public_id(id).await? else {
            return Ok(None);
        };
        if runner.kind != ExecutorKind::Runner || !self.runner_eligible_for(&runner, p).await? {
            return Ok(None);
        }
        Ok(Some(runner))
    }

    /// Step acceptance (runs.md §4 kernel checks, declarations.md §7–§8).
    pub(super) async fn accept(&self, parsed: Vec<Step>, ctx: &AcceptCtx<'_>) -> KernelResult<Vec<Accepted>> {
        let mut faults: Vec<Fault> = Vec::new();
        let mut out = Vec::with_capacity(parsed.len());
        let profile: Value = ctx
            .declaring_agent
            .map(|a| crate::profile::configuration_read(a.configuration.as_deref()))
            .unwrap_or(Value::Null);
        let user_public_id = self.controlling_human(ctx.answering).await?;
        // Envelope dependency map for wait_cycle: key → dependency keys.
        let mut deps: HashMap<String, Vec<String>> = HashMap::new();
        let mut prev_key: Option<String> = None;
        for step in &parsed {
            let mut d: Vec<String> = step.after.clone();
            if let Some(p) = &prev_key {
                d.push(p.clone());
            }
            if let StepVerb::Model { results, .. } = &step.verb {
                d.extend(results.iter().cloned());
            }
            deps.insert(step.key.clone(), d);
            prev_key = Some(step.key.clone());
        }
        let env = Envelope {
            profile,
            user_public_id,
            deps,
        };
        for step in parsed {
            let i = step.index;
            let mut d = Draft {
                path: format!("{}steps[{i}]", ctx.prefix),
                task: NewTask {
                    key: step.key.clone(),
                    status: TaskStatus::Waiting,
                    generation: 1,
                    origin: Origin::Author,
                    on_failure: step.on_failure.into(),
                    visibility: step.visibility.into(),
                    ..Default::default()
                },
                extra_deps: step.after.iter().map(|k| (k.clone(), EdgeKind::After)).collect(),
                resolution_token: None,
            };
            match &step.verb {
                StepVerb::Model { .. } => self.accept_model(ctx, &env, &step, &mut d, &mut faults).await?,
                StepVerb::Tool { .. } => self.accept_tool(ctx, &step, &mut d, &mut faults).await?,
                StepVerb::Ask { .. } => accept_ask(&step, &mut d),
                StepVerb::Wait { .. } => accept_wait(ctx, &env, &step, &mut d, &mut faults),
            }
            out.push(Accepted {
                step,
                task: d.task,
                extra_deps: d.extra_deps,
                resolution_token: d.resolution_token,
            });
        }
        if faults.is_empty() {
            Ok(out)
        } else {
            Err(invalid_steps(faults))
        }
    }

    /// A model step's `provider/model` (given, or the declaring agent's default): present and
    /// resolvable, else a fault at `{path}.model`.
    fn check_model_ref(&self, model_ref: Option<&str>, path: &str, faults: &mut Vec<Fault>) {
        let Some(r) = model_ref else {
            faults.push(Fault::new("model_required", format!("{path}.model")));
            return;
        };
        let catalog = self.providers.catalog();
        if let Err(e) = catalog.resolve(r, &|var| std::env::var_os(var).is_some()) {
            faults.push(Fault::new(e.as_str(), format!("{path}.model")).detail(catalog.explain(r, e)));
        }
    }

    /// A model step: the model resolves, the declaration assembles, the context freezes.
    async fn accept_model(
        &self,
        ctx: &AcceptCtx<'_>,
        env: &Envelope,
        step: &Step,
        d: &mut Draft,
        faults: &mut Vec<Fault>,
    ) -> KernelResult<()> {
        let StepVerb::Model {
            model,
            tools,
            kernel_tools,
            runner_executor_public_ids,
            runner_tool_names,
            attachments,
            results,
            ..
        } = &step.verb
        else {
            return Ok(());
        };
        let path = &d.path;
        let model_ref = model.as_ref().map(|m| m.model.clone()).or_else(|| {
            env.profile
                .get("default_model")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
        self.check_model_ref(model_ref.as_deref(), path, faults);
        if !attachments.is_empty() {
            faults.push(Fault::new("invalid_attachments", format!("{path}.model.attachments")));
        }
        let base = pointer_of(&format!("{path}.model"));
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
                faults.push(Fault::new(e.reason, dotted(&e.path)).detail(e.message));
                None
            }
        };
        for k in results {
            d.extra_deps.push((k.clone(), EdgeKind::Reads));
        }
        if let (Some(a), Some(model_ref)) = (assembly, model_ref) {
            freeze_model(ctx, env, step, a, model_ref, d);
        }
        d.task.kind = TaskKind::Model;
        d.task.mainline = true;
        Ok(())
    }

    /// A tool step's `model_defaults`: the model resolves and the declaration assembles; the
    /// assembly, with the model, freezes as the row's context.
    async fn accept_tool_defaults(
        &self,
        ctx: &AcceptCtx<'_>,
        defaults: &Value,
        d: &mut Draft,
        faults: &mut Vec<Fault>,
    ) -> KernelResult<()> {
        let path = &d.path;
        let base = pointer_of(&format!("{path}.tool.model_defaults"));
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
        let catalog = self.providers.catalog();
        if let Some(m) = defaults.get("model").and_then(Value::as_str)
            && let Err(e) = catalog.resolve(m, &|v| std::env::var_os(v).is_some())
        {
            let fault = Fault::new(e.as_str(), format!("{path}.tool.model_defaults.model"));
            faults.push(fault.detail(catalog.explain(m, e)));
        }
        match declaration::assemble_owned(input) {
            Ok(a) => {
                let mut ctx_json = a.to_response_json();
                ctx_json["model"] = defaults.get("model").cloned().unwrap_or(Value::Null);
                d.task.frozen_context = Some(Frozen::ToolDefaults(ctx_json).to_text());
            }
            Err(e) => faults.push(Fault::new(e.reason, dotted(&e.path)).detail(e.message)),
        }
        Ok(())
    }

    /// A tool step: its route's runner is eligible and serves the tool; its model defaults
    /// assemble.
    async fn accept_tool(
        &self,
        ctx: &AcceptCtx<'_>,
        step: &Step,
        d: &mut Draft,
        faults: &mut Vec<Fault>,
    ) -> KernelResult<()> {
        let StepVerb::Tool {
            name,
            input,
            route,
            timeout_ms,
            model_defaults,
        } = &step.verb
        else {
            return Ok(());
        };
        let path = &d.path;
        d.task.kind = TaskKind::Tool;
        d.task.tool_name = Some(name.clone());
        d.task.tool_input = Some(serde_json::to_string(input).expect("input serializes"));
        d.task.timeout_ms = timeout_ms.map(|t| t as i64);
        let target = match route {
            None => None,
            Some(ToolRoute::RunDefault) => match ctx.default_runner {
                Some(r) => Some(r.public_id),
                None => {
                    faults.push(Fault::new("runner_target_required", format!("{path}.tool.route")));
                    None
                }
            },
            Some(ToolRoute::Runner(id)) => Some(*id),
        };
        if let Some(id) = target {
            match self.eligible_runner(id, ctx.answering).await? {
                None => faults.push(Fault::new(
                    Code::RunnerNotEligible.as_str(),
                    format!("{path}.tool.route"),
                )),
                Some(runner) if serves_tool(&runner, name) => d.task.target_executor_id = Some(runner.id),
                Some(_) => faults.push(Fault::new("tool_not_served", format!("{path}.tool.name"))),
            }
        }
        if let Some(defaults) = model_defaults {
            self.accept_tool_defaults(ctx, defaults, d, faults).await?;
        }
        Ok(())
    }
}

/// Whether the runner's announced tools name `name`.
fn serves_tool(runner: &ExecutorRow, name: &str) -> bool {
    let served: Value = serde_json::from_str(&runner.served_tools).unwrap_or(Value::Array(vec![]));
    served
        .as_array()
        .is_some_and(|a| a.iter().any(|t| t.get("name").and_then(Value::as_str) == Some(name)))
}

/// An accepted model step's frozen context and request surface, written into its draft row.
fn freeze_model(
    ctx: &AcceptCtx<'_>,
    env: &Envelope,
    step: &Step,
    a: declaration::Assembly,
    model_ref: String,
    d: &mut Draft,
) {
    let StepVerb::Model {
        prompt,
        model,
        instructions,
        attachments,
        results,
        fan_on_failure,
        ..
    } = &step.verb
    else {
        return;
    };
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
            "user_public_id": env.user_public_id,
        }),
        approval_mode: ctx.approval_mode.to_string(),
        approval_rules: ctx.approval_rules.clone(),
        fan_on_failure: fan_on_failure.as_str().to_string(),
        history: None,
    };
    let surface = RequestSurface {
        model: model_ref,
        reasoning_effort: model.as_ref().and_then(|m| m.reasoning_effort.clone()),
        max_output_tokens: model.as_ref().and_then(|m| m.max_output_tokens),
        instructions: instructions.clone().or_else(|| {
            env.profile
                .get("instructions")
                .and_then(Value::as_str)
                .map(str::to_string)
        }),
    };
    d.task.frozen_context = Some(Frozen::Model(Box::new(frozen)).to_text());
    d.task.request_surface = Some(serde_json::to_string(&surface).expect("surface serializes"));
}

/// An ask step: the question freezes and a resolution token is minted (only its hash is kept).
fn accept_ask(step: &Step, d: &mut Draft) {
    let StepVerb::Ask {
        prompt,
        options,
        multi,
        timeout_ms,
    } = &step.verb
    else {
        return;
    };
    let _path = &d.path;
    d.task.kind = TaskKind::Await;
    d.task.timeout_ms = timeout_ms.map(|t| t as i64);
    d.task.frozen_context = Some(
        Frozen::Ask(AskContext {
            prompt: prompt.clone(),
            options: options.clone(),
            multi: *multi,
        })
        .to_text(),
    );
    let token_bytes: [u8; 32] = rand::random();
    let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token_bytes);
    d.task.resolution_token_sha256 = Some(sha_hex(token.as_bytes()));
    d.resolution_token = Some(token);
}

/// A wait step: its target exists in this run and is no ancestor of it.
fn accept_wait(ctx: &AcceptCtx<'_>, env: &Envelope, step: &Step, d: &mut Draft, faults: &mut Vec<Fault>) {
    let StepVerb::Wait {
        task: target,
        run_public_id,
        timeout_ms,
    } = &step.verb
    else {
        return;
    };
    let path = &d.path;
    d.task.kind = TaskKind::Await;
    let timeout = timeout_ms.unwrap_or(WAIT_DEFAULT_MS).min(WAIT_MAX_MS);
    d.task.timeout_ms = Some(timeout as i64);
    let other_run = run_public_id
        .as_deref()
        .is_some_and(|r| Uuid::parse_str(r).ok() != ctx.run_public_id || ctx.run_public_id.is_none());
    let exists = env.deps.contains_key(target) || ctx.graph.is_some_and(|g| g.by_key(target).is_some());
    if other_run || !exists {
        faults.push(Fault::new(
            ToolWord::WaitTargetNotFound.as_str(),
            format!("{path}.wait.task"),
        ));
    } else if *target == step.key || ancestors_of(&step.key, &env.deps, ctx.graph).contains(target) {
        faults.push(Fault::new(ToolWord::WaitCycle.as_str(), format!("{path}.wait.task")));
    }
    d.task.frozen_context = Some(
        Frozen::Wait(WaitContext {
            task: target.clone(),
            run_public_id: run_public_id.clone(),
            timeout_ms: timeout as i64,
            delegation: false,
        })
        .to_text(),
    );
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
