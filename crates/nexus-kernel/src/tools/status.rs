//! `status` (`nexus.conversation.status`, kernel-tools.md §6): the JSON text `{conversation_public_id,
//! label, state: idle | running | archived, pending_inputs, last_reply}` of a conversation the
//! caller reaches (a child label, or an id of the workspace).

use nexus_store::prelude::*;
use serde_json::{Value, json};

use super::reach::{To, reach};
use super::{GraphCall, KernelToolOutcome};
use crate::error::KernelResult;
use crate::runs::unit::Unit;
use crate::{Kernel, time};

/// The longest excerpt of the last reply.
const EXCERPT_CHARS: usize = 500;

/// `status {to}`.
pub(super) async fn run(kernel: &Kernel, u: &mut Unit<'_>, call: &GraphCall<'_>) -> KernelResult<KernelToolOutcome> {
    let To { to } = match To::parse("status", call.input) {
        Ok(input) => input,
        Err(refusal) => return Ok(refusal),
    };
    let target = match reach(kernel, u.tx, u.run, "status", &to).await? {
        Ok((_, target)) => target,
        Err(refusal) => return Ok(refusal),
    };
    let state = match (target.archived_at, target.running_turn_id) {
        (Some(_), _) => "archived",
        (None, Some(_)) => "running",
        (None, None) => "idle",
    };
    let pending = u.tx.pending_input_count(target.id).await?;
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
