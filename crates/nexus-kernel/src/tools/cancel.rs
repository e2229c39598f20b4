//! `cancel` (`nexus.conversation.cancel`, kernel-tools.md §7): stops the target's running turn
//! exactly as `POST C/cancellation` does, in the evaluation's unit of work.

use nexus_store::{RunRow, Tx};

use super::{GraphCall, KernelToolOutcome, params};
use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::AfterCommit;

pub(super) async fn run(
    kernel: &Kernel,
    tx: &mut Tx,
    run: &RunRow,
    call: &GraphCall<'_>,
    effects: &mut Vec<AfterCommit>,
) -> KernelResult<KernelToolOutcome> {
    let to = match params::object("cancel", call.input)
        .and_then(|obj| params::only("cancel", obj, &["to"]).map(|()| obj))
        .and_then(|obj| params::required_text("cancel", obj, "to"))
    {
        Ok(to) => to.to_string(),
        Err(refusal) => return Ok(refusal),
    };
    let Some(caller) = kernel.hosting_conversation(run).await? else {
        return Ok(params::unknown_conversation("cancel", &to));
    };
    let Some(target) = kernel.conversation_target(tx, &caller, &to).await? else {
        return Ok(params::unknown_conversation("cancel", &to));
    };
    if kernel.is_ancestor_or_self(tx, &caller, &target).await? {
        return Ok(KernelToolOutcome::error(
            "ancestor_conversation",
            &format!("{to:?} is your own conversation or one of its ancestors; cancel only conversations you started"),
        ));
    }
    Ok(match kernel.cancel_turn_in(tx, target.id, call.now, effects).await? {
        Some(turn) => KernelToolOutcome::text(format!(
            "Canceled the running turn {turn} of conversation {}.",
            target.public_id
        )),
        None => KernelToolOutcome::text(format!(
            "Conversation {} was idle; nothing to cancel.",
            target.public_id
        )),
    })
}
