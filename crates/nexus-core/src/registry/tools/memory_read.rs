//! `nexus.memory.read` (kernel-tools.md §8).

use crate::registry::{EffectProfile, KernelTool};

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.memory.read",
    wire: "memory_read",
    effect: EffectProfile::READ,
    template: "Read a memory document: durable text that outlives this conversation. The result is the document's lines from `offset` (1-indexed, default 1), at most `limit` of them (default 2000), verbatim. When more lines remain, a last line gives the count left and the offset to continue from.\n\nA path is a scope followed by one or more segments, such as workspace/notes/deploy.md. The scopes are user/ (the person you act for), workspace/ (shared across this workspace) and conversation/ (this conversation only; a standalone run has none). Segments use letters, digits, ., _ and -; paths are case-sensitive and at most 512 bytes. A bare name or an unknown scope gives memory_path_invalid.\n\nA path with no document gives memory_not_found; find documents with {{memory_ls}} or {{memory_grep}}. Documents are last-writer-wins: replace one with {{memory_write}}, change part of it with {{memory_edit}}. Documents under <scope>/skills/ are skills: you can read them, but not change them.",
    parameters: r#"{"type":"object","properties":{
  "path":{"type":"string","description":"The document's path, such as workspace/notes/deploy.md."},
  "offset":{"type":"integer","minimum":1,"description":"The first line to return, 1-indexed. Default 1."},
  "limit":{"type":"integer","minimum":1,"description":"The most lines to return. Default 2000."}},
  "required":["path"]}"#,
};
