//! The [`Service`] rho serves: its local tools and every bridged MCP server's tools, with the
//! config's overrides applied, a checkpoint taken before each mutating call, and a title on
//! every result.

use std::collections::BTreeMap;
use std::sync::Arc;

use nexus_sdk::runner::{Announcement, EffectKind, HandlerFuture, Service, ToolCall, ToolResult, ToolSpec};
use serde_json::{Map, Value};

use crate::config::Override;
use crate::local::Local;
use crate::mcp::Bridge;

/// rho's service: local tools first, then the bridge's.
pub struct Rho {
    local: Arc<Local>,
    bridge: Option<Arc<Bridge>>,
    overrides: BTreeMap<String, Override>,
    environment: Map<String, Value>,
}

/// Why the combined tool list cannot be announced.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Two sources serve the same name.
    #[error("two tools would be served as `{0}`; rename an [[mcp]] server")]
    Collision(String),
    /// A bridged name falls in a kernel-reserved namespace; the kernel would refuse the
    /// whole announcement.
    #[error("`{name}` belongs to the kernel-reserved namespace {namespace}; rename the [[mcp]] server")]
    Reserved {
        /// The served name.
        name: String,
        /// The namespace, e.g. `nexus.graph`.
        namespace: &'static str,
    },
}

impl Rho {
    /// Combines the sources; a name served twice or a reserved name is refused.
    pub fn new(
        local: Arc<Local>,
        bridge: Option<Arc<Bridge>>,
        overrides: BTreeMap<String, Override>,
        environment: Map<String, Value>,
    ) -> Result<Rho, Refusal> {
        let rho = Rho {
            local,
            bridge,
            overrides,
            environment,
        };
        rho.specs()?;
        Ok(rho)
    }

    fn specs(&self) -> Result<Vec<ToolSpec>, Refusal> {
        let bridged = self.bridge.as_ref().map(|b| b.specs()).unwrap_or_default();
        merge(self.local.specs().into_iter().chain(bridged), &self.overrides)
    }

    /// Whether the call's profile is `write` (then a checkpoint is taken first). Looked up
    /// in the order calls are dispatched: an override, a local tool, a bridged one.
    fn is_mutating(&self, name: &str) -> bool {
        self.overrides
            .get(name)
            .and_then(|o| o.effect_profile)
            .or_else(|| self.local.profile(name))
            .or_else(|| self.bridge.as_ref().and_then(|b| b.profile(name)))
            .is_some_and(|p| p.kind == EffectKind::Write)
    }
}

impl Service for Rho {
    fn announcement(&self) -> Announcement {
        Announcement {
            // A refusal after a list change leaves the bridge's tools out rather than
            // announcing one name for two tools (or one the kernel refuses whole).
            tools: self.specs().unwrap_or_else(|refusal| {
                tracing::error!(%refusal, "the bridged tools are left out of the announcement");
                self.local.specs()
            }),
            environment: self.environment.clone(),
            documents: self.local.documents(),
        }
    }

    fn call(&self, call: ToolCall) -> HandlerFuture {
        // The checkpoint runs `git` (or walks the tree): off the async threads, and awaited
        // before the call's own future is first polled, so it is the state the call found.
        let checkpoint = self.is_mutating(&call.tool_name).then(|| {
            let local = self.local.clone();
            move || local.checkpoint()
        });
        let name = call.tool_name.clone();
        let inner = match self.local.call(call.clone()) {
            Some(fut) => fut,
            None => match self.bridge.as_ref().and_then(|b| b.call(call)) {
                Some(fut) => fut,
                None => Box::pin(async move { ToolResult::failed(format!("rho does not serve `{name}`")) }),
            },
        };
        Box::pin(async move {
            let taken = match checkpoint {
                Some(take) => tokio::task::spawn_blocking(take).await.ok().flatten(),
                None => None,
            };
            let mut result = inner.await;
            if let Some(cp) = taken {
                result = result.checkpoint(cp.hash, cp.dirty);
            }
            result
        })
    }
}

/// Applies the overrides and checks every name: unique, and outside the kernel-reserved
/// namespaces. Sorted by name.
fn merge(
    specs: impl Iterator<Item = ToolSpec>,
    overrides: &BTreeMap<String, Override>,
) -> Result<Vec<ToolSpec>, Refusal> {
    let mut out: BTreeMap<String, ToolSpec> = BTreeMap::new();
    for mut spec in specs {
        if let Some(namespace) = nexus_sdk::tools::reserved_namespace_of(&spec.name) {
            return Err(Refusal::Reserved {
                name: spec.name,
                namespace,
            });
        }
        if let Some(o) = overrides.get(&spec.name) {
            if let Some(profile) = o.effect_profile {
                spec.effect_profile = profile;
            }
            if let Some(ms) = o.timeout_ms {
                spec.timeout_ms = Some(ms);
            }
        }
        if out.contains_key(&spec.name) {
            return Err(Refusal::Collision(spec.name));
        }
        out.insert(spec.name.clone(), spec);
    }
    Ok(out.into_values().collect())
}

#[cfg(test)]
mod tests {
    use nexus_sdk::runner::EffectProfile;

    use super::*;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec::new(name, EffectProfile::READ)
    }

    #[test]
    fn overrides_apply_and_names_are_checked() {
        let write = EffectProfile {
            kind: EffectKind::Write,
            ..EffectProfile::READ
        };
        let overrides = BTreeMap::from([(
            "b".to_string(),
            Override {
                effect_profile: Some(write),
                timeout_ms: Some(5),
            },
        )]);
        let merged = merge([spec("b"), spec("a")].into_iter(), &overrides).unwrap();
        assert_eq!(merged.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(merged[1].effect_profile, write);
        assert_eq!(merged[1].timeout_ms, Some(5));
        assert_eq!(merged[0].effect_profile, EffectProfile::READ);

        assert_eq!(
            merge([spec("a"), spec("a")].into_iter(), &BTreeMap::new()),
            Err(Refusal::Collision("a".into()))
        );
        // A server named `delegate` with a tool `task` would serve a reserved wire name.
        let reserved = merge([spec("a"), spec("delegate_task")].into_iter(), &BTreeMap::new());
        assert!(
            matches!(
                reserved,
                Err(Refusal::Reserved {
                    namespace: "nexus.graph",
                    ..
                })
            ),
            "{reserved:?}"
        );
        assert!(merge([spec("memory_read"), spec("skill")].into_iter(), &BTreeMap::new()).is_ok());
    }
}
