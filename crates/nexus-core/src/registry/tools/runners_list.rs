//! `nexus.runners.list` (kernel-tools.md §13).

use crate::registry::{EffectProfile, KernelTool};

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.runners.list",
    wire: "runners_list",
    effect: EffectProfile::READ,
    template: "List the runners (machines) this work may use and the one it runs on now. Call it with no arguments. The result is JSON text: `current_runner_executor_public_id`, null when no runner is selected, and `runners`, each with `runner_executor_public_id`, `display_name` and `environment`.\n\nThe list is the environment accepted when this work started, not a live check: it does not tell whether a runner is connected now, and later changes do not show in it. To work on a listed machine, start a child with {{spawn}} and pass the runner's id as `default_runner_executor_public_id`. Your own runner cannot be changed.",
    parameters: r#"{"type":"object","properties":{},"additionalProperties":false}"#,
};
