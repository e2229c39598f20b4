//! `delegate_task` (`nexus.tasks.delegate`, kernel-tools.md §2): a branch model task
//! `<call>-model-1` (`branch_of` = the call key, `mainline: false`, `on_failure: absorb`,
//! hidden) that inherits the caller round's frozen context narrowed by `tools`
//! (declarations.md §9), with the brief as its prompt and `model` or the caller's own model.
//! The branch grows its own rounds through ordinary expansion.
//!
//! - `wait: true`: the call pairs with the branch root; because every waiter on a round is
//!   re-pointed to its continuation at expansion (runs.md §7), the caller's continuation reads
//!   the branch's FINAL round (its last assistant text, or its error sentence).
//! - `wait: false`: the call completes at once with the background sentence and the task
//!   reference. Background delivery (`lifetime: turn`; `conversation` is treated as `turn` on
//!   a standalone run): a hidden kernel-held await `<call>-delegation-1` observes the branch, so
//!   the run cannot complete while it is live, and a kernel-authored continuation
//!   `<call>-mail-1` reads the branch's result as an unpaired `<task_result>` envelope once
//!   both the delegation and the caller's chain have settled. (Gap: there is no mail queue yet;
//!   the mail continuation is a root round that replays the latest mainline round, and on a
//!   branch caller it carries no history.)

use nexus_core::declaration::{self, callable_of};
use nexus_store::{EdgeKind, NewTask, OnFailure, Origin, RunRow, TaskKind, TaskStatus, Tx, Visibility};
use serde_json::Value;

use super::tool_call::{PARAMETER_INVALID, declaring_round, place_child, started};
use super::{GraphCall, KernelToolOutcome};
use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::columns::{Frozen, WaitContext};
use crate::runs::unit::Unit;
use crate::runs::{AfterCommit, FrozenContext, RequestSurface};

/// Branches within branches (kernel-tools.md §2 check 8).
pub(crate) const MAX_DEPTH: usize = 8;
/// The delegation obligation's clock.
const DELEGATION_TIMEOUT_MS: i64 = 86_400_000;
/// The prompt of the kernel's mail continuation (the result follows as a `<task_result>`).
pub(crate) const MAIL_PROMPT: &str =
    "A background branch you started has finished. Its result follows; continue from it.";

const KEYS: [&str; 6] = ["prompt", "model", "lifetime", "wake", "wait", "tools"];
const IMPORTS: [&str; 3] = ["kernel_tools", "runner_executor_public_ids", "runner_tool_names"];

/// `delegate_task {prompt, model?, lifetime?, wake?, wait?, tools?}`.
pub(super) async fn run(
    kernel: &Kernel,
    tx: &mut Tx,
    run: &mut RunRow,
    call: &GraphCall<'_>,
    effects: &mut Vec<AfterCommit>,
) -> KernelResult<KernelToolOutcome> {
    let Some(input) = call.input.as_object() else {
        return Ok(KernelToolOutcome::error(
            PARAMETER_INVALID,
            "the input must be an object with `prompt`",
        ));
    };
    // 1. Import fields.
    if let Some(k) = IMPORTS.iter().find(|k| input.contains_key(**k)) {
        return Ok(KernelToolOutcome::error(
            "context_not_authorable",
            &format!(
                "`{k}` cannot be set for a branch: it inherits your tools and environment; narrow it with `tools` instead"
            ),
        ));
    }
    // 2. Unknown keys.
    if let Some(k) = input.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Ok(KernelToolOutcome::error(
            PARAMETER_INVALID,
            &format!("{k:?} is not a parameter of delegate_task; remove it"),
        ));
    }
    // 3. The brief.
    let Some(prompt) = input
        .get("prompt")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
    else {
        return Ok(KernelToolOutcome::error(
            "prompt_required",
            "`prompt` must be a non-blank string: the complete brief for the branch",
        ));
    };
    // 4. wait.
    let wait = match input.get("wait") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Ok(KernelToolOutcome::error(
                "invalid_wait",
                &format!("`wait` must be true or false, got {other}"),
            ));
        }
    };
    // 5. lifetime, wake.
    match input.get("lifetime") {
        None => {}
        Some(Value::String(s)) if s == "turn" || s == "conversation" => {}
        Some(other) => {
            return Ok(KernelToolOutcome::error(
                "invalid_lifetime",
                &format!("`lifetime` must be \"turn\" or \"conversation\", got {other}"),
            ));
        }
    }
    match input.get("wake") {
        None => {}
        Some(Value::String(s)) if s == "auto" || s == "passive" => {}
        Some(other) => {
            return Ok(KernelToolOutcome::error(
                "invalid_wake",
                &format!("`wake` must be \"auto\" or \"passive\", got {other}"),
            ));
        }
    }
    // 6. tools: a subset of the caller's callables.
    let defs = call.ctx.tool_definitions;
    let names: Option<Vec<String>> = match input.get("tools") {
        None => None,
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => {
            let names: Vec<String> = items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect();
            if let Some(missing) = names
                .iter()
                .find(|n| !defs.iter().any(|e| callable_of(e) == Some(n.as_str())))
            {
                return Ok(KernelToolOutcome::error(
                    "tool_not_declared",
                    &format!("{missing:?} is not one of your tools; list only names of tools you have"),
                ));
            }
            Some(names)
        }
        Some(other) => {
            return Ok(KernelToolOutcome::error(
                PARAMETER_INVALID,
                &format!("`tools` must be an array of your tool names, got {other}"),
            ));
        }
    };
    let Some(caller) = declaring_round(tx, call.call).await? else {
        return Ok(KernelToolOutcome::error(
            "tool_call_refused",
            "this call has no declaring model round to delegate from",
        ));
    };
    let caller_surface = RequestSurface::of(&caller);
    // 7. model.
    let model = match input.get("model") {
        None | Some(Value::Null) => caller_surface.model.clone(),
        Some(Value::String(m)) => {
            if kernel
                .providers
                .catalog()
                .resolve(m, &|var| std::env::var_os(var).is_some())
                .is_err()
            {
                return Ok(KernelToolOutcome::error(
                    "model_not_authorized",
                    &format!("{m:?} is not a model this account may run; omit `model` to use your own"),
                ));
            }
            m.clone()
        }
        Some(other) => {
            return Ok(KernelToolOutcome::error(
                "model_not_authorized",
                &format!("`model` must be a provider/model string, got {other}; omit it to use your own model"),
            ));
        }
    };
    // 8. depth.
    let mut depth = 1usize;
    let mut at = caller.branch_of.clone();
    while let Some(k) = at {
        depth += 1;
        if depth > MAX_DEPTH + 1 {
            break;
        }
        at = tx.task_by_key(run.id, &k).await?.and_then(|t| t.branch_of);
    }
    if depth > MAX_DEPTH {
        return Ok(KernelToolOutcome::error(
            "delegation_too_deep",
            &format!(
                "this branch would be {depth} levels deep and at most {MAX_DEPTH} are allowed; do the work here instead of delegating"
            ),
        ));
    }

    // Effect: the branch root.
    let parent = FrozenContext::of(&caller);
    let tool_definitions = match declaration::narrow(&parent.tool_definitions, names.as_deref()) {
        Ok(d) => d,
        Err(e) => {
            let name = e.detail.clone().unwrap_or_default();
            return Ok(KernelToolOutcome::error(
                "tool_not_declared",
                &format!("{name:?} is not one of your tools; list only names of tools you have"),
            ));
        }
    };
    let kept: Vec<&str> = tool_definitions.iter().filter_map(callable_of).collect();
    let skills: Vec<Value> = parent
        .skills
        .iter()
        .filter(|s| {
            s.get("callable")
                .and_then(Value::as_str)
                .is_none_or(|c| kept.contains(&c))
        })
        .cloned()
        .collect();
    let frozen = FrozenContext {
        prompt: prompt.to_string(),
        results: Vec::new(),
        attachments: Vec::new(),
        tool_definitions,
        environment: parent.environment.clone(),
        skills,
        memory: parent.memory.clone(),
        approval_mode: parent.approval_mode.clone(),
        approval_rules: parent.approval_rules.clone(),
        fan_on_failure: parent.fan_on_failure.clone(),
        history: None,
    };
    let surface = RequestSurface {
        reasoning_effort: if model == caller_surface.model {
            caller_surface.reasoning_effort.clone()
        } else {
            None
        },
        model,
        ..caller_surface.clone()
    };
    let branch = place_child(
        kernel,
        &mut Unit::of(tx, run, call.now, effects),
        call.call,
        "model",
        NewTask {
            kind: TaskKind::Model,
            origin: Origin::Kernel,
            on_failure: OnFailure::Absorb,
            visibility: Visibility::Hidden,
            mainline: false,
            branch_of: Some(call.call.key.clone()),
            frozen_context: Some(Frozen::Model(Box::new(frozen)).to_text()),
            request_surface: Some(serde_json::to_string(&surface).expect("surface serializes")),
            ..Default::default()
        },
        wait,
    )
    .await?;
    if wait {
        return Ok(started(&branch.key));
    }

    // Background delivery: the obligation, then the mail continuation.
    let obligation = place_child(
        kernel,
        &mut Unit::of(tx, run, call.now, effects),
        call.call,
        "delegation",
        NewTask {
            kind: TaskKind::Await,
            origin: Origin::Kernel,
            on_failure: OnFailure::Absorb,
            visibility: Visibility::Hidden,
            mainline: call.call.mainline,
            branch_of: call.call.branch_of.clone(),
            timeout_ms: Some(DELEGATION_TIMEOUT_MS),
            frozen_context: Some(
                Frozen::Wait(WaitContext {
                    task: branch.key.clone(),
                    run_public_id: None,
                    timeout_ms: DELEGATION_TIMEOUT_MS,
                    delegation: true,
                })
                .to_text(),
            ),
            ..Default::default()
        },
        false,
    )
    .await?;
    // A conversation-hosted run hears the result as kernel mail of its conversation, queued
    // when the obligation completes (conversations/replies.rs); no continuation reads it here.
    if crate::conversations::hosting::Hosting::of(&run.hosting).is_some() {
        return Ok(KernelToolOutcome::text(background_sentence(run, &branch.key)));
    }
    let mail_frozen = FrozenContext {
        prompt: MAIL_PROMPT.to_string(),
        results: vec![branch.key.clone()],
        attachments: Vec::new(),
        ..parent.clone()
    };
    // The caller's chain: every row already waiting on the call (its continuation).
    let waiters: Vec<i64> = tx
        .edges_of_run(run.id)
        .await?
        .iter()
        .filter(|e| e.depends_on_id == call.call.id && e.task_id != branch.id && e.task_id != obligation.id)
        .map(|e| e.task_id)
        .collect();
    let mail = place_child(
        kernel,
        &mut Unit::of(tx, run, call.now, effects),
        call.call,
        "mail",
        NewTask {
            kind: TaskKind::Model,
            origin: Origin::Kernel,
            on_failure: caller.on_failure,
            visibility: caller.visibility,
            mainline: caller.mainline,
            branch_of: caller.branch_of.clone(),
            frozen_context: Some(Frozen::Model(Box::new(mail_frozen)).to_text()),
            request_surface: caller.request_surface.clone(),
            ..Default::default()
        },
        false,
    )
    .await?;
    if mail.status == TaskStatus::Waiting {
        tx.put_edge(mail.id, obligation.id, EdgeKind::After).await?;
        for w in &waiters {
            tx.put_edge(mail.id, *w, EdgeKind::After).await?;
        }
        if caller.mainline && run.deliverable_task_id.is_some_and(|d| waiters.contains(&d)) {
            run.deliverable_task_id = Some(mail.id);
            tx.update_run(run).await?;
        }
    }
    Ok(KernelToolOutcome::text(background_sentence(run, &branch.key)))
}

/// The call's result when the branch runs in the background.
fn background_sentence(run: &RunRow, branch: &str) -> String {
    format!(
        "The branch started in the background; its final message will be delivered to you when it is ready. Call wait with this reference to block on it.\nTask reference: run_public_id=\"{}\", task=\"{branch}\"",
        run.public_id
    )
}
