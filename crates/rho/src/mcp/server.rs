//! One MCP server as a supervised child process: start it over stdio, initialize, list its
//! tools; re-list on `notifications/tools/list_changed`; restart it with backoff when it exits.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, Tool};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::io::AsyncBufReadExt;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::Shared;
use crate::config::McpServer;

/// How long a server may take to start and answer `initialize` and `tools/list`.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How many of a server's last stderr lines a start error quotes.
const STDERR_TAIL: usize = 20;

/// When a server that exited is started again.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    /// The first delay after an exit.
    pub initial: Duration,
    /// The longest delay.
    pub max: Duration,
    /// A server that ran this long before exiting starts again from `initial`.
    pub stable: Duration,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff {
            initial: Duration::from_millis(250),
            max: Duration::from_secs(30),
            stable: Duration::from_secs(60),
        }
    }
}

/// The client side of one connection: it only listens for tool-list changes.
#[derive(Clone)]
pub struct Listener {
    changed: Arc<Notify>,
}

impl ClientHandler for Listener {
    fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) -> impl Future<Output = ()> + Send + '_ {
        self.changed.notify_one();
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("rho", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A started, initialized server and its first tool list.
pub struct Connection {
    /// The running client.
    pub service: RunningService<RoleClient, Listener>,
    /// The child's process id (its process group's id too).
    pub pid: Option<u32>,
    /// Every tool it listed, all pages.
    pub tools: Vec<Tool>,
}

/// Starts `config`'s command, initializes and lists its tools; `changed` is notified on each
/// `notifications/tools/list_changed`.
pub async fn connect(config: &McpServer, changed: Arc<Notify>) -> anyhow::Result<Connection> {
    let name = config.name.as_str();
    let mut command = tokio::process::Command::new(&config.command);
    command.args(&config.args).envs(&config.env);
    let mut wrapped = CommandWrap::from(command);
    wrapped.wrap(KillOnDrop).wrap(ProcessGroup::leader());
    let (process, stderr) = TokioChildProcess::builder(wrapped)
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting the MCP server `{name}` (command `{}`)", config.command))?;
    let pid = process.id();
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let reader = stderr.map(|stderr| tokio::spawn(forward_stderr(name.to_owned(), stderr, tail.clone())));
    let started = async {
        let service = Listener { changed }
            .serve(process)
            .await
            .map_err(|e| anyhow::anyhow!("initialize failed: {e}"))?;
        let tools = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| anyhow::anyhow!("tools/list failed: {e}"))?;
        anyhow::Ok((service, tools))
    };
    let outcome = match tokio::time::timeout(START_TIMEOUT, started).await {
        Ok(outcome) => outcome,
        Err(_) => Err(anyhow::anyhow!("no answer within {} s", START_TIMEOUT.as_secs())),
    };
    match outcome {
        Ok((service, tools)) => Ok(Connection { service, pid, tools }),
        Err(e) => {
            // The child is gone (or killed with the dropped transport): let its last words in.
            if let Some(reader) = reader {
                let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
            }
            let lines: Vec<String> = tail.lock().map(|t| t.iter().cloned().collect()).unwrap_or_default();
            let stderr = if lines.is_empty() {
                String::new()
            } else {
                format!("; its stderr ended with:\n{}", lines.join("\n"))
            };
            Err(anyhow::anyhow!(
                "the MCP server `{name}` (command `{}`) could not be started: {e}{stderr}",
                config.command
            ))
        }
    }
}

/// Logs a server's stderr line by line and keeps the last [`STDERR_TAIL`] lines.
async fn forward_stderr(name: String, stderr: tokio::process::ChildStderr, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(server = %name, "{line}");
        if let Ok(mut tail) = tail.lock() {
            if tail.len() == STDERR_TAIL {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    }
}

/// What a supervisor needs besides its connection.
pub struct Supervision {
    /// The bridge's table.
    pub shared: Arc<Shared>,
    /// This server's slot in it.
    pub index: usize,
    /// Notified on `notifications/tools/list_changed`.
    pub changed: Arc<Notify>,
    /// Called after a re-list (the runner re-announces).
    pub on_change: Arc<dyn Fn() + Send + Sync>,
    /// Canceled when the bridge is dropped.
    pub shutdown: CancellationToken,
    /// The restart schedule.
    pub backoff: Backoff,
}

impl Supervision {
    /// Watches `conn` until shutdown: re-lists on change, restarts on exit.
    pub async fn run(self, mut conn: Connection) {
        let config = self.shared.config(self.index).clone();
        let mut delay = self.backoff.initial;
        loop {
            let up_since = Instant::now();
            let stop = conn.service.cancellation_token();
            let peer = conn.service.peer().clone();
            let exited = conn.service.waiting();
            tokio::pin!(exited);
            let reason = loop {
                tokio::select! {
                    _ = self.shutdown.cancelled() => {
                        stop.cancel();
                        let _ = tokio::time::timeout(Duration::from_secs(5), exited).await;
                        return;
                    }
                    _ = self.changed.notified() => {
                        match peer.list_all_tools().await {
                            Ok(tools) => {
                                self.shared.install_tools(self.index, &tools);
                                (self.on_change)();
                            }
                            Err(e) => tracing::warn!(server = %config.name, "re-listing tools failed: {e}"),
                        }
                    }
                    reason = &mut exited => break reason,
                }
            };
            self.shared.mark_down(self.index);
            tracing::warn!(server = %config.name, ?reason, "the MCP server exited; restarting it");
            if up_since.elapsed() >= self.backoff.stable {
                delay = self.backoff.initial;
            }
            conn = loop {
                tokio::select! {
                    _ = self.shutdown.cancelled() => return,
                    _ = tokio::time::sleep(delay) => {}
                }
                delay = (delay * 2).min(self.backoff.max);
                match connect(&config, self.changed.clone()).await {
                    Ok(conn) => break conn,
                    Err(e) => tracing::warn!(server = %config.name, "restart failed: {e:#}"),
                }
            };
            let changed = self
                .shared
                .install(self.index, conn.service.peer().clone(), conn.pid, &conn.tools);
            tracing::info!(server = %config.name, pid = ?conn.pid, "the MCP server is running again");
            if changed {
                (self.on_change)();
            }
        }
    }
}
