//! `nexus.graph.delegate_task` (kernel-tools.md §2). The template and schema are contract-pinned:
//! the contract pack and the SDK's `claude` recut anchor on the `wait: true` paragraph.

use crate::registry::{EffectProfile, KernelTool};

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.graph.delegate_task",
    wire: "delegate_task",
    effect: EffectProfile::GRAPH_WRITE,
    template: "Start a branch: a fresh copy of yourself that works on one bounded task with your tools and environment, then reports its final message.\n\nThe branch sees only the prompt you give it, so make the prompt complete: the goal, the inputs, the constraints and what to report.\n\nBy default the branch runs in the background. This call returns a task reference at once, and the branch's final message is delivered to you when it is ready; call {{wait}} with the reference if you need to block on it.\n\nSet `wait: true` to run the branch in the foreground: this call returns only when the branch finishes, and its final message is the result of this call.\n\nUse `tools` to give the branch fewer tools than you have; it can never receive more.",
    parameters: r#"{"type":"object","properties":{
  "prompt":{"type":"string","description":"The complete brief for the branch."},
  "model":{"type":"string","description":"Optional provider/model for the branch. Omit to use your own model."},
  "lifetime":{"type":"string","enum":["turn","conversation"],"description":"turn (default): your reply waits for the branch. conversation: the branch may report after your reply."},
  "wake":{"type":"string","enum":["auto","passive"],"description":"auto (default): a late result starts a new turn. passive: it waits for the next turn."},
  "wait":{"type":"boolean","default":false,"description":"true: block until the branch finishes and return its final message."},
  "tools":{"type":"array","items":{"type":"string"},"description":"Optional subset of your tool names for the branch. Omit to give it all of them."}},
  "required":["prompt"],"additionalProperties":false}"#,
};

/// The paragraph the SDK's `claude` recut anchors on. Changing it breaks the pack.
#[allow(dead_code)]
pub(crate) const WAIT_TRUE_PARAGRAPH: &str = "Set `wait: true` to run the branch in the foreground: this call returns only when the branch finishes, and its final message is the result of this call.";
