//! Import fields (declarations.md §7.1) and the import collision rule (§7.2 step 4).

use std::collections::HashSet;

use serde_json::Value;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::entry::{is_name, parse_uuid};
use super::error::DeclError;
use super::pointer;
use crate::registry;

fn invalid(path: impl Into<String>, message: String) -> DeclError {
    DeclError::validation("invalid", path, message)
}

fn list<'a>(value: &'a Value, path: &str, field: &str) -> Result<Option<&'a Vec<Value>>, DeclError> {
    match value {
        Value::Null => Ok(None),
        Value::Array(a) => Ok(Some(a)),
        other => Err(invalid(path, format!("{field} must be an array or null, got {other}"))),
    }
}

/// `kernel_tools`: unique exact canonical names of live kernel tools. `null` → `None`.
pub fn parse_kernel_tools(value: &Value, path: &str) -> Result<Option<Vec<String>>, DeclError> {
    let Some(items) = list(value, path, "kernel_tools")? else {
        return Ok(None);
    };
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let p = pointer::index(path, i);
        let Some(name) = item.as_str() else {
            return Err(invalid(
                p,
                format!("kernel_tools entries are canonical names, got {item}"),
            ));
        };
        if registry::resolve_canonical(name).is_none() {
            return Err(invalid(p, not_a_kernel_tool(name)));
        }
        if out.iter().any(|o| o == name) {
            return Err(invalid(p, format!("{name:?} is listed twice")));
        }
        out.push(name.to_string());
    }
    Ok(Some(out))
}

/// The refusal of a `kernel_tools` entry: the name, and its canonical spelling when it is a wire
/// name, or where the live names are listed.
fn not_a_kernel_tool(name: &str) -> String {
    match registry::resolve_wire(name) {
        Some(tool) => format!(
            "{name:?} is not the canonical name of a live kernel tool: write {:?}",
            tool.canonical
        ),
        None => format!(
            "{name:?} is not the canonical name of a live kernel tool: GET /agent_api/v1/tools \
             (or `nexus tools list`) lists them"
        ),
    }
}

/// `runner_executor_public_ids`: ordered unique UUIDs, compared case-insensitively.
/// `null` → `None`.
pub fn parse_runner_executor_public_ids(value: &Value, path: &str) -> Result<Option<Vec<Uuid>>, DeclError> {
    let Some(items) = list(value, path, "runner_executor_public_ids")? else {
        return Ok(None);
    };
    let mut out: Vec<Uuid> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let p = pointer::index(path, i);
        let Some(id) = item.as_str().and_then(parse_uuid) else {
            return Err(invalid(
                p,
                format!("runner_executor_public_ids entries are UUIDs, got {item}"),
            ));
        };
        if out.contains(&id) {
            return Err(invalid(p, format!("runner {id} is listed twice")));
        }
        out.push(id);
    }
    Ok(Some(out))
}

/// `runner_tool_names`: unique exact served names. `null` → `None` (import every
/// model-describable tool); `[]` → import none.
pub fn parse_runner_tool_names(value: &Value, path: &str) -> Result<Option<Vec<String>>, DeclError> {
    let Some(items) = list(value, path, "runner_tool_names")? else {
        return Ok(None);
    };
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let p = pointer::index(path, i);
        let name = match item.as_str() {
            Some(s) if is_name(s) => s,
            _ => {
                return Err(invalid(
                    p,
                    format!(
                        "runner_tool_names entries are non-empty names of at most 128 characters with no NUL, got {item}"
                    ),
                ));
            }
        };
        if out.iter().any(|o| o == name) {
            return Err(invalid(p, format!("{name:?} is listed twice")));
        }
        out.push(name.to_string());
    }
    Ok(Some(out))
}

/// The callable of an imported served tool: the served name, unless it equals a callable in
/// `taken` or a kernel name (either spelling); then its first 49 characters, `__`, and the first
/// 12 lowercase hex digits of SHA-256(`<runner lowercase>` + `"\0"` + `<served>`).
pub fn import_callable(served: &str, runner: Uuid, taken: &HashSet<String>) -> String {
    if !taken.contains(served) && registry::resolve(served).is_none() {
        return served.to_string();
    }
    let mut hasher = Sha256::new();
    hasher.update(runner.to_string().as_bytes());
    hasher.update([0u8]);
    hasher.update(served.as_bytes());
    let digest = hex::encode(hasher.finalize());
    let head: String = served.chars().take(49).collect();
    format!("{head}__{}", &digest[..12])
}
