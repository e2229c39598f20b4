//! rho's own tools (executor.md §14): files under `root`, processes, skills.

use nexus_sdk::runner::{Document, HandlerFuture, ToolCall, ToolSpec};

use crate::config::RhoConfig;

/// The workspace state just before a mutating call: git HEAD (or a tree hash) and dirtiness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The commit or tree hash.
    pub hash: String,
    /// Whether the tree has changes not in `hash`.
    pub dirty: bool,
}

/// The local tools over one root.
pub struct Local {}

impl Local {
    /// Opens `config.root` (it must exist) and reads `config.skills_dir`.
    pub fn new(config: &RhoConfig) -> anyhow::Result<Local> {
        let _ = config;
        todo!("issue 24: local tools")
    }

    /// The local tools' entries.
    pub fn specs(&self) -> Vec<ToolSpec> {
        todo!("issue 24: local tools")
    }

    /// The skill documents found under `skills_dir`.
    pub fn documents(&self) -> Vec<Document> {
        todo!("issue 24: local tools")
    }

    /// The environment announcement: `{os, arch, hostname, root, shell, git?: {branch, head}}`.
    pub fn environment(&self) -> serde_json::Map<String, serde_json::Value> {
        todo!("issue 24: local tools")
    }

    /// The root's checkpoint, or `None` when it cannot be taken.
    pub fn checkpoint(&self) -> Option<Checkpoint> {
        todo!("issue 24: local tools")
    }

    /// Runs `call` when it names a local tool; `None` otherwise.
    pub fn call(&self, call: ToolCall) -> Option<HandlerFuture> {
        let _ = call;
        todo!("issue 24: local tools")
    }
}
