//! `start_process`, `read_process`, `stop_process`: shell commands that outlive one call.
//!
//! A command runs as `/bin/sh -c <command>` in its own process group, stdin closed, stdout
//! and stderr interleaved into one pipe. A reader thread keeps the unread output in a bounded
//! buffer (the last 64 KiB of lines; older unread lines are dropped and counted). The
//! runner's bearer variable is removed from the child's environment. Stopping signals the
//! whole group: `SIGTERM`, then `SIGKILL` after a grace period. Processes live as long as
//! rho; ids (`p1`, `p2`, …) do not survive a restart.

#[cfg(not(unix))]
compile_error!("rho's process tools need a unix system (sh, process groups)");

mod output;

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use nexus_sdk::runner::{EffectKind, EffectProfile, EffectScope, Idempotency, Reconciliation, ToolResult};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use self::output::{Output, Taken};
use super::env::SHELL;
use super::paths::Root;
use super::text;

pub use self::specs::{read_spec, start_spec, stop_spec};

mod specs;

/// `write, true, open, none, none` (executor.md §14).
pub const START_PROFILE: EffectProfile = EffectProfile {
    kind: EffectKind::Write,
    destructive: true,
    effect_scope: EffectScope::Open,
    idempotency: Idempotency::None,
    reconciliation: Reconciliation::None,
};
/// `write, false, closed, intrinsic, none` (executor.md §14).
pub const STOP_PROFILE: EffectProfile = EffectProfile {
    kind: EffectKind::Write,
    destructive: false,
    effect_scope: EffectScope::Closed,
    idempotency: Idempotency::Intrinsic,
    reconciliation: Reconciliation::None,
};
/// `start_process`'s announced timeout.
pub const START_TIMEOUT_MS: u64 = 600_000;

/// At most this many processes run at once.
pub const MAX_RUNNING: usize = 16;
/// Finished processes are forgotten, oldest first, past this many entries.
const MAX_KEPT: usize = 64;
/// The longest `wait_ms`.
pub const MAX_WAIT_MS: u64 = 300_000;
/// How long `stop_process` waits after `SIGTERM`, and again after `SIGKILL`.
const GRACE: Duration = Duration::from_secs(2);
/// How long a read after exit waits for the pipe to drain.
const DRAIN: Duration = Duration::from_millis(200);

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Exit {
    code: Option<i32>,
    signal: Option<i32>,
}

struct Proc {
    id: String,
    pid: u32,
    output: Arc<Mutex<Output>>,
    exit: watch::Receiver<Option<Exit>>,
}

impl Proc {
    fn exit(&self) -> Option<Exit> {
        *self.exit.borrow()
    }

    fn output(&self) -> MutexGuard<'_, Output> {
        self.output.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Signals the whole group, unless the process is gone and nothing holds its pipe.
    fn signal(&self, signal: rustix::process::Signal) {
        if self.exit().is_some() && self.output().eof {
            return;
        }
        if let Some(pid) = i32::try_from(self.pid).ok().and_then(rustix::process::Pid::from_raw) {
            let _ = rustix::process::kill_process_group(pid, signal);
        }
    }

    /// Waits until the process exits, `limit` passes or `cancel` fires; true if it exited.
    async fn wait(&self, limit: Duration, cancel: &CancellationToken) -> bool {
        let mut exit = self.exit.clone();
        tokio::select! {
            r = exit.wait_for(Option::is_some) => r.is_ok(),
            () = tokio::time::sleep(limit) => false,
            () = cancel.cancelled() => false,
        }
    }

    /// After exit, gives the reader a moment to take the last bytes from the pipe.
    async fn drain(&self) {
        let deadline = tokio::time::Instant::now() + DRAIN;
        while !self.output().eof && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The unread output and the status, as a result.
    fn report(&self, lead: Option<String>) -> ToolResult {
        let Taken { text, dropped } = self.output().take();
        let mut out = lead.map(|l| format!("{l}\n")).unwrap_or_default();
        if dropped > 0 {
            out.push_str(&format!(
                "[{} of earlier output were dropped: rho keeps the last 64 KiB of unread output; read more often]\n",
                text::count(dropped as usize, "line", "lines")
            ));
        }
        out.push_str(&text);
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        let id = &self.id;
        let exit = self.exit();
        let status = match exit {
            None if text.is_empty() => format!("[no new output; {id} is running]"),
            None => format!("[{id} is running]"),
            Some(Exit { code: Some(code), .. }) => format!("[{id} exited with code {code}]"),
            Some(Exit { signal: Some(sig), .. }) => format!("[{id} was killed by signal {sig}]"),
            Some(_) => format!("[{id} has ended]"),
        };
        out.push_str(&status);
        let structured = match exit {
            None => json!({"process_id": id, "status": "running"}),
            Some(e) => json!({"process_id": id, "status": "exited", "exit_code": e.code, "signal": e.signal}),
        };
        ToolResult::text(text::storable(out)).with_structured(structured)
    }
}

/// The processes started through one rho.
pub struct Processes {
    hidden_env: Option<String>,
    next: AtomicU64,
    table: Mutex<BTreeMap<u64, Arc<Proc>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StartInput {
    command: String,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadInput {
    process_id: String,
    #[serde(default)]
    wait_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StopInput {
    process_id: String,
}

impl Processes {
    /// A table whose children never see the variable `hidden_env` (the runner's bearer).
    pub fn new(hidden_env: Option<String>) -> Processes {
        Processes {
            hidden_env,
            next: AtomicU64::new(1),
            table: Mutex::new(BTreeMap::new()),
        }
    }

    fn table(&self) -> MutexGuard<'_, BTreeMap<u64, Arc<Proc>>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn find(&self, id: &str) -> Result<Arc<Proc>, String> {
        let found = id
            .strip_prefix('p')
            .and_then(|n| n.parse::<u64>().ok())
            .and_then(|n| self.table().get(&n).cloned());
        found.ok_or_else(|| {
            format!(
                "unknown process_id {id:?}: ids come from start_process, and processes do not survive a restart of rho"
            )
        })
    }

    /// Runs `start_process` (must be called inside a tokio runtime).
    pub fn start(&self, root: &Root, input: &Value) -> ToolResult {
        let title = |i: &StartInput| text::title("start_process", i.command.trim());
        text::run("start_process", input, title, |i| self.spawn(root, i))
    }

    fn spawn(&self, root: &Root, input: &StartInput) -> Result<ToolResult, String> {
        if input.command.trim().is_empty() {
            return Err("`command` is empty".into());
        }
        let cwd: PathBuf = match &input.cwd {
            None => root.path().to_owned(),
            Some(cwd) => {
                let dir = root.resolve(cwd).map_err(|e| e.to_string())?;
                if !dir.real.is_dir() {
                    return Err(format!("cwd {} is not a folder", dir.shown));
                }
                dir.real
            }
        };
        let running = self.table().values().filter(|p| p.exit().is_none()).count();
        if running >= MAX_RUNNING {
            return Err(format!(
                "{running} processes are already running (at most {MAX_RUNNING}); stop one with stop_process"
            ));
        }
        let (reader, writer) = std::io::pipe().map_err(|e| format!("cannot create a pipe: {e}"))?;
        let writer_err = writer.try_clone().map_err(|e| format!("cannot create a pipe: {e}"))?;
        let mut command = tokio::process::Command::new(SHELL);
        command
            .arg("-c")
            .arg(&input.command)
            .current_dir(&cwd)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(writer_err)
            .process_group(0);
        if let Some(var) = &self.hidden_env {
            command.env_remove(var);
        }
        command.envs(&input.env);
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let id = format!("p{n}");
        let output = Arc::new(Mutex::new(Output::default()));
        // The reader first: should the spawn fail, the write ends close and it ends too.
        spawn_reader(&id, reader, Arc::clone(&output))?;
        let spawned = command.spawn();
        // The command holds the pipe's write ends: drop it so the reader sees the end.
        drop(command);
        let mut child = spawned.map_err(|e| format!("cannot start {SHELL}: {e}"))?;
        let pid = child.id().unwrap_or_default();
        let (tx, rx) = watch::channel(None);
        tokio::spawn(async move {
            let exit = match child.wait().await {
                Ok(status) => Exit {
                    code: status.code(),
                    signal: status.signal(),
                },
                Err(_) => Exit {
                    code: None,
                    signal: None,
                },
            };
            let _ = tx.send(Some(exit));
        });
        let proc = Arc::new(Proc {
            id: id.clone(),
            pid,
            output,
            exit: rx,
        });
        let mut table = self.table();
        table.insert(n, proc);
        while table.len() > MAX_KEPT {
            let Some(old) = table.iter().find(|(_, p)| p.exit().is_some()).map(|(k, _)| *k) else {
                break;
            };
            table.remove(&old);
        }
        Ok(ToolResult::text(format!(
            "started {id} (pid {pid}): {}\nRead its output with read_process {{\"process_id\": \"{id}\"}}; stop it with stop_process.",
            input.command.trim()
        ))
        .with_structured(json!({"process_id": id})))
    }

    /// Runs `read_process`: waits up to `wait_ms` for an exit, then reports.
    pub async fn read(&self, input: &Value, cancel: &CancellationToken) -> ToolResult {
        let input: ReadInput = match text::input("read_process", input) {
            Ok(i) => i,
            Err(e) => return *e,
        };
        let title = text::title("read_process", &input.process_id);
        let wait = input.wait_ms.unwrap_or(0);
        if wait > MAX_WAIT_MS {
            return ToolResult::error(format!("`wait_ms` is at most {MAX_WAIT_MS}")).with_title(title);
        }
        let proc = match self.find(&input.process_id) {
            Ok(p) => p,
            Err(e) => return ToolResult::error(e).with_title(title),
        };
        if wait > 0 && proc.exit().is_none() {
            proc.wait(Duration::from_millis(wait), cancel).await;
        }
        if cancel.is_cancelled() {
            return ToolResult::failed("canceled").with_title(title);
        }
        if proc.exit().is_some() {
            proc.drain().await;
        }
        proc.report(None).with_title(title)
    }

    /// Runs `stop_process`: `SIGTERM` to the group, `SIGKILL` if it lingers.
    pub async fn stop(&self, input: &Value, cancel: &CancellationToken) -> ToolResult {
        let input: StopInput = match text::input("stop_process", input) {
            Ok(i) => i,
            Err(e) => return *e,
        };
        let title = text::title("stop_process", &input.process_id);
        let proc = match self.find(&input.process_id) {
            Ok(p) => p,
            Err(e) => return ToolResult::error(e).with_title(title),
        };
        let id = &proc.id;
        if proc.exit().is_some() && proc.output().eof {
            return proc.report(Some(format!("{id} had already ended"))).with_title(title);
        }
        proc.signal(rustix::process::Signal::TERM);
        let mut lead = format!("sent SIGTERM to {id}");
        if !proc.wait(GRACE, cancel).await && !cancel.is_cancelled() {
            proc.signal(rustix::process::Signal::KILL);
            lead.push_str(&format!(", then SIGKILL after {} s", GRACE.as_secs()));
            proc.wait(GRACE, cancel).await;
        }
        if cancel.is_cancelled() {
            return ToolResult::failed("canceled").with_title(title);
        }
        proc.drain().await;
        proc.report(Some(lead)).with_title(title)
    }
}

impl Drop for Processes {
    /// rho is going away: its processes go with it.
    fn drop(&mut self) {
        for proc in self.table().values() {
            proc.signal(rustix::process::Signal::KILL);
        }
    }
}

/// A thread moving the pipe's bytes into `output` until every writer has closed it.
fn spawn_reader(id: &str, mut reader: std::io::PipeReader, output: Arc<Mutex<Output>>) -> Result<(), String> {
    std::thread::Builder::new()
        .name(format!("rho-{id}-output"))
        .spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                let n = match reader.read(&mut buf) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    read => read.unwrap_or(0),
                };
                let mut out = output.lock().unwrap_or_else(|e| e.into_inner());
                if n == 0 {
                    out.eof = true;
                    return;
                }
                out.push(&buf[..n]);
            }
        })
        .map(drop)
        .map_err(|e| format!("cannot start the output reader: {e}"))
}

#[cfg(test)]
mod tests;
