//! What the conversation tools (`send`, `status`, `cancel`) share: the `{to}` input and the
//! conversation it reaches from the calling run (a child label, or an id of the workspace).

use nexus_core::results::ToolWord;
use nexus_store::{ConversationRow, RunRow, Tx};
use serde_json::Value;

use super::KernelToolOutcome;
use super::params::{self, Params};
use crate::Kernel;
use crate::error::KernelResult;

/// The input `{to}` of `status` and `cancel`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct To {
    pub to: String,
}

impl To {
    pub(super) fn parse(tool: &'static str, input: &Value) -> Result<Self, KernelToolOutcome> {
        let p = Params::object(tool, input)?;
        p.only(&["to"])?;
        Ok(Self {
            to: p.required_text("to")?.to_string(),
        })
    }
}

/// The caller's conversation and the one `to` names. `Err`: the tool's `unknown_conversation`
/// result (a standalone run reaches none).
pub(super) async fn reach(
    kernel: &Kernel,
    tx: &mut Tx,
    run: &RunRow,
    tool: &str,
    to: &str,
) -> KernelResult<Result<(ConversationRow, ConversationRow), KernelToolOutcome>> {
    let Some(caller) = kernel.conversations().hosting_conversation(run).await? else {
        return Ok(Err(params::unknown_conversation(tool, to)));
    };
    let Some(target) = kernel.conversations().conversation_target(tx, &caller, to).await? else {
        return Ok(Err(params::unknown_conversation(tool, to)));
    };
    Ok(Ok((caller, target)))
}

/// `reach`, refusing the caller's own conversation and its ancestors with `ancestor_conversation`
/// (`repair` ends the sentence).
pub(super) async fn reach_below(
    kernel: &Kernel,
    tx: &mut Tx,
    run: &RunRow,
    tool: &str,
    to: &str,
    repair: &str,
) -> KernelResult<Result<ConversationRow, KernelToolOutcome>> {
    let (caller, target) = match reach(kernel, tx, run, tool, to).await? {
        Ok(found) => found,
        Err(refusal) => return Ok(Err(refusal)),
    };
    if kernel.conversations().is_ancestor_or_self(tx, &caller, &target).await? {
        return Ok(Err(KernelToolOutcome::error(
            ToolWord::AncestorConversation,
            &format!("{to:?} is your own conversation or one of its ancestors; {repair}"),
        )));
    }
    Ok(Ok(target))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn to_is_the_only_parameter_and_not_blank() {
        assert_eq!(To::parse("status", &json!({"to": "kid"})).unwrap().to, "kid");
        for (bad, said) in [
            (json!({"to": "kid", "x": 1}), "`x` is not a parameter of cancel"),
            (json!({"to": "  "}), "`to` of cancel is blank"),
            (json!({"to": 3}), "`to` of cancel must be a string, got 3"),
            (json!({}), "cancel needs `to`"),
            (json!("kid"), "cancel takes a JSON object"),
        ] {
            let out = To::parse("cancel", &bad).unwrap_err();
            let text = out.content.as_str().unwrap();
            assert!(
                text.starts_with("parameter_invalid: ") && text.contains(said),
                "{bad}: {text}"
            );
        }
    }
}
