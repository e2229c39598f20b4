//! `nexus.conversation.send` (kernel-tools.md §5).

use crate::registry::{EffectProfile, KernelTool};

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.conversation.send",
    wire: "send",
    effect: EffectProfile::GRAPH_WRITE,
    template: "Send a message to another conversation: a child you started with {{spawn}}, or any conversation of this workspace. `to` is the child's label or the conversation's id. You cannot send to your own conversation or to one of its ancestors.\n\nThe message is queued as an input of that conversation and answered in its own turn; this call does not wait for the answer. The result is JSON text with `input_public_id`, `conversation_public_id` and `state`.\n\nSet `steer: true` to add the message to the reply the target is running now instead; if it is idle, the message simply queues. To deliver later, give `deliver_in` (such as 30m or 2h) or `deliver_at` (an RFC 3339 time), not both and not with `steer`. With `wake: passive` the message waits until another input opens a turn.",
    parameters: r#"{"type":"object","properties":{
  "to":{"type":"string","description":"The target: a child label from {{spawn}}, or a conversation id of this workspace."},
  "agent":{"type":"string","description":"Optional member id or handle; if given, it must name the target's answerer. Usually omitted."},
  "message":{"type":"string","description":"The text to deliver, complete and self-contained."},
  "steer":{"type":"boolean","default":false,"description":"true: add the message to the target's running reply. false (default): queue it for a turn of its own."},
  "deliver_in":{"type":"string","description":"Optional delay before delivery: a whole number followed by s, m, h or d, such as 30m. Do not combine with deliver_at or steer."},
  "deliver_at":{"type":"string","description":"Optional delivery time in RFC 3339 with an offset, such as 2030-01-31T09:00:00+01:00; not in the past, at most 10 years ahead. Do not combine with deliver_in or steer."},
  "wake":{"type":"string","enum":["auto","passive"],"description":"auto (default): the message opens a turn when the target is idle. passive: it waits until another input opens a turn."},
  "model":{"type":"string","description":"Optional provider/model for the turn that answers this message. Omit to use the target's own default."}},
  "required":["to","message"],"additionalProperties":false}"#,
};
