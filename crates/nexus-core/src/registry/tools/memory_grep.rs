//! `nexus.memory.grep` (kernel-tools.md §8).

use crate::registry::{EffectProfile, KernelTool};

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.memory.grep",
    wire: "memory_grep",
    effect: EffectProfile::READ,
    template: "Search the text of memory documents with a regular expression in Rust regex syntax; an invalid or oversized pattern gives memory_pattern_invalid. `path` limits the search to a prefix; omit it to search every scope available to you. Matching is case-sensitive unless `ignore_case` is true.\n\nEach result line is the path, the line number and the line's text, as path:line: text, in path then line order. At most `limit` lines are returned (default 100, at most 1,000), with a final line when matches were left out.\n\nThe scopes are user/ (the person you act for), workspace/ (shared across this workspace) and conversation/ (this conversation only). Skill documents under <scope>/skills/ are searched too. Open a match with {{memory_read}}, using its line number as `offset`; list documents with {{memory_ls}}. Documents are last-writer-wins, so results reflect the latest writes.",
    parameters: r#"{"type":"object","properties":{
  "pattern":{"type":"string","description":"The regular expression to find, in Rust regex syntax."},
  "path":{"type":"string","description":"Optional path prefix to search under, such as workspace/notes/. Omit to search every scope."},
  "ignore_case":{"type":"boolean","description":"true: match regardless of case. Default false."},
  "limit":{"type":"integer","minimum":1,"description":"The most matching lines to return, up to 1000. Default 100."}},
  "required":["pattern"]}"#,
};
