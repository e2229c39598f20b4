//! The kernel tool catalog as `GET /agent_api/v1/tools` serves it (registry.md §7).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The catalog listing: every kernel tool the deployment runs, in registry order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Catalog {
    /// The entries, in the order served.
    #[serde(default)]
    pub tools: Vec<CatalogEntry>,
}

/// One catalog entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CatalogEntry {
    /// The registry canonical name, for example `nexus.graph.delegate_task`.
    pub canonical_name: String,
    /// The wire name, for example `delegate_task`.
    pub name: String,
    /// Trusted host metadata (`kind`, `destructive`, `effect_scope`, `idempotency`,
    /// `reconciliation`); never sent to a model. Documented as the core's `EffectProfile`;
    /// held here as JSON so that an SDK reads a listing whose profile grew a key.
    #[serde(default)]
    #[schema(value_type = nexus_core::registry::effect::EffectProfile)]
    pub effect_profile: Value,
    /// The plain definition: the exact bytes a plain declaration must reproduce.
    #[serde(default)]
    pub definition: Value,
    /// The unrendered, macro-bearing description. Read only by adaptation packs; empty when
    /// the server did not send it.
    #[serde(default)]
    pub template: String,
}

impl Catalog {
    /// The entry whose canonical name is `canonical`.
    pub fn entry(&self, canonical: &str) -> Option<&CatalogEntry> {
        self.tools.iter().find(|e| e.canonical_name == canonical)
    }

    /// The plain definition of `canonical`, to splice verbatim into an explicit tools array.
    pub fn definition_for(&self, canonical: &str) -> Option<&Value> {
        self.entry(canonical).map(|e| &e.definition)
    }

    /// The macro-bearing template of `canonical`.
    pub fn template_for(&self, canonical: &str) -> Option<&str> {
        self.entry(canonical).map(|e| e.template.as_str())
    }

    /// The canonical names, in catalog order.
    pub fn canonical_names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|e| e.canonical_name.as_str())
    }
}
