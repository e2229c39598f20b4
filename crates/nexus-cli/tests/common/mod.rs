//! The real `nexus` binary for the crash tests: one-shot commands and `nexus serve` processes
//! that a test can SIGKILL and start again on the same port and store.

#![allow(dead_code)]

pub mod pair;

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const NEXUS: &str = env!("CARGO_BIN_EXE_nexus");

/// Runs `nexus args…` to completion, with no store chosen by the environment.
pub fn nexus(args: &[&str]) -> Output {
    Command::new(NEXUS)
        .args(args)
        .env_remove("NEXUS_DATABASE_URL")
        .env_remove("NEXUS_DATA_DIR")
        .output()
        .expect("run nexus")
}

/// The JSON a successful command printed.
pub fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "nexus failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// A loopback port free when asked.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A `nexus serve` process, killed on drop.
pub struct Server {
    pub child: Child,
    pub base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// SIGKILL (`Child::kill`), then reap.
    pub fn kill_9(&mut self) {
        self.child.kill().expect("SIGKILL");
        let status = self.child.wait().unwrap();
        assert!(!status.success(), "killed, not exited: {status}");
    }
}

/// `nexus serve --listen <listen> args…`.
pub fn spawn_server_at(listen: &str, args: &[&str]) -> Server {
    spawn_server_with(listen, args, &[])
}

/// `nexus serve --listen <listen> args…` with `env` set for it.
pub fn spawn_server_with(listen: &str, args: &[&str], env: &[(&str, &str)]) -> Server {
    let mut all = vec!["serve", "--listen", listen];
    all.extend_from_slice(args);
    let child = Command::new(NEXUS)
        .args(&all)
        .env_remove("NEXUS_DATABASE_URL")
        .env_remove("NEXUS_DATA_DIR")
        .env_remove("NEXUS_NODE_ID")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start nexus serve");
    Server {
        child,
        base: format!("http://{listen}"),
    }
}

/// `nexus serve` on a free loopback port.
pub fn spawn_server(args: &[&str]) -> Server {
    spawn_server_at(&format!("127.0.0.1:{}", free_port()), args)
}

/// Polls `read` until `done` holds on its answer (panics after `secs`).
pub async fn poll<T: std::fmt::Debug, F: std::future::Future<Output = nexus_sdk::Result<T>>>(
    secs: u64,
    read: impl Fn() -> F,
    done: impl Fn(&T) -> bool,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let answer = read().await;
        if let Ok(value) = &answer
            && done(value)
        {
            return answer.unwrap();
        }
        assert!(Instant::now() < deadline, "timed out polling: {answer:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
