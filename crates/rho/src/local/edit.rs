//! `edit {path, old_text, new_text}`: replaces the one occurrence of `old_text`.
//!
//! Occurrences are counted overlapping (`aa` occurs twice in `aaa`), so "unique" means the
//! replacement could not have meant another place.

use nexus_sdk::runner::{EffectKind, EffectProfile, EffectScope, Idempotency, Reconciliation, ToolResult, ToolSpec};
use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::Root;
use super::text;

/// `write, true, closed, none, lookup` (executor.md §14).
pub const PROFILE: EffectProfile = EffectProfile {
    kind: EffectKind::Write,
    destructive: true,
    effect_scope: EffectScope::Closed,
    idempotency: Idempotency::None,
    reconciliation: Reconciliation::Lookup,
};

/// Counting stops here; the message then says "at least".
const COUNT_CAP: usize = 1000;

/// The entry.
pub fn spec() -> ToolSpec {
    ToolSpec::new("edit", PROFILE)
        .description(
            "Replace exactly one occurrence of `old_text` with `new_text` in a file under the \
             workspace root. `old_text` must match the file exactly (whitespace and line \
             endings included) and occur exactly once; include surrounding lines to make it \
             unique. To write a whole file, use `write`.",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the root."},
                "old_text": {"type": "string", "description": "The exact text to replace; it must occur once."},
                "new_text": {"type": "string", "description": "The replacement."}
            },
            "required": ["path", "old_text", "new_text"],
            "additionalProperties": false
        }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    path: String,
    old_text: String,
    new_text: String,
}

/// Runs `edit`.
pub fn run(root: &Root, input: &Value) -> ToolResult {
    text::run(
        "edit",
        input,
        |i: &Input| text::title("edit", &i.path),
        |i| edit(root, i),
    )
}

fn edit(root: &Root, input: &Input) -> Result<ToolResult, String> {
    if input.old_text.is_empty() {
        return Err("`old_text` is empty; to write a whole file, use `write`".into());
    }
    if input.old_text == input.new_text {
        return Err("`old_text` and `new_text` are the same; nothing would change".into());
    }
    let path = root.resolve(&input.path).map_err(|e| e.to_string())?;
    let shown = &path.shown;
    match std::fs::metadata(&path.real) {
        Ok(m) if !m.is_file() => return Err(format!("{shown} is not a regular file")),
        Ok(_) => {}
        Err(e) => return Err(format!("cannot read {shown}: {e}")),
    }
    let bytes = std::fs::read(&path.real).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let body = String::from_utf8(bytes).map_err(|_| format!("{shown} is not UTF-8 text; `edit` changes text files"))?;
    let (count, first) = occurrences(&body, &input.old_text);
    let Some(at) = first else {
        return Err(format!(
            "`old_text` was not found in {shown}; read the file and copy the text exactly \
             (whitespace and line endings count)"
        ));
    };
    if count > 1 {
        let n = if count >= COUNT_CAP {
            format!("at least {COUNT_CAP}")
        } else {
            count.to_string()
        };
        return Err(format!(
            "`old_text` occurs {n} times in {shown}; include more surrounding lines so it occurs once"
        ));
    }
    let mut updated = String::with_capacity(body.len() - input.old_text.len() + input.new_text.len());
    updated.push_str(&body[..at]);
    updated.push_str(&input.new_text);
    updated.push_str(&body[at + input.old_text.len()..]);
    std::fs::write(&path.real, &updated).map_err(|e| format!("cannot write {shown}: {e}"))?;
    let first_line = body[..at].matches('\n').count() + 1;
    let old_lines = input.old_text.matches('\n').count() + 1;
    let new_lines = input.new_text.matches('\n').count() + 1;
    let range = if old_lines == 1 {
        format!("line {first_line}")
    } else {
        format!("lines {first_line}-{}", first_line + old_lines - 1)
    };
    Ok(ToolResult::text(format!(
        "edited {shown}: replaced {range} with {}",
        text::count(new_lines, "line", "lines")
    )))
}

/// How many times `needle` occurs in `hay`, overlaps included (capped), and where first.
fn occurrences(hay: &str, needle: &str) -> (usize, Option<usize>) {
    let mut count = 0;
    let mut first = None;
    let mut from = 0;
    while let Some(i) = hay[from..].find(needle) {
        let at = from + i;
        first.get_or_insert(at);
        count += 1;
        if count == COUNT_CAP {
            break;
        }
        // Step one character past this start, so overlapping occurrences count too.
        from = at + hay[at..].chars().next().map_or(1, char::len_utf8);
    }
    (count, first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::tests::{TestRoot, text_of};

    #[test]
    fn a_unique_occurrence_is_replaced() {
        let t = TestRoot::new();
        t.file("src/lib.rs", "fn a() {}\nfn b() {\n    1\n}\n");
        let r = run(
            &t.root,
            &json!({"path": "src/lib.rs", "old_text": "fn b() {\n    1\n}", "new_text": "fn b() { 2 }"}),
        );
        assert!(!r.is_error, "{}", text_of(&r));
        assert_eq!(text_of(&r), "edited src/lib.rs: replaced lines 2-4 with 1 line");
        assert_eq!(r.title.as_deref(), Some("edit src/lib.rs"));
        assert_eq!(t.read("src/lib.rs"), "fn a() {}\nfn b() { 2 }\n");
    }

    #[test]
    fn zero_or_several_occurrences_are_refused_with_the_count() {
        let t = TestRoot::new();
        t.file("f.txt", "x = 1\nx = 1\ny = é\n");
        let none = run(&t.root, &json!({"path": "f.txt", "old_text": "z", "new_text": "w"}));
        assert!(none.is_error && text_of(&none).contains("was not found in f.txt"));
        let two = run(
            &t.root,
            &json!({"path": "f.txt", "old_text": "x = 1", "new_text": "x = 2"}),
        );
        assert!(
            two.is_error && text_of(&two).contains("occurs 2 times in f.txt"),
            "{}",
            text_of(&two)
        );
        assert_eq!(t.read("f.txt"), "x = 1\nx = 1\ny = é\n");
        let one = run(&t.root, &json!({"path": "f.txt", "old_text": "é", "new_text": "e"}));
        assert_eq!(text_of(&one), "edited f.txt: replaced line 3 with 1 line");
    }

    #[test]
    fn overlapping_occurrences_count() {
        assert_eq!(occurrences("aaa", "aa"), (2, Some(0)));
        assert_eq!(occurrences("éaéa", "a"), (2, Some(2)));
        assert_eq!(occurrences("abc", "d"), (0, None));
        assert_eq!(occurrences(&"a".repeat(5000), "a").0, COUNT_CAP);
    }

    #[test]
    fn empty_same_missing_binary_and_escapes_are_errors() {
        let t = TestRoot::new();
        t.file("f.txt", "abc");
        t.bytes("bin", &[0xff, 0xfe, b'a']);
        for (input, needle) in [
            (json!({"path": "f.txt", "old_text": "", "new_text": "x"}), "empty"),
            (json!({"path": "f.txt", "old_text": "a", "new_text": "a"}), "the same"),
            (
                json!({"path": "nope", "old_text": "a", "new_text": "b"}),
                "cannot read nope",
            ),
            (json!({"path": "bin", "old_text": "a", "new_text": "b"}), "not UTF-8"),
            (
                json!({"path": "../f.txt", "old_text": "a", "new_text": "b"}),
                "leaves the root",
            ),
            (json!({"path": "f.txt", "old": "a"}), "invalid input"),
        ] {
            let r = run(&t.root, &input);
            assert!(r.is_error && text_of(&r).contains(needle), "{input}: {}", text_of(&r));
        }
        assert_eq!(t.read("f.txt"), "abc");
    }
}
