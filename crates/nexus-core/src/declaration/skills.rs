//! The skills block (declarations.md §11).

use std::collections::HashSet;

use serde_json::Value;

use super::entry::Parsed;
use super::projection::{facts, projected};
use crate::bounds;

/// The block's first line.
pub const SKILLS_BLOCK_HEADER: &str = "Skills available now (load one by name with its callable):";

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The skills block appended as the final block of a round's system text, or `None` when no
/// eagerly projected callable has a non-empty catalog. `skills` are the frozen catalog entries
/// `{callable, name, description, source, executor_public_id?}`. Lines are
/// `- callable / name [executor UUID]: description` (no UUID for `workspace` and `user`),
/// sorted by callable then name; line breaks inside a description read as spaces. Past
/// `skill_catalog_bound` the tail is replaced by `(+N more skills not shown)`. No trailing
/// newline.
pub fn skills_block(declaration: &[Value], skills: &[Value]) -> Option<String> {
    let facts = facts(declaration);
    let eager: HashSet<&str> = projected(&facts, skills)
        .into_iter()
        .filter(|&i| !facts[i].deferred && facts[i].is_skill_callable())
        .filter_map(|i| facts[i].parsed.as_ref().and_then(Parsed::callable))
        .collect();
    let mut shown: Vec<&Value> = skills
        .iter()
        .filter(|s| eager.contains(str_of(s, "callable")))
        .collect();
    if shown.is_empty() {
        return None;
    }
    shown.sort_by(|a, b| {
        str_of(a, "callable")
            .as_bytes()
            .cmp(str_of(b, "callable").as_bytes())
            .then_with(|| str_of(a, "name").as_bytes().cmp(str_of(b, "name").as_bytes()))
    });
    let lines: Vec<String> = shown
        .iter()
        .map(|s| {
            let source = str_of(s, "source");
            let uuid = match s.get("executor_public_id").and_then(Value::as_str) {
                Some(id) if source != "workspace" && source != "user" => format!(" [{id}]"),
                _ => String::new(),
            };
            let description = str_of(s, "description").replace(['\r', '\n'], " ");
            format!(
                "- {} / {}{uuid}: {description}",
                str_of(s, "callable"),
                str_of(s, "name")
            )
        })
        .collect();
    let mut block = String::from(SKILLS_BLOCK_HEADER);
    let full: usize = block.len() + lines.iter().map(|l| l.len() + 1).sum::<usize>();
    if full <= bounds::SKILL_CATALOG {
        for l in &lines {
            block.push('\n');
            block.push_str(l);
        }
        return Some(block);
    }
    let mut used = block.len();
    let mut fit = 0;
    for (k, line) in lines.iter().enumerate() {
        let rest = lines.len() - (k + 1);
        let tail = format!("\n(+{rest} more skills not shown)").len();
        if used + line.len() + 1 + tail > bounds::SKILL_CATALOG {
            break;
        }
        used += line.len() + 1;
        fit = k + 1;
    }
    for l in &lines[..fit] {
        block.push('\n');
        block.push_str(l);
    }
    block.push_str(&format!("\n(+{} more skills not shown)", lines.len() - fit));
    Some(block)
}
