//! The `summary` of each run on `GET W/runs` and of each conversation on `GET W/conversations`:
//! what a list shows at a glance (the first prompt's line, the model, what the run waits on,
//! rounds, tool calls, tokens; a conversation's turns and last message), read for a whole page
//! in one statement ([`nexus_store::SummaryStore::run_summaries`]).

use std::collections::HashMap;

use nexus_store::prelude::*;
use nexus_store::{RunRow, RunSummaryRow};
use serde_json::{Map, Value, json};

use crate::Kernel;
use crate::error::KernelResult;

/// The first non-blank line of `text`, trimmed.
pub(crate) fn first_line(text: &str) -> Option<String> {
    text.lines().map(str::trim).find(|l| !l.is_empty()).map(String::from)
}

fn run_summary_json(s: &RunSummaryRow) -> Value {
    let mut waiting = Vec::new();
    for (count, on) in [
        (s.held_for_approval, "approval"),
        (s.waiting_on_runner, "runner"),
        (s.waiting_on_child, "child"),
    ] {
        if count > 0 {
            waiting.push(json!({"on": on, "count": count}));
        }
    }
    let mut m = Map::new();
    m.insert("prompt".into(), json!(s.prompt.as_deref().and_then(first_line)));
    m.insert("model".into(), json!(s.model));
    m.insert("conversation_title".into(), json!(s.conversation_title));
    m.insert("turn_position".into(), json!(s.turn_position));
    m.insert("rounds".into(), json!(s.rounds));
    m.insert("tool_calls".into(), json!(s.tool_calls));
    m.insert("input_tokens".into(), json!(s.input_tokens));
    m.insert("output_tokens".into(), json!(s.output_tokens));
    m.insert("waiting_on".into(), Value::Array(waiting));
    Value::Object(m)
}

/// Sets `summary` on each of `items` (run objects, in the order of `ids`).
fn attach<R>(
    items: &mut [Value],
    ids: &[i64],
    rows: &[R],
    id_of: impl Fn(&R) -> i64,
    to_json: impl Fn(Option<&R>) -> Value,
) {
    let by_id: HashMap<i64, &R> = rows.iter().map(|r| (id_of(r), r)).collect();
    for (item, id) in items.iter_mut().zip(ids) {
        if let Value::Object(m) = item {
            m.insert("summary".into(), to_json(by_id.get(id).copied()));
        }
    }
}

impl Kernel {
    /// Sets `summary` on each run of a page (`rows` the page's run rows, in order).
    pub(crate) async fn summarize_runs(&self, runs: &mut [Value], rows: &[RunRow]) -> KernelResult<()> {
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let sums = self.store.run_summaries(&ids).await?;
        let empty = RunSummaryRow::default();
        attach(
            runs,
            &ids,
            &sums,
            |r| r.run_id,
            |r| run_summary_json(r.unwrap_or(&empty)),
        );
        // The run's times to the millisecond (`started_at` and `ended_at` are whole seconds),
        // for a duration that does not read "0 ms" for a run shorter than a second.
        for (run, row) in runs.iter_mut().zip(rows) {
            if let Some(Value::Object(m)) = run.get_mut("summary") {
                m.insert("started_at_ms".into(), json!(row.started_at));
                m.insert("ended_at_ms".into(), json!(row.ended_at));
            }
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
        assert_eq!(
            run_summary_json(&s)["waiting_on"],
            json!([{"on": "approval", "count": 1}, {"on": "child", "count": 2}])
        );
    }
}
