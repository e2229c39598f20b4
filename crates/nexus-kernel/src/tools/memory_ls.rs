//! `memory_ls` (`nexus.memory.ls`, kernel-tools.md §8): documents under a prefix (or under
//! every available scope), sorted by path: `<path>\t<bytes>`, plus `\t<description>` for skill
//! documents; at most 500 lines, then a line stating how many were left out.

use nexus_core::results::ToolWord;
use nexus_store::{MemoryDocRow, MemoryScope, Tx};
use serde_json::Value;

use super::KernelToolOutcome;
use super::params::str_arg;
use crate::error::KernelResult;
use crate::memory::{self, MemPrefix, Owners, Refusal, arg};

/// The `path` prefix a listing or search covers (`memory_ls {path?}`, `memory_grep`'s `path`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Covered {
    /// `None`: every available scope.
    prefix: Option<CoveredPrefix>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct CoveredPrefix {
    prefix: MemPrefix,
    owner: i64,
    /// The prefix as named (for the sentences).
    raw: String,
}

impl Covered {
    /// An absent, null or empty `path` covers every available scope; any other must be a
    /// prefix of an available scope (`memory_path_invalid`).
    pub(crate) fn parse(input: &Value, owners: &Owners) -> Result<Self, Refusal> {
        let raw = str_arg(input, "path", false)
            .map_err(Box::new)?
            .filter(|r| !r.is_empty());
        let Some(raw) = raw else {
            return Ok(Self { prefix: None });
        };
        let prefix = memory::parse_prefix(raw).map_err(|s| memory::refusal(ToolWord::MemoryPathInvalid, &s))?;
        let Some(owner) = owners.of(prefix.scope) else {
            return Err(memory::refusal(
                ToolWord::MemoryPathInvalid,
                &memory::unavailable(prefix.scope, raw),
            ));
        };
        Ok(Self {
            prefix: Some(CoveredPrefix {
                prefix,
                owner,
                raw: raw.to_string(),
            }),
        })
    }

    /// The prefix as named, if any.
    pub(crate) fn named(&self) -> Option<&str> {
        self.prefix.as_ref().map(|p| p.raw.as_str())
    }

    /// The documents covered, sorted by path.
    pub(crate) async fn documents(
        &self,
        tx: &mut Tx,
        owners: &Owners,
        with_content: bool,
    ) -> KernelResult<Vec<MemoryDocRow>> {
        let scopes: Vec<(MemoryScope, i64)> = match &self.prefix {
            Some(p) => vec![(p.prefix.scope, p.owner)],
            None => owners.available(),
        };
        let mut docs = Vec::new();
        for (scope, owner) in scopes {
            docs.extend(tx.memory_documents(scope, owner, with_content).await?);
        }
        match &self.prefix {
            Some(p) => docs.retain(|d| d.path.starts_with(&p.prefix.prefix)),
            None => docs.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes())),
        }
        Ok(docs)
    }
}

pub(crate) async fn run(tx: &mut Tx, input: &Value, owners: &Owners) -> KernelResult<KernelToolOutcome> {
    let covered = arg!(Covered::parse(input, owners));
    let docs = covered.documents(tx, owners, false).await?;
    Ok(listing(&docs, covered.named()))
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
