//! A run's token usage and its per-round cache report (issue 23; providers.md §4): `usage` on
//! `GET R`, and `GET R/cache`, which lists every model round with the digest of the tools bytes
//! it sent, whether that equals the previous sealed round's, and the cached input tokens.
//!
//! The tools block is the front of every prompt-cache prefix: a change of it inside a run costs
//! the whole cache. For a frozen declaration it never changes; the report makes any change
//! visible (`tools_changed` on the round, `tools_changes` in all).

use nexus_providers::Usage;
use nexus_store::prelude::*;
use nexus_store::{RoundCacheFacts, TaskStatus};
use serde::Serialize;
use uuid::Uuid;

use crate::auth::MemberPrincipal;
use crate::error::KernelResult;
use crate::{Kernel, Runs};

/// One round of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CacheRound {
    /// The round's key (`r1`, `r2`, …, `r1b1`).
    pub key: String,
    /// The round's task status.
    pub status: TaskStatus,
    /// SHA-256 (hex) of the tools bytes sent; `null` before the seal or when no tools were
    /// offered.
    pub tools_sha256: Option<String>,
    /// Whether the tools bytes differ from those of the previous sealed round (`false` for the
    /// first).
    pub tools_changed: bool,
    /// The round's usage, once it has a reply.
    pub usage: Option<Usage>,
}

/// `GET R/cache` → `{cache}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CacheReport {
    /// The model rounds in creation order.
    pub rounds: Vec<CacheRound>,
    /// How many sealed rounds sent different tools bytes than the sealed round before them.
    pub tools_changes: usize,
    /// The sum over the rounds.
    pub usage: Usage,
}

impl CacheReport {
    /// The report of a run's rounds as the store lists them.
    pub fn of(facts: Vec<RoundCacheFacts>) -> Self {
        let mut rounds = Vec::with_capacity(facts.len());
        let mut previous: Option<Option<String>> = None;
        let mut total = Usage::default();
        let mut changes = 0;
        for f in facts {
            let usage = f.usage.as_deref().and_then(|u| serde_json::from_str::<Usage>(u).ok());
            if let Some(u) = &usage {
                add(&mut total, u);
            }
            let tools_changed = f.sealed && previous.as_ref().is_some_and(|p| *p != f.tools_sha256);
            if f.sealed {
                changes += usize::from(tools_changed);
                previous = Some(f.tools_sha256.clone());
            }
            rounds.push(CacheRound {
                key: f.key,
                status: f.status,
                tools_sha256: f.tools_sha256,
                tools_changed,
                usage,
            });
        }
        Self {
            rounds,
            tools_changes: changes,
            usage: total,
        }
    }
}

fn add(total: &mut Usage, u: &Usage) {
    total.input_tokens += u.input_tokens;
    total.output_tokens += u.output_tokens;
    total.cache_read_input_tokens += u.cache_read_input_tokens;
    total.cache_creation_input_tokens += u.cache_creation_input_tokens;
}

impl Runs<'_> {
    /// The cache report of a run the principal can read.
    pub async fn run_cache(&self, p: &MemberPrincipal, ws: Uuid, run: Uuid) -> KernelResult<CacheReport> {
        let (ws_row, _) = self.workspace_for(p, ws, false).await?;
        let run = self.run_in(&ws_row, run).await?;
        Ok(CacheReport::of(self.store.round_cache_facts(run.id).await?))
    }
}

impl Kernel {
    /// The sum of the run's round usage (`usage` on `GET R`).
    pub(crate) async fn run_usage(&self, run_id: i64) -> KernelResult<Usage> {
        Ok(CacheReport::of(self.store.round_cache_facts(run_id).await?).usage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(key: &str, tools: Option<&str>, sealed: bool, usage: Option<&str>) -> RoundCacheFacts {
        RoundCacheFacts {
            key: key.into(),
            status: TaskStatus::Completed,
            usage: usage.map(String::from),
            tools_sha256: tools.map(String::from),
            sealed,
        }
    }

    #[test]
    fn changes_are_counted_between_sealed_rounds() {
        let report = CacheReport::of(vec![
            fact("r1", Some("aa"), true, Some(r#"{"input_tokens":10,"output_tokens":2}"#)),
            fact(
                "r2",
                Some("aa"),
                true,
                Some(r#"{"input_tokens":12,"output_tokens":3,"cache_read_input_tokens":9}"#),
            ),
            // Not sealed yet: no digest, and no comparison.
            fact("r3", None, false, None),
            fact(
                "r4",
                Some("bb"),
                true,
                Some(r#"{"input_tokens":1,"cache_creation_input_tokens":5}"#),
            ),
            fact("r5", None, true, None),
        ]);
        let changed: Vec<bool> = report.rounds.iter().map(|r| r.tools_changed).collect();
        assert_eq!(changed, [false, false, false, true, true]);
        assert_eq!(report.tools_changes, 2);
        assert_eq!(
            report.usage,
            Usage {
                input_tokens: 23,
                output_tokens: 5,
                cache_read_input_tokens: 9,
                cache_creation_input_tokens: 5
            }
        );
        assert_eq!(report.rounds[2].usage, None);
    }
}
