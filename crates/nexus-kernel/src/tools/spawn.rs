//! `spawn` (`nexus.conversation.spawn`, kernel-tools.md §4). A child conversation needs a
//! conversation-hosted run; every run of this version is standalone, so after the §0 parameter
//! checks the call answers `spawn_needs_conversation`.

use serde_json::Value;

use super::{KernelToolOutcome, params};

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

pub(crate) fn run(input: &Value) -> KernelToolOutcome {
    let checked = (|| {
        let obj = params::object("spawn", input)?;
        params::only("spawn", obj, PARAMS)?;
        params::required_text("spawn", obj, "prompt")?;
        params::optional("spawn", obj, "wait", "a boolean", Value::is_boolean)?;
        Ok::<(), KernelToolOutcome>(())
    })();
    if let Err(refusal) = checked {
        return refusal;
    }
    KernelToolOutcome::error(
        "spawn_needs_conversation",
        "this run is standalone, and only a run hosted by a conversation can start child conversations; use \
         delegate_task for a branch of this run instead",
    )
}
