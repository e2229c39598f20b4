//! `memory_ls` (`nexus.memory.ls`, kernel-tools.md §8): documents under a prefix (or under
//! every available scope), sorted by path: `<path>\t<bytes>`, plus `\t<description>` for skill
//! documents; at most 500 lines, then a line stating how many were left out.

use nexus_store::{MemoryDocRow, Tx};
use serde_json::Value;

use super::KernelToolOutcome;
use crate::error::KernelResult;
use crate::memory::{self, Owners, arg};

/// The documents a listing or search covers, sorted by path, and the prefix named (for the
/// sentences). `Err` is the tool's error result.
pub(crate) async fn covered(
    tx: &mut Tx,
    input: &Value,
    owners: &Owners,
    with_content: bool,
) -> KernelResult<Result<(Vec<MemoryDocRow>, Option<String>), memory::Refusal>> {
    let raw = match memory::str_arg(input, "path", false) {
        Ok(raw) => raw.filter(|r| !r.is_empty()),
        Err(o) => return Ok(Err(o)),
    };
    let mut docs = Vec::new();
    match raw {
        Some(raw) => {
            let prefix = match memory::parse_prefix(raw) {
                Ok(p) => p,
                Err(s) => return Ok(Err(memory::refusal("memory_path_invalid", &s))),
            };
            let Some(owner) = owners.of(prefix.scope) else {
                return Ok(Err(memory::refusal(
                    "memory_path_invalid",
                    &memory::unavailable(prefix.scope, raw),
                )));
            };
            docs = tx.memory_documents(prefix.scope, owner, with_content).await?;
            docs.retain(|d| d.path.starts_with(&prefix.prefix));
            Ok(Ok((docs, Some(raw.to_string()))))
        }
        None => {
            for (scope, owner) in owners.available() {
                docs.extend(tx.memory_documents(scope, owner, with_content).await?);
            }
            docs.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
            Ok(Ok((docs, None)))
        }
    }
}

pub(crate) async fn run(tx: &mut Tx, input: &Value, owners: &Owners) -> KernelResult<KernelToolOutcome> {
    let (docs, prefix) = arg!(covered(tx, input, owners, false).await?);
    Ok(listing(&docs, prefix.as_deref()))
}

/// The listing text.
pub(crate) fn listing(docs: &[MemoryDocRow], prefix: Option<&str>) -> KernelToolOutcome {
    if docs.is_empty() {
        return KernelToolOutcome::text(match prefix {
            Some(p) => format!("No documents under {p}."),
            None => "No documents.".to_string(),
        });
    }
    let mut lines: Vec<String> = docs
        .iter()
        .take(memory::LS_LINES)
        .map(|d| {
            let skill = memory::parse_path(&d.path).is_ok_and(|p| p.skill_name().is_some());
            match (&d.description, skill) {
                (Some(desc), true) => format!("{}\t{}\t{}", d.path, d.byte_size, one_line(desc)),
                _ => format!("{}\t{}", d.path, d.byte_size),
            }
        })
        .collect();
    if docs.len() > memory::LS_LINES {
        lines.push(format!(
            "({} more documents not shown; list a narrower path prefix)",
            docs.len() - memory::LS_LINES
        ));
    }
    KernelToolOutcome::text(lines.join("\n"))
}

/// A description on one listing line.
fn one_line(text: &str) -> String {
    text.split(['\n', '\r', '\t']).collect::<Vec<_>>().join(" ")
}
