//! `cancel` (`nexus.conversation.cancel`, kernel-tools.md §7): `to` must name a reachable
//! conversation; a standalone run reaches none.

use serde_json::Value;

use super::{KernelToolOutcome, params};

pub(crate) fn run(input: &Value) -> KernelToolOutcome {
    match params::object("cancel", input)
        .and_then(|obj| params::only("cancel", obj, &["to"]).map(|()| obj))
        .and_then(|obj| params::required_text("cancel", obj, "to"))
    {
        Ok(to) => params::unknown_conversation("cancel", to),
        Err(refusal) => refusal,
    }
}
