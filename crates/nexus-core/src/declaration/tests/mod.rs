//! Declaration tests: one file per concern, plus property tests.

mod alias;
mod assembly;
mod configuration;
mod entry;
mod guard;
mod imports;
mod order;
mod projection;
mod props;
mod render;
mod resolve;
mod skills;

use serde_json::{Value, json};

use super::{DeclError, validate_and_render, validate_declaration};
use crate::registry;

/// The plain catalog definition of a wire name.
pub(super) fn plain(wire: &str) -> Value {
    registry::resolve_wire(wire).unwrap().definition().clone()
}

/// The `claude` preset's `Agent` alias over `delegate_task`.
pub(super) fn agent() -> Value {
    json!({"name": "Agent", "canonical": "nexus.graph.delegate_task", "params": {
        "run_in_background": {"maps_to": "wait", "invert": true,
            "description": "false: block until the branch finishes and return its final message."}}})
}

/// A plain function entry.
pub(super) fn func(name: &str) -> Value {
    json!({"type": "function", "function": {"name": name, "description": format!("does {name}"),
        "parameters": {"type": "object", "properties": {}}}})
}

/// Validates `entries` under `/t` and returns the refusal.
pub(super) fn refuse(entries: Value) -> DeclError {
    validate_declaration(&entries, "/t").expect_err("the set must be refused")
}

/// Asserts a refusal word and path.
pub(super) fn assert_refused(entries: Value, reason: &str, path: &str) {
    let e = refuse(entries);
    assert_eq!((e.reason, e.path.as_str()), (reason, path), "{}", e.message);
}

/// Renders `entries` (no sort).
pub(super) fn render(entries: &[Value]) -> Vec<Value> {
    validate_and_render(entries, "/t").expect("the set validates")
}

/// Compact serialization in member order.
pub(super) fn bytes(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap()
}
