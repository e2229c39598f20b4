//! `nexus.conversation.cancel` (kernel-tools.md §7).

use crate::registry::{EffectProfile, KernelTool};

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.conversation.cancel",
    wire: "cancel",
    effect: EffectProfile::GRAPH_WRITE,
    template: "Stop the running turn of another conversation: a child you started with {{spawn}}, or any conversation of this workspace. `to` is the child's label or the conversation's id. You cannot stop your own conversation or one of its ancestors.\n\nThe turn stops exactly as a member's cancellation would stop it, together with the children that turn started with `lifetime: turn`. The conversation itself remains and takes new input as usual. The result says which turn was stopped, or that the conversation was idle.",
    parameters: r#"{"type":"object","properties":{
  "to":{"type":"string","description":"The conversation whose running turn to stop: a child label from {{spawn}}, or a conversation id of this workspace."}},
  "required":["to"],"additionalProperties":false}"#,
};
