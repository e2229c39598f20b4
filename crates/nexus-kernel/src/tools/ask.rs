//! `ask` (`nexus.human.ask`, kernel-tools.md §3): a tokenless await `<call>-ask-1`
//! (`awaiting_input`, `on_failure: halt`, a 24 h clock) with `attention_required {reason:
//! awaiting_human}` and `work_available {kind: ask}` to the declaring agent's address
//! (runs/readiness.rs `open_await`). Answered through `POST R/tasks/<call>-ask-1/resolution`
//! (runs/resolution.rs); the answer content is this call's paired result.

use nexus_core::steps::{ASK_OPTION_CHARS, ASK_OPTIONS_MAX};
use nexus_store::{NewTask, OnFailure, Origin, RunRow, TaskKind, Tx, Visibility};
use serde_json::Value;

use super::tool_call::{PARAMETER_INVALID, place_child, started};
use super::{GraphCall, KernelToolOutcome};
use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::AfterCommit;
use crate::runs::columns::{AskContext, Frozen};
use crate::runs::unit::Unit;

/// The ask's clock (24 h).
pub(crate) const ASK_TIMEOUT_MS: i64 = 86_400_000;

const KEYS: [&str; 3] = ["prompt", "options", "multi"];

/// `ask {prompt, options?, multi?}`.
pub(super) async fn run(
    kernel: &Kernel,
    tx: &mut Tx,
    run: &mut RunRow,
    call: &GraphCall<'_>,
    effects: &mut Vec<AfterCommit>,
) -> KernelResult<KernelToolOutcome> {
    let Some(input) = call.input.as_object() else {
        return Ok(KernelToolOutcome::error(
            PARAMETER_INVALID,
            "the input must be an object with `prompt`",
        ));
    };
    if input.contains_key("question") {
        return Ok(KernelToolOutcome::error(
            PARAMETER_INVALID,
            "`question` is not a parameter of this tool; put the whole question in `prompt`",
        ));
    }
    if let Some(k) = input.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Ok(KernelToolOutcome::error(
            PARAMETER_INVALID,
            &format!("{k:?} is not a parameter of this tool; pass only `prompt`, `options` and `multi`"),
        ));
    }
    let Some(prompt) = input
        .get("prompt")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
    else {
        return Ok(KernelToolOutcome::error(
            PARAMETER_INVALID,
            "`prompt` must be a non-blank string holding the whole question",
        ));
    };
    let options: Option<Vec<String>> = match input.get("options") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => {
            let ok = items.len() <= ASK_OPTIONS_MAX
                && items.iter().all(|i| {
                    i.as_str()
                        .is_some_and(|s| !s.is_empty() && s.chars().count() <= ASK_OPTION_CHARS)
                });
            if !ok {
                return Ok(KernelToolOutcome::error(
                    "invalid_ask_options",
                    &format!(
                        "`options` must be at most {ASK_OPTIONS_MAX} non-empty strings of at most {ASK_OPTION_CHARS} characters each; shorten or drop the offending options"
                    ),
                ));
            }
            Some(items.iter().filter_map(|i| i.as_str().map(str::to_string)).collect())
        }
        Some(other) => {
            return Ok(KernelToolOutcome::error(
                "invalid_ask_options",
                &format!("`options` must be an array of strings, got {other}"),
            ));
        }
    };
    let multi = match input.get("multi") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Ok(KernelToolOutcome::error(
                "invalid_ask_multi",
                &format!("`multi` must be true or false, got {other}"),
            ));
        }
    };
    let new = NewTask {
        kind: TaskKind::Await,
        origin: Origin::Kernel,
        on_failure: OnFailure::Halt,
        visibility: Visibility::Collapsed,
        mainline: call.call.mainline,
        branch_of: call.call.branch_of.clone(),
        timeout_ms: Some(ASK_TIMEOUT_MS),
        frozen_context: Some(
            Frozen::Ask(AskContext {
                prompt: prompt.to_string(),
                options,
                multi,
            })
            .to_text(),
        ),
        // Tokenless: anyone with write standing answers.
        resolution_token_sha256: None,
        ..Default::default()
    };
    let child = place_child(
        kernel,
        &mut Unit::of(tx, run, call.now, effects),
        call.call,
        "ask",
        new,
        true,
    )
    .await?;
    Ok(started(&child.key))
}
