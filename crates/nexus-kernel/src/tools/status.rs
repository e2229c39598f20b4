//! `status` (`nexus.conversation.status`, kernel-tools.md §6): the JSON text `{conversation_public_id,
//! label, state: idle | running | archived, pending_inputs, last_reply}` of a conversation the
//! caller reaches (a child label, or an id of the workspace).

use nexus_store::{Engine, RunRow, Tx};
use serde_json::{Value, json};

use super::{GraphCall, KernelToolOutcome, params};
use crate::error::KernelResult;
use crate::{Kernel, time};

/// The longest excerpt of the last reply.
const EXCERPT_CHARS: usize = 500;

pub(super) async fn run(
    kernel: &Kernel,
    tx: &mut Tx,
    run: &RunRow,
    call: &GraphCall<'_>,
) -> KernelResult<KernelToolOutcome> {
    let to = match params::object("status", call.input)
        .and_then(|obj| params::only("status", obj, &["to"]).map(|()| obj))
        .and_then(|obj| params::required_text("status", obj, "to"))
    {
        Ok(to) => to.to_string(),
        Err(refusal) => return Ok(refusal),
    };
    let Some(caller) = kernel.hosting_conversation(run).await? else {
        return Ok(params::unknown_conversation("status", &to));
    };
    let Some(target) = kernel.conversation_target(tx, &caller, &to).await? else {
        return Ok(params::unknown_conversation("status", &to));
    };
    let state = match (target.archived_at, target.running_turn_id) {
        (Some(_), _) => "archived",
        (None, Some(_)) => "running",
        (None, None) => "idle",
    };
    let pending = tx.pending_input_count(target.id).await?;
    let last = kernel.store.last_reply(target.id).await?.map(|t| {
        let excerpt: String = t.content.unwrap_or_default().chars().take(EXCERPT_CHARS).collect();
        json!({"turn_public_id": t.public_id, "excerpt": excerpt, "at": t.ended_at.map(time::iso)})
    });
    Ok(KernelToolOutcome::json_text(&json!({
        "conversation_public_id": target.public_id,
        "label": target.label,
        "state": state,
        "pending_inputs": pending,
        "last_reply": last.unwrap_or(Value::Null),
    })))
}
