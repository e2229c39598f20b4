//! What the per-round benchmarks share: the round they add to a history.

use nexus_providers::{Entry, ModelRequest, RawToolCall};

/// Round `i`: the assistant's `tool_search` call `id` and its result.
pub fn push_round(req: &mut ModelRequest, i: usize, id: &str) {
    req.entries.push(Entry::Assistant {
        text: Some(format!("Round {i}.")),
        tool_calls: vec![RawToolCall {
            id: id.to_string(),
            name: "tool_search".into(),
            arguments: format!(r#"{{"query":"round {i}"}}"#),
        }],
        native: None,
    });
    req.entries.push(Entry::ToolResult {
        call_id: id.to_string(),
        name: "tool_search".into(),
        output: format!(
            r#"{{"matches":[{{"name":"nexus.tools.search","description":"Search the tools offered to this round by name and description.","score":0.{i}}}],"query":"round {i}","total":1}}"#
        ),
        is_error: false,
    });
}
