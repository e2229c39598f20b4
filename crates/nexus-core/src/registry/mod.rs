//! The kernel's naming registry (registry.md): a compiled-in, immutable table.
//!
//! Each kernel tool has one file under `tools/` holding its registry entry: canonical name,
//! stored wire name, class, effect profile, description template and parameter schema. The
//! catalog route, the contract pack, the declaration validator and the kernel executor all read
//! this one table.
//!
//! Architecture Invariant: wire names are literal constants, never computed from canonical
//! names, so a naming-rule change cannot move a name that already sits in a cached prefix.

pub mod effect;
pub mod render;
mod tools;

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

pub use effect::EffectProfile;
pub use render::{Identity, Spelling};

/// The three classes (registry.md §3). Every entry belongs to exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolClass {
    /// No executor may serve these names in the kernel's place.
    Reserved,
    /// Live and kernel-executed; an executor may announce these wire names.
    Overridable,
    /// Executed where the frozen skill source says.
    SourceRouted,
}

/// The families whose names no executor may announce.
pub const RESERVED_FAMILIES: [&str; 5] = [
    "nexus.graph",
    "nexus.human",
    "nexus.conversation",
    "nexus.tools",
    "nexus.runners",
];

/// The overridable family.
pub const OVERRIDABLE_FAMILIES: [&str; 1] = ["nexus.memory"];

/// The source-routed family.
pub const SOURCE_ROUTED_FAMILIES: [&str; 1] = ["nexus.skill"];

/// One registry entry.
#[derive(Debug)]
pub struct KernelTool {
    /// `source.category.name`.
    pub canonical: &'static str,
    /// The stored, short provider name.
    pub wire: &'static str,
    pub effect: EffectProfile,
    /// The macro-bearing description source.
    pub template: &'static str,
    /// The parameter schema as JSON text, member order as written. Parameter descriptions may
    /// carry macros; they are rendered like the template.
    pub parameters: &'static str,
}

impl KernelTool {
    /// The family: the first two segments of the canonical name.
    pub fn family(&self) -> &'static str {
        let cut = self.canonical.rfind('.').expect("canonical names have three segments");
        &self.canonical[..cut]
    }

    /// The class, derived from the family (one family, one class).
    pub fn class(&self) -> ToolClass {
        let family = self.family();
        if OVERRIDABLE_FAMILIES.contains(&family) {
            ToolClass::Overridable
        } else if SOURCE_ROUTED_FAMILIES.contains(&family) {
            ToolClass::SourceRouted
        } else {
            debug_assert!(RESERVED_FAMILIES.contains(&family), "{family} has no class");
            ToolClass::Reserved
        }
    }

    /// The unrendered parameter schema (parsed once per call; cheap relative to I/O).
    pub fn parameter_schema(&self) -> Value {
        serde_json::from_str(self.parameters).expect("registry parameter schemas are valid JSON")
    }

    /// The description rendered with `spelling`.
    pub fn description(&self, spelling: &dyn Spelling) -> String {
        render::render_text(self.template, spelling)
    }

    /// The parameter schema with its descriptions rendered with `spelling`.
    pub fn rendered_parameters(&self, spelling: &dyn Spelling) -> Value {
        let mut schema = self.parameter_schema();
        render::render_schema_descriptions(&mut schema, spelling);
        schema
    }

    /// `{type:"function", function:{name, description, parameters}}` under `spelling`, with
    /// the entry named by its wire name.
    pub fn definition_with(&self, spelling: &dyn Spelling) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.wire,
                "description": self.description(spelling),
                "parameters": self.rendered_parameters(spelling),
            }
        })
    }

    /// The un-aliased (plain) render: the catalog's `definition`, cached.
    pub fn definition(&self) -> &'static Value {
        let idx = index_of(self);
        &plain_definitions()[idx]
    }

    /// The catalog entry as `GET /agent_api/v1/tools` serves it.
    pub fn catalog_entry(&self) -> Value {
        let mut entry = Map::new();
        entry.insert("canonical_name".into(), json!(self.canonical));
        entry.insert("name".into(), json!(self.wire));
        entry.insert("effect_profile".into(), self.effect.to_json());
        entry.insert("definition".into(), self.definition().clone());
        entry.insert("template".into(), json!(self.template));
        Value::Object(entry)
    }

    /// The names of the schema's top-level properties, in order.
    pub fn parameter_names(&self) -> Vec<String> {
        self.parameter_schema()
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    }
}

/// Every live kernel tool, in registry order.
pub fn entries() -> &'static [&'static KernelTool] {
    tools::ALL
}

fn index_of(tool: &KernelTool) -> usize {
    entries()
        .iter()
        .position(|t| std::ptr::eq(*t, tool) || t.canonical == tool.canonical)
        .expect("a registry entry is in the registry")
}

fn plain_definitions() -> &'static [Value] {
    static DEFS: OnceLock<Vec<Value>> = OnceLock::new();
    DEFS.get_or_init(|| entries().iter().map(|t| t.definition_with(&Identity)).collect())
}

/// Resolves a canonical name or a wire name. Returns `None` for any other string.
pub fn resolve(name: &str) -> Option<&'static KernelTool> {
    entries()
        .iter()
        .copied()
        .find(|t| t.canonical == name || t.wire == name)
}

/// Resolves a wire name only.
pub fn resolve_wire(name: &str) -> Option<&'static KernelTool> {
    entries().iter().copied().find(|t| t.wire == name)
}

/// Resolves a canonical name only (the `kernel_tools` import grammar).
pub fn resolve_canonical(name: &str) -> Option<&'static KernelTool> {
    entries().iter().copied().find(|t| t.canonical == name)
}

/// The reserved family a name belongs to, in either spelling, if any (the announcement door).
pub fn reserved_family_of(name: &str) -> Option<&'static str> {
    resolve(name)
        .filter(|t| t.class() == ToolClass::Reserved)
        .map(KernelTool::family)
}

/// `GET /agent_api/v1/tools`: `{"tools":[…]}` in registry order.
pub fn catalog() -> Value {
    json!({ "tools": entries().iter().map(|t| t.catalog_entry()).collect::<Vec<_>>() })
}

#[cfg(test)]
mod tests;
