//! The `ask` verb (runs.md §4).

use serde_json::Value;

use super::{Faults, StepVerb, code, timeout_ms, verb_object};

/// At most this many `options` (`invalid_ask_options`).
pub const ASK_OPTIONS_MAX: usize = 32;
/// Each option is at most this many characters (`invalid_ask_options`).
pub const ASK_OPTION_CHARS: usize = 256;

/// Parses an `ask` verb object at `path` (`steps[i].ask`).
pub(super) fn parse(value: &Value, path: &str, faults: &mut Faults) -> Option<StepVerb> {
    let body = verb_object(value, path, faults)?;
    let before = faults.0.len();
    let mut prompt = None;
    let mut options = None;
    let mut multi = false;
    let mut timeout = None;

    for (field, v) in body {
        let p = format!("{path}.{field}");
        match field.as_str() {
            "prompt" => match v.as_str() {
                Some(s) => prompt = Some(s.to_owned()),
                None => faults.push(code::INVALID, p),
            },
            "options" => match ask_options(v) {
                Some(o) => options = Some(o),
                None => faults.push(code::INVALID_ASK_OPTIONS, p),
            },
            "multi" => match v.as_bool() {
                Some(b) => multi = b,
                None => faults.push(code::INVALID_ASK_MULTI, p),
            },
            "timeout_ms" => timeout = timeout_ms(v, &p, faults),
            _ => faults.push(code::UNKNOWN_STEP_OPTION, p),
        }
    }
    if !body.contains_key("prompt") {
        faults.push(code::INVALID, format!("{path}.prompt"));
    }
    if faults.0.len() > before {
        return None;
    }
    Some(StepVerb::Ask {
        prompt: prompt?,
        options,
        multi,
        timeout_ms: timeout,
    })
}

/// An array of at most 32 non-empty strings of at most 256 characters each.
fn ask_options(value: &Value) -> Option<Vec<String>> {
    let items = value.as_array()?;
    if items.len() > ASK_OPTIONS_MAX {
        return None;
    }
    items
        .iter()
        .map(|o| match o.as_str() {
            Some(s) if !s.is_empty() && s.chars().count() <= ASK_OPTION_CHARS => Some(s.to_owned()),
            _ => None,
        })
        .collect()
}
