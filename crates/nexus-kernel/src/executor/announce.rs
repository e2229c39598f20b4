//! `PUT X/announcement` (executor.md §4): the executor replaces its served tools, environment
//! and documents at once.
//!
//! The twelve checks run in the spec's order and the first failure wins. Each check runs over
//! the whole list before the next begins, so kernel classification (check 3) refuses a
//! reserved name at `tools[1].name` even when `tools[0].name` is malformed (check 4): the
//! classification is "before format" across the announcement, not per entry.

use nexus_core::codes::Code;
use nexus_core::registry::{effect::EffectProfile, reserved_family_of};
use nexus_core::{bounds, jcs};
use nexus_store::{Announcement, Engine};
use serde_json::{Map, Value};

use crate::Kernel;
use crate::auth::ExecutorPrincipal;
use crate::error::{KernelError, KernelResult};

/// The validated, reduced announcement, ready to store.
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    /// Entries sorted by name, each reduced to `name, effect_profile, timeout_ms?,
    /// description?, input_schema?`.
    pub served_tools: Value,
    /// The environment object (`{}` when absent).
    pub environment: Value,
    /// Documents sorted by name, each reduced to `{name, description}` (`[]` when absent).
    pub served_documents: Value,
}

fn invalid(path: impl Into<String>, detail: impl Into<String>) -> KernelError {
    let detail = detail.into();
    KernelError::new(Code::InvalidAnnouncement, format!("invalid announcement: {detail}"))
        .with_path(path)
        .with_detail(detail)
}

/// A served tool name: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_served_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= bounds::ANNOUNCED_NAME_CHARS
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The skill grammar (kernel-tools.md §9): `[a-z0-9](-?[a-z0-9])*`, at most 64 characters.
pub fn is_skill_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() > bounds::KEY_CHARS {
        return false;
    }
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return false;
    }
    bytes
        .windows(2)
        .all(|w| (alnum(w[0]) || w[0] == b'-') && (alnum(w[1]) || w[1] == b'-') && !(w[0] == b'-' && w[1] == b'-'))
}

/// A positive integer (`1000` or `1000.0`), as an integer.
fn positive_integer(v: &Value) -> Option<i64> {
    if let Some(n) = v.as_u64() {
        return (n >= 1 && n <= i64::MAX as u64).then_some(n as i64);
    }
    let f = v.as_f64()?;
    (f >= 1.0 && f.fract() == 0.0 && f <= 9_007_199_254_740_992.0).then_some(f as i64)
}

fn non_blank(v: &Value) -> bool {
    v.as_str().is_some_and(|s| !s.trim().is_empty())
}

/// Runs the twelve checks of executor.md §4 in order over `body` and returns the stored form.
pub fn validate(body: &Value) -> KernelResult<Validated> {
    // 1. `tools` present.
    let Some(tools) = body.get("tools") else {
        return Err(KernelError::new(
            Code::ParameterMissing,
            "the announcement needs `tools` (send [] to clear them)",
        )
        .with_path("tools"));
    };
    // 2. A list of objects.
    let Some(list) = tools.as_array() else {
        return Err(invalid("tools", "tools must be a list of tool entries"));
    };
    let mut entries: Vec<&Map<String, Value>> = Vec::with_capacity(list.len());
    for (i, entry) in list.iter().enumerate() {
        match entry.as_object() {
            Some(obj) => entries.push(obj),
            None => return Err(invalid(format!("tools[{i}]"), "each tool entry must be an object")),
        }
    }
    // 3. Kernel classification, before format: a reserved name in either spelling.
    for (i, entry) in entries.iter().enumerate() {
        if let Some(family) = entry.get("name").and_then(Value::as_str).and_then(reserved_family_of) {
            let name = entry["name"].as_str().unwrap_or_default();
            return Err(KernelError::new(
                Code::ReservedNamespace,
                format!("{name:?} belongs to the kernel-reserved namespace {family}: no executor may serve it"),
            )
            .with_path(format!("tools[{i}].name"))
            .with_detail(family));
        }
    }
    // 4. Name grammar.
    for (i, entry) in entries.iter().enumerate() {
        match entry.get("name").and_then(Value::as_str) {
            Some(name) if is_served_name(name) => {}
            Some(name) => {
                return Err(invalid(
                    format!("tools[{i}].name"),
                    format!("name {name:?} must match ^[a-zA-Z0-9_-]{{1,64}}$"),
                ));
            }
            None => {
                return Err(invalid(
                    format!("tools[{i}].name"),
                    "name is required and must be a string",
                ));
            }
        }
    }
    // 5. Unique names.
    let mut seen = std::collections::HashSet::new();
    for (i, entry) in entries.iter().enumerate() {
        let name = entry["name"].as_str().unwrap_or_default();
        if !seen.insert(name) {
            return Err(invalid(
                format!("tools[{i}].name"),
                format!("name {name:?} is announced twice"),
            ));
        }
    }
    // 6. Effect profiles.
    let mut profiles = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let path = format!("tools[{i}].effect_profile");
        let Some(raw) = entry.get("effect_profile") else {
            return Err(invalid(path, "effect_profile is required"));
        };
        match EffectProfile::parse(raw) {
            Ok(p) => profiles.push(p),
            Err(e) => return Err(invalid(path, e.to_string())),
        }
    }
    // 7. timeout_ms.
    let mut timeouts = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        match entry.get("timeout_ms") {
            None => timeouts.push(None),
            Some(v) => match positive_integer(v) {
                Some(n) => timeouts.push(Some(n)),
                None => {
                    return Err(invalid(
                        format!("tools[{i}].timeout_ms"),
                        "timeout_ms must be a positive integer",
                    ));
                }
            },
        }
    }
    // 8. description.
    for (i, entry) in entries.iter().enumerate() {
        if let Some(d) = entry.get("description")
            && !non_blank(d)
        {
            return Err(invalid(
                format!("tools[{i}].description"),
                "description must be a non-blank string",
            ));
        }
    }
    // 9. input_schema.
    for (i, entry) in entries.iter().enumerate() {
        if let Some(s) = entry.get("input_schema")
            && s.get("type").and_then(Value::as_str) != Some("object")
        {
            return Err(invalid(
                format!("tools[{i}].input_schema"),
                "input_schema must be an object with \"type\": \"object\"",
            ));
        }
    }
    // 10. environment.
    let environment = match body.get("environment") {
        None => Value::Object(Map::new()),
        Some(env @ Value::Object(_)) => {
            if jcs::len(env) > bounds::EXECUTOR_ENVIRONMENT {
                return Err(KernelError::validation(
                    "executor_environment_bound",
                    "/environment",
                    format!(
                        "environment is larger than {} bytes of canonical JSON",
                        bounds::EXECUTOR_ENVIRONMENT
                    ),
                ));
            }
            env.clone()
        }
        Some(_) => return Err(invalid("environment", "environment must be an object")),
    };
    // 11. documents.
    let documents: Vec<&Map<String, Value>> = match body.get("documents") {
        None => Vec::new(),
        Some(Value::Array(docs)) => {
            let mut out = Vec::with_capacity(docs.len());
            for (i, d) in docs.iter().enumerate() {
                match d.as_object() {
                    Some(obj) => out.push(obj),
                    None => return Err(invalid(format!("documents[{i}]"), "each document must be an object")),
                }
            }
            out
        }
        Some(_) => return Err(invalid("documents", "documents must be a list of {name, description}")),
    };
    for (i, d) in documents.iter().enumerate() {
        match d.get("name").and_then(Value::as_str) {
            Some(name) if is_skill_name(name) => {}
            _ => {
                return Err(invalid(
                    format!("documents[{i}].name"),
                    "a document name follows the skill grammar [a-z0-9](-?[a-z0-9])*, at most 64 characters",
                ));
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    for (i, d) in documents.iter().enumerate() {
        let name = d["name"].as_str().unwrap_or_default();
        if !seen.insert(name) {
            return Err(invalid(
                format!("documents[{i}].name"),
                format!("document {name:?} is announced twice"),
            ));
        }
    }
    for (i, d) in documents.iter().enumerate() {
        let ok = d
            .get("description")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.trim().is_empty() && s.len() <= bounds::DESCRIPTION_BYTES);
        if !ok {
            return Err(invalid(
                format!("documents[{i}].description"),
                format!(
                    "a document description must be a non-blank string of at most {} bytes",
                    bounds::DESCRIPTION_BYTES
                ),
            ));
        }
    }
    // 12. List bounds (canonical JSON of each list as sent).
    for (key, value) in [("tools", Some(tools)), ("documents", body.get("documents"))] {
        if let Some(v) = value
            && jcs::len(v) > bounds::ENVELOPE
        {
            return Err(KernelError::validation(
                "envelope_bound",
                &format!("/{key}"),
                format!("{key} is larger than {} bytes of canonical JSON", bounds::ENVELOPE),
            ));
        }
    }

    // The stored form: sorted by name, reduced, unknown keys dropped.
    let mut reduced: Vec<(String, Value)> = entries
        .iter()
        .zip(profiles)
        .zip(timeouts)
        .map(|((entry, profile), timeout)| {
            let name = entry["name"].as_str().unwrap_or_default().to_string();
            let mut out = Map::new();
            out.insert("name".into(), Value::String(name.clone()));
            out.insert("effect_profile".into(), profile.to_json());
            if let Some(t) = timeout {
                out.insert("timeout_ms".into(), Value::from(t));
            }
            for key in ["description", "input_schema"] {
                if let Some(v) = entry.get(key) {
                    out.insert(key.into(), v.clone());
                }
            }
            (name, Value::Object(out))
        })
        .collect();
    reduced.sort_by(|a, b| a.0.cmp(&b.0));
    let mut docs: Vec<(String, Value)> = documents
        .iter()
        .map(|d| {
            let name = d["name"].as_str().unwrap_or_default().to_string();
            let mut out = Map::new();
            out.insert("name".into(), Value::String(name.clone()));
            out.insert("description".into(), d["description"].clone());
            (name, Value::Object(out))
        })
        .collect();
    docs.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Validated {
        served_tools: Value::Array(reduced.into_iter().map(|(_, v)| v).collect()),
        environment,
        served_documents: Value::Array(docs.into_iter().map(|(_, v)| v).collect()),
    })
}

impl Kernel {
    /// `PUT X/announcement`: validates, stores whole (updating `last_seen_at`) and answers
    /// the `GET X` body.
    pub async fn announce(&self, principal: &ExecutorPrincipal, body: &Value) -> KernelResult<Value> {
        let v = validate(body)?;
        let announcement = Announcement {
            served_tools: v.served_tools.to_string(),
            environment: v.environment.to_string(),
            served_documents: v.served_documents.to_string(),
        };
        self.store
            .put_announcement(principal.executor.id, &announcement, self.now_ms())
            .await?;
        Ok(self.executor_description(principal))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read() -> Value {
        EffectProfile::READ.to_json()
    }

    fn err(body: Value) -> KernelError {
        validate(&body).unwrap_err()
    }

    #[test]
    fn grammars() {
        for ok in ["a", "read", "build-skill", "a1-b2-c3", &"x".repeat(64)] {
            assert!(is_skill_name(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a.b", &"x".repeat(65)] {
            assert!(!is_skill_name(bad), "{bad}");
        }
        assert!(is_served_name("start_process") && is_served_name("mcp-X_1"));
        assert!(!is_served_name("nexus.memory.read") && !is_served_name("") && !is_served_name(&"a".repeat(65)));
    }

    #[test]
    fn classification_runs_before_format_across_the_list() {
        let e = err(json!({"tools": [{"name": "bad name!"}, {"name": "delegate_task"}]}));
        assert_eq!(e.code, Code::ReservedNamespace);
        assert_eq!(e.path.as_deref(), Some("tools[1].name"));
        assert_eq!(e.detail.as_deref(), Some("nexus.graph"));
        let e = err(json!({"tools": [{"name": "nexus.runners.list"}]}));
        assert_eq!(
            (e.code, e.detail.as_deref()),
            (Code::ReservedNamespace, Some("nexus.runners"))
        );
        // Memory wire names and `skill` pass the gate; a dotted memory canonical fails format.
        let ok = validate(&json!({"tools": [{"name": "memory_read", "effect_profile": read()},
                                             {"name": "skill", "effect_profile": read()}]}));
        assert!(ok.is_ok());
        let e = err(json!({"tools": [{"name": "nexus.memory.read", "effect_profile": read()}]}));
        assert_eq!(
            (e.code, e.path.as_deref()),
            (Code::InvalidAnnouncement, Some("tools[0].name"))
        );
    }

    #[test]
    fn reduces_and_sorts() {
        let v = validate(&json!({"tools": [
            {"name": "b", "effect_profile": {"reconciliation": "none", "kind": "read_only", "destructive": false,
                                             "effect_scope": "closed", "idempotency": "intrinsic"},
             "timeout_ms": 5000.0, "extra": 1, "input_schema": {"type": "object", "z": 1, "a": 2}},
            {"name": "a", "effect_profile": read(), "description": " Reads. "},
        ], "documents": [{"name": "z", "description": "Z", "body": "x"}, {"name": "a", "description": "A"}]}))
        .unwrap();
        assert_eq!(
            v.served_tools.to_string(),
            json!([
                {"name": "a", "effect_profile": read(), "description": " Reads. "},
                {"name": "b", "effect_profile": read(), "timeout_ms": 5000, "input_schema": {"type": "object", "z": 1, "a": 2}},
            ])
            .to_string()
        );
        assert_eq!(v.environment, json!({}));
        assert_eq!(
            v.served_documents,
            json!([{"name": "a", "description": "A"}, {"name": "z", "description": "Z"}])
        );
    }
}
