//! The `tool` verb (runs.md §4).

use crate::nul::contains_nul;
use serde_json::{Map, Value};

use super::{Faults, StepVerb, ToolRoute, code, model, parse_uuid, timeout_ms, verb_object};
use crate::{bounds, jcs, registry};

/// The largest authored `timeout_ms` (every verb): 7 days.
pub const TOOL_TIMEOUT_MS_MAX: u64 = 604_800_000;

/// The members `model_defaults` may hold.
const MODEL_DEFAULTS_FIELDS: [&str; 5] = [
    "model",
    "tools",
    "kernel_tools",
    "runner_executor_public_ids",
    "runner_tool_names",
];

/// Parses a `tool` verb object at `path` (`steps[i].tool`).
pub(super) fn parse(value: &Value, path: &str, faults: &mut Faults) -> Option<StepVerb> {
    let body = verb_object(value, path, faults)?;
    let before = faults.0.len();
    let mut name = None;
    let mut input = Value::Object(Map::new());
    let mut route = None;
    let mut timeout = None;
    let mut model_defaults = None;

    for (field, v) in body {
        let p = format!("{path}.{field}");
        match field.as_str() {
            "name" => name = tool_name(v, &p, faults),
            "input" => {
                if let Some(i) = tool_input(v, &p, faults) {
                    input = i;
                }
            }
            "route" => route = tool_route(v, &p, faults),
            "timeout_ms" => timeout = timeout_ms(v, &p, faults),
            "model_defaults" => model_defaults = model_defaults_field(v, &p, faults),
            "tool_call_id" => faults.push(code::INVALID_TOOL_CALL_ID, p),
            "alias" => faults.push(code::INVALID_TOOL_ALIAS, p),
            _ => faults.push(code::UNKNOWN_STEP_OPTION, p),
        }
    }
    if !body.contains_key("name") {
        faults.push(code::INVALID_TOOL_NAME, format!("{path}.name"));
    }
    if faults.0.len() > before {
        return None;
    }
    Some(StepVerb::Tool {
        name: name?,
        input,
        route,
        timeout_ms: timeout,
        model_defaults,
    })
}

/// `name`: 1–128 characters with no NUL (`invalid_tool_name`), and not a kernel tool in either
/// spelling (`reserved_tool_name`).
fn tool_name(value: &Value, path: &str, faults: &mut Faults) -> Option<String> {
    match value.as_str() {
        Some(s) if !s.is_empty() && s.chars().count() <= bounds::NAME_CHARS && !s.contains('\0') => {
            if registry::resolve(s).is_some() {
                faults.push(code::RESERVED_TOOL_NAME, path);
                None
            } else {
                Some(s.to_owned())
            }
        }
        _ => {
            faults.push(code::INVALID_TOOL_NAME, path);
            None
        }
    }
}

/// `input`: an object with no NUL in any string or member name (`invalid_tool_input`), whose
/// canonical JSON is at most 65,536 bytes (`tool_input_too_large`).
fn tool_input(value: &Value, path: &str, faults: &mut Faults) -> Option<Value> {
    if !value.is_object() || contains_nul(value) {
        faults.push(code::INVALID_TOOL_INPUT, path);
        return None;
    }
    if jcs::len(value) > bounds::TOOL_INPUT {
        faults.push(code::TOOL_INPUT_TOO_LARGE, path);
        return None;
    }
    Some(value.clone())
}

/// `route`: `{kind:"runner"}` (the run default) or `{kind:"runner", runner_executor_public_id:
/// UUID}`. Anything else — `null`, another kind, an explicit null or malformed UUID, another
/// member — is `invalid_tool_route`.
fn tool_route(value: &Value, path: &str, faults: &mut Faults) -> Option<ToolRoute> {
    let route = (|| {
        let m = value.as_object()?;
        if m.get("kind")?.as_str()? != "runner" {
            return None;
        }
        if m.keys().any(|k| k != "kind" && k != "runner_executor_public_id") {
            return None;
        }
        match m.get("runner_executor_public_id") {
            None => Some(ToolRoute::RunDefault),
            Some(id) => parse_uuid(id).map(ToolRoute::Runner),
        }
    })();
    if route.is_none() {
        faults.push(code::INVALID_TOOL_ROUTE, path);
    }
    route
}

/// `model_defaults`: an object of `{model?, tools?, kernel_tools?, runner_executor_public_ids?,
/// runner_tool_names?}`, kept verbatim. `model` and `tools` are shape-checked here; the import
/// fields by the kernel's assembly. Not an object → `invalid`; another member →
/// `unknown_step_option`.
fn model_defaults_field(value: &Value, path: &str, faults: &mut Faults) -> Option<Value> {
    let Value::Object(m) = value else {
        faults.push(code::INVALID, path);
        return None;
    };
    let before = faults.0.len();
    for (field, v) in m {
        let p = format!("{path}.{field}");
        match field.as_str() {
            "model" => {
                model::model_spec(v, &p, faults);
            }
            "tools" => {
                model::tools_field(v, &p, faults);
            }
            f if MODEL_DEFAULTS_FIELDS.contains(&f) => {}
            _ => faults.push(code::UNKNOWN_STEP_OPTION, p),
        }
    }
    (faults.0.len() == before).then(|| value.clone())
}
