//! Every spec citation in the repository resolves.
//!
//! Code comments, tests, migrations and docs cite the contract as `<file>.md §<number>`, and a
//! list may follow the first number (`§1, §5`, `§2–§4`, `§2/§3`, `§3 and §5`). This test walks
//! `crates/`, `docs/` and the top-level `.md` files, finds every such citation, and fails naming
//! each one whose file is not in `docs/spec/` or whose number is not a heading of that file.
//!
//! A spec heading is numbered at its start (`## 7. Round expansion`, `### 7.2 Algorithm`), and
//! one heading may carry a second number (`## 6. status and 7. cancel`). A numbered list item
//! at the start of a line inside a section also resolves as `<section>.<item>`: `§8.5` is the
//! fifth invariant of `## 8. Invariants`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The section numbers a heading line carries, or none for a line that is not a heading.
fn heading_numbers(line: &str) -> Vec<String> {
    let hashes = line.len() - line.trim_start_matches('#').len();
    if hashes == 0 || !line[hashes..].starts_with(' ') {
        return Vec::new();
    }
    let text = line[hashes..].trim_start();
    let mut out = Vec::new();
    if let Some(n) = leading_number(text) {
        out.push(n);
    }
    // A combined heading: `6. \`status\` and 7. \`cancel\``.
    let mut rest = text;
    while let Some(at) = rest.find(" and ") {
        rest = &rest[at + " and ".len()..];
        if let Some(n) = leading_number(rest).filter(|n| rest[n.len()..].starts_with(". ")) {
            out.push(n);
        }
    }
    out
}

/// `7.2` of `7.2 Algorithm`, `7` of `7. Round expansion`: digits and inner dots, followed by
/// an optional dot and a space.
fn leading_number(text: &str) -> Option<String> {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let number = text[..end].trim_end_matches('.');
    let well_formed =
        !number.is_empty() && number.split('.').all(|part| !part.is_empty()) && text[end..].starts_with(' ');
    well_formed.then(|| number.to_string())
}

/// `5` of a numbered list item at the start of a line (`5. **Frozen context is immutable.**`).
fn list_item_number(line: &str) -> Option<&str> {
    let end = line.find(|c: char| !c.is_ascii_digit())?;
    (end > 0 && line[end..].starts_with(". ")).then(|| &line[..end])
}

/// Each spec file's name and the section numbers its headings carry (fenced code skipped).
fn spec_sections() -> BTreeMap<String, BTreeSet<String>> {
    let dir = root().join("docs/spec");
    let mut out = BTreeMap::new();
    for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("dir entry").path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = fs::read_to_string(&path).expect("spec file");
        let mut numbers = BTreeSet::new();
        let mut fenced = false;
        let mut section: Option<String> = None;
        for line in text.lines() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
            } else if !fenced {
                let found = heading_numbers(line);
                if line.starts_with('#') {
                    section = found.first().cloned();
                } else if let (Some(s), Some(item)) = (&section, list_item_number(line)) {
                    numbers.insert(format!("{s}.{item}"));
                }
                numbers.extend(found);
            }
        }
        let name = path.file_name().expect("name").to_string_lossy().into_owned();
        out.insert(name, numbers);
    }
    out
}

/// One citation: where it is, the file it names and the section number.
#[derive(Debug)]
struct Citation {
    at: String,
    file: String,
    section: String,
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// The section number at the start of `s` (after its `§`), without a sentence's closing dot.
fn section_at(s: &str) -> Option<(String, usize)> {
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let number = s[..end].trim_end_matches('.');
    (!number.is_empty() && number.starts_with(|c: char| c.is_ascii_digit())).then(|| (number.to_string(), end))
}

/// What may join a list of sections after the first: `§1, §5`, `§2–§4`, `§2-§4`, `§2/§3`,
/// `§3 and §5`, `§3, and §5`.
const JOINERS: [&str; 6] = [", and ", ", ", " and ", "–", "-", "/"];

/// Every `<file>.md §<n>` citation in `text` (with the sections listed after it).
fn citations(text: &str, path: &str, out: &mut Vec<Citation>) {
    const MARK: &str = ".md §";
    for (n, line) in text.lines().enumerate() {
        let mut from = 0;
        while let Some(found) = line[from..].find(MARK) {
            let dot = from + found;
            from = dot + MARK.len();
            let start = line[..dot]
                .char_indices()
                .rev()
                .take_while(|&(_, c)| is_name_char(c))
                .last()
                .map_or(dot, |(i, _)| i);
            if start == dot {
                continue;
            }
            let file = format!("{}.md", &line[start..dot]);
            let mut rest = &line[from..];
            while let Some((section, used)) = section_at(rest) {
                out.push(Citation {
                    at: format!("{path}:{}", n + 1),
                    file: file.clone(),
                    section,
                });
                rest = &rest[used..];
                let next = JOINERS.iter().find_map(|j| rest.strip_prefix(j)?.strip_prefix('§'));
                match next {
                    Some(after) => rest = after,
                    None => break,
                }
            }
        }
    }
}

/// Every file under `dir`, skipping build output and hidden directories.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("dir entry").path();
        let name = path.file_name().expect("name").to_string_lossy();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                walk(&path, out);
            }
        } else {
            out.push(path);
        }
    }
}

#[test]
fn every_spec_citation_names_a_spec_file_and_one_of_its_headings() {
    let root = root();
    let sections = spec_sections();
    assert!(
        sections.contains_key("runs.md") && sections["runs.md"].contains("7"),
        "docs/spec/runs.md with its numbered headings is missing: {sections:?}"
    );

    let mut files = Vec::new();
    walk(&root.join("crates"), &mut files);
    walk(&root.join("docs"), &mut files);
    for entry in fs::read_dir(&root).expect("repository root") {
        let path = entry.expect("dir entry").path();
        if path.is_file() && path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    files.sort();

    let mut found = Vec::new();
    for path in &files {
        // Binary files and data files that are not UTF-8 cite nothing.
        let Ok(text) = fs::read_to_string(path) else { continue };
        let shown = path.strip_prefix(&root).unwrap_or(path).display().to_string();
        citations(&text, &shown, &mut found);
    }
    assert!(
        found.len() > 300,
        "only {} citations found: is the walk looking in the right place ({})?",
        found.len(),
        root.display()
    );

    let broken: Vec<String> = found
        .iter()
        .filter_map(|c| match sections.get(&c.file) {
            None => Some(format!(
                "{}: {} §{}: no {} in docs/spec",
                c.at, c.file, c.section, c.file
            )),
            Some(numbers) if !numbers.contains(&c.section) => Some(format!(
                "{}: {} §{}: docs/spec/{} has no heading numbered {}",
                c.at, c.file, c.section, c.file, c.section
            )),
            Some(_) => None,
        })
        .collect();
    assert!(
        broken.is_empty(),
        "{} of {} spec citations do not resolve:\n{}",
        broken.len(),
        found.len(),
        broken.join("\n")
    );
}

#[test]
fn the_scanner_reads_the_citation_forms_in_use() {
    // The last line is spelled in two pieces so that this file cites no §8.5 itself.
    let text = concat!(
        "see runs.md §1, §5, §6 and declarations.md §7.2 step 4.\n",
        "(approvals.md §3–§6; errors-and-auth.md §2/§3/§6, uploads.md §1, §3; x)\n",
        "errors-and-auth.md §3 and §5 — runs.md §10. Then `runs.md`, §4 is not one.\n",
        "executor.md §9 \"Settle engine\", §13 and storage-and-scale.md",
        " §8.5"
    );
    let mut found = Vec::new();
    citations(text, "t", &mut found);
    let got: Vec<String> = found.iter().map(|c| format!("{}:{}", c.file, c.section)).collect();
    assert_eq!(
        got,
        [
            "runs.md:1",
            "runs.md:5",
            "runs.md:6",
            "declarations.md:7.2",
            "approvals.md:3",
            "approvals.md:6",
            "errors-and-auth.md:2",
            "errors-and-auth.md:3",
            "errors-and-auth.md:6",
            "uploads.md:1",
            "uploads.md:3",
            "errors-and-auth.md:3",
            "errors-and-auth.md:5",
            "runs.md:10",
            "executor.md:9",
            "storage-and-scale.md:8.5",
        ]
    );
    assert_eq!(heading_numbers("## 7. Round expansion"), ["7"]);
    assert_eq!(heading_numbers("### 7.2 Algorithm"), ["7.2"]);
    assert_eq!(heading_numbers("## 6. `status` and 7. `cancel`"), ["6", "7"]);
    assert!(heading_numbers("## Glossary").is_empty());
    assert!(heading_numbers("#[async_trait::async_trait]").is_empty());
    assert!(heading_numbers("1. **Parks survive.**").is_empty());
}
