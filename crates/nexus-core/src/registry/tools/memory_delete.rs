//! `nexus.memory.delete` (kernel-tools.md §8).

use crate::registry::{EffectProfile, KernelTool};

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.memory.delete",
    wire: "memory_delete",
    effect: EffectProfile::MEMORY_WRITE,
    template: "Delete a memory document. The result names the deleted path; a path with no document gives memory_not_found. Like every memory change it is last-writer-wins: it takes no version and cannot be undone, so check the path first with {{memory_ls}} or {{memory_read}}.\n\nA path is a scope followed by one or more segments, such as workspace/notes/deploy.md. The scopes are user/ (the person you act for), workspace/ (shared across this workspace) and conversation/ (this conversation only). Paths are case-sensitive.\n\nPaths under <scope>/skills/ hold skill documents and are refused with memory_reserved_prefix. To empty a document but keep it, use {{memory_write}} instead.",
    parameters: r#"{"type":"object","properties":{
  "path":{"type":"string","description":"The path of the document to delete, such as workspace/notes/old.md. Not under <scope>/skills/."}},
  "required":["path"]}"#,
};
