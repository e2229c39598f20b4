//! `nexus.memory.edit` (kernel-tools.md §8).

use crate::registry::{EffectProfile, KernelTool};

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.memory.edit",
    wire: "memory_edit",
    effect: EffectProfile::MEMORY_EDIT,
    template: "Change one passage of a memory document: `old_text` must occur exactly once in the document, and it is replaced by `new_text`. {{memory_read}} the document first so that `old_text` matches it exactly. No match gives memory_edit_no_match and several give memory_edit_ambiguous; include more surrounding text to make it unique. The result states the path and the new byte count.\n\nA path is a scope followed by one or more segments, such as workspace/notes/deploy.md. The scopes are user/ (the person you act for), workspace/ (shared across this workspace) and conversation/ (this conversation only). A path with no document gives memory_not_found; to create a document, or to replace all of it, use {{memory_write}}.\n\nEdits are last-writer-wins and take no version: if someone else may have changed the document, read it again first. Paths under <scope>/skills/ hold skill documents and are refused with memory_reserved_prefix.",
    parameters: r#"{"type":"object","properties":{
  "path":{"type":"string","description":"The document's path, such as workspace/notes/deploy.md. Not under <scope>/skills/."},
  "old_text":{"type":"string","description":"The exact, non-empty text to replace. It must occur exactly once in the document."},
  "new_text":{"type":"string","description":"The text to put in its place. Empty deletes the passage."}},
  "required":["path","old_text","new_text"]}"#,
};
