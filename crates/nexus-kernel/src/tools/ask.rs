//! `ask` (`nexus.human.ask`, kernel-tools.md §3): a tokenless await `<call>-ask-1`
//! (`awaiting_input`, `on_failure: halt`, a 24 h clock) with `attention_required {reason:
//! awaiting_human}` and `work_available {kind: ask}` to the declaring agent's address
//! (runs/readiness.rs `open_await`). Answered through `POST R/tasks/<call>-ask-1/resolution`
//! (runs/resolution.rs); the answer content is this call's paired result.

use nexus_core::results::ToolWord;
use nexus_core::steps::{ASK_OPTION_CHARS, ASK_OPTIONS_MAX};
use nexus_store::{NewTask, OnFailure, Origin, TaskKind, Visibility};
use serde_json::Value;

use super::params::{self, Nulls, Params};
use super::tool_call::{place_child, started};
use super::{GraphCall, KernelToolOutcome};
use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::columns::{AskContext, Frozen};
use crate::runs::unit::Unit;

/// The ask's clock (24 h).
pub(crate) const ASK_TIMEOUT_MS: i64 = 86_400_000;

const KEYS: [&str; 3] = ["prompt", "options", "multi"];

/// `ask {prompt, options?, multi?}`: the await's frozen context, checked.
impl AskContext {
    fn parse(input: &Value) -> Result<Self, KernelToolOutcome> {
        let p = Params::object_or("ask", input, "the input must be an object with `prompt`")?;
        if p.has("question") {
            return Err(params::invalid(
                "`question` is not a parameter of this tool; put the whole question in `prompt`",
            ));
        }
        if let Some(k) = p.unknown_key(&KEYS) {
            return Err(params::invalid(&format!(
                "{k:?} is not a parameter of this tool; pass only `prompt`, `options` and `multi`"
            )));
        }
        let Ok(Some(prompt)) = p.typed("prompt", Nulls::Refused, params::non_blank) else {
            return Err(params::invalid(
                "`prompt` must be a non-blank string holding the whole question",
            ));
        };
        let options = p.typed("options", Nulls::Absent, Value::as_array).map_err(|other| {
            KernelToolOutcome::error(
                ToolWord::InvalidAskOptions,
                &format!("`options` must be an array of strings, got {other}"),
            )
        })?;
        let options = options.map(|items| options_of(items)).transpose()?;
        let multi = p.typed("multi", Nulls::Absent, Value::as_bool).map_err(|other| {
            KernelToolOutcome::error(
                ToolWord::InvalidAskMulti,
                &format!("`multi` must be true or false, got {other}"),
            )
        })?;
        Ok(Self {
            prompt: prompt.to_string(),
            options,
            multi: multi.unwrap_or(false),
        })
    }
}

/// At most [`ASK_OPTIONS_MAX`] non-empty strings of at most [`ASK_OPTION_CHARS`] characters.
fn options_of(items: &[Value]) -> Result<Vec<String>, KernelToolOutcome> {
    let fits = |i: &Value| {
        i.as_str()
            .is_some_and(|s| !s.is_empty() && s.chars().count() <= ASK_OPTION_CHARS)
    };
    if items.len() > ASK_OPTIONS_MAX || !items.iter().all(fits) {
        return Err(KernelToolOutcome::error(
            ToolWord::InvalidAskOptions,
            &format!(
                "`options` must be at most {ASK_OPTIONS_MAX} non-empty strings of at most {ASK_OPTION_CHARS} characters each; shorten or drop the offending options"
            ),
        ));
    }
    Ok(items.iter().filter_map(|i| i.as_str().map(str::to_string)).collect())
}

/// `ask`: parse, then place the tokenless await.
pub(super) async fn run(kernel: &Kernel, u: &mut Unit<'_>, call: &GraphCall<'_>) -> KernelResult<KernelToolOutcome> {
    let ask = match AskContext::parse(call.input) {
        Ok(ask) => ask,
        Err(refusal) => return Ok(refusal),
    };
    let new = NewTask {
        kind: TaskKind::Await,
        origin: Origin::Kernel,
        on_failure: OnFailure::Halt,
        visibility: Visibility::Collapsed,
        mainline: call.call.mainline,
        branch_of: call.call.branch_of.clone(),
        timeout_ms: Some(ASK_TIMEOUT_MS),
        frozen_context: Some(Frozen::Ask(ask).to_text()),
        // Tokenless: anyone with write standing answers.
        resolution_token_sha256: None,
        ..Default::default()
    };
    let child = place_child(kernel, u, call.call, "ask", new, true).await?;
    Ok(started(&child.key))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn said(input: Value) -> String {
        AskContext::parse(&input)
            .unwrap_err()
            .content
            .as_str()
            .unwrap()
            .to_string()
    }

    #[test]
    fn parse_words_each_fault_and_reads_null_as_absent() {
        let ask = AskContext::parse(&json!({"prompt": "Ship?", "options": ["yes", "no"], "multi": null})).unwrap();
        assert_eq!(ask.options.as_deref(), Some(&["yes".to_string(), "no".to_string()][..]));
        assert!(!ask.multi);
        assert!(said(json!({"prompt": "p", "question": "q"})).starts_with("parameter_invalid: `question`"));
        // `question` is named before any other unknown key.
        assert!(said(json!({"question": "q", "a": 1})).contains("put the whole question in `prompt`"));
        assert!(said(json!({"prompt": "p", "x": 1})).starts_with("parameter_invalid: \"x\" is not a parameter"));
        assert!(said(json!({"prompt": "  "})).starts_with("parameter_invalid: `prompt` must be a non-blank"));
        assert!(said(json!({"prompt": "p", "options": [""]})).starts_with("invalid_ask_options: "));
        let many: Vec<String> = (0..=ASK_OPTIONS_MAX).map(|i| i.to_string()).collect();
        assert!(said(json!({"prompt": "p", "options": many})).starts_with("invalid_ask_options: "));
        assert!(
            said(json!({"prompt": "p", "options": "yes"}))
                .starts_with("invalid_ask_options: `options` must be an array")
        );
        assert!(said(json!({"prompt": "p", "multi": "yes"})).starts_with("invalid_ask_multi: "));
        assert!(said(json!([])).starts_with("parameter_invalid: the input must be an object"));
    }
}
