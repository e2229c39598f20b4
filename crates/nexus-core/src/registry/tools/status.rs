//! `nexus.conversation.status` (kernel-tools.md §6).

use crate::registry::{EffectProfile, KernelTool};

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.conversation.status",
    wire: "status",
    effect: EffectProfile::READ,
    template: "Check on another conversation: a child you started with {{spawn}}, or any conversation of this workspace. `to` is the child's label or the conversation's id; an unknown one gives unknown_conversation. This call only reads and changes nothing.\n\nThe result is JSON text with `conversation_public_id`, `label`, `state` (idle, running or archived), `pending_inputs` (inputs not yet answered) and `last_reply`: the latest reply's `turn_public_id`, an `excerpt` of at most 500 characters and its time `at`, or null when there is no reply yet.",
    parameters: r#"{"type":"object","properties":{
  "to":{"type":"string","description":"The conversation to check: a child label from {{spawn}}, or a conversation id of this workspace."}},
  "required":["to"],"additionalProperties":false}"#,
};
