//! `glob {pattern, path?}`: the files under a folder whose relative path matches a pattern.
//!
//! The walk honours `.gitignore` (inside a git work tree), skips `.git`, and never follows a
//! symbolic link, so it cannot wander out of the root. `*` stays within one path segment;
//! `**` crosses them.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use nexus_sdk::runner::{EffectProfile, ToolResult, ToolSpec};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::paths::{Resolved, Root};
use super::text::{self, Fault, MAX_TEXT};

/// The most paths one call lists.
pub const MAX_PATHS: usize = 1000;

/// The entry.
pub fn spec() -> ToolSpec {
    ToolSpec::new("glob", EffectProfile::READ)
        .description(
            "List files under the workspace root whose path matches a glob pattern, sorted. \
             `*` matches within one path segment, `**` across folders (`**/*.rs`), `{a,b}` \
             either. Paths are relative to the root; files ignored by .gitignore and the .git \
             folder are skipped. At most 1000 paths.",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob matched against each file's path relative to `path`."},
                "path": {"type": "string", "description": "Folder to search, relative to the root (default: the root)."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

/// Runs `glob`.
pub fn run(root: &Root, input: &Value, cancel: &CancellationToken) -> ToolResult {
    let title = |i: &Input| match &i.path {
        Some(p) => text::title("glob", &format!("{} in {p}", i.pattern)),
        None => text::title("glob", &i.pattern),
    };
    text::run("glob", input, title, |i| glob(root, i, cancel))
}

fn glob(root: &Root, input: &Input, cancel: &CancellationToken) -> Result<ToolResult, Fault> {
    let matcher = matcher(&input.pattern)?;
    let base = folder(root, input.path.as_deref())?;
    let mut found = Vec::new();
    for entry in walk(&base.real) {
        if cancel.is_cancelled() {
            return Err(Fault::Canceled);
        }
        let Ok(entry) = entry else { continue };
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(&base.real) else {
            continue;
        };
        if matcher.is_match(relative) {
            found.push(root.show(entry.path()));
        }
    }
    found.sort();
    if found.is_empty() {
        return Ok(ToolResult::text(format!(
            "no files match {:?} under {}",
            input.pattern, base.shown
        )));
    }
    let total = found.len();
    let mut out = String::new();
    let mut shown = 0;
    for path in &found {
        if shown == MAX_PATHS || out.len() + path.len() + 1 > MAX_TEXT {
            break;
        }
        out.push_str(path);
        out.push('\n');
        shown += 1;
    }
    if shown < total {
        out.push_str(&format!(
            "[{shown} of {total} paths shown; narrow the pattern or the path to see the rest]"
        ));
    }
    Ok(ToolResult::text(text::storable(out)))
}

/// A glob whose `*` does not cross `/`.
pub fn matcher(pattern: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("invalid glob {pattern:?}: {e}"))
}

/// `path` (default the root) resolved, which must be a folder.
fn folder(root: &Root, path: Option<&str>) -> Result<Resolved, String> {
    let base = root.resolve(path.unwrap_or(".")).map_err(|e| e.to_string())?;
    match std::fs::metadata(&base.real) {
        Ok(m) if m.is_dir() => Ok(base),
        Ok(_) => Err(format!("{} is a file, not a folder", base.shown)),
        Err(e) => Err(format!("cannot list {}: {e}", base.shown)),
    }
}

/// A walk under `base`: hidden files included, `.git` and git-ignored paths skipped, links
/// not followed, in a stable order.
pub fn walk(base: &Path) -> ignore::Walk {
    ignore::WalkBuilder::new(base)
        .hidden(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git")
        .sort_by_file_name(|a, b| a.cmp(b))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::tests::{TestRoot, text_of};

    fn glob(t: &TestRoot, input: Value) -> ToolResult {
        run(&t.root, &input, &CancellationToken::new())
    }

    #[test]
    fn star_stays_in_a_segment_and_double_star_crosses() {
        let t = TestRoot::new();
        t.file("a.rs", "");
        t.file("src/lib.rs", "");
        t.file("src/deep/mod.rs", "");
        t.file("src/notes.md", "");
        let top = glob(&t, json!({"pattern": "*.rs"}));
        assert_eq!(text_of(&top), "a.rs\n");
        assert_eq!(top.title.as_deref(), Some("glob *.rs"));
        let all = glob(&t, json!({"pattern": "**/*.rs"}));
        assert_eq!(text_of(&all), "a.rs\nsrc/deep/mod.rs\nsrc/lib.rs\n");
        let under = glob(&t, json!({"pattern": "*.{rs,md}", "path": "src"}));
        assert_eq!(text_of(&under), "src/lib.rs\nsrc/notes.md\n");
        assert_eq!(under.title.as_deref(), Some("glob *.{rs,md} in src"));
    }

    #[test]
    fn gitignored_files_and_the_git_folder_are_skipped() {
        let t = TestRoot::new();
        t.git_init();
        t.file(".gitignore", "target/\n");
        t.file("target/debug/out.rs", "");
        t.file("keep.rs", "");
        t.file(".github/ci.yml", "");
        let out = text_of(&glob(&t, json!({"pattern": "**/*"})));
        assert_eq!(out, ".github/ci.yml\n.gitignore\nkeep.rs\n");
    }

    #[test]
    fn links_out_of_the_root_are_not_walked() {
        let t = TestRoot::new();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.rs"), "").unwrap();
        std::os::unix::fs::symlink(outside.path(), t.root.path().join("out")).unwrap();
        let out = text_of(&glob(&t, json!({"pattern": "**/*.rs"})));
        assert!(!out.contains("secret"), "{out}");
        let r = glob(&t, json!({"pattern": "*", "path": "out"}));
        assert!(r.is_error && text_of(&r).contains("symbolic link"));
    }

    #[test]
    fn many_matches_are_bounded_with_a_note() {
        let t = TestRoot::new();
        for i in 0..1005 {
            t.file(&format!("f{i:04}.txt"), "");
        }
        let out = text_of(&glob(&t, json!({"pattern": "*.txt"})));
        assert!(out.ends_with("[1000 of 1005 paths shown; narrow the pattern or the path to see the rest]"));
    }

    #[test]
    fn no_match_bad_patterns_files_and_cancel_are_reported() {
        let t = TestRoot::new();
        t.file("a.txt", "");
        let none = glob(&t, json!({"pattern": "*.rs"}));
        assert!(!none.is_error && text_of(&none).contains("no files match"));
        let bad = glob(&t, json!({"pattern": "a[", "path": "."}));
        assert!(bad.is_error && text_of(&bad).contains("invalid glob"));
        let file = glob(&t, json!({"pattern": "*", "path": "a.txt"}));
        assert!(file.is_error && text_of(&file).contains("not a folder"));
        let cancel = CancellationToken::new();
        cancel.cancel();
        let r = run(&t.root, &json!({"pattern": "*"}), &cancel);
        assert_eq!(r.outcome, nexus_sdk::runner::Outcome::Failed);
    }
}
