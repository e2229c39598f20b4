//! `nexus.conversation.spawn` (kernel-tools.md §4).

use crate::registry::{EffectProfile, KernelTool};

/// The pinned wait sentence, as a literal so that the template can embed it with `concat!`.
macro_rules! wait_sentence {
    () => {
        "Set `wait: true` to block until the child's first reply arrives; that reply is then the result of this call."
    };
}

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.conversation.spawn",
    wire: "spawn",
    effect: EffectProfile::GRAPH_WRITE,
    template: concat!(
        "Start a child conversation: a separate conversation with its own history and its own `conversation/` memory. It works on the brief you give in `prompt` and stays available after its first reply. The child sees only that brief, so make it complete. Only a run hosted by a conversation can start children.\n\n",
        "Give the child a `label` so you can address it later: {{send}} gives it more input, {{status}} shows whether it is running and its last reply, and {{cancel}} stops its running turn. A label is lowercase letters, digits, _ and -, at most 64 characters, and unique among your children. `agent` chooses who answers in the child; it defaults to your own profile.\n\n",
        "The child inherits your default runner. Pass `default_runner_executor_public_id` to choose another: a runner id listed by {{runners_list}}, or null for no runner.\n\n",
        wait_sentence!(),
        "\n\n",
        "A reply you do not wait for is delivered to you later as a task result. With `lifetime: conversation` (the default) your turn may end before it arrives; with `lifetime: turn` your reply waits for it. With `wake: auto` (the default) a late reply starts a new turn; with `wake: passive` it waits for your next turn."
    ),
    parameters: r#"{"type":"object","properties":{
  "prompt":{"type":"string","description":"The complete brief: the child's first input."},
  "agent":{"type":"string","description":"Optional member id or handle of the agent that answers in the child. Omit to use your own profile."},
  "label":{"type":"string","description":"Optional name for the child, used as `to` by {{send}}, {{status}} and {{cancel}}: lowercase letters, digits, _ and -, starting with a letter or digit, at most 64 characters, unique among your children."},
  "lifetime":{"type":"string","enum":["turn","conversation"],"description":"conversation (default): your turn may end before the child's reply arrives. turn: your reply waits for the child's reply."},
  "wake":{"type":"string","enum":["auto","passive"],"description":"auto (default): a late reply starts a new turn. passive: it waits for the next turn."},
  "wait":{"type":"boolean","default":false,"description":"true: block until the child's first reply and return it. false (default): return the child's id and label at once; the reply is delivered later."},
  "default_runner_executor_public_id":{"type":["string","null"],"description":"The child's default runner: a runner id from {{runners_list}}, or null for no runner. Omit to inherit your own default runner."},
  "model":{"type":"string","description":"Optional provider/model for the child's first reply. Omit to use your own model."}},
  "required":["prompt"],"additionalProperties":false}"#,
};

/// The sentence the codex recut anchors on (kernel-tools.md §4). Changing it breaks the pack.
#[allow(dead_code)]
pub(crate) const WAIT_SENTENCE: &str = wait_sentence!();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_embeds_the_pinned_wait_sentence_once() {
        assert_eq!(TOOL.template.matches(WAIT_SENTENCE).count(), 1);
    }
}
