//! A handler's interface: what it is given ([`ToolContext`], and a graph tool's [`GraphCall`])
//! and what it answers ([`KernelToolOutcome`]). The handlers (`tools/*.rs`), their dispatch
//! (`tools/mod.rs`) and the memory verbs' parameter checks (`memory/`) all name these, so this
//! file names none of them.

use nexus_core::results::ToolWord;
use serde_json::Value;

/// What a kernel tool answers. The row settles `completed` with these fields (kernel-tools.md
/// §0): an error result is `completed` with `is_error: true` and one text line
/// `<word>: <sentence>`.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelToolOutcome {
    /// A string, or a list of content blocks (the result grammar of executor.md §9.1).
    pub content: Value,
    pub is_error: bool,
    /// Stored beside the text; never reaches the model.
    pub structured_content: Option<Value>,
    /// The child key a paired tool records (kernel-tools.md §0).
    pub pairs_with: Option<String>,
}

impl KernelToolOutcome {
    /// A plain text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: Value::String(text.into()),
            is_error: false,
            structured_content: None,
            pairs_with: None,
        }
    }

    /// A JSON-text result: the compact serialization of `value`, member order kept.
    pub fn json_text(value: &Value) -> Self {
        Self::text(serde_json::to_string(value).expect("a JSON value serializes"))
    }

    /// An error result: `<word>: <sentence>`.
    pub fn error(word: ToolWord, sentence: &str) -> Self {
        Self {
            content: Value::String(format!("{word}: {sentence}")),
            is_error: true,
            structured_content: None,
            pairs_with: None,
        }
    }
}

/// The calling execution's frozen context, as a handler reads it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolContext<'a> {
    /// The declaring round's frozen declaration (stored, rendered, sorted).
    pub tool_definitions: &'a [Value],
    /// The frozen environment (declarations.md §7 step 9).
    pub environment: &'a Value,
    /// The frozen skill catalog entries `{callable, name, description, source, executor_public_id?}`.
    pub skills: &'a [Value],
    /// The callable the model used (`tool_alias`, else `tool_name`).
    pub callable: &'a str,
}

/// A graph tool's call (`delegate_task`, `wait`, `ask`, `tool_call`): the running call row, its
/// input and frozen context, and the evaluation clock. The handler may place one child row in
/// the evaluation's transaction (`tool_call::place_child`).
pub(crate) struct GraphCall<'a> {
    pub call: &'a nexus_store::TaskRow,
    pub input: &'a Value,
    pub ctx: &'a ToolContext<'a>,
    pub now: i64,
}
