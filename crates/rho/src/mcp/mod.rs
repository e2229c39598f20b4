//! The MCP bridge: each `[[mcp]]` server over stdio, its tools served as `<server>_<tool>`
//! (executor.md §14).
//!
//! - [`server`] starts and supervises each child process (re-list on
//!   `notifications/tools/list_changed`, restart with backoff on exit);
//! - [`catalog`] turns a `tools/list` into announced entries, [`naming`] names them and
//!   refuses clashes, [`profile`] derives their effect profiles;
//! - [`results`] maps `tools/call` answers, staging binary content as captures.

mod catalog;
mod naming;
mod profile;
mod results;
mod server;

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests_everything;
#[cfg(test)]
mod tests_fixture;

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use nexus_sdk::runner::{EffectProfile, HandlerFuture, ToolCall, ToolResult, ToolSpec};
use rmcp::model::{CallToolRequestParams, Tool};
use rmcp::{Peer, RoleClient};
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use self::catalog::BridgedTool;
use self::naming::Origin;
pub use self::results::{Capture, Stage, StageFuture};
use self::server::{Backoff, Supervision};
use crate::config::McpServer;

/// Every bridged server.
pub struct Bridge {
    shared: Arc<Shared>,
    shutdown: CancellationToken,
}

impl Bridge {
    /// Starts every server and lists its tools; `on_change` is called when a server's tool
    /// list changes (the caller re-announces). Refuses name collisions across servers.
    pub async fn start(servers: &[McpServer], on_change: Arc<dyn Fn() + Send + Sync>) -> anyhow::Result<Bridge> {
        Bridge::start_with(servers, on_change, Backoff::default()).await
    }

    async fn start_with(
        servers: &[McpServer],
        on_change: Arc<dyn Fn() + Send + Sync>,
        backoff: Backoff,
    ) -> anyhow::Result<Bridge> {
        let mut connections = Vec::with_capacity(servers.len());
        for config in servers {
            let changed = Arc::new(Notify::new());
            let conn = server::connect(config, changed.clone()).await?;
            connections.push((conn, changed));
        }
        let origins: Vec<Origin> = servers
            .iter()
            .zip(&connections)
            .flat_map(|(config, (conn, _))| {
                conn.tools.iter().map(|tool| Origin {
                    server: config.name.clone(),
                    tool: tool.name.to_string(),
                })
            })
            .collect();
        naming::check_unique(&origins)?;
        let slots = servers
            .iter()
            .zip(&connections)
            .map(|(config, (conn, _))| Slot {
                config: config.clone(),
                tools: conn.tools.iter().map(|tool| catalog::bridged(config, tool)).collect(),
                peer: Some(conn.service.peer().clone()),
                pid: conn.pid,
            })
            .collect();
        let shared = Arc::new(Shared {
            slots: RwLock::new(slots),
        });
        let shutdown = CancellationToken::new();
        for (index, (conn, changed)) in connections.into_iter().enumerate() {
            let supervision = Supervision {
                shared: shared.clone(),
                index,
                changed,
                on_change: on_change.clone(),
                shutdown: shutdown.clone(),
                backoff,
            };
            tokio::spawn(supervision.run(conn));
        }
        Ok(Bridge { shared, shutdown })
    }

    /// The bridged tools' entries, profiles derived (before the config's overrides).
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.shared.read(|slots| {
            slots
                .iter()
                .flat_map(|slot| slot.tools.iter().map(|t| t.spec.clone()))
                .collect()
        })
    }

    /// The derived effect profile of the bridged tool `name`, if it is one.
    pub fn profile(&self, name: &str) -> Option<EffectProfile> {
        self.shared.read(|slots| {
            slots
                .iter()
                .flat_map(|slot| slot.tools.iter())
                .find(|t| t.spec.name == name)
                .map(|t| t.spec.effect_profile)
        })
    }

    /// Runs `call` when it names a bridged tool; `None` otherwise.
    pub fn call(&self, call: ToolCall) -> Option<HandlerFuture> {
        let route = self.shared.route(&call.tool_name)?;
        Some(Box::pin(async move {
            let input = call.input.clone();
            route.run(input, &ClaimStage(call)).await
        }))
    }

    /// Runs the bridged tool `name` with `input`, staging captures through `stage`; `None`
    /// when `name` is not bridged.
    #[cfg(test)]
    pub async fn call_tool(&self, name: &str, input: Value, stage: &dyn Stage) -> Option<ToolResult> {
        let route = self.shared.route(name)?;
        Some(route.run(input, stage).await)
    }

    /// The running child's process id of server `name` (tests kill it).
    #[cfg(test)]
    fn pid(&self, name: &str) -> Option<u32> {
        self.shared
            .read(|slots| slots.iter().find(|s| s.config.name == name).and_then(|s| s.pid))
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Stages a claim's captures.
struct ClaimStage(ToolCall);

impl Stage for ClaimStage {
    fn stage(&self, capture: Capture) -> StageFuture<'_> {
        // The kernel types the capture from its bytes (uploads.md §2); the server's declared
        // MIME type only names the file.
        Box::pin(async move {
            self.0
                .stage_capture(capture.bytes, &capture.filename)
                .await
                .map_err(|e| format!("staging {}: {e}", capture.filename))
        })
    }
}

/// The table every supervisor and call reads: one slot per `[[mcp]]` server.
pub struct Shared {
    slots: RwLock<Vec<Slot>>,
}

/// One server's current state.
struct Slot {
    config: McpServer,
    tools: Vec<BridgedTool>,
    /// `None` while the server is down and being restarted.
    peer: Option<Peer<RoleClient>>,
    pid: Option<u32>,
}

impl Shared {
    fn read<T>(&self, f: impl FnOnce(&[Slot]) -> T) -> T {
        let slots = self.slots.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&slots)
    }

    fn write<T>(&self, f: impl FnOnce(&mut [Slot]) -> T) -> T {
        let mut slots = self.slots.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut slots)
    }

    /// Server `index`'s config.
    fn config(&self, index: usize) -> McpServer {
        self.read(|slots| slots[index].config.clone())
    }

    /// Replaces server `index`'s tools with `tools`, leaving out any whose served name clashes
    /// (the clash is logged). Answers whether the announced entries changed.
    fn install_tools(&self, index: usize, tools: &[Tool]) -> bool {
        self.write(|slots| {
            let taken: BTreeMap<String, Origin> = slots
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != index)
                .flat_map(|(_, slot)| {
                    slot.tools.iter().map(|t| {
                        let origin = Origin {
                            server: slot.config.name.clone(),
                            tool: t.mcp_name.clone(),
                        };
                        (t.spec.name.clone(), origin)
                    })
                })
                .collect();
            let slot = &mut slots[index];
            let listed = tools.iter().map(|tool| catalog::bridged(&slot.config, tool)).collect();
            let (kept, clashes) = catalog::admit(&slot.config.name, listed, &taken);
            for clash in clashes {
                tracing::error!(server = %slot.config.name, "{clash}; leaving both out");
            }
            let changed = slot.tools != kept;
            slot.tools = kept;
            changed
        })
    }

    /// Server `index` is running again as `pid`, with `tools`.
    fn install(&self, index: usize, peer: Peer<RoleClient>, pid: Option<u32>, tools: &[Tool]) -> bool {
        self.write(|slots| {
            slots[index].peer = Some(peer);
            slots[index].pid = pid;
        });
        self.install_tools(index, tools)
    }

    /// Server `index` exited: calls fail until it runs again.
    fn mark_down(&self, index: usize) {
        self.write(|slots| {
            slots[index].peer = None;
            slots[index].pid = None;
        });
    }

    /// Where the served name `name` goes.
    fn route(&self, name: &str) -> Option<Route> {
        self.read(|slots| {
            slots.iter().find_map(|slot| {
                let tool = slot.tools.iter().find(|t| t.spec.name == name)?;
                Some(Route {
                    server: slot.config.name.clone(),
                    tool: tool.mcp_name.clone(),
                    peer: slot.peer.clone(),
                })
            })
        })
    }
}

/// One call's destination, taken when the call starts.
struct Route {
    server: String,
    tool: String,
    peer: Option<Peer<RoleClient>>,
}

impl Route {
    async fn run(self, input: Value, stage: &dyn Stage) -> ToolResult {
        let title = results::title(&self.server, &self.tool);
        let Some(peer) = self.peer else {
            return ToolResult::error(format!(
                "the MCP server `{}` is not running: it exited and rho is restarting it; try again shortly",
                self.server
            ))
            .with_title(title);
        };
        let mut params = CallToolRequestParams::new(self.tool.clone());
        match input {
            Value::Object(arguments) => params = params.with_arguments(arguments),
            Value::Null => {}
            other => {
                return ToolResult::failed(format!(
                    "the input of `{}` must be a JSON object, not {other}",
                    self.tool
                ))
                .with_title(title);
            }
        }
        let sent = std::time::Instant::now();
        let answer = peer.call_tool(params).await;
        // One line per call for the loopback benchmark (`benches/loopback.rs`): the
        // `tools/call` round trip alone, beside the SDK's `nexus_sdk::runner::timing` line.
        tracing::debug!(
            target: "rho::mcp::timing",
            server = %self.server,
            tool = %self.tool,
            call_us = sent.elapsed().as_micros() as u64,
        );
        match answer {
            Ok(result) => results::map_result(&self.server, &self.tool, result, stage).await,
            Err(error) => results::map_error(&self.server, &self.tool, error),
        }
    }
}
