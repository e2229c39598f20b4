//! The `summary` of each run on `GET W/runs` and of each conversation on `GET W/conversations`:
//! what a list shows at a glance (the first prompt's line, the model, what the run waits on,
//! rounds, tool calls, tokens; a conversation's turns and last message), read for a whole page
//! in one statement ([`nexus_store::SummaryStore::run_summaries`]).

use std::collections::HashMap;

use nexus_api::runs::{Run, RunSummary, Waiting, WaitingOn};
use nexus_store::prelude::*;
use nexus_store::{RunRow, RunSummaryRow};

use crate::Kernel;
use crate::error::KernelResult;

/// The first non-blank line of `text`, trimmed.
pub(crate) fn first_line(text: &str) -> Option<String> {
    text.lines().map(str::trim).find(|l| !l.is_empty()).map(String::from)
}

fn run_summary(s: &RunSummaryRow, row: &RunRow) -> RunSummary {
    let waiting_on = [
        (s.held_for_approval, WaitingOn::Approval),
        (s.waiting_on_runner, WaitingOn::Runner),
        (s.waiting_on_child, WaitingOn::Child),
    ]
    .into_iter()
    .filter(|(count, _)| *count > 0)
    .map(|(count, on)| Waiting { on, count })
    .collect();
    RunSummary {
        prompt: s.prompt.as_deref().and_then(first_line),
        model: s.model.clone(),
        conversation_title: s.conversation_title.clone(),
        turn_position: s.turn_position,
        rounds: s.rounds,
        tool_calls: s.tool_calls,
        input_tokens: s.input_tokens,
        output_tokens: s.output_tokens,
        waiting_on,
        // The run's times to the millisecond (`started_at` and `ended_at` are whole seconds),
        // for a duration that does not read "0 ms" for a run shorter than a second.
        started_at_ms: row.started_at,
        ended_at_ms: row.ended_at,
    }
}

impl Kernel {
    /// Sets `summary` on each run of a page (`rows` the page's run rows, in order).
    pub(crate) async fn summarize_runs(&self, runs: &mut [Run], rows: &[RunRow]) -> KernelResult<()> {
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let sums = self.store.run_summaries(&ids).await?;
        let by_id: HashMap<i64, &RunSummaryRow> = sums.iter().map(|r| (r.run_id, r)).collect();
        let empty = RunSummaryRow::default();
        for (run, row) in runs.iter_mut().zip(rows) {
            run.summary = Some(run_summary(by_id.get(&row.id).copied().unwrap_or(&empty), row));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_line_skips_blank_lines() {
        assert_eq!(
            first_line("\n  \n  Fix the build.\nThen test."),
            Some("Fix the build.".into())
        );
        assert_eq!(first_line(" \n"), None);
    }

    #[test]
    fn waiting_lists_only_what_is_waited_on() {
        let s = RunSummaryRow {
            held_for_approval: 1,
            waiting_on_child: 2,
            ..RunSummaryRow::default()
        };
        let summary = serde_json::to_value(run_summary(&s, &RunRow::default())).unwrap();
        assert_eq!(
            summary["waiting_on"],
            serde_json::json!([{"on": "approval", "count": 1}, {"on": "child", "count": 2}])
        );
    }
}
