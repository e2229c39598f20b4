//! `wait` (`nexus.tasks.wait`, kernel-tools.md §1): a kernel-held await `<call>-wait-1`
//! (`running`) follows the target's final logical work and completes with its `<task_result>`
//! envelope (runs/readiness.rs `open_await` / `observe_settled`). A settled target completes it
//! at once; a timeout (`timed_out` / `await_timeout`, by the sweep) ends only the wait.

use std::collections::HashSet;

use nexus_store::{NewTask, OnFailure, Origin, RunRow, TaskKind, Tx, Visibility};
use serde_json::Value;
use uuid::Uuid;

use super::tool_call::{PARAMETER_INVALID, place_child, started};
use super::{GraphCall, KernelToolOutcome};
use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::AfterCommit;
use crate::runs::columns::{Frozen, WaitContext};
use crate::runs::rows::{Graph, follow};
use crate::runs::unit::Unit;

/// The default wait and the per-park clamp.
pub(crate) const WAIT_DEFAULT_MS: i64 = 3_600_000;
pub(crate) const WAIT_MAX_MS: i64 = 86_400_000;

const NOT_FOUND: &str = "wait_target_not_found";

/// `wait {task, run_public_id?, timeout_ms?}`.
pub(super) async fn run(
    kernel: &Kernel,
    tx: &mut Tx,
    run: &mut RunRow,
    call: &GraphCall<'_>,
    effects: &mut Vec<AfterCommit>,
) -> KernelResult<KernelToolOutcome> {
    let input = call.input;
    let Some(target) = input
        .get("task")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
    else {
        return Ok(KernelToolOutcome::error(
            PARAMETER_INVALID,
            "`task` must be a non-blank task key, such as the task value of a task reference",
        ));
    };
    let run_public_id = match input.get("run_public_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match Uuid::parse_str(s) {
            Ok(id) => Some(id),
            Err(_) => {
                return Ok(KernelToolOutcome::error(
                    PARAMETER_INVALID,
                    &format!("`run_public_id` must be a run UUID from a task reference, got {s:?}"),
                ));
            }
        },
        Some(other) => {
            return Ok(KernelToolOutcome::error(
                PARAMETER_INVALID,
                &format!("`run_public_id` must be a run UUID string, got {other}"),
            ));
        }
    };
    let timeout = match input.get("timeout_ms") {
        None | Some(Value::Null) => WAIT_DEFAULT_MS,
        Some(v) => match v.as_i64().filter(|n| *n >= 1) {
            Some(n) => n.min(WAIT_MAX_MS),
            None => {
                return Ok(KernelToolOutcome::error(
                    PARAMETER_INVALID,
                    &format!("`timeout_ms` must be an integer of at least 1 (milliseconds), got {v}"),
                ));
            }
        },
    };
    // A standalone run may name only itself.
    if run_public_id.is_some_and(|r| r != run.public_id) {
        return Ok(KernelToolOutcome::error(
            NOT_FOUND,
            &format!(
                "run {} is not this run; a standalone run can wait only on its own tasks (omit run_public_id)",
                run_public_id.expect("checked")
            ),
        ));
    }
    let g = Graph::load(tx, run.id).await?;
    let Some(named) = g.by_key(target) else {
        return Ok(KernelToolOutcome::error(
            NOT_FOUND,
            &format!("there is no task {target:?} in this run; pass the task value of a task reference"),
        ));
    };
    // This call, its round, an ancestor round of the chain, or work that waits on this call.
    let followed = follow(&g, target).unwrap_or(named);
    let ancestors = g.ancestors(call.call.id);
    let descendants = descendants(&g, call.call.id);
    let cycle = named.id == call.call.id
        || followed.id == call.call.id
        || (named.kind == TaskKind::Model && ancestors.contains(&named.id))
        || descendants.contains(&followed.id)
        || descendants.contains(&named.id);
    if cycle {
        return Ok(KernelToolOutcome::error(
            "wait_cycle",
            &format!(
                "{target:?} is this call, its own round or work that waits for this call, so it can never settle first; wait on background work instead"
            ),
        ));
    }
    let new = NewTask {
        kind: TaskKind::Await,
        origin: Origin::Kernel,
        on_failure: OnFailure::Absorb,
        visibility: Visibility::Collapsed,
        mainline: call.call.mainline,
        branch_of: call.call.branch_of.clone(),
        timeout_ms: Some(timeout),
        frozen_context: Some(
            Frozen::Wait(WaitContext {
                task: target.to_string(),
                run_public_id: run_public_id.map(|u| u.to_string()),
                timeout_ms: timeout,
                delegation: false,
            })
            .to_text(),
        ),
        ..Default::default()
    };
    let child = place_child(
        kernel,
        &mut Unit::of(tx, run, call.now, effects),
        call.call,
        "wait",
        new,
        true,
    )
    .await?;
    Ok(started(&child.key))
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
