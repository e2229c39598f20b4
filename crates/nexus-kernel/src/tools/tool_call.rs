//! `tool_call` (`nexus.tools.call`, kernel-tools.md §12), plus the child placement every graph
//! tool shares (kernel-tools.md §0: deterministic child keys, idempotent re-evaluation,
//! pairing).
//!
//! The wrapper appends one ordinary child tool task `<call>-tool-1` through the normal path: call
//! resolution (alias mapping, the route target), the input bounds (birth failures), the
//! caller's origin (so the child meets the approval gate), addressing and its own deadline. The
//! call row completes at once with a "started" output and `pairs_with` the child; the pairing
//! law renders the child's outcome as this call's result.

use nexus_core::codes::task_error;
use nexus_core::declaration::{self, callable_of};
use nexus_core::nul::contains_nul;
use nexus_core::results::ToolWord;
use nexus_core::{bounds, jcs};
use nexus_store::prelude::*;
use nexus_store::{EdgeKind, NewTask, RunStatus, TaskKind, TaskRow, TaskStatus, Tx, Visibility};
use serde_json::{Value, json};

use super::params::{self, Nulls, Params};
use super::{GraphCall, KernelTool, KernelToolOutcome, ToolContext};
use crate::Kernel;
use crate::error::KernelResult;
use crate::runs::settle::SettleError;
use crate::runs::unit::Unit;

/// The internal "started" output of a paired call (replaced, for the model, by the child's
/// outcome).
pub(super) fn started(child: &str) -> KernelToolOutcome {
    KernelToolOutcome {
        pairs_with: Some(child.to_string()),
        ..KernelToolOutcome::text(format!("started {child}"))
    }
}

/// The deterministic child key `<call>-<kind>-<n>`: the smallest n whose key is free or already
/// holds this call's own child (re-evaluation settles from it). A key taken by another row (an
/// authored key) moves to the next suffix.
pub(super) async fn child_slot(
    tx: &mut Tx,
    run_id: i64,
    call: &TaskRow,
    kind: &str,
) -> KernelResult<(String, Option<TaskRow>)> {
    for n in 1u32.. {
        let key = format!("{}-{kind}-{n}", call.key);
        match tx.task_by_key(run_id, &key).await? {
            None => return Ok((key, None)),
            Some(t) if t.declaring_task_id == Some(call.id) => return Ok((key, Some(t))),
            Some(_) => continue,
        }
    }
    unreachable!("some suffix is free")
}

/// Places a child of `call` (or finds the one a previous evaluation placed): it depends on the
/// call row, so it becomes ready when the call settles. `paired`: every row that waits on the
/// call also waits on the child (the continuation reads the child's outcome).
pub(super) async fn place_child(
    kernel: &Kernel,
    u: &mut Unit<'_>,
    call: &TaskRow,
    kind: &str,
    mut new: NewTask,
    paired: bool,
) -> KernelResult<TaskRow> {
    let Unit { tx, run, now, effects } = u;
    let now = *now;
    let (key, existing) = child_slot(tx, run.id, call, kind).await?;
    let child = match existing {
        Some(t) => t,
        None => {
            new.run_id = run.id;
            new.key = key.clone();
            new.generation = 1;
            new.status = TaskStatus::Waiting;
            new.declaring_task_id = Some(call.id);
            new.created_at = now;
            let origin = new.origin;
            let row = tx.insert_task(new).await?;
            tx.put_edge(row.id, call.id, EdgeKind::After).await?;
            kernel
                .emit(
                    &mut Unit::of(tx, run, now, effects),
                    nexus_store::EventKind::TasksAppended,
                    None,
                    json!({"keys": [key], "origin": origin}),
                )
                .await?;
            row
        }
    };
    if paired {
        let edges = tx.edges_of_run(run.id).await?;
        for e in edges
            .iter()
            .filter(|e| e.depends_on_id == call.id && e.task_id != child.id)
        {
            tx.put_edge(e.task_id, child.id, e.kind).await?;
        }
    }
    Ok(child)
}

/// The model round whose frozen context a call runs under (a `tool_call` child's declaring row
/// is the wrapper row: followed up to its round).
/// The chain is walked over the rows' heads (no frozen bytes); only the round is read whole.
pub(super) async fn declaring_round(tx: &mut Tx, task: &TaskRow) -> KernelResult<Option<TaskRow>> {
    match super::tool_search::declaring_head(tx, task.declaring_task_id, None).await? {
        Some(head) => Ok(tx.task_by_id(head.id).await?),
        None => Ok(None),
    }
}

/// `tool_call {name, input}` (unknown keys are ignored).
#[derive(Debug, Clone, PartialEq)]
struct ToolCallInput {
    name: String,
    /// An object: the called tool's arguments.
    input: Value,
}

impl ToolCallInput {
    fn parse(input: &Value) -> Result<Self, KernelToolOutcome> {
        let p = Params::lenient("tool_call", input);
        let Ok(Some(name)) = p.typed("name", Nulls::Refused, Value::as_str) else {
            return Err(params::invalid(
                "`name` must be the exact tool name (a string) from the tool_search result; pass it with `input`, the tool's arguments as an object",
            ));
        };
        let Some(args) = p.get("input").filter(|v| v.is_object()) else {
            return Err(params::invalid(
                "`input` must be an object holding the tool's arguments (use {} for none)",
            ));
        };
        Ok(Self {
            name: name.to_string(),
            input: args.clone(),
        })
    }
}

/// `recursive_tool_call` (the wrapper itself) or `unknown_tool` (no callable of the frozen
/// declaration).
fn refuse_name(name: &str, ctx: &ToolContext<'_>, resolved: &declaration::ResolvedCall) -> Option<KernelToolOutcome> {
    let declared = ctx.tool_definitions.iter().any(|e| callable_of(e) == Some(name));
    if name == ctx.callable || (declared && resolved.tool_name == KernelTool::ToolCall.wire()) {
        return Some(KernelToolOutcome::error(
            ToolWord::RecursiveToolCall,
            &format!("{name:?} is this wrapper itself; call a deferred tool by its own name instead"),
        ));
    }
    if !declared || resolved.entry.is_none() {
        return Some(KernelToolOutcome::error(
            ToolWord::UnknownTool,
            &format!(
                "{name:?} is not one of your tools; use the exact name of a tool you have, as tool_search returns it"
            ),
        ));
    }
    None
}

/// The input bounds (executor.md birth failures): a faulty input is replaced by `{}` and the
/// child fails at birth with the key and detail returned.
fn birth_check(tool_input: Value) -> (Value, Option<SettleError>) {
    if contains_nul(&tool_input) {
        return (json!({}), Some(SettleError::new(task_error::INVALID_TOOL_INPUT, None)));
    }
    let size = jcs::to_string(&tool_input).len();
    if size > bounds::TOOL_INPUT {
        let detail = format!(
            "the input is {size} bytes of canonical JSON; the bound is {} bytes",
            bounds::TOOL_INPUT
        );
        return (
            json!({}),
            Some(SettleError::new(task_error::TOOL_INPUT_TOO_LARGE, Some(detail))),
        );
    }
    (tool_input, None)
}

/// `tool_call`: parse, check the name against the frozen declaration, place the child.
pub(super) async fn run(kernel: &Kernel, u: &mut Unit<'_>, call: &GraphCall<'_>) -> KernelResult<KernelToolOutcome> {
    let ToolCallInput { name, input } = match ToolCallInput::parse(call.input) {
        Ok(input) => input,
        Err(refusal) => return Ok(refusal),
    };
    let resolver = declaration::Resolver::new(call.ctx.tool_definitions);
    let resolved = resolver.resolve(&name, &input);
    if let Some(refusal) = refuse_name(&name, call.ctx, &resolved) {
        return Ok(refusal);
    }
    if u.run.status != RunStatus::Running {
        return Ok(KernelToolOutcome::error(
            ToolWord::ToolCallRefused,
            &format!(
                "the call to {name:?} could not be appended (run_not_appendable): the run is {}",
                u.run.status
            ),
        ));
    }
    let (tool_input, birth) = birth_check(resolved.tool_input.clone());
    let target_executor_id = match &resolved.route {
        Some(route) => kernel
            .store
            .executor_by_public_id(route.runner_executor_public_id)
            .await?
            .map(|e| e.id),
        None => None,
    };
    let new = NewTask {
        kind: TaskKind::Tool,
        origin: call.call.origin,
        on_failure: call.call.on_failure,
        visibility: Visibility::Collapsed,
        mainline: call.call.mainline,
        branch_of: call.call.branch_of.clone(),
        tool_name: Some(resolved.tool_name.clone()),
        tool_alias: resolved.tool_alias.clone(),
        tool_input: Some(serde_json::to_string(&tool_input).expect("input serializes")),
        target_executor_id,
        ..Default::default()
    };
    let mut child = place_child(kernel, u, call.call, "tool", new, true).await?;
    if let Some(error) = birth
        && child.status == TaskStatus::Waiting
    {
        // Failed at birth, in the same transaction; the call's settle cascades to the
        // continuation, which reads the failure.
        kernel
            .settle_with_error(u.tx, u.run, &mut child, TaskStatus::Failed, error, call.now)
            .await?;
    }
    Ok(started(&child.key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_names_the_first_fault() {
        let ok = ToolCallInput::parse(&json!({"name": "deploy", "input": {"env": "prod"}, "x": 1})).unwrap();
        assert_eq!((ok.name.as_str(), &ok.input), ("deploy", &json!({"env": "prod"})));
        let said = |v: Value| {
            ToolCallInput::parse(&v)
                .unwrap_err()
                .content
                .as_str()
                .unwrap()
                .to_string()
        };
        // Both missing: the name is named first.
        assert!(said(json!({})).starts_with("parameter_invalid: `name` must be the exact tool name"));
        assert!(said(json!({"name": 1, "input": {}})).contains("`name` must be"));
        assert!(said(json!({"name": "a", "input": []})).starts_with("parameter_invalid: `input` must be an object"));
        assert!(said(json!({"name": "a"})).contains("`input` must be an object"));
    }

    #[test]
    fn birth_check_replaces_a_faulty_input() {
        let (input, error) = birth_check(json!({"a": "x\u{0}"}));
        assert_eq!(input, json!({}));
        assert_eq!(error.map(|e| e.key).as_deref(), Some(task_error::INVALID_TOOL_INPUT));
        let (input, error) = birth_check(json!({"a": 1}));
        assert_eq!((input, error.is_none()), (json!({"a": 1}), true));
    }
}
