//! What the bridge's process tests share: finding node and the pinned reference server,
//! skipping loudly when they are absent (failing instead under `NEXUS_REQUIRE_MCP=1`), and a
//! bridge with a fast restart schedule and a change counter.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use nexus_sdk::runner::{Block, ToolResult};
use serde_json::Value;

use super::Bridge;
use super::server::Backoff;
use crate::config::McpServer;

/// Set to make a missing node or `node_modules` a failure rather than a skip (CI sets it).
const REQUIRE: &str = "NEXUS_REQUIRE_MCP";

fn required() -> bool {
    std::env::var(REQUIRE).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Skips (loudly) or fails, as [`REQUIRE`] says.
fn absent(test: &str, what: &str) -> Option<PathBuf> {
    if required() {
        panic!("{test}: {what}, and {REQUIRE} is set; run scripts/npm-install");
    }
    eprintln!(
        "\n!!!! SKIPPED {test}: {what}. Run scripts/npm-install (and set {REQUIRE}=1 to make this a failure). !!!!\n"
    );
    None
}

fn node_runs() -> bool {
    std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success())
}

/// The repository's root (`node_modules` and `package.json` live there).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The scripted fixture server's path, or `None` (skip) when node is missing.
pub fn fixture_or_skip(test: &str) -> Option<PathBuf> {
    if !node_runs() {
        return absent(test, "node is not installed");
    }
    Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/mcp/testdata/fixture.mjs"))
}

/// The pinned `@modelcontextprotocol/server-everything` entry point, or `None` (skip) when it
/// is not installed.
pub fn everything_or_skip(test: &str) -> Option<PathBuf> {
    let entry = repo_root().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !entry.is_file() {
        return absent(
            test,
            "node_modules/@modelcontextprotocol/server-everything is not installed",
        );
    }
    if !node_runs() {
        return absent(test, "node is not installed");
    }
    Some(entry)
}

/// A `[[mcp]]` entry running `node <script> <args>`.
pub fn node_server(name: &str, script: &Path, args: &[&str], env: &[(&str, &str)], trusted: bool) -> McpServer {
    McpServer {
        name: name.into(),
        command: "node".into(),
        args: std::iter::once(script.display().to_string())
            .chain(args.iter().map(|a| a.to_string()))
            .collect(),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        trusted,
    }
}

/// A bridge over `servers` that restarts within milliseconds, and how often it reported a
/// change.
pub async fn start(servers: &[McpServer]) -> anyhow::Result<(Bridge, Arc<AtomicUsize>)> {
    let changes = Arc::new(AtomicUsize::new(0));
    let counter = changes.clone();
    let backoff = Backoff {
        initial: Duration::from_millis(50),
        max: Duration::from_millis(500),
        stable: Duration::from_secs(60),
    };
    let bridge = Bridge::start_with(
        servers,
        Arc::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        }),
        backoff,
    )
    .await?;
    Ok((bridge, changes))
}

/// Polls `check` every 25 ms for up to 15 s.
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..600 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("timed out waiting for {what}");
}

/// The text blocks of a result, in order.
pub fn texts(result: &ToolResult) -> Vec<&str> {
    result
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            Block::ResourceLink { .. } => None,
        })
        .collect()
}

/// The JSON object `{…}` as a call input.
pub fn input(value: Value) -> Value {
    assert!(value.is_object());
    value
}
