//! `wait` (`nexus.tasks.wait`, kernel-tools.md §1): a kernel-held await `<call>-wait-1`
//! (`running`) follows the target's final logical work and completes with its `<task_result>`
//! envelope (runs/readiness.rs `open_await` / `observe_settled`). A settled target completes it
//! at once; a timeout (`timed_out` / `await_timeout`, by the sweep) ends only the wait.

use std::collections::HashSet;

use nexus_core::results::ToolWord;
use nexus_store::{NewTask, OnFailure, Origin, TaskKind, TaskRow, Visibility};
use serde_json::Value;
use uuid::Uuid;

use super::params::{self, Nulls, Params};
use super::tool_call::{place_child, started};
use super::{GraphCall, KernelToolOutcome};
use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::columns::{Frozen, WaitContext};
use crate::runs::rows::{Graph, follow};
use crate::runs::unit::Unit;

/// The default wait and the per-park clamp.
pub(crate) const WAIT_DEFAULT_MS: i64 = 3_600_000;
pub(crate) const WAIT_MAX_MS: i64 = 86_400_000;

/// `wait {task, run_public_id?, timeout_ms?}` (unknown keys are ignored).
#[derive(Debug, Clone, PartialEq, Eq)]
struct WaitInput {
    task: String,
    run_public_id: Option<Uuid>,
    /// Clamped to [`WAIT_MAX_MS`].
    timeout_ms: i64,
}

impl WaitInput {
    fn parse(input: &Value) -> Result<Self, KernelToolOutcome> {
        let p = Params::lenient("wait", input);
        let task = match p.typed("task", Nulls::Refused, params::non_blank) {
            Ok(Some(task)) => task.to_string(),
            _ => {
                return Err(params::invalid(
                    "`task` must be a non-blank task key, such as the task value of a task reference",
                ));
            }
        };
        let run_public_id = match p.typed("run_public_id", Nulls::Absent, Value::as_str) {
            Ok(None) => None,
            Ok(Some(s)) => Some(Uuid::parse_str(s).map_err(|_| {
                params::invalid(&format!(
                    "`run_public_id` must be a run UUID from a task reference, got {s:?}"
                ))
            })?),
            Err(other) => {
                return Err(params::invalid(&format!(
                    "`run_public_id` must be a run UUID string, got {other}"
                )));
            }
        };
        let timeout_ms = p
            .typed("timeout_ms", Nulls::Absent, params::int_in(1, i64::MAX))
            .map_err(|v| {
                params::invalid(&format!(
                    "`timeout_ms` must be an integer of at least 1 (milliseconds), got {v}"
                ))
            })?
            .map_or(WAIT_DEFAULT_MS, |n| n.min(WAIT_MAX_MS));
        Ok(Self {
            task,
            run_public_id,
            timeout_ms,
        })
    }
}

/// `wait`: parse, check the target, place the await.
pub(super) async fn run(kernel: &Kernel, u: &mut Unit<'_>, call: &GraphCall<'_>) -> KernelResult<KernelToolOutcome> {
    let input = match WaitInput::parse(call.input) {
        Ok(input) => input,
        Err(refusal) => return Ok(refusal),
    };
    if let Some(refusal) = refuse_target(u, call.call, &input).await? {
        return Ok(refusal);
    }
    let child = place_child(kernel, u, call.call, "wait", await_row(call.call, &input), true).await?;
    Ok(started(&child.key))
}

/// `wait_target_not_found` (another run, or no such task) or `wait_cycle` (this call, its own
/// round, an ancestor round of the chain, or work that waits on this call).
async fn refuse_target(u: &mut Unit<'_>, call: &TaskRow, input: &WaitInput) -> KernelResult<Option<KernelToolOutcome>> {
    let target = input.task.as_str();
    // A standalone run may name only itself.
    if let Some(other) = input.run_public_id.filter(|r| *r != u.run.public_id) {
        return Ok(Some(KernelToolOutcome::error(
            ToolWord::WaitTargetNotFound,
            &format!(
                "run {other} is not this run; a standalone run can wait only on its own tasks (omit run_public_id)"
            ),
        )));
    }
    let g = Graph::load(u.tx, u.run.id).await?;
    let Some(named) = g.by_key(target) else {
        return Ok(Some(KernelToolOutcome::error(
            ToolWord::WaitTargetNotFound,
            &format!("there is no task {target:?} in this run; pass the task value of a task reference"),
        )));
    };
    let followed = follow(&g, target).unwrap_or(named);
    let ancestors = g.ancestors(call.id);
    let descendants = descendants(&g, call.id);
    let cycle = named.id == call.id
        || followed.id == call.id
        || (named.kind == TaskKind::Model && ancestors.contains(&named.id))
        || descendants.contains(&followed.id)
        || descendants.contains(&named.id);
    Ok(cycle.then(|| {
        KernelToolOutcome::error(
            ToolWord::WaitCycle,
            &format!(
                "{target:?} is this call, its own round or work that waits for this call, so it can never settle first; wait on background work instead"
            ),
        )
    }))
}

/// The kernel-held await `<call>-wait-1` following the target.
fn await_row(call: &TaskRow, input: &WaitInput) -> NewTask {
    NewTask {
        kind: TaskKind::Await,
        origin: Origin::Kernel,
        on_failure: OnFailure::Absorb,
        visibility: Visibility::Collapsed,
        mainline: call.mainline,
        branch_of: call.branch_of.clone(),
        timeout_ms: Some(input.timeout_ms),
        frozen_context: Some(
            Frozen::Wait(WaitContext {
                task: input.task.clone(),
                run_public_id: input.run_public_id.map(|u| u.to_string()),
                timeout_ms: input.timeout_ms,
                delegation: false,
            })
            .to_text(),
        ),
        ..Default::default()
    }
}

/// Every row that depends, transitively, on `id`.
fn descendants(g: &Graph, id: i64) -> HashSet<i64> {
    let mut seen = HashSet::new();
    let mut stack = g.dependents_of(id);
    while let Some(d) = stack.pop() {
        if seen.insert(d) {
            stack.extend(g.dependents_of(d));
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parse_clamps_the_timeout_and_reads_null_as_absent() {
        let w = WaitInput::parse(&json!({"task": "t1", "timeout_ms": WAIT_MAX_MS + 1, "extra": 1})).unwrap();
        assert_eq!(
            (w.task.as_str(), w.run_public_id, w.timeout_ms),
            ("t1", None, WAIT_MAX_MS)
        );
        let w = WaitInput::parse(&json!({"task": "t1", "run_public_id": null, "timeout_ms": null})).unwrap();
        assert_eq!(w.timeout_ms, WAIT_DEFAULT_MS);
        for (bad, said) in [
            (json!({"task": " "}), "`task` must be a non-blank task key"),
            (
                json!({"task": "t", "run_public_id": "nope"}),
                "run UUID from a task reference, got \"nope\"",
            ),
            (json!({"task": "t", "run_public_id": 7}), "run UUID string, got 7"),
            (
                json!({"task": "t", "timeout_ms": 0}),
                "at least 1 (milliseconds), got 0",
            ),
            (json!({"task": "t", "timeout_ms": 1.5}), "got 1.5"),
        ] {
            let out = WaitInput::parse(&bad).unwrap_err();
            let text = out.content.as_str().unwrap();
            assert!(
                text.starts_with("parameter_invalid: ") && text.contains(said),
                "{bad}: {text}"
            );
        }
    }
}
