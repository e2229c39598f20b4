//! Parameter checks shared by the kernel tool handlers (kernel-tools.md §0): an unknown key on
//! a strict schema, a missing or blank string, a value of the wrong type or outside its range
//! all answer the error result `parameter_invalid` naming the parameter.

use serde_json::Value;

use super::KernelToolOutcome;

/// The input as an object, or the error result.
pub(crate) fn object<'a>(
    tool: &str,
    input: &'a Value,
) -> Result<&'a serde_json::Map<String, Value>, KernelToolOutcome> {
    input.as_object().ok_or_else(|| {
        KernelToolOutcome::error(
            "parameter_invalid",
            &format!("{tool} takes a JSON object of parameters"),
        )
    })
}

/// Refuses any key outside `allowed` (schemas with `additionalProperties: false`).
pub(crate) fn only(
    tool: &str,
    obj: &serde_json::Map<String, Value>,
    allowed: &[&str],
) -> Result<(), KernelToolOutcome> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(KernelToolOutcome::error(
            "parameter_invalid",
            &format!(
                "`{key}` is not a parameter of {tool}; its parameters are {}",
                allowed.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

/// A required, non-blank string parameter.
pub(crate) fn required_text<'a>(
    tool: &str,
    obj: &'a serde_json::Map<String, Value>,
    key: &str,
) -> Result<&'a str, KernelToolOutcome> {
    match obj.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
        Some(Value::String(_)) => Err(KernelToolOutcome::error(
            "parameter_invalid",
            &format!("`{key}` of {tool} is blank; give a non-blank string"),
        )),
        Some(other) => Err(KernelToolOutcome::error(
            "parameter_invalid",
            &format!("`{key}` of {tool} must be a string, got {other}"),
        )),
        None => Err(KernelToolOutcome::error(
            "parameter_invalid",
            &format!("{tool} needs `{key}`, a non-blank string"),
        )),
    }
}

/// An optional parameter that must satisfy `ok` when present.
pub(crate) fn optional(
    tool: &str,
    obj: &serde_json::Map<String, Value>,
    key: &str,
    expected: &str,
    ok: impl Fn(&Value) -> bool,
) -> Result<(), KernelToolOutcome> {
    match obj.get(key) {
        Some(v) if !ok(v) => Err(KernelToolOutcome::error(
            "parameter_invalid",
            &format!("`{key}` of {tool} must be {expected}, got {v}"),
        )),
        _ => Ok(()),
    }
}

/// Whether `v` is an integer in `lo..=hi`.
pub(crate) fn int_in(v: &Value, lo: i64, hi: i64) -> bool {
    v.as_i64().is_some_and(|n| (lo..=hi).contains(&n))
}

/// The conversation a standalone run does not have: every `to` / `session_id` names a
/// conversation this run cannot reach.
pub(crate) fn unknown_conversation(tool: &str, target: &str) -> KernelToolOutcome {
    KernelToolOutcome::error(
        "unknown_conversation",
        &format!(
            "{target:?} is not a conversation {tool} can reach from this run: this run is standalone and has no child \
             conversations; give a child label or a conversation id of this workspace"
        ),
    )
}

/// A history refusal (`conversations/history.rs`) as the tool's error result.
pub(crate) fn history_refusal(refusal: crate::conversations::history::HistoryRefusal) -> KernelToolOutcome {
    use crate::conversations::history::HistoryRefusal;
    match refusal {
        HistoryRefusal::Parameter(m) => KernelToolOutcome::error("parameter_invalid", &m),
        HistoryRefusal::UnknownConversation(m) => KernelToolOutcome::error("unknown_conversation", &m),
    }
}
