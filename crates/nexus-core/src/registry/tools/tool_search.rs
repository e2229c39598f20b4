//! `nexus.tools.search` (kernel-tools.md §11).

use crate::registry::{EffectProfile, KernelTool};

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.tools.search",
    wire: "tool_search",
    effect: EffectProfile::READ,
    template: "Find one of your tools whose schema is not shown to you. Some of your tools are deferred: they are yours to use, but their definitions are left out until you search for them. Call a tool you found through {{tool_call}}, with its exact name and an input that matches its definition.\n\nThe query is matched against each tool's name and description, the runner id and served name of its route, and the names and descriptions of the skills it can load. A query equal to a tool's name returns that tool alone; otherwise a tool matches when its text contains every term, ignoring case. Results keep the order of your tool list.\n\nThe result is JSON text: `tools`, each with its `name`, its complete `definition`, its `route` when it runs on a runner, and the `skills` it can load; and `truncated`, true when matches were left out. At most `limit` tools come back (default 5, at most 20). Search only finds tools you already have; it never adds one.",
    parameters: r#"{"type":"object","properties":{
  "query":{"type":"string","description":"Words to look for, or a tool's exact name. Non-blank, at most 1,024 bytes."},
  "limit":{"type":"integer","minimum":1,"maximum":20,"default":5,"description":"The most tools to return, 1 to 20. Default 5."}},
  "required":["query"]}"#,
};
