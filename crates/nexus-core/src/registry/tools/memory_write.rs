//! `nexus.memory.write` (kernel-tools.md §8).

use crate::registry::{EffectProfile, KernelTool};

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.memory.write",
    wire: "memory_write",
    effect: EffectProfile::MEMORY_WRITE,
    template: "Create or replace a memory document: durable text that outlives this conversation. The whole document becomes `content`, last writer wins, so {{memory_read}} it first if you mean to keep what is there, or use {{memory_edit}} to change one passage. The result states the path and the byte count.\n\nA path is a scope followed by one or more segments, such as workspace/notes/deploy.md. The scopes are user/ (the person you act for, at most 64 documents), workspace/ (shared across this workspace, at most 1,024) and conversation/ (this conversation only, at most 256; a standalone run has none). Segments use letters, digits, ., _ and -; paths are case-sensitive and at most 512 bytes (memory_path_invalid). A write past a scope's bound gives memory_full, and content over 65,536 bytes of UTF-8 text gives memory_document_too_large.\n\nPaths under <scope>/skills/ hold skill documents and are refused with memory_reserved_prefix.",
    parameters: r#"{"type":"object","properties":{
  "path":{"type":"string","description":"The document's path, such as workspace/notes/deploy.md. Not under <scope>/skills/."},
  "content":{"type":"string","description":"The complete new text of the document, at most 65,536 bytes."}},
  "required":["path","content"]}"#,
};
