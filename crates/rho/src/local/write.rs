//! `write {path, content}`: replaces a whole file, creating it and its folders as needed.

use nexus_sdk::runner::{EffectKind, EffectProfile, EffectScope, Idempotency, Reconciliation, ToolResult, ToolSpec};
use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::Root;
use super::text;

/// `write, true, closed, intrinsic, lookup` (executor.md §14).
pub const PROFILE: EffectProfile = EffectProfile {
    kind: EffectKind::Write,
    destructive: true,
    effect_scope: EffectScope::Closed,
    idempotency: Idempotency::Intrinsic,
    reconciliation: Reconciliation::Lookup,
};

/// The entry.
pub fn spec() -> ToolSpec {
    ToolSpec::new("write", PROFILE)
        .description(
            "Write a whole file under the workspace root, replacing what was there; missing \
             folders are created. To change part of an existing file, prefer `edit`.",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the root."},
                "content": {"type": "string", "description": "The complete new content."}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    path: String,
    content: String,
}

/// Runs `write`.
pub fn run(root: &Root, input: &Value) -> ToolResult {
    text::run(
        "write",
        input,
        |i: &Input| text::title("write", &i.path),
        |i| write(root, i),
    )
}

fn write(root: &Root, input: &Input) -> Result<ToolResult, String> {
    let path = root.resolve(&input.path).map_err(|e| e.to_string())?;
    let shown = &path.shown;
    let before = match std::fs::metadata(&path.real) {
        Ok(m) if m.is_dir() => return Err(format!("{shown} is a folder")),
        Ok(m) if !m.is_file() => return Err(format!("{shown} is not a regular file")),
        Ok(m) => Some(m.len()),
        Err(_) => None,
    };
    if let Some(parent) = path.real.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create the folders of {shown}: {e}"))?;
    }
    std::fs::write(&path.real, &input.content).map_err(|e| format!("cannot write {shown}: {e}"))?;
    let now = text::size(input.content.len() as u64);
    Ok(ToolResult::text(match before {
        Some(old) => format!("wrote {shown} ({now}; it was {})", text::size(old)),
        None => format!("created {shown} ({now})"),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::tests::{TestRoot, text_of};

    #[test]
    fn creates_files_and_folders_then_overwrites() {
        let t = TestRoot::new();
        let r = run(&t.root, &json!({"path": "a/b/c.txt", "content": "hello\n"}));
        assert!(!r.is_error, "{}", text_of(&r));
        assert_eq!(text_of(&r), "created a/b/c.txt (6 B)");
        assert_eq!(r.title.as_deref(), Some("write a/b/c.txt"));
        assert_eq!(t.read("a/b/c.txt"), "hello\n");
        let again = run(&t.root, &json!({"path": "a/b/c.txt", "content": "hi"}));
        assert_eq!(text_of(&again), "wrote a/b/c.txt (2 B; it was 6 B)");
        assert_eq!(t.read("a/b/c.txt"), "hi");
    }

    #[test]
    fn escapes_write_nothing_outside() {
        let t = TestRoot::new();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), t.root.path().join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("new.txt"), t.root.path().join("dangling")).unwrap();
        for path in ["../x.txt", "out/x.txt", "out/deep/x.txt", "dangling"] {
            let r = run(&t.root, &json!({"path": path, "content": "pwned"}));
            assert!(r.is_error, "{path} was written");
            assert!(text_of(&r).contains(path), "{}", text_of(&r));
        }
        let abs = outside.path().join("abs.txt").display().to_string();
        assert!(run(&t.root, &json!({"path": abs, "content": "pwned"})).is_error);
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn folders_and_bad_input_are_errors() {
        let t = TestRoot::new();
        t.file("dir/x", "");
        assert!(run(&t.root, &json!({"path": "dir", "content": ""})).is_error);
        assert!(run(&t.root, &json!({"path": "f"})).is_error);
    }
}
