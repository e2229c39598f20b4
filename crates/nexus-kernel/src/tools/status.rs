//! `status` (`nexus.conversation.status`, kernel-tools.md §6): `to` must name a reachable
//! conversation; a standalone run reaches none.

use serde_json::Value;

use super::{KernelToolOutcome, params};

pub(crate) fn run(input: &Value) -> KernelToolOutcome {
    match params::object("status", input)
        .and_then(|obj| params::only("status", obj, &["to"]).map(|()| obj))
        .and_then(|obj| params::required_text("status", obj, "to"))
    {
        Ok(to) => params::unknown_conversation("status", to),
        Err(refusal) => refusal,
    }
}
