//! `nexus.memory.ls` (kernel-tools.md §8).

use crate::registry::{EffectProfile, KernelTool};

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.memory.ls",
    wire: "memory_ls",
    effect: EffectProfile::READ,
    template: "List memory documents under a path prefix, sorted by path. Omit `path` to list every scope available to you. Each line is a document's path, a tab and its size in bytes; skill documents add a tab and their description. At most 500 lines are shown, then a line saying how many were left out: narrow the prefix to see them.\n\nThe scopes are user/ (the person you act for), workspace/ (shared across this workspace) and conversation/ (this conversation only; a standalone run has none). Paths are case-sensitive, such as workspace/notes/deploy.md.\n\nRead a document with {{memory_read}} and search contents with {{memory_grep}}. Documents under <scope>/skills/ are skills: they are listed like any other, but {{memory_write}}, {{memory_edit}} and {{memory_delete}} cannot change them. Documents are last-writer-wins, so a listing shows the latest writes.",
    parameters: r#"{"type":"object","properties":{
  "path":{"type":"string","description":"Optional path prefix, such as workspace/ or workspace/notes/. Omit to list every scope."}}}"#,
};
