//! rho's own tools (executor.md §14): files under `root`, processes, skills.
//!
//! Each tool is a plain function of its JSON input (plus the call's cancel token where it
//! waits or walks) returning a [`ToolResult`] with a title; [`Local::call`] only routes to
//! them. File tools run on the blocking pool. Every path goes through [`paths::Root`].

mod checkpoint;
mod edit;
mod env;
mod glob;
mod grep;
mod paths;
mod process;
mod read;
mod skill;
mod text;
mod write;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use nexus_sdk::runner::{Document, EffectProfile, HandlerFuture, ToolCall, ToolResult, ToolSpec};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use self::paths::Root;
use self::process::Processes;
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
pub struct Local {
    root: Arc<Root>,
    skills_dir: Option<Arc<Path>>,
    processes: Arc<Processes>,
    /// The entries, built once: they depend only on whether `skills_dir` is set.
    specs: Vec<ToolSpec>,
}

impl Local {
    /// Opens `config.root` (it must exist) and reads `config.skills_dir`.
    pub fn new(config: &RhoConfig) -> anyhow::Result<Local> {
        let root = Root::new(&config.root).context("rho.toml `root` must be an existing folder")?;
        let skills_dir = match &config.skills_dir {
            None => None,
            Some(dir) => {
                let dir: PathBuf = std::fs::canonicalize(dir)
                    .ok()
                    .filter(|d| d.is_dir())
                    .with_context(|| format!("rho.toml `skills_dir` {} is not a folder", dir.display()))?;
                Some(Arc::from(dir))
            }
        };
        let mut specs = vec![
            read::spec(),
            glob::spec(),
            grep::spec(),
            write::spec(),
            edit::spec(),
            process::start_spec(),
            process::read_spec(),
            process::stop_spec(),
        ];
        if skills_dir.is_some() {
            specs.push(skill::spec());
        }
        Ok(Local {
            root: Arc::new(root),
            skills_dir,
            processes: Arc::new(Processes::new(Some(config.bearer_env.clone()))),
            specs,
        })
    }

    /// The local tools' entries (`skill` only when a `skills_dir` is configured).
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.specs.clone()
    }

    /// The effect profile of the local tool `name`, if it is one.
    pub fn profile(&self, name: &str) -> Option<EffectProfile> {
        self.specs.iter().find(|s| s.name == name).map(|s| s.effect_profile)
    }

    /// The skill documents found under `skills_dir`.
    pub fn documents(&self) -> Vec<Document> {
        self.skills_dir.as_deref().map(skill::documents).unwrap_or_default()
    }

    /// The environment announcement: `{os, arch, hostname, root, shell, git?: {branch, head}}`.
    pub fn environment(&self) -> serde_json::Map<String, serde_json::Value> {
        env::environment(self.root.path())
    }

    /// The root's checkpoint, or `None` when it cannot be taken.
    pub fn checkpoint(&self) -> Option<Checkpoint> {
        checkpoint::checkpoint(self.root.path())
    }

    /// Runs `call` when it names a local tool; `None` otherwise.
    pub fn call(&self, call: ToolCall) -> Option<HandlerFuture> {
        self.dispatch(&call.tool_name, call.input, call.cancel)
    }

    /// Routes one call by name (what [`Local::call`] does, testable without a claim).
    fn dispatch(&self, name: &str, input: Value, cancel: CancellationToken) -> Option<HandlerFuture> {
        let root = Arc::clone(&self.root);
        let processes = Arc::clone(&self.processes);
        Some(match name {
            "read" => blocking(move || read::run(&root, &input)),
            "glob" => blocking(move || glob::run(&root, &input, &cancel)),
            "grep" => blocking(move || grep::run(&root, &input, &cancel)),
            "write" => blocking(move || write::run(&root, &input)),
            "edit" => blocking(move || edit::run(&root, &input)),
            "skill" if self.skills_dir.is_some() => {
                let dir = self.skills_dir.clone();
                blocking(move || skill::run(dir.as_deref(), &input))
            }
            "start_process" => Box::pin(async move { processes.start(&root, &input) }),
            "read_process" => Box::pin(async move { processes.read(&input, &cancel).await }),
            "stop_process" => Box::pin(async move { processes.stop(&input, &cancel).await }),
            _ => return None,
        })
    }
}

/// Runs a file tool on the blocking pool.
fn blocking(tool: impl FnOnce() -> ToolResult + Send + 'static) -> HandlerFuture {
    Box::pin(async move {
        tokio::task::spawn_blocking(tool)
            .await
            .unwrap_or_else(|e| ToolResult::failed(format!("the tool stopped unexpectedly: {e}")))
    })
}
