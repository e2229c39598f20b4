//! `nexus.graph.wait` (kernel-tools.md §1).

use crate::registry::{EffectProfile, KernelTool};

pub(crate) const TOOL: KernelTool = KernelTool {
    canonical: "nexus.graph.wait",
    wire: "wait",
    effect: EffectProfile::GRAPH_WRITE,
    template: "Block until a piece of background work settles, then return its result.\n\nThe target is a task reference: a background branch started with {{delegate_task}}, or a child started with {{spawn}}. Pass its `task` key, and its `run_public_id` when the work belongs to another run of this conversation; a standalone run can wait only on its own tasks. A branch is followed to its final message and a child to its reply. You cannot wait on this call or on work that is itself waiting for you (wait_cycle), and an unknown or no longer available target gives wait_target_not_found.\n\nThe result is the target's `<task_result>` envelope; a target that has already settled returns at once. If `timeout_ms` passes first (default 3600000, at most 86400000), only the wait ends: the target keeps running, and you can wait on it again later.",
    parameters: r#"{"type":"object","properties":{
  "task":{"type":"string","description":"The task key from the task reference, e.g. the task value of a background {{delegate_task}} result."},
  "run_public_id":{"type":"string","description":"The run_public_id from the task reference. Omit it for a task of this run."},
  "timeout_ms":{"type":"integer","minimum":1,"description":"How long to wait, in milliseconds. Default 3600000 (one hour), at most 86400000. A timeout ends only the wait, never the target."}},
  "required":["task"]}"#,
};
