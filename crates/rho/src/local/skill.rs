//! `skill {name}` and the announced documents: `<skills_dir>/<name>/SKILL.md`, whose
//! front matter (a `---` block) carries the `description`.
//!
//! The front matter is read line by line rather than as YAML: `description:` followed by a
//! value on the same line (quotes stripped), or by `|` / `>` and indented lines, or by
//! indented continuation lines. `skill` returns the body after the front matter.

use std::path::Path;

use nexus_sdk::runner::{Document, EffectProfile, ToolResult, ToolSpec};
use serde::Deserialize;
use serde_json::{Value, json};

use super::text::{self, MAX_TEXT};

/// The longest announced description (kernel bound).
pub const MAX_DESCRIPTION: usize = 1024;

/// The entry.
pub fn spec() -> ToolSpec {
    ToolSpec::new("skill", EffectProfile::READ)
        .description(
            "Load a skill document by name: returns its instructions. The available skills and \
             what each is for are listed with the runner's documents.",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name, e.g. `release-notes`."}
            },
            "required": ["name"],
            "additionalProperties": false
        }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    name: String,
}

/// The skill grammar (kernel-tools.md §9): `[a-z0-9](-?[a-z0-9])*`, at most 64 characters.
pub fn is_skill_name(name: &str) -> bool {
    let b = name.as_bytes();
    let ok = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= 64
        && ok(b[0])
        && ok(b[b.len() - 1])
        && b.iter().all(|&c| ok(c) || c == b'-')
        && !name.contains("--")
}

/// Runs `skill`.
pub fn run(skills_dir: Option<&Path>, input: &Value) -> ToolResult {
    text::run(
        "skill",
        input,
        |i: &Input| text::title("skill", &i.name),
        |i| load(skills_dir, &i.name),
    )
}

fn load(skills_dir: Option<&Path>, name: &str) -> Result<ToolResult, String> {
    if !is_skill_name(name) {
        return Err(format!(
            "skill_name_invalid: {name:?} is not a skill name ([a-z0-9](-?[a-z0-9])*, at most 64 characters)"
        ));
    }
    let body = skills_dir.and_then(|dir| std::fs::read_to_string(dir.join(name).join("SKILL.md")).ok());
    let Some(body) = body else {
        return Err(format!("skill_unknown: this runner has no skill named {name:?}"));
    };
    let (_, body) = split(&body);
    let mut out = text::storable(text::prefix(body, MAX_TEXT).to_owned());
    if out.len() < body.len() {
        out.push_str(&format!(
            "\n[the skill is {}; only its first 64 KiB are shown]",
            text::size(body.len() as u64)
        ));
    }
    Ok(ToolResult::text(out))
}

/// Every `<dir>/<name>/SKILL.md` with a valid name and a non-blank description, by name.
/// Others are skipped with a warning (one bad file must not void the whole announcement).
pub fn documents(dir: &Path) -> Vec<Document> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        tracing::warn!(dir = %dir.display(), "skills_dir cannot be read");
        return Vec::new();
    };
    let mut docs = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let file = entry.path().join("SKILL.md");
        let Ok(body) = std::fs::read_to_string(&file) else {
            continue;
        };
        if !is_skill_name(&name) {
            tracing::warn!(file = %file.display(), "skipped: the folder name is not a skill name");
            continue;
        }
        let Some(description) = description(&body) else {
            tracing::warn!(file = %file.display(), "skipped: no `description` in its front matter");
            continue;
        };
        let cut = text::prefix(&description, MAX_DESCRIPTION);
        if cut.len() < description.len() {
            tracing::warn!(file = %file.display(), "description cut to {MAX_DESCRIPTION} bytes");
        }
        docs.push(Document {
            name,
            description: cut.to_owned(),
        });
    }
    docs.sort_by(|a, b| a.name.cmp(&b.name));
    docs
}

/// The front matter (without its fences) and the body after it.
fn split(file: &str) -> (Option<&str>, &str) {
    let Some(rest) = file.strip_prefix("---\n").or_else(|| file.strip_prefix("---\r\n")) else {
        return (None, file);
    };
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let body = &rest[at + line.len()..];
            return (Some(&rest[..at]), body.trim_start_matches(['\n', '\r']));
        }
        at += line.len();
    }
    (None, file)
}

/// The `description` of the front matter, non-blank, whitespace-collapsed.
pub fn description(file: &str) -> Option<String> {
    let (front, _) = split(file);
    let mut lines = front?.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(value) = line.strip_prefix("description:") else {
            continue;
        };
        let value = value.trim();
        let mut parts: Vec<&str> = Vec::new();
        if !matches!(value, "|" | ">" | "|-" | ">-" | "") {
            parts.push(unquote(value));
        }
        // Indented lines continue the value (block scalars and plain folded lines alike).
        while let Some(next) = lines.peek() {
            if !next.starts_with([' ', '\t']) {
                break;
            }
            parts.push(next.trim());
            lines.next();
        }
        let joined = parts
            .iter()
            .flat_map(|p| p.split_whitespace())
            .collect::<Vec<_>>()
            .join(" ");
        return (!joined.is_empty()).then_some(joined);
    }
    None
}

fn unquote(value: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner;
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::tests::text_of;

    fn skills() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let put = |name: &str, body: &str| {
            std::fs::create_dir_all(dir.path().join(name)).unwrap();
            std::fs::write(dir.path().join(name).join("SKILL.md"), body).unwrap();
        };
        put(
            "release-notes",
            "---\nname: release-notes\ndescription: \"Write release notes\"\n---\n\n# Steps\n1. Read the log.\n",
        );
        put(
            "folded",
            "---\ndescription: >\n  Two lines\n  folded.\nother: x\n---\nBody\n",
        );
        put("no-description", "---\nname: x\n---\nBody\n");
        put("No_Good", "---\ndescription: bad name\n---\n");
        put("long", &format!("---\ndescription: {}\n---\n", "é".repeat(600)));
        std::fs::create_dir_all(dir.path().join("empty")).unwrap();
        dir
    }

    #[test]
    fn documents_list_valid_skills_with_their_descriptions() {
        let dir = skills();
        let docs = documents(dir.path());
        let names: Vec<&str> = docs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["folded", "long", "release-notes"]);
        assert_eq!(docs[0].description, "Two lines folded.");
        assert_eq!(docs[1].description.len(), MAX_DESCRIPTION);
        assert_eq!(docs[2].description, "Write release notes");
    }

    #[test]
    fn skill_returns_the_body_after_the_front_matter() {
        let dir = skills();
        let r = run(Some(dir.path()), &json!({"name": "release-notes"}));
        assert!(!r.is_error);
        assert_eq!(text_of(&r), "# Steps\n1. Read the log.\n");
        assert_eq!(r.title.as_deref(), Some("skill release-notes"));
    }

    #[test]
    fn unknown_and_invalid_names_are_error_results() {
        let dir = skills();
        let unknown = run(Some(dir.path()), &json!({"name": "nope"}));
        assert!(
            unknown.is_error && text_of(&unknown).starts_with("skill_unknown") && text_of(&unknown).contains("nope")
        );
        let none = run(None, &json!({"name": "release-notes"}));
        assert!(none.is_error && text_of(&none).starts_with("skill_unknown"));
        for bad in ["../etc", "A", "a--b", "-a", "a-", ""] {
            let r = run(Some(dir.path()), &json!({"name": bad}));
            assert!(r.is_error && text_of(&r).starts_with("skill_name_invalid"), "{bad}");
        }
    }

    #[test]
    fn the_grammar_matches_the_kernel() {
        for good in ["a", "a-b", "release-notes-2", &"a".repeat(64)] {
            assert!(is_skill_name(good), "{good}");
        }
        for bad in ["", "-", "a_b", "aB", &"a".repeat(65)] {
            assert!(!is_skill_name(bad), "{bad}");
        }
    }

    #[test]
    fn front_matter_forms() {
        assert_eq!(description("no front matter"), None);
        assert_eq!(
            description("---\ndescription: 'single'\n---\n").as_deref(),
            Some("single")
        );
        assert_eq!(
            description("---\ndescription: |\n  a\n  b\n---\n").as_deref(),
            Some("a b")
        );
        assert_eq!(description("---\ndescription:   \n---\n"), None);
        assert_eq!(description("---\ndescription: never closed\n"), None);
    }
}
