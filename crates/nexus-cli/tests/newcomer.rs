//! What a newcomer meets first, on the built binary: `nexus login` fed by a pipe, the hint
//! when no server answers, `nexus runs` alone, a nexus.toml with a key it does not know, and
//! the log of `nexus serve` written to a pipe.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{NEXUS, free_port};

/// `nexus args…` with no connection or store chosen by the environment.
fn bare(config: &std::path::Path) -> Command {
    let mut cmd = Command::new(NEXUS);
    for var in [
        "NEXUS_URL",
        "NEXUS_TOKEN",
        "NEXUS_WORKSPACE",
        "NEXUS_PROFILE",
        "NEXUS_DATA_DIR",
        "NEXUS_DATABASE_URL",
        "NEXUS_LISTEN",
        "NEXUS_NODE_ID",
        "NO_COLOR",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("XDG_CONFIG_HOME", config);
    cmd
}

/// A bearer piped to `nexus login` gets no prompt; a server that is not there gets a hint
/// naming `nexus serve`.
#[test]
fn login_from_a_pipe_prompts_nothing_and_no_server_hints_serve() {
    let config = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}", free_port());
    let mut child = bare(config.path())
        .args(["login", "--url", &url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"nexus-v1-not-a-real-bearer\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("paste a member bearer"), "{stderr}");
    assert!(stderr.starts_with("error: unreachable: "), "{stderr}");
    assert!(
        stderr.contains("\nhint: ") && stderr.contains("`nexus serve`"),
        "{stderr}"
    );
}

/// `nexus runs` alone is `nexus runs list`: with no bearer anywhere it is refused as the list
/// is (exit 1, not_logged_in), not answered with usage (exit 2).
#[test]
fn runs_alone_lists() {
    let config = tempfile::tempdir().unwrap();
    let out = bare(config.path()).arg("runs").stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with("error: not_logged_in: "), "{stderr}");
}

/// A section nexus.toml does not know stops `nexus serve` before it opens anything, and the
/// message names the section and the file.
#[test]
fn serve_refuses_an_unknown_section() {
    let config = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("nexus.toml"), "[telemetri]\nendpoint = \"http://x\"\n").unwrap();
    let mut child = bare(config.path())
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("`telemetri`"), "{stderr}");
    assert!(
        stderr.contains(&data.path().join("nexus.toml").display().to_string()),
        "{stderr}"
    );
    assert!(!data.path().join("nexus.db").exists(), "nothing is opened");
}

/// `nexus serve` logging into a pipe writes no colour codes.
#[test]
fn serve_logs_no_colour_into_a_pipe() {
    let config = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let mut child = bare(config.path())
        .args(["serve", "--listen", &listen, "--data-dir"])
        .arg(data.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut seen = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(30)) {
        let serving = line.contains("nexus serving");
        seen.push(line);
        if serving {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(seen.iter().any(|l| l.contains("nexus serving")), "{seen:#?}");
    assert!(seen.iter().all(|l| !l.contains('\u{1b}')), "{seen:#?}");
}
