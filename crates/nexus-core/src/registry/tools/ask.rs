//! `nexus.human.ask` (kernel-tools.md §3).

use crate::registry::{EffectProfile, KernelTool};

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.human.ask",
    wire: "ask",
    effect: EffectProfile::GRAPH_WRITE,
    template: "Ask a person one question and stop until they answer. Use it only when you cannot go on without a decision or a fact that only a person can give.\n\nPut the whole question in `prompt`, with the context needed to answer it, and ask one thing per call. The run pauses (for up to 24 hours) until someone answers, and the answer text is the result of this call.\n\nPass `options` to offer choices, and set `multi: true` to allow more than one; several chosen options come back one per line. Answers are free text, so the person may also reply in their own words.",
    parameters: r#"{"type":"object","properties":{
  "prompt":{"type":"string","description":"The question, complete and self-contained."},
  "options":{"type":"array","items":{"type":"string"},"description":"Optional choices to offer: at most 32 non-empty strings of at most 256 characters each."},
  "multi":{"type":"boolean","description":"true: the person may pick several options, returned one per line. Omit for a single choice."}},
  "required":["prompt"],"additionalProperties":false}"#,
};
