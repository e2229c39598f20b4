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

/// Two sources serve the same name.
#[derive(Debug, thiserror::Error)]
#[error("two tools would be served as `{0}`; rename an [[mcp]] server")]
pub struct Collision(pub String);

impl Rho {
    /// Combines the sources; a name served twice is refused.
    pub fn new(
        local: Arc<Local>,
        bridge: Option<Arc<Bridge>>,
        overrides: BTreeMap<String, Override>,
        environment: Map<String, Value>,
    ) -> Result<Rho, Collision> {
        let rho = Rho {
            local,
            bridge,
            overrides,
            environment,
        };
        rho.specs()?;
        Ok(rho)
    }

    fn specs(&self) -> Result<Vec<ToolSpec>, Collision> {
        let mut out: BTreeMap<String, ToolSpec> = BTreeMap::new();
        let bridged = self.bridge.as_ref().map(|b| b.specs()).unwrap_or_default();
        for mut spec in self.local.specs().into_iter().chain(bridged) {
            if let Some(o) = self.overrides.get(&spec.name) {
                if let Some(profile) = o.effect_profile {
                    spec.effect_profile = profile;
                }
                if let Some(ms) = o.timeout_ms {
                    spec.timeout_ms = Some(ms);
                }
            }
            if out.contains_key(&spec.name) {
                return Err(Collision(spec.name));
            }
            out.insert(spec.name.clone(), spec);
        }
        Ok(out.into_values().collect())
    }

    fn is_mutating(&self, name: &str) -> bool {
        self.specs()
            .ok()
            .and_then(|specs| specs.into_iter().find(|s| s.name == name))
            .is_some_and(|s| s.effect_profile.kind == EffectKind::Write)
    }
}

impl Service for Rho {
    fn announcement(&self) -> Announcement {
        Announcement {
            // A collision after a list change leaves the bridge's tools out rather than
            // announcing one name for two tools.
            tools: self.specs().unwrap_or_else(|_| self.local.specs()),
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
