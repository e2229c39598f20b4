//! The `model` verb (runs.md §4) and the model-shaped fields shared with `tool.model_defaults`.

use serde_json::Value;

use super::{Faults, KeyScope, ModelSpec, OnFailure, RESULTS_MAX, StepVerb, code, parse_uuid, verb_object};

/// Parses a `model` verb object at `path` (`steps[i].model`).
pub(super) fn parse(value: &Value, path: &str, scope: &KeyScope, faults: &mut Faults) -> Option<StepVerb> {
    let body = verb_object(value, path, faults)?;
    let before = faults.0.len();
    let mut prompt = None;
    let mut model = None;
    let mut instructions = None;
    let mut tools = None;
    let mut kernel_tools = Value::Null;
    let mut runner_executor_public_ids = Value::Null;
    let mut runner_tool_names = Value::Null;
    let mut attachments = Vec::new();
    let mut results = Vec::new();
    let mut fan_on_failure = OnFailure::Absorb;

    for (name, v) in body {
        let p = format!("{path}.{name}");
        match name.as_str() {
            "prompt" => match v.as_str() {
                Some(s) => prompt = Some(s.to_owned()),
                None => faults.push(code::INVALID, p),
            },
            "model" => model = model_spec(v, &p, faults),
            "instructions" => match v {
                Value::Null => {}
                Value::String(s) => instructions = Some(s.clone()),
                _ => faults.push(code::INVALID, p),
            },
            "tools" => tools = tools_field(v, &p, faults),
            "kernel_tools" => kernel_tools = v.clone(),
            "runner_executor_public_ids" => runner_executor_public_ids = v.clone(),
            "runner_tool_names" => runner_tool_names = v.clone(),
            "attachments" => attachments = attachments_field(v, &p, faults),
            "results" => results = scope.key_list(v, &p, RESULTS_MAX, code::TOO_MANY_READS, faults),
            "fan_on_failure" => match v.as_str().and_then(OnFailure::from_word) {
                Some(f) => fan_on_failure = f,
                None => faults.push(code::INVALID_ON_FAILURE, p),
            },
            _ => faults.push(code::UNKNOWN_STEP_OPTION, p),
        }
    }
    if prompt.is_none() && !body.contains_key("prompt") {
        faults.push(code::INVALID, format!("{path}.prompt"));
    }
    if faults.0.len() > before {
        return None;
    }
    Some(StepVerb::Model {
        prompt: prompt?,
        model,
        instructions,
        tools,
        kernel_tools,
        runner_executor_public_ids,
        runner_tool_names,
        attachments,
        results,
        fan_on_failure,
    })
}

/// `model`: `"provider/model"` or `{model, reasoning_effort?, max_output_tokens?}`. The ref itself
/// is resolved by the kernel; here only the shape is checked (`invalid`; an unknown member of
/// the object is `unknown_step_option`).
pub(super) fn model_spec(value: &Value, path: &str, faults: &mut Faults) -> Option<ModelSpec> {
    match value {
        Value::String(s) => Some(ModelSpec {
            model: s.clone(),
            reasoning_effort: None,
            max_output_tokens: None,
        }),
        Value::Object(m) => {
            let before = faults.0.len();
            let mut spec = ModelSpec {
                model: String::new(),
                reasoning_effort: None,
                max_output_tokens: None,
            };
            for (name, v) in m {
                let p = format!("{path}.{name}");
                match name.as_str() {
                    "model" => match v.as_str() {
                        Some(s) => spec.model = s.to_owned(),
                        None => faults.push(code::INVALID, p),
                    },
                    "reasoning_effort" => match v.as_str() {
                        Some(s) => spec.reasoning_effort = Some(s.to_owned()),
                        None => faults.push(code::INVALID, p),
                    },
                    "max_output_tokens" => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                        Some(n) if n > 0 => spec.max_output_tokens = Some(n),
                        _ => faults.push(code::INVALID, p),
                    },
                    _ => faults.push(code::UNKNOWN_STEP_OPTION, p),
                }
            }
            if !m.contains_key("model") {
                faults.push(code::INVALID, format!("{path}.model"));
            }
            (faults.0.len() == before).then_some(spec)
        }
        _ => {
            faults.push(code::INVALID, path);
            None
        }
    }
}

/// `tools`: `null` (absent) or a non-empty array of objects (`invalid_tools`). The declaration
/// grammar of each entry is the kernel's (`declaration::assemble`).
pub(super) fn tools_field(value: &Value, path: &str, faults: &mut Faults) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::Array(items) if items.is_empty() => {
            faults.push(code::INVALID_TOOLS, path);
            None
        }
        Value::Array(items) => {
            let before = faults.0.len();
            for (j, item) in items.iter().enumerate() {
                if !item.is_object() {
                    faults.push(code::INVALID_TOOLS, format!("{path}[{j}]"));
                }
            }
            (faults.0.len() == before).then(|| value.clone())
        }
        _ => {
            faults.push(code::INVALID_TOOLS, path);
            None
        }
    }
}

/// `attachments`: an array of upload ids (hyphenated UUID strings), else `invalid_attachments`.
/// Whether the caller may read each is the kernel's check.
fn attachments_field(value: &Value, path: &str, faults: &mut Faults) -> Vec<String> {
    let Value::Array(items) = value else {
        faults.push(code::INVALID_ATTACHMENTS, path);
        return Vec::new();
    };
    let mut out = Vec::with_capacity(items.len());
    for (j, item) in items.iter().enumerate() {
        match (parse_uuid(item), item.as_str()) {
            (Some(_), Some(s)) => out.push(s.to_owned()),
            _ => faults.push(code::INVALID_ATTACHMENTS, format!("{path}[{j}]")),
        }
    }
    out
}
