//! A round's place in its chain (runs.md §7): the chain's length and the repeat-call rule's
//! look-back, from the `round_facts` the authoring expansion stored plus the predecessor's
//! record, or from the whole run.

use nexus_core::rounds;
use nexus_store::{RoundFactsRow, TaskKind, TaskRow, TaskStatus, Tx};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::StoredReply;
use crate::runs::render::{Judge, render_row};
use crate::runs::rows::Graph;
use crate::runs::rows::Rows;

/// One earlier round of a chain as the repeat-call rule reads it (runs.md §7), as stored in
/// `round_facts.history`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredRound {
    /// `[call signature, result digest]` per call, in call order.
    pub calls: Vec<(String, String)>,
    /// A call's result is a paired child's, which can still change: a look-back holding this
    /// round is recomputed from the rows.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paired: bool,
}

/// The predecessor's record, computed by the seal from the rows its request was built from and
/// handed to the reply step of the same job.
#[derive(Debug, Clone)]
pub(crate) struct PrevRecord {
    pub round_id: i64,
    pub record: StoredRound,
}

/// A round's place in its chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChainView {
    /// The rounds of the chain since its root, this one included.
    pub(crate) rounds: i64,
    /// The look-back: at most [`rounds::LOOK_BACK`] earlier rounds, oldest first.
    pub(crate) history: Vec<StoredRound>,
    /// Every `r{n}` below this is in use (`None`: not known).
    pub(crate) key_floor: Option<i64>,
}

impl ChainView {
    pub(crate) fn root() -> ChainView {
        ChainView {
            rounds: 1,
            history: Vec::new(),
            key_floor: None,
        }
    }
}

/// The record of `round` (its calls' signatures and result digests) from `rows`, which hold the
/// round and its fan (and, for a paired result, the rows it follows).
pub(crate) fn round_record(rows: &Rows, round: &TaskRow) -> StoredRound {
    let judge = Judge { capabilities: None };
    let fan = rows.fan_of(round);
    let mut paired = false;
    let calls = StoredReply::of(round)
        .map(|reply| {
            reply
                .tool_calls
                .iter()
                .map(|c| {
                    let row = fan.iter().copied().find(|t| t.tool_call_id.as_deref() == Some(&c.id));
                    paired |= row.is_some_and(|t| t.status == TaskStatus::Completed && t.pairs_with.is_some());
                    let rendered = render_row(rows, row, &judge);
                    let signature = row.map_or_else(String::new, |t| {
                        let input: Value = t
                            .tool_input
                            .as_deref()
                            .and_then(|s| serde_json::from_str(s).ok())
                            .unwrap_or(Value::Null);
                        let target = t.target_executor_id.map(|id| id.to_string());
                        rounds::call_signature(t.tool_name.as_deref().unwrap_or(""), &input, target.as_deref())
                    });
                    (signature, rounds::result_digest(&rendered.output, rendered.is_error))
                })
                .collect()
        })
        .unwrap_or_default();
    StoredRound { calls, paired }
}

impl Kernel {
    /// The round's chain length and look-back: from its stored facts and its predecessor's
    /// record (handed over by the seal, else read: the predecessor and its fan), or, for a
    /// round without facts or a look-back holding a paired result, from the whole run (which
    /// is returned for the rest of the expansion).
    pub(crate) async fn chain_view(
        &self,
        tx: &mut Tx,
        round: &TaskRow,
        facts: Option<RoundFactsRow>,
        prev: Option<PrevRecord>,
    ) -> KernelResult<(ChainView, Option<Graph>)> {
        let Some(prev_id) = round.declaring_task_id else {
            return Ok((ChainView::root(), None));
        };
        let stored = facts
            .as_ref()
            .and_then(|f| serde_json::from_str::<Vec<StoredRound>>(&f.history).ok());
        match (facts.as_ref(), stored) {
            (Some(f), Some(mut history)) => {
                let record = match prev.filter(|p| p.round_id == prev_id) {
                    Some(p) => Some(p.record),
                    None => match tx.task_by_id(prev_id).await? {
                        Some(p) if p.kind == TaskKind::Model && p.run_id == round.run_id => {
                            let mut tasks = vec![p.clone()];
                            tasks.extend(tx.tasks_declared_by(round.run_id, prev_id).await?);
                            let rows = Rows::new(tasks);
                            Some(round_record(&rows, &p))
                        }
                        _ => None,
                    },
                };
                if let Some(record) = record {
                    history.push(record);
                    let cut = history.len().saturating_sub(rounds::LOOK_BACK);
                    history.drain(..cut);
                    if !history.iter().any(|r| r.paired) {
                        let view = ChainView {
                            rounds: f.chain_rounds + 1,
                            history,
                            key_floor: Some(f.key_floor),
                        };
                        #[cfg(debug_assertions)]
                        {
                            let g = Graph::load(tx, round.run_id).await?;
                            let exact = chain_view_of(&g, round);
                            assert_eq!(
                                (view.rounds.min(exact.rounds), &view.history),
                                (exact.rounds, &exact.history),
                                "the stored chain facts of {} differ from its chain",
                                round.key
                            );
                        }
                        return Ok((view, None));
                    }
                }
            }
            (None, _) => {
                // A chain root (declared by a tool row, or by nothing) has no earlier rounds.
                match tx.task_by_id(prev_id).await? {
                    Some(p) if p.kind == TaskKind::Model && p.run_id == round.run_id => {}
                    _ => return Ok((ChainView::root(), None)),
                }
            }
            (Some(_), None) => {}
        }
        let g = Graph::load(tx, round.run_id).await?;
        let view = chain_view_of(&g, round);
        Ok((view, Some(g)))
    }
}

/// The round's chain and look-back from the whole run (runs.md §7): the predecessors along
/// `declaring_task_id` while they are model rounds.
pub(crate) fn chain_view_of(g: &Graph, round: &TaskRow) -> ChainView {
    let mut chain: Vec<&TaskRow> = Vec::new();
    let mut at = round.declaring_task_id.and_then(|id| g.get(id));
    while let Some(t) = at.filter(|t| t.kind == TaskKind::Model) {
        chain.push(t);
        if chain.len() > rounds::LOOK_BACK.max(rounds::ROUND_LIMIT) {
            break;
        }
        at = t.declaring_task_id.and_then(|id| g.get(id));
    }
    chain.reverse();
    let rows = Rows::new(g.tasks.as_slice());
    let history = chain
        .iter()
        .rev()
        .take(rounds::LOOK_BACK)
        .rev()
        .map(|r| round_record(&rows, r))
        .collect();
    ChainView {
        rounds: chain.len() as i64 + 1,
        history,
        key_floor: None,
    }
}
