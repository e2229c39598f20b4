//! `send` (`nexus.conversation.send`, kernel-tools.md §5). `to` names a child label of the
//! caller's conversation or a conversation of the workspace; a standalone run has neither.

use serde_json::Value;

use super::{KernelToolOutcome, params};

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

pub(crate) fn run(input: &Value) -> KernelToolOutcome {
    let checked = (|| {
        let obj = params::object("send", input)?;
        params::only("send", obj, PARAMS)?;
        let to = params::required_text("send", obj, "to")?;
        params::required_text("send", obj, "message")?;
        params::optional("send", obj, "steer", "a boolean", Value::is_boolean)?;
        Ok::<String, KernelToolOutcome>(to.to_string())
    })();
    match checked {
        Ok(to) => params::unknown_conversation("send", &to),
        Err(refusal) => refusal,
    }
}
