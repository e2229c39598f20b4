//! The MCP bridge: each `[[mcp]]` server over stdio, its tools served as `<server>_<tool>`.

use std::sync::Arc;

use nexus_sdk::runner::{HandlerFuture, ToolCall, ToolSpec};

use crate::config::McpServer;

/// Every bridged server.
pub struct Bridge {}

impl Bridge {
    /// Starts every server and lists its tools; `on_change` is called when a server's tool
    /// list changes (the caller re-announces). Refuses name collisions across servers.
    pub async fn start(servers: &[McpServer], on_change: Arc<dyn Fn() + Send + Sync>) -> anyhow::Result<Bridge> {
        let _ = (servers, on_change);
        todo!("issue 24: MCP bridge")
    }

    /// The bridged tools' entries, profiles derived (before the config's overrides).
    pub fn specs(&self) -> Vec<ToolSpec> {
        todo!("issue 24: MCP bridge")
    }

    /// Runs `call` when it names a bridged tool; `None` otherwise.
    pub fn call(&self, call: ToolCall) -> Option<HandlerFuture> {
        let _ = call;
        todo!("issue 24: MCP bridge")
    }
}
