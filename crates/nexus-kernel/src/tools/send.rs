//! `send` (`nexus.conversation.send`, kernel-tools.md §5): queues `message` as an input of a
//! conversation the caller reaches (a child label, or an id of the workspace), with the
//! grammar of `POST C/inputs`: `steer: true` binds to the target's running reply, `wake:
//! passive` holds the message until another input opens a turn, `deliver_in` / `deliver_at`
//! schedule it. Idempotent per call: the input is keyed `send:<run>:<call key>`.

use nexus_core::bounds;
use nexus_core::codes::Code;
use nexus_core::results::ToolWord;
use nexus_store::prelude::*;
use nexus_store::{ConversationRow, DeliveryMode, InputInsert, InputKind, InputRow, InputState, NewInput};
use serde_json::{Map, Value, json};

use super::params::Params;
use super::reach::reach_below;
use super::{GraphCall, KernelToolOutcome};
use crate::conversations::inputs::{InputBody, parse_input};
use crate::error::KernelResult;
use crate::runs::AfterCommit;
use crate::runs::unit::Unit;
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

/// The parameters `POST C/inputs` checks (`parse_input`), passed through as given.
const INPUT_KEYS: [&str; 3] = ["deliver_in", "deliver_at", "model"];

/// `send {to, message, agent?, steer?, deliver_in?, deliver_at?, wake?, model?}`, typed where
/// the tool checks it; the delivery timing and the model keep their JSON for `parse_input`.
#[derive(Debug, Clone, PartialEq)]
struct SendInput {
    to: String,
    message: String,
    agent: Option<String>,
    steer: bool,
    passive: bool,
    timing: Map<String, Value>,
}

impl SendInput {
    fn parse(input: &Value) -> Result<Self, KernelToolOutcome> {
        let p = Params::object("send", input)?;
        p.only(PARAMS)?;
        let to = p.required_text("to")?.to_string();
        let message = p.required_text("message")?.to_string();
        let steer = p.optional("steer", "a boolean", Value::as_bool)?;
        let agent = p.optional("agent", "a string", Value::as_str)?;
        let wake = p.optional("wake", "auto or passive", super::params::word_in(&["auto", "passive"]))?;
        let timing = INPUT_KEYS
            .iter()
            .filter_map(|k| p.get(k).map(|v| (k.to_string(), v.clone())))
            .collect();
        Ok(Self {
            to,
            message,
            agent: agent.map(str::to_string),
            steer: steer.unwrap_or(false),
            passive: wake == Some("passive"),
            timing,
        })
    }

    /// The body `POST C/inputs` would take for this message.
    fn shell(&self) -> Value {
        let mut shell = json!({"content": self.message, "delivery_mode": if self.steer { "steer" } else { "queue" }});
        for (k, v) in &self.timing {
            shell[k] = v.clone();
        }
        shell
    }
}

/// The error word of an input refusal (the HTTP code's word, or `parameter_invalid`).
fn refusal_word(code: Code) -> ToolWord {
    match code {
        Code::DeliverAtAmbiguous => ToolWord::DeliverAtAmbiguous,
        Code::DeliverAtInPast => ToolWord::DeliverAtInPast,
        Code::DeliverAtTooFar => ToolWord::DeliverAtTooFar,
        Code::DeliverAtNotSteerable => ToolWord::DeliverAtNotSteerable,
        _ => ToolWord::ParameterInvalid,
    }
}

pub(super) async fn run(kernel: &Kernel, u: &mut Unit<'_>, call: &GraphCall<'_>) -> KernelResult<KernelToolOutcome> {
    let input = match SendInput::parse(call.input) {
        Ok(input) => input,
        Err(refusal) => return Ok(refusal),
    };
    let repair = "send only to conversations you reach below you";
    let target = match reach_below(kernel, u.tx, u.run, "send", &input.to, repair).await? {
        Ok(target) => target,
        Err(refusal) => return Ok(refusal),
    };
    if let Some(refusal) = refuse_target(kernel, &input, &target).await? {
        return Ok(refusal);
    }
    let parsed = match parse_input(&input.shell(), call.now) {
        Ok(p) => p,
        Err(e) => return Ok(KernelToolOutcome::error(refusal_word(e.code), &e.message)),
    };
    let row = match queue(u, call, &input, &target, parsed).await? {
        Ok(row) => row,
        Err(refusal) => return Ok(refusal),
    };
    Ok(KernelToolOutcome::json_text(&json!({
        "input_public_id": row.public_id,
        "conversation_public_id": target.public_id,
        "state": row.state.as_str(),
    })))
}

/// `answerer_not_eligible` when `agent` is not the target's answerer; `conversation_archived`.
async fn refuse_target(
    kernel: &Kernel,
    input: &SendInput,
    target: &ConversationRow,
) -> KernelResult<Option<KernelToolOutcome>> {
    let to = &input.to;
    if let Some(agent) = &input.agent {
        let answerer = kernel.store.member_by_id(target.answering_member_id).await?;
        if !answerer.is_some_and(|a| a.public_id.to_string() == *agent || a.handle == *agent) {
            return Ok(Some(KernelToolOutcome::error(
                ToolWord::AnswererNotEligible,
                &format!("{agent:?} is not the answerer of {to:?}; omit agent to reach its answerer"),
            )));
        }
    }
    if target.archived_at.is_some() {
        return Ok(Some(KernelToolOutcome::error(
            ToolWord::ConversationArchived,
            &format!("{to:?} is archived; it takes no input until it is unarchived"),
        )));
    }
    Ok(None)
}

/// Queues the input (found again on re-evaluation by its mail key). `Err`: `input_queue_full`.
async fn queue(
    u: &mut Unit<'_>,
    call: &GraphCall<'_>,
    input: &SendInput,
    target: &ConversationRow,
    parsed: InputBody,
) -> KernelResult<Result<InputRow, KernelToolOutcome>> {
    let Unit { tx, run, effects, .. } = u;
    let locked = tx.lock_conversation(target.id).await?;
    let steer_turn = locked
        .and_then(|c| c.running_turn_id)
        .filter(|_| parsed.delivery_mode == DeliveryMode::Steer);
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
        wake: input.passive.then_some(nexus_store::Wake::Passive),
        mail_key: Some(format!("send:{}:{}", run.public_id, call.call.key)),
    };
    Ok(match tx.insert_input(new, bounds::PENDING_INPUTS as i64).await? {
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
            Ok(row)
        }
        InputInsert::Existing(row) => Ok(row),
        InputInsert::Full { bound } => Err(KernelToolOutcome::error(
            ToolWord::InputQueueFull,
            &format!(
                "{:?} already holds {bound} pending inputs; wait for it to catch up",
                input.to
            ),
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_keeps_the_timing_for_the_input_grammar() {
        let input = SendInput::parse(&json!({"to": "kid", "message": "hi", "wake": "passive",
            "deliver_in": 5, "model": "m/x"}))
        .unwrap();
        assert!(input.passive && !input.steer && input.agent.is_none());
        assert_eq!(
            input.shell(),
            json!({"content": "hi", "delivery_mode": "queue", "deliver_in": 5, "model": "m/x"})
        );
        // `wake: null` is a value of the wrong type, not an absent `wake`.
        let out = SendInput::parse(&json!({"to": "kid", "message": "hi", "wake": null})).unwrap_err();
        assert_eq!(
            out.content.as_str().unwrap(),
            "parameter_invalid: `wake` of send must be auto or passive, got null"
        );
        let out = SendInput::parse(&json!({"to": "kid", "message": " "})).unwrap_err();
        assert!(out.content.as_str().unwrap().contains("`message` of send is blank"));
    }
}
