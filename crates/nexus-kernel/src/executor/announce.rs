//! `PUT X/announcement` (executor.md §4): the executor replaces its served tools, environment
//! and documents at once.
//!
//! The twelve checks run in the spec's order and the first failure wins. Each check runs over
//! the whole list before the next begins, so kernel classification (check 3) refuses a
//! reserved name at `tools[1].name` even when `tools[0].name` is malformed (check 4): the
//! classification is "before format" across the announcement, not per entry. The server
//! calls [`parse`] and then [`Executor::announce`] (apply).

use std::collections::HashSet;

use nexus_api::executors::{AnnouncedDocument, AnnouncedTool, ExecutorDescription};
use nexus_core::codes::Code;
use nexus_core::registry::{effect::EffectProfile, reserved_family_of};
use nexus_core::{bounds, jcs};
use nexus_store::Announcement;
use nexus_store::prelude::*;
use serde_json::{Map, Value};

use crate::Executor;
use crate::auth::ExecutorPrincipal;
use crate::error::{KernelError, KernelResult};

/// The validated, reduced announcement, ready to store. Only [`parse`] builds one, so a
/// value of this type has passed the twelve checks.
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    /// Entries sorted by name, each reduced to `name, effect_profile, timeout_ms?,
    /// description?, input_schema?`.
    pub served_tools: Vec<AnnouncedTool>,
    /// The environment object (`{}` when absent).
    pub environment: Map<String, Value>,
    /// Documents sorted by name, each reduced to `{name, description}` (`[]` when absent).
    pub served_documents: Vec<AnnouncedDocument>,
}

/// A tool entry of the body, by position.
type Entries<'a> = Vec<&'a Map<String, Value>>;

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
fn positive_integer(v: &Value) -> Option<u64> {
    if let Some(n) = v.as_u64() {
        return (n >= 1 && n <= i64::MAX as u64).then_some(n);
    }
    let f = v.as_f64()?;
    (f >= 1.0 && f.fract() == 0.0 && f <= 9_007_199_254_740_992.0).then_some(f as u64)
}

fn non_blank(v: &Value) -> bool {
    v.as_str().is_some_and(|s| !s.trim().is_empty())
}

/// The `name` of an entry whose name check passed.
fn name_of(entry: &Map<String, Value>) -> &str {
    entry.get("name").and_then(Value::as_str).unwrap_or_default()
}

/// Runs the twelve checks of executor.md §4 in order over `body` and returns the stored form.
pub fn parse(body: &Value) -> KernelResult<Validated> {
    let (tools, entries) = tool_entries(body)?;
    check_tool_names(&entries)?;
    let profiles = effect_profiles(&entries)?;
    let timeouts = timeouts(&entries)?;
    check_tool_texts(&entries)?;
    let environment = environment_of(body)?;
    let documents = documents_of(body)?;
    check_list_bounds(tools, body.get("documents"))?;
    Ok(Validated {
        served_tools: reduce_tools(&entries, profiles, timeouts),
        environment,
        served_documents: reduce_documents(&documents),
    })
}

/// Checks 1–2: `tools` is present and a list of objects.
fn tool_entries(body: &Value) -> KernelResult<(&Value, Entries<'_>)> {
    let Some(tools) = body.get("tools") else {
        return Err(KernelError::new(
            Code::ParameterMissing,
            "the announcement needs `tools` (send [] to clear them)",
        )
        .with_path("tools"));
    };
    let Some(list) = tools.as_array() else {
        return Err(invalid("tools", "tools must be a list of tool entries"));
    };
    let mut entries = Vec::with_capacity(list.len());
    for (i, entry) in list.iter().enumerate() {
        match entry.as_object() {
            Some(obj) => entries.push(obj),
            None => return Err(invalid(format!("tools[{i}]"), "each tool entry must be an object")),
        }
    }
    Ok((tools, entries))
}

/// Checks 3–5: kernel classification (a reserved name in either spelling) before the name
/// grammar, then unique names.
fn check_tool_names(entries: &Entries<'_>) -> KernelResult<()> {
    for (i, entry) in entries.iter().enumerate() {
        if let Some(family) = entry.get("name").and_then(Value::as_str).and_then(reserved_family_of) {
            let name = name_of(entry);
            return Err(KernelError::new(
                Code::ReservedNamespace,
                format!("{name:?} belongs to the kernel-reserved namespace {family}: no executor may serve it"),
            )
            .with_path(format!("tools[{i}].name"))
            .with_detail(family));
        }
    }
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
    let mut seen = HashSet::new();
    for (i, entry) in entries.iter().enumerate() {
        let name = name_of(entry);
        if !seen.insert(name) {
            return Err(invalid(
                format!("tools[{i}].name"),
                format!("name {name:?} is announced twice"),
            ));
        }
    }
    Ok(())
}

/// Check 6: every entry has a valid effect profile.
fn effect_profiles(entries: &Entries<'_>) -> KernelResult<Vec<EffectProfile>> {
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
    Ok(profiles)
}

/// Check 7: `timeout_ms`, when present, is a positive integer.
fn timeouts(entries: &Entries<'_>) -> KernelResult<Vec<Option<u64>>> {
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
    Ok(timeouts)
}

/// Checks 8–9: a description is a non-blank string; an input schema is an object schema.
fn check_tool_texts(entries: &Entries<'_>) -> KernelResult<()> {
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
    Ok(())
}

/// Check 10: the environment is an object within its bound (`{}` when absent).
fn environment_of(body: &Value) -> KernelResult<Map<String, Value>> {
    match body.get("environment") {
        None => Ok(Map::new()),
        Some(env @ Value::Object(map)) => {
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
            Ok(map.clone())
        }
        Some(_) => Err(invalid("environment", "environment must be an object")),
    }
}

/// Check 11: the documents are a list of objects with a skill name, unique, and a non-blank
/// description within its bound (`[]` when absent).
fn documents_of(body: &Value) -> KernelResult<Entries<'_>> {
    let documents = match body.get("documents") {
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
    check_documents(&documents)?;
    Ok(documents)
}

/// Check 11's members: names (grammar, then uniqueness), then descriptions.
fn check_documents(documents: &Entries<'_>) -> KernelResult<()> {
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
    let mut seen = HashSet::new();
    for (i, d) in documents.iter().enumerate() {
        let name = name_of(d);
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
    Ok(())
}

/// Check 12: each list within the envelope bound (canonical JSON of the list as sent).
fn check_list_bounds(tools: &Value, documents: Option<&Value>) -> KernelResult<()> {
    for (key, value) in [("tools", Some(tools)), ("documents", documents)] {
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
    Ok(())
}

/// The stored tools: sorted by name, reduced to the five members, unknown keys dropped.
fn reduce_tools(entries: &Entries<'_>, profiles: Vec<EffectProfile>, timeouts: Vec<Option<u64>>) -> Vec<AnnouncedTool> {
    let mut tools: Vec<AnnouncedTool> = entries
        .iter()
        .zip(profiles)
        .zip(timeouts)
        .map(|((entry, profile), timeout)| AnnouncedTool {
            name: name_of(entry).to_string(),
            effect_profile: profile,
            timeout_ms: timeout,
            description: entry.get("description").and_then(Value::as_str).map(str::to_string),
            input_schema: entry.get("input_schema").cloned(),
        })
        .collect();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    tools
}

/// The stored documents: sorted by name, reduced to `{name, description}`.
fn reduce_documents(documents: &Entries<'_>) -> Vec<AnnouncedDocument> {
    let mut docs: Vec<AnnouncedDocument> = documents
        .iter()
        .map(|d| AnnouncedDocument {
            name: name_of(d).to_string(),
            description: d
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        })
        .collect();
    docs.sort_by(|a, b| a.name.cmp(&b.name));
    docs
}

/// The stored text of a validated list or object.
fn stored_text(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("an announcement's typed parts always serialize")
}

impl Executor<'_> {
    /// `PUT X/announcement`: stores a validated announcement whole (updating `last_seen_at`)
    /// and answers the `GET X` body.
    pub async fn announce(&self, principal: &ExecutorPrincipal, v: &Validated) -> KernelResult<ExecutorDescription> {
        let announcement = Announcement {
            served_tools: stored_text(&v.served_tools),
            environment: stored_text(&v.environment),
            served_documents: stored_text(&v.served_documents),
        };
        self.store
            .put_announcement(principal.executor.id, &announcement, self.now_ms())
            .await?;
        Ok(self.admin().executor_description(principal))
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
        parse(&body).unwrap_err()
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
        let ok = parse(&json!({"tools": [{"name": "memory_read", "effect_profile": read()},
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
        let v = parse(&json!({"tools": [
            {"name": "b", "effect_profile": {"reconciliation": "none", "kind": "read_only", "destructive": false,
                                             "effect_scope": "closed", "idempotency": "intrinsic"},
             "timeout_ms": 5000.0, "extra": 1, "input_schema": {"type": "object", "z": 1, "a": 2}},
            {"name": "a", "effect_profile": read(), "description": " Reads. "},
        ], "documents": [{"name": "z", "description": "Z", "body": "x"}, {"name": "a", "description": "A"}]}))
        .unwrap();
        assert_eq!(
            stored_text(&v.served_tools),
            json!([
                {"name": "a", "effect_profile": read(), "description": " Reads. "},
                {"name": "b", "effect_profile": read(), "timeout_ms": 5000, "input_schema": {"type": "object", "z": 1, "a": 2}},
            ])
            .to_string()
        );
        assert!(v.environment.is_empty());
        assert_eq!(
            serde_json::to_value(&v.served_documents).unwrap(),
            json!([{"name": "a", "description": "A"}, {"name": "z", "description": "Z"}])
        );
    }
}
