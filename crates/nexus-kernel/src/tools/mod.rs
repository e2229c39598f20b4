//! Kernel tool handlers (kernel-tools.md): one file per wire name, dispatched by
//! [`dispatch`]. A handler is a function of the row's input and the calling execution's frozen
//! context; [`Kernel::evaluate_kernel_tool`](crate::Kernel) settles the row with its outcome.

mod runners_list;
mod tool_search;

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
        Self { content: Value::String(text.into()), is_error: false, structured_content: None, pairs_with: None }
    }

    /// A JSON-text result: the compact serialization of `value`, member order kept.
    pub fn json_text(value: &Value) -> Self {
        Self::text(serde_json::to_string(value).expect("a JSON value serializes"))
    }

    /// An error result: `<word>: <sentence>`.
    pub fn error(word: &str, sentence: &str) -> Self {
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
}

/// The wire names this version evaluates in-kernel.
pub(crate) const IMPLEMENTED: [&str; 2] = ["runners_list", "tool_search"];

/// Runs the handler of a kernel tool by its wire name. `None`: no handler in this version.
pub(crate) fn dispatch(wire: &str, input: &Value, ctx: &ToolContext<'_>) -> Option<KernelToolOutcome> {
    match wire {
        "runners_list" => Some(runners_list::run(input, ctx)),
        "tool_search" => Some(tool_search::run(input, ctx)),
        _ => None,
    }
}
