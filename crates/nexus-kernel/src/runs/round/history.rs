//! The history budget of a conversation turn's seed round (runs.md §12): the model's context
//! window minus its output reserve, estimated at four bytes of request body a token.
//!
//! A seed round's request replays the previous turn's final round whole (`request.rs`), so a
//! turn costs the same however long the conversation: nothing earlier is read. Only when the
//! encoded body passes the budget is the history rebuilt: whole turns are kept newest first
//! while they fit half the budget, and the older ones are dropped. Each kept turn's own entries
//! are its final round's sealed entries from its `replay_from` on (what preceded its prompt
//! was older history), then that round's reply. Dropping to half, not to just under the
//! budget, keeps the next turns' prefix stable (the provider's prompt cache) and makes the
//! rebuild rare: it runs once per half-budget of growth.

use nexus_providers::{Entry, ModelCapabilities, ModelRequest};
use nexus_store::prelude::*;
use nexus_store::{TaskRow, TurnRole, TurnRow};

use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::RequestSurface;
use crate::runs::render::replay_round;
use crate::runs::request::sealed_entries;
use crate::runs::rows::Rows;
use crate::uploads::UploadJudge;

/// Request-body bytes counted as one token.
pub(crate) const BYTES_PER_TOKEN: usize = 4;
/// How many earlier turns one read of the timeline takes.
const TURNS_PAGE: i64 = 100;

/// The history budget in body bytes: (context window − output reserve) × 4. The output reserve
/// is the round's `max_output_tokens`, else the model's.
pub(crate) fn budget_bytes(capabilities: &ModelCapabilities, surface: &RequestSurface) -> usize {
    let reserve = surface
        .max_output_tokens
        .map_or(capabilities.max_output_tokens as u64, |m| m as u64);
    (capabilities.context_window as u64).saturating_sub(reserve) as usize * BYTES_PER_TOKEN
}

/// An entry's size as the budget counts it (its neutral JSON).
fn entry_bytes(entry: &Entry) -> usize {
    serde_json::to_vec(entry).map_or(0, |v| v.len())
}

impl Kernel {
    /// One earlier turn's own entries: its final round's sealed entries from `replay_from` on,
    /// then that round's reply (`None`: the turn left nothing to replay).
    async fn turn_entries(&self, turn: &TurnRow, judge: &UploadJudge) -> KernelResult<Option<Vec<Entry>>> {
        let (Some(final_id), Some(from)) = (turn.final_task_id, turn.replay_from) else {
            return Ok(None);
        };
        let Some(round) = self.store.task_by_id(final_id).await? else {
            return Ok(None);
        };
        let Some(sealed) = self.store.sealed_request(round.id, round.generation).await? else {
            return Ok(None);
        };
        let Some(mut entries) = sealed_entries(&sealed.record) else {
            return Ok(None);
        };
        let from = (from.max(0) as usize).min(entries.len());
        let mut own = entries.split_off(from);
        let rows: Vec<TaskRow> = self.all_tasks(round.run_id).await?;
        own.extend(replay_round(&Rows::new(rows), &round, judge));
        Ok(Some(own))
    }

    /// Rebuilds a seed round's history from whole turns, newest first, within half of
    /// `budget` bytes; the prompt entry (the last) stays. `turn` is the round's own turn.
    pub(crate) async fn trim_history(
        &self,
        turn: &TurnRow,
        request: &mut ModelRequest,
        budget: usize,
        judge: &UploadJudge,
    ) -> KernelResult<()> {
        let Some(prompt) = request.entries.pop() else {
            return Ok(());
        };
        let keep = budget / 2;
        let mut used = entry_bytes(&prompt);
        let mut kept: Vec<Vec<Entry>> = Vec::new();
        let mut before = turn.position;
        'walk: loop {
            let page = self
                .store
                .turns_page(turn.conversation_id, before, TURNS_PAGE, true)
                .await?;
            let Some(last) = page.last() else { break };
            before = last.position;
            for earlier in page.iter().filter(|t| t.role == TurnRole::Assistant) {
                let Some(own) = self.turn_entries(earlier, judge).await? else {
                    continue;
                };
                let size: usize = own.iter().map(entry_bytes).sum();
                if used + size > keep {
                    break 'walk;
                }
                used += size;
                kept.push(own);
            }
        }
        request.entries = kept.into_iter().rev().flatten().collect();
        request.entries.push(prompt);
        Ok(())
    }
}
