//! The `wait` verb (runs.md §4). Whether the target exists and is not an ancestor is the
//! kernel's check at acceptance (`wait_target_not_found`, `wait_cycle`).

use serde_json::Value;

use super::{Faults, StepVerb, code, parse_uuid, timeout_ms, verb_object};

/// Parses a `wait` verb object at `path` (`steps[i].wait`).
pub(super) fn parse(value: &Value, path: &str, faults: &mut Faults) -> Option<StepVerb> {
    let body = verb_object(value, path, faults)?;
    let before = faults.0.len();
    let mut task = None;
    let mut run_public_id = None;
    let mut timeout = None;

    for (field, v) in body {
        let p = format!("{path}.{field}");
        match field.as_str() {
            // Any key of the run may be observed, kernel keys included: only its shape is checked.
            "task" => match v.as_str() {
                Some(s) if !s.is_empty() => task = Some(s.to_owned()),
                _ => faults.push(code::INVALID_TASK_KEY, p),
            },
            "run_public_id" => match (parse_uuid(v), v.as_str()) {
                (Some(_), Some(s)) => run_public_id = Some(s.to_owned()),
                _ => faults.push(code::WAIT_TARGET_NOT_FOUND, p),
            },
            "timeout_ms" => timeout = timeout_ms(v, &p, faults),
            _ => faults.push(code::UNKNOWN_STEP_OPTION, p),
        }
    }
    if !body.contains_key("task") {
        faults.push(code::INVALID_TASK_KEY, format!("{path}.task"));
    }
    if faults.0.len() > before {
        return None;
    }
    Some(StepVerb::Wait {
        task: task?,
        run_public_id,
        timeout_ms: timeout,
    })
}
