//! `send` (`nexus.conversation.send`, kernel-tools.md §5): queues `message` as an input of a
//! conversation the caller reaches (a child label, or an id of the workspace), with the
//! grammar of `POST C/inputs`: `steer: true` binds to the target's running reply, `wake:
//! passive` holds the message until another input opens a turn, `deliver_in` / `deliver_at`
//! schedule it. Idempotent per call: the input is keyed `send:<run>:<call key>`.

use nexus_core::bounds;
use nexus_core::codes::Code;
use nexus_store::{DeliveryMode, InputInsert, InputKind, InputState, NewInput, RunRow, Tx};
use serde_json::{Value, json};

use super::{GraphCall, KernelToolOutcome, params};
use crate::conversations::inputs::parse_input;
use crate::error::KernelResult;
use crate::runs::AfterCommit;
use crate::{Kernel, time};

const PARAMS: &[&str] = &[
    "to",
    "agent",
    "message",
    "steer",
    "deliver_in",
    "deliver_at",
    "wake",
    "model",
];

/// The error word of an input refusal (the HTTP code's word, or `parameter_invalid`).
fn refusal_word(code: Code) -> &'static str {
    match code {
        Code::DeliverAtAmbiguous => "deliver_at_ambiguous",
        Code::DeliverAtInPast => "deliver_at_in_past",
        Code::DeliverAtTooFar => "deliver_at_too_far",
        Code::DeliverAtNotSteerable => "deliver_at_not_steerable",
        _ => super::tool_call::PARAMETER_INVALID,
    }
}

pub(super) async fn run(
    kernel: &Kernel,
    tx: &mut Tx,
    run: &RunRow,
    call: &GraphCall<'_>,
    effects: &mut Vec<AfterCommit>,
) -> KernelResult<KernelToolOutcome> {
    let checked = (|| {
        let obj = params::object("send", call.input)?;
        params::only("send", obj, PARAMS)?;
        let to = params::required_text("send", obj, "to")?.to_string();
        let message = params::required_text("send", obj, "message")?.to_string();
        params::optional("send", obj, "steer", "a boolean", Value::is_boolean)?;
        params::optional("send", obj, "agent", "a string", Value::is_string)?;
        params::optional("send", obj, "wake", "auto or passive", |v| {
            matches!(v.as_str(), Some("auto" | "passive"))
        })?;
        Ok::<_, KernelToolOutcome>((obj, to, message))
    })();
    let (obj, to, message) = match checked {
        Ok(v) => v,
        Err(refusal) => return Ok(refusal),
    };
    let Some(caller) = kernel.hosting_conversation(run).await? else {
        return Ok(params::unknown_conversation("send", &to));
    };
    let Some(target) = kernel.conversation_target(tx, &caller, &to).await? else {
        return Ok(params::unknown_conversation("send", &to));
    };
    if kernel.is_ancestor_or_self(tx, &caller, &target).await? {
        return Ok(KernelToolOutcome::error(
            "ancestor_conversation",
            &format!(
                "{to:?} is your own conversation or one of its ancestors; send only to conversations you reach below you"
            ),
        ));
    }
    if let Some(agent) = obj.get("agent").and_then(Value::as_str) {
        let answerer = nexus_store::Engine::member_by_id(&kernel.store, target.answering_member_id).await?;
        if !answerer.is_some_and(|a| a.public_id.to_string() == agent || a.handle == agent) {
            return Ok(KernelToolOutcome::error(
                "answerer_not_eligible",
                &format!("{agent:?} is not the answerer of {to:?}; omit agent to reach its answerer"),
            ));
        }
    }
    if target.archived_at.is_some() {
        return Ok(KernelToolOutcome::error(
            "conversation_archived",
            &format!("{to:?} is archived; it takes no input until it is unarchived"),
        ));
    }
    let steer = obj.get("steer").and_then(Value::as_bool).unwrap_or(false);
    let mut shell = json!({"content": message, "delivery_mode": if steer { "steer" } else { "queue" }});
    for k in ["deliver_in", "deliver_at", "model"] {
        if let Some(v) = obj.get(k) {
            shell[k] = v.clone();
        }
    }
    let parsed = match parse_input(&shell, call.now) {
        Ok(p) => p,
        Err(e) => return Ok(KernelToolOutcome::error(refusal_word(e.code), &e.message)),
    };
    let locked = tx.lock_conversation(target.id).await?;
    let steer_turn = locked
        .and_then(|c| c.running_turn_id)
        .filter(|_| parsed.delivery_mode == DeliveryMode::Steer);
    let wake = obj.get("wake").and_then(Value::as_str).unwrap_or("auto");
    let new = NewInput {
        public_id: time::new_id(),
        conversation_id: target.id,
        kind: InputKind::User,
        delivery_mode: parsed.delivery_mode,
        content: parsed.content,
        attachments: "[]".into(),
        attachment_upload_ids: Vec::new(),
        model: parsed.model,
        tool_names: None,
        approval_mode: None,
        created_by_id: Some(run.created_by_id),
        deliver_at: parsed.deliver_at,
        created_at: call.now,
        state: if steer_turn.is_some() {
            InputState::Steering
        } else {
            InputState::Pending
        },
        turn_id: steer_turn,
        wake: (wake == "passive").then(|| "passive".to_string()),
        mail_key: Some(format!("send:{}:{}", run.public_id, call.call.key)),
    };
    let row = match tx.insert_input(new, bounds::PENDING_INPUTS as i64).await? {
        InputInsert::Inserted(row) => {
            let data = json!({"input_public_id": row.public_id, "delivery_mode": row.delivery_mode.as_str()});
            tx.append_conversation_event(
                target.id,
                nexus_store::ConversationEventKind::InputAccepted,
                call.now,
                &data.to_string(),
            )
            .await?;
            tx.refresh_wake(target.id).await?;
            effects.push(AfterCommit::ConversationEvents(target.id));
            effects.push(AfterCommit::WakeJobs);
            row
        }
        InputInsert::Existing(row) => row,
        InputInsert::Full { bound } => {
            return Ok(KernelToolOutcome::error(
                "input_queue_full",
                &format!("{to:?} already holds {bound} pending inputs; wait for it to catch up"),
            ));
        }
    };
    Ok(KernelToolOutcome::json_text(&json!({
        "input_public_id": row.public_id,
        "conversation_public_id": target.public_id,
        "state": row.state.as_str(),
    })))
}
