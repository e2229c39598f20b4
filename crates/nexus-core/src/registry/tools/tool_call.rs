//! `nexus.tools.call` (kernel-tools.md §12).

use crate::registry::{EffectProfile, KernelTool};

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.tools.call",
    wire: "tool_call",
    effect: EffectProfile::GRAPH_WRITE,
    template: "Call one of your deferred tools: the reliable way to use a tool found with {{tool_search}} whose schema you were not shown. `name` is the tool's exact name from the search result, and `input` is its arguments as an object matching that tool's definition.\n\nThe tool runs exactly as if you had called it directly, with the same approvals and limits, and its result, error or not, is the result of this call. A name that is not one of your tools gives unknown_tool, and this tool cannot call itself. It never reaches a tool you do not have.",
    parameters: r#"{"type":"object","properties":{
  "name":{"type":"string","description":"The exact tool name, as {{tool_search}} returned it."},
  "input":{"type":"object","description":"The tool's arguments, as an object matching its definition."}},
  "required":["name","input"]}"#,
};
