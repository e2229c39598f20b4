//! Test helpers shared by the tools' tests, and tests of [`Local`] as a whole.

use std::path::Path;
use std::process::Command;

use nexus_sdk::runner::{Block, EffectKind, EffectProfile, ToolResult};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::paths::Root;
use super::*;

/// A temporary root folder.
pub struct TestRoot {
    _dir: tempfile::TempDir,
    pub root: Root,
}

impl TestRoot {
    pub fn new() -> TestRoot {
        let dir = tempfile::tempdir().unwrap();
        TestRoot {
            root: Root::new(dir.path()).unwrap(),
            _dir: dir,
        }
    }

    pub fn file(&self, path: &str, body: &str) {
        self.bytes(path, body.as_bytes());
    }

    pub fn bytes(&self, path: &str, body: &[u8]) {
        let path = self.root.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }

    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.root.path().join(path)).unwrap()
    }

    pub fn git_init(&self) {
        git(self.root.path(), &["init", "-q", "-b", "main"]);
    }

    /// Commits everything; returns the new HEAD.
    pub fn git_commit(&self) -> String {
        git(self.root.path(), &["add", "-A"]);
        git(
            self.root.path(),
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.com",
                "-c",
                "commit.gpgsign=false",
                "commit",
                "-q",
                "-m",
                "x",
            ],
        );
        git(self.root.path(), &["rev-parse", "HEAD"])
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The single text block of a result.
pub fn text_of(result: &ToolResult) -> String {
    match result.content.as_slice() {
        [Block::Text { text }] => text.clone(),
        other => panic!("expected one text block, got {other:?}"),
    }
}

fn config(root: &Path, skills: Option<&Path>) -> RhoConfig {
    let mut text = format!(
        "kernel_url = \"http://127.0.0.1:1\"\nbearer_env = \"RHO_TEST_TOKEN\"\nroot = {:?}\n",
        root.display().to_string()
    );
    if let Some(dir) = skills {
        text.push_str(&format!("skills_dir = {:?}\n", dir.display().to_string()));
    }
    RhoConfig::parse(&text, Path::new("/")).unwrap()
}

#[test]
fn the_profiles_and_timeouts_are_the_spec_table() {
    let t = TestRoot::new();
    let skills = tempfile::tempdir().unwrap();
    let local = Local::new(&config(t.root.path(), Some(skills.path()))).unwrap();
    let profile = |kind, destructive: bool, scope: &str, idem: &str, rec: &str| {
        let kind = match kind {
            EffectKind::ReadOnly => "read_only",
            _ => "write",
        };
        EffectProfile::parse(&json!({
            "kind": kind, "destructive": destructive, "effect_scope": scope,
            "idempotency": idem, "reconciliation": rec
        }))
        .unwrap()
    };
    let w = EffectKind::Write;
    let expected = [
        ("read", EffectProfile::READ, None),
        ("glob", EffectProfile::READ, None),
        ("grep", EffectProfile::READ, None),
        ("write", profile(w, true, "closed", "intrinsic", "lookup"), None),
        ("edit", profile(w, true, "closed", "none", "lookup"), None),
        ("start_process", profile(w, true, "open", "none", "none"), Some(600_000)),
        ("read_process", EffectProfile::READ, None),
        ("stop_process", profile(w, false, "closed", "intrinsic", "none"), None),
        ("skill", EffectProfile::READ, None),
    ];
    let specs = local.specs();
    assert_eq!(specs.len(), expected.len());
    for ((name, profile, timeout), spec) in expected.into_iter().zip(&specs) {
        assert_eq!(spec.name, name);
        assert_eq!(spec.effect_profile, profile, "{name}");
        assert_eq!(spec.timeout_ms, timeout, "{name}");
        // A model can call every tool: a description and an object schema whose required
        // keys are among its properties.
        assert!(
            spec.description.as_deref().is_some_and(|d| !d.trim().is_empty()),
            "{name}"
        );
        let schema = spec.input_schema.as_ref().unwrap();
        assert_eq!(schema["type"], "object", "{name}");
        for key in schema["required"].as_array().unwrap() {
            assert!(
                schema["properties"].get(key.as_str().unwrap()).is_some(),
                "{name}: {key}"
            );
        }
    }
}

#[test]
fn without_a_skills_dir_skill_is_not_served() {
    let t = TestRoot::new();
    let local = Local::new(&config(t.root.path(), None)).unwrap();
    assert!(local.specs().iter().all(|s| s.name != "skill"));
    assert!(local.documents().is_empty());
    assert!(
        local
            .dispatch("skill", json!({"name": "x"}), CancellationToken::new())
            .is_none()
    );
}

#[test]
fn a_missing_root_or_skills_dir_is_a_clear_start_error() {
    let t = TestRoot::new();
    let missing = t.root.path().join("missing");
    let e = Local::new(&config(&missing, None)).err().unwrap();
    assert!(format!("{e:#}").contains("root"), "{e:#}");
    let e = Local::new(&config(t.root.path(), Some(&missing))).err().unwrap();
    assert!(format!("{e:#}").contains("skills_dir"), "{e:#}");
}

#[tokio::test]
async fn dispatch_routes_every_local_tool_and_nothing_else() {
    let t = TestRoot::new();
    t.file("a.txt", "alpha\n");
    let skills = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(skills.path().join("hello")).unwrap();
    std::fs::write(
        skills.path().join("hello/SKILL.md"),
        "---\ndescription: Greets.\n---\nSay hi.\n",
    )
    .unwrap();
    let local = Local::new(&config(t.root.path(), Some(skills.path()))).unwrap();
    let call = |name: &str, input| {
        local
            .dispatch(name, input, CancellationToken::new())
            .unwrap_or_else(|| panic!("{name} is not routed"))
    };
    assert_eq!(text_of(&call("read", json!({"path": "a.txt"})).await), "alpha\n");
    assert_eq!(text_of(&call("glob", json!({"pattern": "*.txt"})).await), "a.txt\n");
    assert!(text_of(&call("grep", json!({"pattern": "alp"})).await).starts_with("a.txt:1: alpha"));
    assert!(
        !call("write", json!({"path": "b.txt", "content": "beta"}))
            .await
            .is_error
    );
    assert!(
        !call(
            "edit",
            json!({"path": "b.txt", "old_text": "beta", "new_text": "gamma"})
        )
        .await
        .is_error
    );
    assert_eq!(t.read("b.txt"), "gamma");
    assert_eq!(text_of(&call("skill", json!({"name": "hello"})).await), "Say hi.\n");
    let started = call("start_process", json!({"command": "echo hi"})).await;
    let id = started.structured_content.unwrap()["process_id"].clone();
    let read = call("read_process", json!({"process_id": id, "wait_ms": 10_000})).await;
    assert_eq!(text_of(&read), "hi\n[p1 exited with code 0]");
    assert!(!call("stop_process", json!({"process_id": id})).await.is_error);
    assert!(local.dispatch("bash", json!({}), CancellationToken::new()).is_none());
    let docs = local.documents();
    assert_eq!(
        (docs[0].name.as_str(), docs[0].description.as_str()),
        ("hello", "Greets.")
    );
}

#[test]
fn special_files_are_refused_rather_than_blocking() {
    let t = TestRoot::new();
    let made = Command::new("mkfifo").arg(t.root.path().join("fifo")).status().unwrap();
    assert!(made.success());
    let read = read::run(&t.root, &json!({"path": "fifo"}));
    let edit = edit::run(&t.root, &json!({"path": "fifo", "old_text": "a", "new_text": "b"}));
    let write = write::run(&t.root, &json!({"path": "fifo", "content": "x"}));
    for r in [read, edit, write] {
        assert!(
            r.is_error && text_of(&r).contains("not a regular file"),
            "{}",
            text_of(&r)
        );
    }
}

#[test]
fn environment_and_checkpoint_describe_the_root() {
    let t = TestRoot::new();
    let local = Local::new(&config(t.root.path(), None)).unwrap();
    assert_eq!(local.environment()["root"], t.root.path().display().to_string());
    let cp = local.checkpoint().unwrap();
    assert!(cp.hash.starts_with("sha256:") && !cp.dirty);
}
