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
use nexus_core::results::ToolWord;
use nexus_store::{EdgeKind, NewTask, OnFailure, Origin, RunRow, TaskKind, TaskRow, TaskStatus, Visibility};
use serde_json::Value;

use super::params::{self, Nulls, Params};
use super::tool_call::{declaring_round, place_child, started};
use super::{GraphCall, KernelToolOutcome};
use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::columns::{Frozen, WaitContext};
use crate::runs::unit::Unit;
use crate::runs::{FrozenContext, RequestSurface};

/// Branches within branches (kernel-tools.md §2 check 8).
pub(crate) const MAX_DEPTH: usize = 8;
/// The delegation obligation's clock.
const DELEGATION_TIMEOUT_MS: i64 = 86_400_000;
/// The prompt of the kernel's mail continuation (the result follows as a `<task_result>`).
pub(crate) const MAIL_PROMPT: &str =
    "A background branch you started has finished. Its result follows; continue from it.";

const KEYS: [&str; 6] = ["prompt", "model", "lifetime", "wake", "wait", "tools"];
const IMPORTS: [&str; 3] = ["kernel_tools", "runner_executor_public_ids", "runner_tool_names"];

/// `delegate_task {prompt, model?, lifetime?, wake?, wait?, tools?}`, checked in the order of
/// kernel-tools.md §2 (first failure wins) up to the checks that need the store.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DelegateInput {
    prompt: String,
    /// `None`: the caller's own model (absent or `null`).
    model: Option<String>,
    wait: bool,
    /// Callables of the caller's frozen declaration; `None`: all of them.
    tools: Option<Vec<String>>,
}

impl DelegateInput {
    /// Checks 1–6, and the shape of `model` (check 7 resolves it); `declared` is the caller's
    /// frozen declaration.
    fn parse(input: &Value, declared: &[Value]) -> Result<Self, KernelToolOutcome> {
        let p = Params::object_or("delegate_task", input, "the input must be an object with `prompt`")?;
        if let Some(k) = IMPORTS.iter().find(|k| p.has(k)) {
            return Err(KernelToolOutcome::error(
                ToolWord::ContextNotAuthorable,
                &format!(
                    "`{k}` cannot be set for a branch: it inherits your tools and environment; narrow it with `tools` instead"
                ),
            ));
        }
        if let Some(k) = p.unknown_key(&KEYS) {
            return Err(params::invalid(&format!(
                "{k:?} is not a parameter of delegate_task; remove it"
            )));
        }
        let Ok(Some(prompt)) = p.typed("prompt", Nulls::Refused, params::non_blank) else {
            return Err(KernelToolOutcome::error(
                ToolWord::PromptRequired,
                "`prompt` must be a non-blank string: the complete brief for the branch",
            ));
        };
        let wait = p.typed("wait", Nulls::Refused, Value::as_bool).map_err(|other| {
            KernelToolOutcome::error(
                ToolWord::InvalidWait,
                &format!("`wait` must be true or false, got {other}"),
            )
        })?;
        p.typed("lifetime", Nulls::Refused, params::word_in(&["turn", "conversation"]))
            .map_err(|other| {
                KernelToolOutcome::error(
                    ToolWord::InvalidLifetime,
                    &format!("`lifetime` must be \"turn\" or \"conversation\", got {other}"),
                )
            })?;
        p.typed("wake", Nulls::Refused, params::word_in(&["auto", "passive"]))
            .map_err(|other| {
                KernelToolOutcome::error(
                    ToolWord::InvalidWake,
                    &format!("`wake` must be \"auto\" or \"passive\", got {other}"),
                )
            })?;
        let tools = p
            .typed("tools", Nulls::Refused, params::strings)
            .map_err(|other| params::invalid(&format!("`tools` must be an array of your tool names, got {other}")))?;
        if let Some(missing) = tools
            .iter()
            .flatten()
            .find(|n| !declared.iter().any(|e| callable_of(e) == Some(n.as_str())))
        {
            return Err(not_declared(missing));
        }
        let model = p.typed("model", Nulls::Absent, Value::as_str).map_err(|other| {
            KernelToolOutcome::error(
                ToolWord::ModelNotAuthorized,
                &format!("`model` must be a provider/model string, got {other}; omit it to use your own model"),
            )
        })?;
        Ok(Self {
            prompt: prompt.to_string(),
            model: model.map(str::to_string),
            wait: wait.unwrap_or(false),
            tools,
        })
    }
}

/// `tool_not_declared` naming the first name the caller does not have.
fn not_declared(name: &str) -> KernelToolOutcome {
    KernelToolOutcome::error(
        ToolWord::ToolNotDeclared,
        &format!("{name:?} is not one of your tools; list only names of tools you have"),
    )
}

/// `delegate_task`: parse, check what needs the store (the declaring round, the model, the
/// depth), then place the branch and, in the background, its delivery.
pub(super) async fn run(kernel: &Kernel, u: &mut Unit<'_>, call: &GraphCall<'_>) -> KernelResult<KernelToolOutcome> {
    let input = match DelegateInput::parse(call.input, call.ctx.tool_definitions) {
        Ok(input) => input,
        Err(refusal) => return Ok(refusal),
    };
    let Some(caller) = declaring_round(u.tx, call.call).await? else {
        return Ok(KernelToolOutcome::error(
            ToolWord::ToolCallRefused,
            "this call has no declaring model round to delegate from",
        ));
    };
    let caller_surface = RequestSurface::of(&caller);
    let model = match input.model.clone() {
        None => caller_surface.model.clone(),
        Some(m)
            if kernel
                .providers
                .catalog()
                .resolve(&m, &|var| std::env::var_os(var).is_some())
                .is_err() =>
        {
            return Ok(KernelToolOutcome::error(
                ToolWord::ModelNotAuthorized,
                &format!("{m:?} is not a model this account may run; omit `model` to use your own"),
            ));
        }
        Some(m) => m,
    };
    if let Some(refusal) = refuse_depth(u, &caller).await? {
        return Ok(refusal);
    }
    let parent = FrozenContext::of(&caller);
    let frozen = match branch_context(&parent, &input) {
        Ok(frozen) => frozen,
        Err(refusal) => return Ok(refusal),
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
        u,
        call.call,
        "model",
        branch_row(call.call, &frozen, &surface),
        input.wait,
    )
    .await?;
    if input.wait {
        return Ok(started(&branch.key));
    }
    let delegation = Delegation {
        call,
        caller: &caller,
        parent: &parent,
        branch: &branch,
    };
    deliver_in_background(kernel, u, &delegation).await?;
    Ok(KernelToolOutcome::text(background_sentence(u.run, &branch.key)))
}

/// `delegation_too_deep` when the branch would be more than [`MAX_DEPTH`] levels deep.
async fn refuse_depth(u: &mut Unit<'_>, caller: &TaskRow) -> KernelResult<Option<KernelToolOutcome>> {
    let mut depth = 1usize;
    let mut at = caller.branch_of.clone();
    while let Some(k) = at {
        depth += 1;
        if depth > MAX_DEPTH + 1 {
            break;
        }
        at = u.tx.task_by_key(u.run.id, &k).await?.and_then(|t| t.branch_of);
    }
    Ok((depth > MAX_DEPTH).then(|| {
        KernelToolOutcome::error(
            ToolWord::DelegationTooDeep,
            &format!(
                "this branch would be {depth} levels deep and at most {MAX_DEPTH} are allowed; do the work here instead of delegating"
            ),
        )
    }))
}

/// The branch's frozen context: the caller's, narrowed by `tools` (declarations.md §9), with
/// the brief as its prompt and the skills of the callables kept.
fn branch_context(parent: &FrozenContext, input: &DelegateInput) -> Result<FrozenContext, KernelToolOutcome> {
    let tool_definitions = declaration::narrow(&parent.tool_definitions, input.tools.as_deref())
        .map_err(|e| not_declared(&e.detail.clone().unwrap_or_default()))?;
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
    Ok(FrozenContext {
        prompt: input.prompt.clone(),
        results: Vec::new(),
        attachments: Vec::new(),
        tool_definitions,
        skills,
        history: None,
        ..parent.clone()
    })
}

/// The branch root `<call>-model-1`.
fn branch_row(call: &TaskRow, frozen: &FrozenContext, surface: &RequestSurface) -> NewTask {
    NewTask {
        kind: TaskKind::Model,
        origin: Origin::Kernel,
        on_failure: OnFailure::Absorb,
        visibility: Visibility::Hidden,
        mainline: false,
        branch_of: Some(call.key.clone()),
        frozen_context: Some(Frozen::Model(Box::new(frozen.clone())).to_text()),
        request_surface: Some(serde_json::to_string(surface).expect("surface serializes")),
        ..Default::default()
    }
}

/// A background delegation's parts: the call, its declaring round, that round's frozen
/// context and the branch placed.
struct Delegation<'d> {
    call: &'d GraphCall<'d>,
    caller: &'d TaskRow,
    parent: &'d FrozenContext,
    branch: &'d TaskRow,
}

/// Background delivery: the obligation `<call>-delegation-1`, then (on a standalone run) the
/// mail continuation `<call>-mail-1` after it and the caller's chain.
async fn deliver_in_background(kernel: &Kernel, u: &mut Unit<'_>, d: &Delegation<'_>) -> KernelResult<()> {
    let obligation = place_child(kernel, u, d.call.call, "delegation", obligation_row(d), false).await?;
    // A conversation-hosted run hears the result as kernel mail of its conversation, queued
    // when the obligation completes (conversations/replies.rs); no continuation reads it here.
    if crate::conversations::hosting::Hosting::of(&u.run.hosting).is_some() {
        return Ok(());
    }
    // The caller's chain: every row already waiting on the call (its continuation).
    let waiters: Vec<i64> =
        u.tx.edges_of_run(u.run.id)
            .await?
            .iter()
            .filter(|e| e.depends_on_id == d.call.call.id && e.task_id != d.branch.id && e.task_id != obligation.id)
            .map(|e| e.task_id)
            .collect();
    let mail = place_child(kernel, u, d.call.call, "mail", mail_row(d), false).await?;
    if mail.status == TaskStatus::Waiting {
        let Unit { tx, run, .. } = u;
        tx.put_edge(mail.id, obligation.id, EdgeKind::After).await?;
        for w in &waiters {
            tx.put_edge(mail.id, *w, EdgeKind::After).await?;
        }
        if d.caller.mainline && run.deliverable_task_id.is_some_and(|t| waiters.contains(&t)) {
            run.deliverable_task_id = Some(mail.id);
            tx.update_run(run).await?;
        }
    }
    Ok(())
}

/// The hidden kernel-held await that observes the branch.
fn obligation_row(d: &Delegation<'_>) -> NewTask {
    NewTask {
        kind: TaskKind::Await,
        origin: Origin::Kernel,
        on_failure: OnFailure::Absorb,
        visibility: Visibility::Hidden,
        mainline: d.call.call.mainline,
        branch_of: d.call.call.branch_of.clone(),
        timeout_ms: Some(DELEGATION_TIMEOUT_MS),
        frozen_context: Some(
            Frozen::Wait(WaitContext {
                task: d.branch.key.clone(),
                run_public_id: None,
                timeout_ms: DELEGATION_TIMEOUT_MS,
                delegation: true,
            })
            .to_text(),
        ),
        ..Default::default()
    }
}

/// The kernel-authored continuation that reads the branch's result, in the caller's place.
fn mail_row(d: &Delegation<'_>) -> NewTask {
    let mail_frozen = FrozenContext {
        prompt: MAIL_PROMPT.to_string(),
        results: vec![d.branch.key.clone()],
        attachments: Vec::new(),
        ..d.parent.clone()
    };
    NewTask {
        kind: TaskKind::Model,
        origin: Origin::Kernel,
        on_failure: d.caller.on_failure,
        visibility: d.caller.visibility,
        mainline: d.caller.mainline,
        branch_of: d.caller.branch_of.clone(),
        frozen_context: Some(Frozen::Model(Box::new(mail_frozen)).to_text()),
        request_surface: d.caller.request_surface.clone(),
        ..Default::default()
    }
}

/// The call's result when the branch runs in the background.
fn background_sentence(run: &RunRow, branch: &str) -> String {
    format!(
        "The branch started in the background; its final message will be delivered to you when it is ready. Call wait with this reference to block on it.\nTask reference: run_public_id=\"{}\", task=\"{branch}\"",
        run.public_id
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn declared() -> Vec<Value> {
        vec![json!({"type":"function","function":{"name":"read_file","parameters":{"type":"object"}}})]
    }

    fn said(input: Value) -> String {
        let out = DelegateInput::parse(&input, &declared()).unwrap_err();
        out.content.as_str().unwrap().to_string()
    }

    #[test]
    fn parse_checks_in_the_spec_order() {
        let ok = DelegateInput::parse(
            &json!({"prompt": "go", "tools": ["read_file"], "model": null}),
            &declared(),
        )
        .unwrap();
        assert_eq!(
            (ok.model, ok.wait, ok.tools),
            (None, false, Some(vec!["read_file".to_string()]))
        );
        // An import field wins over an unknown key and a missing prompt.
        assert!(said(json!({"kernel_tools": [], "zz": 1})).starts_with("context_not_authorable: `kernel_tools`"));
        assert!(said(json!({"prompt": "go", "zz": 1})).starts_with("parameter_invalid: \"zz\" is not a parameter"));
        assert!(said(json!({"prompt": " "})).starts_with("prompt_required: "));
        // `null` is not absent for `wait`, `lifetime`, `wake` and `tools`.
        assert_eq!(
            said(json!({"prompt": "go", "wait": null})),
            "invalid_wait: `wait` must be true or false, got null"
        );
        assert!(said(json!({"prompt": "go", "lifetime": "forever"})).starts_with("invalid_lifetime: "));
        assert!(said(json!({"prompt": "go", "wake": null})).starts_with("invalid_wake: "));
        assert!(said(json!({"prompt": "go", "tools": [1]})).starts_with("parameter_invalid: `tools` must be an array"));
        assert_eq!(
            said(json!({"prompt": "go", "tools": ["read_file", "deploy"]})),
            "tool_not_declared: \"deploy\" is not one of your tools; list only names of tools you have"
        );
        assert!(said(json!({"prompt": "go", "model": 5})).starts_with("model_not_authorized: `model` must be"));
        assert!(said(json!("go")).starts_with("parameter_invalid: the input must be an object"));
    }
}
