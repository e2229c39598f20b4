//! `spawn` (`nexus.conversation.spawn`, kernel-tools.md §4): a child conversation of the
//! caller's, with the brief as its first input. Three idempotent steps keyed by the call: the
//! child (found again by its spawning call), the brief, then either the paired reply await
//! `<call>-spawn-1` (`wait: true`) or the background sentence (`wait: false`; `lifetime: turn`
//! also places the hidden obligation `<call>-delegation-1`, so the run cannot end first).
//! The child's first reply reaches the await or the parent's mail (`conversations/replies.rs`).

use nexus_core::bounds;
use nexus_store::{
    DeliveryMode, Engine, InputKind, InputState, MemberKind, NewConversation, NewInput, NewTask, OnFailure, Origin,
    RunRow, TaskKind, Tx, Visibility,
};
use serde_json::{Value, json};
use uuid::Uuid;

use super::tool_call::{declaring_round, place_child, started};
use super::{GraphCall, KernelToolOutcome, params};
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

/// `[a-z0-9][a-z0-9_-]*`, at most 64 characters.
fn valid_label(label: &str) -> bool {
    let mut bytes = label.bytes();
    label.len() <= 64
        && bytes
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// An optional word among `words` (`Err`: the parameter refusal).
fn word<'a>(
    obj: &'a serde_json::Map<String, Value>,
    key: &str,
    words: &[&str],
) -> Result<Option<&'a str>, KernelToolOutcome> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if words.contains(&s.as_str()) => Ok(Some(s)),
        Some(_) => Err(KernelToolOutcome::error(
            super::tool_call::PARAMETER_INVALID,
            &format!("`{key}` must be one of {}", words.join(", ")),
        )),
    }
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

/// `spawn {prompt, agent?, label?, lifetime?, wake?, wait?, default_runner_executor_public_id?,
/// model?}`.
pub(super) async fn run(
    kernel: &Kernel,
    tx: &mut Tx,
    run: &mut RunRow,
    call: &GraphCall<'_>,
    effects: &mut Vec<AfterCommit>,
) -> KernelResult<KernelToolOutcome> {
    let checked = (|| {
        let obj = params::object("spawn", call.input)?;
        params::only("spawn", obj, PARAMS)?;
        let prompt = params::required_text("spawn", obj, "prompt")?.to_string();
        params::optional("spawn", obj, "wait", "a boolean", Value::is_boolean)?;
        params::optional("spawn", obj, "label", "a string", Value::is_string)?;
        params::optional("spawn", obj, "agent", "a string", Value::is_string)?;
        params::optional("spawn", obj, "model", "a string", Value::is_string)?;
        let lifetime = word(obj, "lifetime", &["turn", "conversation"])?.unwrap_or("conversation");
        let wake = word(obj, "wake", &["auto", "passive"])?.unwrap_or("auto");
        Ok::<_, KernelToolOutcome>((obj, prompt, lifetime, wake))
    })();
    let (obj, prompt, lifetime, wake) = match checked {
        Ok(v) => v,
        Err(refusal) => return Ok(refusal),
    };
    let Some(parent) = kernel.hosting_conversation(run).await? else {
        return Ok(KernelToolOutcome::error(
            "spawn_needs_conversation",
            "this run is standalone, and only a run hosted by a conversation can start child conversations; use \
             delegate_task for a branch of this run instead",
        ));
    };
    let wait = obj.get("wait").and_then(Value::as_bool).unwrap_or(false);

    // The answerer: the caller's own profile, or the agent named.
    let caller = kernel
        .store
        .member_by_id(run.answering_member_id)
        .await?
        .ok_or_else(|| crate::error::KernelError::new(nexus_core::codes::Code::InternalError, "no answerer"))?;
    let answerer = match obj.get("agent").and_then(Value::as_str) {
        None => caller.clone(),
        Some(a) => {
            let found = match Uuid::parse_str(a) {
                Ok(id) => kernel.store.member_by_public_id(id).await?,
                Err(_) => kernel.store.member_by_handle(caller.account_id, a).await?,
            };
            let Some(found) = found.filter(|m| m.account_id == caller.account_id) else {
                return Ok(KernelToolOutcome::error(
                    "principal_unknown",
                    &format!("no member {a:?} in this account; name an agent by id or handle"),
                ));
            };
            let standing = kernel.store.standing(parent.workspace_id, found.id).await?;
            if found.kind != MemberKind::Agent || standing < Some(nexus_store::Standing::Write) {
                return Ok(KernelToolOutcome::error(
                    "answerer_not_eligible",
                    &format!(
                        "{a:?} is not an agent with write standing in this workspace; omit agent to spawn yourself"
                    ),
                ));
            }
            found
        }
    };

    // The label.
    let label = obj.get("label").and_then(Value::as_str).map(str::to_string);
    let existing = tx.child_of_spawn(call.call.id).await?;
    if let Some(l) = &label {
        if !valid_label(l) {
            return Ok(KernelToolOutcome::error(
                "label_invalid",
                &format!("label {l:?} must match [a-z0-9][a-z0-9_-]* and be at most 64 characters"),
            ));
        }
        let taken = tx.child_by_label(parent.id, l).await?;
        if taken.is_some_and(|t| existing.as_ref().is_none_or(|e| e.id != t.id)) {
            return Ok(KernelToolOutcome::error(
                "label_taken",
                &format!("label {l:?} already names a child of this conversation; choose another"),
            ));
        }
    }

    // The child's default runner: omitted inherits the frozen default, null chooses none.
    let runner = match obj.get("default_runner_executor_public_id") {
        None => call
            .ctx
            .environment
            .get("default_runner_executor_public_id")
            .and_then(Value::as_str)
            .and_then(|s| Uuid::parse_str(s).ok()),
        Some(Value::Null) => None,
        Some(Value::String(s)) => match Uuid::parse_str(s) {
            Ok(id) => Some(id),
            Err(_) => {
                return Ok(KernelToolOutcome::error(
                    super::tool_call::PARAMETER_INVALID,
                    "`default_runner_executor_public_id` must be a runner id from runners_list, or null",
                ));
            }
        },
        Some(_) => {
            return Ok(KernelToolOutcome::error(
                super::tool_call::PARAMETER_INVALID,
                "`default_runner_executor_public_id` must be a runner id from runners_list, or null",
            ));
        }
    };
    let runner_row = match runner {
        None => None,
        Some(id) => match kernel.store.executor_by_public_id(id).await? {
            Some(r)
                if r.kind == nexus_store::ExecutorKind::Runner && kernel.runner_eligible_for(&r, &answerer).await? =>
            {
                Some(r)
            }
            _ => {
                return Ok(KernelToolOutcome::error(
                    "runner_not_eligible",
                    &format!(
                        "runner {id} is not eligible for the child's answerer; pick one from runners_list or pass null"
                    ),
                ));
            }
        },
    };

    // The model: the one named, else the caller's.
    let model = match obj.get("model").and_then(Value::as_str) {
        Some(m) => {
            if kernel
                .providers
                .catalog()
                .resolve(m, &|v| std::env::var_os(v).is_some())
                .is_err()
            {
                return Ok(KernelToolOutcome::error(
                    "model_not_authorized",
                    &format!("model {m:?} is not available here; omit model to use your own"),
                ));
            }
            m.to_string()
        }
        None => match declaring_round(tx, call.call).await? {
            Some(round) => RequestSurface::of(&round).model,
            None => String::new(),
        },
    };

    // 1. The child (again, on re-evaluation).
    let child_public = existing.as_ref().map_or_else(time::new_id, |c| c.public_id);
    let mut route = ReplyRoute {
        parent: parent.id,
        run: run.id,
        call_key: call.call.key.clone(),
        await_task: None,
        lifetime: lifetime.to_string(),
        wake: wake.to_string(),
        obligation: None,
        label: label.clone().unwrap_or_default(),
    };
    let outcome = if wait {
        let waiter = place_child(
            kernel,
            &mut Unit::of(tx, run, call.now, effects),
            call.call,
            "spawn",
            reply_await(call, child_public, SPAWN_WAIT_MS, false),
            true,
        )
        .await?;
        route.await_task = Some(waiter.id);
        started(&waiter.key)
    } else {
        if lifetime == "turn" {
            let obligation = place_child(
                kernel,
                &mut Unit::of(tx, run, call.now, effects),
                call.call,
                "delegation",
                reply_await(call, child_public, OBLIGATION_MS, true),
                false,
            )
            .await?;
            route.obligation = Some(obligation.id);
        }
        let name = label.as_deref().map_or(String::new(), |l| format!(" labelled {l:?}"));
        KernelToolOutcome {
            structured_content: Some(json!({"conversation_public_id": child_public, "label": label})),
            ..KernelToolOutcome::text(format!(
                "Started child conversation {child_public}{name}; its first reply will be delivered to you when it is ready."
            ))
        }
    };
    if existing.is_some() {
        return Ok(outcome);
    }
    let child = tx
        .insert_conversation(NewConversation {
            public_id: child_public,
            workspace_id: parent.workspace_id,
            created_by_id: run.created_by_id,
            answering_member_id: answerer.id,
            default_runner_id: runner_row.map(|r| r.id),
            title: label.clone(),
            parent_id: Some(parent.id),
            spawn_task_id: Some(call.call.id),
            label: label.clone(),
            reply_route: Some(route.to_text()),
            created_at: call.now,
        })
        .await?;
    // 2. The brief, as the child's first input.
    tx.insert_input(
        NewInput {
            public_id: time::new_id(),
            conversation_id: child.id,
            kind: InputKind::User,
            delivery_mode: DeliveryMode::Queue,
            content: Some(prompt),
            attachments: "[]".into(),
            attachment_upload_ids: Vec::new(),
            model: Some(model).filter(|m| !m.is_empty()),
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
    let data = json!({"conversation_public_id": child.public_id, "label": label, "spawn_task_key": call.call.key});
    tx.append_conversation_event(
        parent.id,
        nexus_store::ConversationEventKind::ChildSpawned,
        call.now,
        &data.to_string(),
    )
    .await?;
    effects.push(AfterCommit::ConversationEvents(parent.id));
    effects.push(AfterCommit::WakeJobs);
    Ok(outcome)
}
