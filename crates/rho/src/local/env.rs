//! The environment announcement `{os, arch, hostname, root, shell, git?: {branch, head}}`,
//! and the `git` runner it and the checkpoint share.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Map, Value, json};

/// The shell `start_process` runs commands with.
pub const SHELL: &str = "/bin/sh";

/// Runs `git -C root args…`; its trimmed stdout when it succeeds.
pub fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Whether `root` lies inside a git work tree.
pub fn in_work_tree(root: &Path) -> bool {
    git(root, &["rev-parse", "--is-inside-work-tree"]).as_deref() == Some("true")
}

/// The announcement's `environment`.
pub fn environment(root: &Path) -> Map<String, Value> {
    let mut env = Map::new();
    env.insert("os".into(), json!(std::env::consts::OS));
    env.insert("arch".into(), json!(std::env::consts::ARCH));
    env.insert("hostname".into(), json!(hostname()));
    env.insert("root".into(), json!(root.display().to_string()));
    env.insert("shell".into(), json!(SHELL));
    if in_work_tree(root) {
        // An unborn branch has a name but no head; a detached head has no branch.
        let branch = git(root, &["symbolic-ref", "--short", "-q", "HEAD"]);
        let head = git(root, &["rev-parse", "--verify", "-q", "HEAD"]);
        env.insert("git".into(), json!({"branch": branch, "head": head}));
    }
    env
}

/// The machine's name: the kernel's record, else `$HOSTNAME`, else `hostname`, else `""`.
fn hostname() -> String {
    let from_file = std::fs::read_to_string("/proc/sys/kernel/hostname").ok();
    let from_env = || std::env::var("HOSTNAME").ok();
    let from_command = || {
        Command::new("hostname")
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    from_file
        .or_else(from_env)
        .or_else(from_command)
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::tests::TestRoot;

    #[test]
    fn outside_git_there_is_no_git_key() {
        let t = TestRoot::new();
        let env = environment(t.root.path());
        assert_eq!(env["os"], std::env::consts::OS);
        assert_eq!(env["arch"], std::env::consts::ARCH);
        assert_eq!(env["shell"], SHELL);
        assert_eq!(env["root"], t.root.path().display().to_string());
        assert!(!env["hostname"].as_str().unwrap().is_empty());
        assert!(!env.contains_key("git"));
    }

    #[test]
    fn inside_git_branch_and_head_are_announced() {
        let t = TestRoot::new();
        t.git_init();
        let unborn = environment(t.root.path());
        assert_eq!(unborn["git"], json!({"branch": "main", "head": null}));
        t.file("a", "1");
        let head = t.git_commit();
        assert_eq!(
            environment(t.root.path())["git"],
            json!({"branch": "main", "head": head})
        );
    }
}
