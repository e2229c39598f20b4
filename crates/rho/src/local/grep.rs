//! `grep {pattern, path?, glob?, ignore_case?, limit?}`: lines matching a regular expression,
//! as `path:line: text`, over the same walk as `glob` (binary files skipped).

use std::io::{BufRead, BufReader};
use std::path::Path;

use nexus_sdk::runner::{EffectProfile, ToolResult, ToolSpec};
use regex::bytes::{Regex, RegexBuilder};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::glob::{matcher, walk};
use super::paths::Root;
use super::text::{self, Fault, MAX_TEXT};

/// Matches per call when `limit` is absent.
pub const DEFAULT_LIMIT: usize = 100;
/// The largest `limit`.
pub const MAX_LIMIT: usize = 1000;
/// A matching line longer than this many bytes is cut.
const MAX_LINE: usize = 500;

/// The entry.
pub fn spec() -> ToolSpec {
    ToolSpec::new("grep", EffectProfile::READ)
        .description(
            "Search file contents under the workspace root with a regular expression (Rust \
             regex syntax). Returns matching lines as `path:line: text`, files in path order. \
             `path` is a folder or one file (default: the root); `glob` filters files (a \
             pattern without `/` matches file names, e.g. `*.rs`; with `/`, paths relative \
             to `path`). Ignored files (.gitignore), `.git` and binary files are skipped. \
             `limit` caps the matches (default 100, at most 1000).",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression."},
                "path": {"type": "string", "description": "Folder or file to search, relative to the root (default: the root)."},
                "glob": {"type": "string", "description": "Only files matching this glob."},
                "ignore_case": {"type": "boolean", "description": "Case-insensitive matching (default false)."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Most matches to return (default 100)."}
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
    #[serde(default)]
    glob: Option<String>,
    #[serde(default)]
    ignore_case: bool,
    #[serde(default)]
    limit: Option<usize>,
}

/// Runs `grep`.
pub fn run(root: &Root, input: &Value, cancel: &CancellationToken) -> ToolResult {
    text::run(
        "grep",
        input,
        |i: &Input| text::title("grep", &i.pattern),
        |i| grep(root, i, cancel),
    )
}

/// Which files the glob admits.
enum Filter {
    All,
    Name(globset::GlobMatcher),
    Path(globset::GlobMatcher),
}

impl Filter {
    fn admits(&self, relative: &Path) -> bool {
        match self {
            Filter::All => true,
            Filter::Name(m) => relative.file_name().is_some_and(|n| m.is_match(n)),
            Filter::Path(m) => m.is_match(relative),
        }
    }
}

struct Search {
    regex: Regex,
    limit: usize,
    out: String,
    matches: usize,
    files: usize,
    /// Stopped at `limit` or at the output bound.
    stopped: bool,
}

fn grep(root: &Root, input: &Input, cancel: &CancellationToken) -> Result<ToolResult, Fault> {
    let limit = input.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(format!("`limit` must be 1 to {MAX_LIMIT}").into());
    }
    let regex = RegexBuilder::new(&input.pattern)
        .case_insensitive(input.ignore_case)
        .build()
        .map_err(|e| format!("invalid regular expression: {e}"))?;
    let filter = match &input.glob {
        None => Filter::All,
        Some(g) if g.contains('/') => Filter::Path(matcher(g)?),
        Some(g) => Filter::Name(matcher(g)?),
    };
    let base = root
        .resolve(input.path.as_deref().unwrap_or("."))
        .map_err(|e| e.to_string())?;
    let meta = std::fs::metadata(&base.real).map_err(|e| format!("cannot search {}: {e}", base.shown))?;
    let mut search = Search {
        regex,
        limit,
        out: String::new(),
        matches: 0,
        files: 0,
        stopped: false,
    };
    if meta.is_file() {
        search.file(&base.real, &base.shown);
    } else {
        for entry in walk(&base.real) {
            if cancel.is_cancelled() {
                return Err(Fault::Canceled);
            }
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(relative) = entry.path().strip_prefix(&base.real) else {
                continue;
            };
            if !filter.admits(relative) {
                continue;
            }
            search.file(entry.path(), &root.show(entry.path()));
            if search.stopped {
                break;
            }
        }
    }
    if search.matches == 0 {
        return Ok(ToolResult::text(format!(
            "no lines match {:?} under {}",
            input.pattern, base.shown
        )));
    }
    let mut out = text::storable(search.out);
    if search.stopped {
        out.push_str(&format!(
            "[stopped after {} matches; narrow `path` or `glob`, or raise `limit` (at most {MAX_LIMIT})]",
            search.matches
        ));
    } else {
        out.push_str(&format!(
            "[{} in {}]",
            text::count(search.matches, "match", "matches"),
            text::count(search.files, "file", "files")
        ));
    }
    Ok(ToolResult::text(out))
}

impl Search {
    /// Appends the matches in one file; unreadable and binary files are skipped.
    fn file(&mut self, path: &Path, shown: &str) {
        let Ok(file) = std::fs::File::open(path) else {
            return;
        };
        let mut reader = BufReader::new(file);
        match reader.fill_buf() {
            Ok(head) if !text::looks_binary(head) => {}
            _ => return,
        }
        let mut line = Vec::new();
        let mut number = 0u64;
        let mut found = false;
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            number += 1;
            if !self.regex.is_match(&line) {
                continue;
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            let cut = text::prefix(text, MAX_LINE);
            let ellipsis = if cut.len() < text.len() { "…" } else { "" };
            let entry = format!("{shown}:{number}: {cut}{ellipsis}\n");
            if self.matches == self.limit || self.out.len() + entry.len() > MAX_TEXT {
                self.stopped = true;
                return;
            }
            self.out.push_str(&entry);
            self.matches += 1;
            if !found {
                found = true;
                self.files += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::tests::{TestRoot, text_of};

    fn grep(t: &TestRoot, input: Value) -> ToolResult {
        run(&t.root, &input, &CancellationToken::new())
    }

    fn fixture() -> TestRoot {
        let t = TestRoot::new();
        t.file("src/lib.rs", "// TODO: one\nfn a() {}\n// todo: two\n");
        t.file("src/main.rs", "fn main() {} // TODO three\n");
        t.file("README.md", "TODO docs\n");
        t.bytes("blob.bin", b"TODO\0binary");
        t
    }

    #[test]
    fn matches_come_back_as_path_line_text_with_a_summary() {
        let t = fixture();
        let r = grep(&t, json!({"pattern": "TODO"}));
        assert_eq!(
            text_of(&r),
            "README.md:1: TODO docs\nsrc/lib.rs:1: // TODO: one\nsrc/main.rs:1: fn main() {} // TODO three\n[3 matches in 3 files]"
        );
        assert_eq!(r.title.as_deref(), Some("grep TODO"));
    }

    #[test]
    fn ignore_case_glob_and_path_narrow_the_search() {
        let t = fixture();
        let r = grep(&t, json!({"pattern": "todo", "ignore_case": true, "glob": "*.rs"}));
        assert_eq!(
            text_of(&r),
            "src/lib.rs:1: // TODO: one\nsrc/lib.rs:3: // todo: two\nsrc/main.rs:1: fn main() {} // TODO three\n[3 matches in 2 files]"
        );
        let by_path = grep(&t, json!({"pattern": "TODO", "glob": "src/m*.rs"}));
        assert_eq!(
            text_of(&by_path),
            "src/main.rs:1: fn main() {} // TODO three\n[1 match in 1 file]"
        );
        let one_file = grep(&t, json!({"pattern": "fn", "path": "src/lib.rs"}));
        assert_eq!(text_of(&one_file), "src/lib.rs:2: fn a() {}\n[1 match in 1 file]");
    }

    #[test]
    fn the_limit_stops_the_search_with_a_note() {
        let t = TestRoot::new();
        t.file("many.txt", &"hit\n".repeat(50));
        let r = grep(&t, json!({"pattern": "hit", "limit": 5}));
        let out = text_of(&r);
        assert_eq!(out.lines().count(), 6);
        assert!(out.ends_with("[stopped after 5 matches; narrow `path` or `glob`, or raise `limit` (at most 1000)]"));
        let too_many = grep(&t, json!({"pattern": "hit", "limit": 5000}));
        assert!(too_many.is_error);
    }

    #[test]
    fn long_lines_are_cut_and_output_is_bounded() {
        let t = TestRoot::new();
        t.file("wide.txt", &format!("{}\n", "w".repeat(2000)).repeat(300));
        let out = text_of(&grep(&t, json!({"pattern": "w", "limit": 1000})));
        assert!(out.lines().next().unwrap().ends_with('…'));
        assert!(out.len() <= MAX_TEXT + 200);
        assert!(out.contains("[stopped after"));
    }

    #[test]
    fn bad_regex_no_match_escape_and_cancel() {
        let t = fixture();
        let bad = grep(&t, json!({"pattern": "("}));
        assert!(bad.is_error && text_of(&bad).contains("invalid regular expression"));
        let none = grep(&t, json!({"pattern": "zzz"}));
        assert!(!none.is_error && text_of(&none).contains("no lines match"));
        let out = grep(&t, json!({"pattern": "x", "path": "../"}));
        assert!(out.is_error && text_of(&out).contains("leaves the root"));
        let cancel = CancellationToken::new();
        cancel.cancel();
        let r = run(&t.root, &json!({"pattern": "x"}), &cancel);
        assert_eq!(r.outcome, nexus_sdk::runner::Outcome::Failed);
    }
}
