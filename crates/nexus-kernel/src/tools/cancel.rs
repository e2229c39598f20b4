//! `cancel` (`nexus.conversation.cancel`, kernel-tools.md §7): stops the target's running turn
//! exactly as `POST C/cancellation` does, in the evaluation's unit of work.

use super::reach::{To, reach_below};
use super::{GraphCall, KernelToolOutcome};
use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::unit::Unit;

/// `cancel {to}`.
pub(super) async fn run(kernel: &Kernel, u: &mut Unit<'_>, call: &GraphCall<'_>) -> KernelResult<KernelToolOutcome> {
    let To { to } = match To::parse("cancel", call.input) {
        Ok(input) => input,
        Err(refusal) => return Ok(refusal),
    };
    let repair = "cancel only conversations you started";
    let target = match reach_below(kernel, u.tx, u.run, "cancel", &to, repair).await? {
        Ok(target) => target,
        Err(refusal) => return Ok(refusal),
    };
    Ok(
        match kernel
            .conversations()
            .cancel_turn_in(u.tx, target.id, call.now, u.effects)
            .await?
        {
            Some(turn) => KernelToolOutcome::text(format!(
                "Canceled the running turn {turn} of conversation {}.",
                target.public_id
            )),
            None => KernelToolOutcome::text(format!(
                "Conversation {} was idle; nothing to cancel.",
                target.public_id
            )),
        },
    )
}
