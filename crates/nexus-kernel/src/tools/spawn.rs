//! `spawn` (`nexus.conversation.spawn`, kernel-tools.md §4): a child conversation of the
//! caller's, with the brief as its first input. Three idempotent steps keyed by the call: the
//! child (found again by its spawning call), the brief, then either the paired reply await
//! `<call>-spawn-1` (`wait: true`) or the background sentence (`wait: false`; `lifetime: turn`
//! also places the hidden obligation `<call>-delegation-1`, so the run cannot end first).
//! The child's first reply reaches the await or the parent's mail (`conversations/replies.rs`).

use nexus_core::bounds;
use nexus_core::results::ToolWord;
use nexus_store::prelude::*;
use nexus_store::{
    ConversationRow, DeliveryMode, ExecutorRow, InputKind, InputState, MemberKind, MemberRow, NewConversation,
    NewInput, NewTask, OnFailure, Origin, RunRow, TaskKind, Visibility,
};
use serde_json::{Value, json};
use uuid::Uuid;

use super::params::{self, Nulls, Params};
use super::tool_call::{declaring_round, place_child, started};
use super::{GraphCall, KernelToolOutcome};
use crate::Kernel;
use crate::conversations::hosting::ReplyRoute;
use crate::error::KernelResult;
use crate::runs::columns::{Frozen, WaitContext};
use crate::runs::unit::Unit;
use crate::runs::{AfterCommit, RequestSurface};
use crate::time;

const PARAMS: &[&str] = &[
    "prompt",
    "agent",
    "label",
    "lifetime",
    "wake",
    "wait",
    "default_runner_executor_public_id",
    "model",
];
/// The reply await's clock.
const SPAWN_WAIT_MS: i64 = 3_600_000;
/// The background obligation's clock (as delegate_task's).
const OBLIGATION_MS: i64 = 86_400_000;

/// The child's default runner as the call names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunnerChoice {
    /// Omitted: the spawning execution's frozen default.
    Inherit,
    /// `null`: no runner.
    Clear,
    Id(Uuid),
}

/// `spawn {prompt, agent?, label?, lifetime?, wake?, wait?, default_runner_executor_public_id?,
/// model?}`: the parameter checks of kernel-tools.md §0; the tool's own words (§4) need the
/// store and come after.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SpawnInput {
    prompt: String,
    agent: Option<String>,
    label: Option<String>,
    /// `turn | conversation` (default `conversation`).
    lifetime: &'static str,
    /// `auto | passive` (default `auto`).
    wake: &'static str,
    wait: bool,
    runner: RunnerChoice,
    model: Option<String>,
}

impl SpawnInput {
    fn parse(input: &Value) -> Result<Self, KernelToolOutcome> {
        let p = Params::object("spawn", input)?;
        p.only(PARAMS)?;
        let prompt = p.required_text("prompt")?.to_string();
        let wait = p.optional("wait", "a boolean", Value::as_bool)?;
        let label = p.optional("label", "a string", Value::as_str)?;
        let agent = p.optional("agent", "a string", Value::as_str)?;
        let model = p.optional("model", "a string", Value::as_str)?;
        let lifetime = word(&p, "lifetime", &["turn", "conversation"])?.unwrap_or("conversation");
        let wake = word(&p, "wake", &["auto", "passive"])?.unwrap_or("auto");
        Ok(Self {
            prompt,
            agent: agent.map(str::to_string),
            label: label.map(str::to_string),
            lifetime,
            wake,
            wait: wait.unwrap_or(false),
            runner: runner_choice(&p)?,
            model: model.map(str::to_string),
        })
    }
}

/// An optional word among `words` (`null` is absent), as the static word matched.
fn word(p: &Params<'_>, key: &str, words: &[&'static str]) -> Result<Option<&'static str>, KernelToolOutcome> {
    p.typed(key, Nulls::Absent, |v| {
        let s = v.as_str()?;
        words.iter().copied().find(|w| *w == s)
    })
    .map_err(|_| params::invalid(&format!("`{key}` must be one of {}", words.join(", "))))
}

/// `default_runner_executor_public_id`: omitted, `null`, or a runner UUID.
fn runner_choice(p: &Params<'_>) -> Result<RunnerChoice, KernelToolOutcome> {
    let refused =
        || params::invalid("`default_runner_executor_public_id` must be a runner id from runners_list, or null");
    match p.typed("default_runner_executor_public_id", Nulls::Refused, Value::as_str) {
        Ok(None) => Ok(RunnerChoice::Inherit),
        Err(Value::Null) => Ok(RunnerChoice::Clear),
        Err(_) => Err(refused()),
        Ok(Some(s)) => Uuid::parse_str(s).map(RunnerChoice::Id).map_err(|_| refused()),
    }
}

/// `[a-z0-9][a-z0-9_-]*`, at most 64 characters.
fn valid_label(label: &str) -> bool {
    let mut bytes = label.bytes();
    label.len() <= 64
        && bytes
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// The kernel-held await a spawn places: it observes nothing of the run (its target key can
/// never name a row) and is completed by the child's first reply.
fn reply_await(call: &GraphCall<'_>, child: Uuid, timeout: i64, delegation: bool) -> NewTask {
    NewTask {
        kind: TaskKind::Await,
        origin: Origin::Kernel,
        on_failure: OnFailure::Absorb,
        visibility: if delegation {
            Visibility::Hidden
        } else {
            Visibility::Collapsed
        },
        mainline: call.call.mainline,
        branch_of: call.call.branch_of.clone(),
        timeout_ms: Some(timeout),
        frozen_context: Some(
            Frozen::Wait(WaitContext {
                task: format!("conversation:{child}"),
                run_public_id: None,
                timeout_ms: timeout,
                delegation,
            })
            .to_text(),
        ),
        ..Default::default()
    }
}

/// A spawn whose checks passed: what the three steps write.
struct Spawn<'s> {
    call: &'s GraphCall<'s>,
    input: &'s SpawnInput,
    parent: ConversationRow,
    answerer: MemberRow,
    runner: Option<ExecutorRow>,
    model: String,
    /// The child a previous evaluation of this call created.
    existing: Option<ConversationRow>,
    /// The child's id: the existing child's, else a new one.
    child_public: Uuid,
}

/// `spawn`: parse, the checks of kernel-tools.md §4 in order, then the three steps.
pub(super) async fn run(kernel: &Kernel, u: &mut Unit<'_>, call: &GraphCall<'_>) -> KernelResult<KernelToolOutcome> {
    let input = match SpawnInput::parse(call.input) {
        Ok(input) => input,
        Err(refusal) => return Ok(refusal),
    };
    let spawn = match check(kernel, u, call, &input).await? {
        Ok(spawn) => spawn,
        Err(refusal) => return Ok(refusal),
    };
    let (outcome, route) = reply_step(kernel, u, &spawn).await?;
    if spawn.existing.is_none() {
        create_child(u, &spawn, route).await?;
    }
    Ok(outcome)
}

/// The checks that need the store, first failure wins.
async fn check<'s>(
    kernel: &Kernel,
    u: &mut Unit<'_>,
    call: &'s GraphCall<'s>,
    input: &'s SpawnInput,
) -> KernelResult<Result<Spawn<'s>, KernelToolOutcome>> {
    let Some(parent) = kernel.conversations().hosting_conversation(u.run).await? else {
        return Ok(Err(KernelToolOutcome::error(
            ToolWord::SpawnNeedsConversation,
            "this run is standalone, and only a run hosted by a conversation can start child conversations; use \
             delegate_task for a branch of this run instead",
        )));
    };
    let answerer = match answerer_of(kernel, u.run, &parent, input).await? {
        Ok(a) => a,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let existing = u.tx.child_of_spawn(call.call.id).await?;
    if let Some(refusal) = refuse_label(u, &parent, input, existing.as_ref()).await? {
        return Ok(Err(refusal));
    }
    let runner = match runner_of(kernel, call, input, &answerer).await? {
        Ok(r) => r,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let model = match model_of(kernel, u, call, input).await? {
        Ok(m) => m,
        Err(refusal) => return Ok(Err(refusal)),
    };
    Ok(Ok(Spawn {
        call,
        input,
        parent,
        answerer,
        runner,
        model,
        child_public: existing.as_ref().map_or_else(time::new_id, |c| c.public_id),
        existing,
    }))
}

/// The answerer: the caller's own profile, or the agent named (`principal_unknown`,
/// `answerer_not_eligible`).
async fn answerer_of(
    kernel: &Kernel,
    run: &RunRow,
    parent: &ConversationRow,
    input: &SpawnInput,
) -> KernelResult<Result<MemberRow, KernelToolOutcome>> {
    let caller = kernel
        .store
        .member_by_id(run.answering_member_id)
        .await?
        .ok_or_else(|| crate::error::KernelError::new(nexus_core::codes::Code::InternalError, "no answerer"))?;
    let Some(a) = &input.agent else {
        return Ok(Ok(caller));
    };
    let found = match Uuid::parse_str(a) {
        Ok(id) => kernel.store.member_by_public_id(id).await?,
        Err(_) => kernel.store.member_by_handle(caller.account_id, a).await?,
    };
    let Some(found) = found.filter(|m| m.account_id == caller.account_id) else {
        return Ok(Err(KernelToolOutcome::error(
            ToolWord::PrincipalUnknown,
            &format!("no member {a:?} in this account; name an agent by id or handle"),
        )));
    };
    let standing = kernel.store.standing(parent.workspace_id, found.id).await?;
    if found.kind != MemberKind::Agent || standing < Some(nexus_store::Standing::Write) {
        return Ok(Err(KernelToolOutcome::error(
            ToolWord::AnswererNotEligible,
            &format!("{a:?} is not an agent with write standing in this workspace; omit agent to spawn yourself"),
        )));
    }
    Ok(Ok(found))
}

/// `label_invalid`, `label_taken` (by another child than this call's own).
async fn refuse_label(
    u: &mut Unit<'_>,
    parent: &ConversationRow,
    input: &SpawnInput,
    existing: Option<&ConversationRow>,
) -> KernelResult<Option<KernelToolOutcome>> {
    let Some(l) = &input.label else {
        return Ok(None);
    };
    if !valid_label(l) {
        return Ok(Some(KernelToolOutcome::error(
            ToolWord::LabelInvalid,
            &format!("label {l:?} must match [a-z0-9][a-z0-9_-]* and be at most 64 characters"),
        )));
    }
    let taken = u.tx.child_by_label(parent.id, l).await?;
    Ok(taken.is_some_and(|t| existing.is_none_or(|e| e.id != t.id)).then(|| {
        KernelToolOutcome::error(
            ToolWord::LabelTaken,
            &format!("label {l:?} already names a child of this conversation; choose another"),
        )
    }))
}

/// The child's default runner, eligible for its answerer (`runner_not_eligible`).
async fn runner_of(
    kernel: &Kernel,
    call: &GraphCall<'_>,
    input: &SpawnInput,
    answerer: &MemberRow,
) -> KernelResult<Result<Option<ExecutorRow>, KernelToolOutcome>> {
    let id = match input.runner {
        RunnerChoice::Inherit => call
            .ctx
            .environment
            .get("default_runner_executor_public_id")
            .and_then(Value::as_str)
            .and_then(|s| Uuid::parse_str(s).ok()),
        RunnerChoice::Clear => None,
        RunnerChoice::Id(id) => Some(id),
    };
    let Some(id) = id else {
        return Ok(Ok(None));
    };
    Ok(match kernel.store.executor_by_public_id(id).await? {
        Some(r) if r.kind == nexus_store::ExecutorKind::Runner && kernel.runner_eligible_for(&r, answerer).await? => {
            Ok(Some(r))
        }
        _ => Err(KernelToolOutcome::error(
            ToolWord::RunnerNotEligible,
            &format!("runner {id} is not eligible for the child's answerer; pick one from runners_list or pass null"),
        )),
    })
}

/// The model: the one named (`model_not_authorized`), else the caller's.
async fn model_of(
    kernel: &Kernel,
    u: &mut Unit<'_>,
    call: &GraphCall<'_>,
    input: &SpawnInput,
) -> KernelResult<Result<String, KernelToolOutcome>> {
    Ok(match &input.model {
        Some(m)
            if kernel
                .providers
                .catalog()
                .resolve(m, &|v| std::env::var_os(v).is_some())
                .is_err() =>
        {
            Err(KernelToolOutcome::error(
                ToolWord::ModelNotAuthorized,
                &format!("model {m:?} is not available here; omit model to use your own"),
            ))
        }
        Some(m) => Ok(m.clone()),
        None => Ok(match declaring_round(u.tx, call.call).await? {
            Some(round) => RequestSurface::of(&round).model,
            None => String::new(),
        }),
    })
}

/// Step 3 (placed before the child so the route can name it): the paired reply await, or the
/// background sentence and, for `lifetime: turn`, the obligation. Returns the call's outcome
/// and the child's reply route.
async fn reply_step(kernel: &Kernel, u: &mut Unit<'_>, s: &Spawn<'_>) -> KernelResult<(KernelToolOutcome, ReplyRoute)> {
    let (call, input) = (s.call, s.input);
    let child_public = s.child_public;
    let mut route = ReplyRoute {
        parent: s.parent.id,
        run: u.run.id,
        call_key: call.call.key.clone(),
        await_task: None,
        lifetime: input.lifetime.to_string(),
        wake: nexus_store::Wake::parse(input.wake).unwrap_or_default(),
        obligation: None,
        label: input.label.clone().unwrap_or_default(),
    };
    if input.wait {
        let waiter = reply_await(call, child_public, SPAWN_WAIT_MS, false);
        let waiter = place_child(kernel, u, call.call, "spawn", waiter, true).await?;
        route.await_task = Some(waiter.id);
        return Ok((started(&waiter.key), route));
    }
    if input.lifetime == "turn" {
        let obligation = reply_await(call, child_public, OBLIGATION_MS, true);
        let obligation = place_child(kernel, u, call.call, "delegation", obligation, false).await?;
        route.obligation = Some(obligation.id);
    }
    let label = &input.label;
    let name = label.as_deref().map_or(String::new(), |l| format!(" labelled {l:?}"));
    let outcome = KernelToolOutcome {
        structured_content: Some(json!({"conversation_public_id": child_public, "label": label})),
        ..KernelToolOutcome::text(format!(
            "Started child conversation {child_public}{name}; its first reply will be delivered to you when it is ready."
        ))
    };
    Ok((outcome, route))
}

/// Steps 1 and 2: the child conversation, and the brief as its first input.
async fn create_child(u: &mut Unit<'_>, s: &Spawn<'_>, route: ReplyRoute) -> KernelResult<()> {
    let (call, input) = (s.call, s.input);
    let Unit { tx, run, effects, .. } = u;
    let child = tx
        .insert_conversation(NewConversation {
            public_id: s.child_public,
            workspace_id: s.parent.workspace_id,
            created_by_id: run.created_by_id,
            answering_member_id: s.answerer.id,
            default_runner_id: s.runner.as_ref().map(|r| r.id),
            title: input.label.clone(),
            parent_id: Some(s.parent.id),
            spawn_task_id: Some(call.call.id),
            label: input.label.clone(),
            reply_route: Some(route.to_text()),
            created_at: call.now,
        })
        .await?;
    tx.insert_input(
        NewInput {
            public_id: time::new_id(),
            conversation_id: child.id,
            kind: InputKind::User,
            delivery_mode: DeliveryMode::Queue,
            content: Some(input.prompt.clone()),
            attachments: "[]".into(),
            attachment_upload_ids: Vec::new(),
            model: Some(s.model.clone()).filter(|m| !m.is_empty()),
            tool_names: None,
            approval_mode: None,
            created_by_id: Some(run.created_by_id),
            deliver_at: None,
            created_at: call.now,
            state: InputState::Pending,
            turn_id: None,
            wake: None,
            mail_key: Some(format!("spawn:{}", call.call.id)),
        },
        bounds::PENDING_INPUTS as i64,
    )
    .await?;
    tx.refresh_wake(child.id).await?;
    let data =
        json!({"conversation_public_id": child.public_id, "label": input.label, "spawn_task_key": call.call.key});
    tx.append_conversation_event(
        s.parent.id,
        nexus_store::ConversationEventKind::ChildSpawned,
        call.now,
        &data.to_string(),
    )
    .await?;
    effects.push(AfterCommit::ConversationEvents(s.parent.id));
    effects.push(AfterCommit::WakeJobs);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(input: Value) -> String {
        SpawnInput::parse(&input)
            .unwrap_err()
            .content
            .as_str()
            .unwrap()
            .to_string()
    }

    #[test]
    fn parse_defaults_and_the_runner_choice() {
        let s = SpawnInput::parse(&json!({"prompt": "go", "lifetime": null})).unwrap();
        assert_eq!(
            (s.lifetime, s.wake, s.wait, s.runner),
            ("conversation", "auto", false, RunnerChoice::Inherit)
        );
        let s = SpawnInput::parse(&json!({"prompt": "go", "default_runner_executor_public_id": null})).unwrap();
        assert_eq!(s.runner, RunnerChoice::Clear);
        let id = "0190aaaa-0000-7000-8000-000000000001";
        let s = SpawnInput::parse(&json!({"prompt": "go", "default_runner_executor_public_id": id})).unwrap();
        assert_eq!(s.runner, RunnerChoice::Id(Uuid::parse_str(id).unwrap()));
        for bad in [json!("mac"), json!(3)] {
            let text = said(json!({"prompt": "go", "default_runner_executor_public_id": bad}));
            assert!(text.starts_with("parameter_invalid: `default_runner_executor_public_id` must be a runner id"));
        }
        assert_eq!(
            said(json!({"prompt": "go", "wake": "soon"})),
            "parameter_invalid: `wake` must be one of auto, passive"
        );
        // `label: null` is a value of the wrong type (the schema has no null).
        assert_eq!(
            said(json!({"prompt": "go", "label": null})),
            "parameter_invalid: `label` of spawn must be a string, got null"
        );
        assert!(said(json!({"prompt": "go", "colour": 1})).contains("`colour` is not a parameter of spawn"));
        assert!(said(json!({"prompt": ""})).contains("`prompt` of spawn is blank"));
    }
}
