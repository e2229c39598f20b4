//! `read {path, offset?, limit?}`: a window of a text file's lines, verbatim.
//!
//! The lines come back exactly as stored (no line numbers), so a model can copy them into
//! `edit`'s `old_text`. When the window does not reach the end, a note gives the line range
//! shown, the total, and the `offset` that continues.

use std::io::{BufRead, BufReader, Read};

use nexus_sdk::runner::{EffectProfile, ToolResult, ToolSpec};
use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::Root;
use super::text::{self, MAX_TEXT};

/// Lines per call when `limit` is absent.
pub const DEFAULT_LIMIT: u64 = 2000;

/// The entry.
pub fn spec() -> ToolSpec {
    ToolSpec::new("read", EffectProfile::READ)
        .description(
            "Read a text file under the workspace root. Returns the lines verbatim (no line \
             numbers), at most 2000 lines or 64 KiB per call; a note at the end says which lines \
             were shown and which `offset` continues. `offset` is the first line to return \
             (1-based), `limit` the number of lines.",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the root."},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to return (1-based; default 1)."},
                "limit": {"type": "integer", "minimum": 1, "description": "Most lines to return (default 2000)."}
            },
            "required": ["path"],
            "additionalProperties": false
        }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    path: String,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    limit: Option<u64>,
}

/// Runs `read`.
pub fn run(root: &Root, input: &Value) -> ToolResult {
    text::run(
        "read",
        input,
        |i: &Input| text::title("read", &i.path),
        |i| read(root, i),
    )
}

fn read(root: &Root, input: &Input) -> Result<ToolResult, String> {
    let offset = input.offset.unwrap_or(1);
    let limit = input.limit.unwrap_or(DEFAULT_LIMIT);
    if offset == 0 || limit == 0 {
        return Err("`offset` and `limit` count lines from 1".into());
    }
    let path = root.resolve(&input.path).map_err(|e| e.to_string())?;
    let shown = &path.shown;
    let meta = std::fs::metadata(&path.real).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if meta.is_dir() {
        return Err(format!("{shown} is a folder; list it with `glob`"));
    }
    if !meta.is_file() {
        // A FIFO or a device would block the read, or never end.
        return Err(format!("{shown} is not a regular file"));
    }
    let mut file = std::fs::File::open(&path.real).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let mut head = vec![0; 8 * 1024];
    let n = read_full(&mut file, &mut head).map_err(|e| format!("cannot read {shown}: {e}"))?;
    head.truncate(n);
    if text::looks_binary(&head) {
        return Err(format!(
            "{shown} looks like a binary file ({}); `read` serves text",
            text::size(meta.len())
        ));
    }
    let mut reader = BufReader::new(std::io::Cursor::new(head).chain(file));
    let mut out = String::new();
    let mut line = Vec::new();
    let mut number = 0u64;
    let mut last = 0u64; // the last line shown in full
    let mut cut_line: Option<(u64, usize)> = None; // a first line too long to show whole
    let mut full = false;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("cannot read {shown}: {e}"))?;
        if n == 0 {
            break;
        }
        number += 1;
        if number < offset || full || number - offset >= limit {
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        if out.len() + text.len() > MAX_TEXT {
            if out.is_empty() {
                // One line longer than the whole budget: show its head, say so.
                out.push_str(text::prefix(&text, MAX_TEXT));
                cut_line = Some((number, text.len()));
                last = number;
            }
            full = true;
            continue;
        }
        out.push_str(&text);
        last = number;
    }
    let total = number;
    if total == 0 {
        return Ok(ToolResult::text(format!("[{shown} is empty]")));
    }
    if offset > total {
        return Err(format!(
            "offset {offset} is past the end of {shown}, which has {total} lines"
        ));
    }
    let mut out = text::storable(out);
    if let Some((n, len)) = cut_line {
        out.push_str(&format!(
            "\n[line {n} is {} long; only its first 64 KiB are shown, and `read` cannot show the rest]",
            text::size(len as u64)
        ));
    }
    if last < total {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        let why = if full { " (output is bounded to 64 KiB)" } else { "" };
        out.push_str(&format!(
            "[showing lines {offset}-{last} of {total}{why}; {} more; use offset={} to continue]",
            total - last,
            last + 1
        ));
    }
    Ok(ToolResult::text(out))
}

/// Reads until `buf` is full or the file ends.
fn read_full(file: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::tests::{TestRoot, text_of};

    #[test]
    fn a_small_file_comes_back_verbatim_with_a_title() {
        let t = TestRoot::new();
        t.file("src/lib.rs", "fn a() {}\nfn b() {}\n");
        let r = run(&t.root, &json!({"path": "src/lib.rs"}));
        assert!(!r.is_error);
        assert_eq!(text_of(&r), "fn a() {}\nfn b() {}\n");
        assert_eq!(r.title.as_deref(), Some("read src/lib.rs"));
    }

    #[test]
    fn offset_and_limit_pick_a_window_and_the_note_says_how_to_continue() {
        let t = TestRoot::new();
        let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        t.file("f.txt", &body);
        let r = run(&t.root, &json!({"path": "f.txt", "offset": 3, "limit": 2}));
        assert_eq!(
            text_of(&r),
            "line 3\nline 4\n[showing lines 3-4 of 10; 6 more; use offset=5 to continue]"
        );
        let tail = run(&t.root, &json!({"path": "f.txt", "offset": 9}));
        assert_eq!(text_of(&tail), "line 9\nline 10\n");
        let past = run(&t.root, &json!({"path": "f.txt", "offset": 11}));
        assert!(past.is_error && text_of(&past).contains("has 10 lines"));
        let zero = run(&t.root, &json!({"path": "f.txt", "offset": 0}));
        assert!(zero.is_error);
    }

    #[test]
    fn a_large_file_is_cut_at_64_kib_with_a_note() {
        let t = TestRoot::new();
        let line = format!("{}\n", "x".repeat(999));
        t.file("big.txt", &line.repeat(200)); // 200,000 bytes
        let r = run(&t.root, &json!({"path": "big.txt"}));
        let out = text_of(&r);
        assert!(out.len() <= MAX_TEXT + 200, "{}", out.len());
        assert!(
            out.ends_with(
                "[showing lines 1-65 of 200 (output is bounded to 64 KiB); 135 more; use offset=66 to continue]"
            ),
            "{}",
            &out[out.len() - 150..]
        );
    }

    #[test]
    fn one_huge_line_shows_its_head_and_says_so() {
        let t = TestRoot::new();
        t.file("min.js", &format!("{}\nsecond\n", "y".repeat(100_000)));
        let out = text_of(&run(&t.root, &json!({"path": "min.js"})));
        assert!(out.starts_with("yyy"));
        assert!(out.contains("[line 1 is 97.7 KiB long"), "{}", &out[MAX_TEXT..]);
        assert!(out.ends_with("use offset=2 to continue]"));
    }

    #[test]
    fn binary_files_folders_missing_files_and_escapes_are_errors() {
        let t = TestRoot::new();
        t.bytes("blob.bin", &[0, 1, 2, 3]);
        t.file("dir/x", "");
        for (path, needle) in [
            ("blob.bin", "binary"),
            ("dir", "folder"),
            ("nope.txt", "cannot read nope.txt"),
            ("../etc/passwd", "leaves the root"),
            ("/etc/passwd", "outside the root"),
        ] {
            let r = run(&t.root, &json!({"path": path}));
            assert!(r.is_error, "{path}");
            assert!(text_of(&r).contains(needle), "{path}: {}", text_of(&r));
            assert!(r.title.is_some());
        }
    }

    #[test]
    fn empty_files_say_so_and_unknown_keys_are_refused() {
        let t = TestRoot::new();
        t.file("empty", "");
        assert_eq!(text_of(&run(&t.root, &json!({"path": "empty"}))), "[empty is empty]");
        let r = run(&t.root, &json!({"path": "empty", "file_path": "x"}));
        assert!(r.is_error && text_of(&r).contains("file_path"));
    }
}
