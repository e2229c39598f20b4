//! The live progress view of a run, from its event stream: each model round as it starts and
//! its reply (streamed from `model_delta` frames when the provider streams), each tool call
//! with its input and result, each held call with its effect profile. Used by `nexus run` and
//! `nexus demo`; ends when the run ends or needs attention.

use std::collections::HashSet;
use std::io::Write;

use futures_util::StreamExt;
use nexus_sdk::RunRef;
use nexus_sdk::member::{Ephemeral, Frame, Run, RunStatus, Task, TaskKind, TaskStatus};
use serde_json::Value;

use super::Failure;
use super::output::{badges, compact, short};

/// What to do with a call held for approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnHold {
    /// Print the command that approves it, and keep waiting.
    Hint,
    /// Approve it (the demo), after showing it.
    Approve,
}

/// How the view is shown.
pub struct View {
    /// Where lines go (stderr when stdout carries a JSON document).
    pub out: Box<dyn Write + Send>,
    pub on_hold: OnHold,
}

impl View {
    /// A member's view: held calls get the commands that decide them; lines go to stdout, or
    /// to stderr when stdout carries the `--json` document.
    pub fn hinting(json: bool) -> View {
        let out: Box<dyn Write + Send> = if json {
            Box::new(std::io::stderr())
        } else {
            Box::new(std::io::stdout())
        };
        View {
            out,
            on_hold: OnHold::Hint,
        }
    }
}

/// Whether `status` ends the follow: terminal, or quiescent with a failure to adjudicate.
pub fn settled(status: &RunStatus) -> bool {
    status.is_terminal() || *status == RunStatus::NeedsAttention
}

/// Follows `run` until it ends or needs attention; returns the run as read then.
pub async fn follow(run: &RunRef, mut view: View) -> Result<Run, Failure> {
    let mut streamed: HashSet<String> = HashSet::new();
    let mut open_delta: Option<String> = None;
    let mut feed = run.stream(0).await?;
    while let Some(frame) = feed.next().await {
        match frame? {
            Frame::Ephemeral(e) => delta(&mut view, &e, &mut streamed, &mut open_delta),
            Frame::Event(event) => {
                if let Some(change) = event.run_status_change() {
                    end_delta(&mut view, &mut open_delta);
                    line(&mut view, &format!("run {}", change.to));
                    if settled(&change.to) {
                        break;
                    }
                    continue;
                }
                let (Some(change), Some(key)) = (event.task_status_change(), event.task_key.as_deref()) else {
                    continue;
                };
                if !matters(&change.to) {
                    continue;
                }
                end_delta(&mut view, &mut open_delta);
                let task = run.task(key).await?;
                show(run, &mut view, &task, &change.to, &streamed).await?;
            }
        }
    }
    end_delta(&mut view, &mut open_delta);
    Ok(run.get().await?.run)
}

/// The statuses the view prints: a start, a hold, a settle.
fn matters(status: &TaskStatus) -> bool {
    !matches!(status, TaskStatus::Waiting)
}

fn line(view: &mut View, text: &str) {
    let _ = writeln!(view.out, "{text}");
    let _ = view.out.flush();
}

fn delta(view: &mut View, frame: &Ephemeral, streamed: &mut HashSet<String>, open: &mut Option<String>) {
    if frame.kind != "model_delta" {
        return;
    }
    let (Some(key), Some(text)) = (
        frame.data.get("task_key").and_then(Value::as_str),
        frame.data.get("delta").and_then(Value::as_str),
    ) else {
        return;
    };
    if open.as_deref() != Some(key) {
        end_delta(view, open);
        let _ = write!(view.out, "  ");
        *open = Some(key.to_string());
    }
    streamed.insert(key.to_string());
    let _ = write!(view.out, "{}", text.replace('\n', "\n  "));
    let _ = view.out.flush();
}

fn end_delta(view: &mut View, open: &mut Option<String>) {
    if open.take().is_some() {
        line(view, "");
    }
}

async fn show(
    run: &RunRef,
    view: &mut View,
    task: &Task,
    to: &TaskStatus,
    streamed: &HashSet<String>,
) -> Result<(), Failure> {
    match (&task.kind, to) {
        (TaskKind::Model, TaskStatus::Running) => {
            let model = task.model.as_deref().unwrap_or("model");
            line(view, &format!("── round {} ({model})", task.key));
        }
        (TaskKind::Model, TaskStatus::Completed) => {
            let text = task.output.as_deref().unwrap_or_default().trim();
            if !text.is_empty() && !streamed.contains(&task.key) {
                for l in text.lines() {
                    line(view, &format!("  {l}"));
                }
            }
        }
        (TaskKind::Tool, TaskStatus::Running | TaskStatus::Dispatched) => {
            let input = task.tool_input.as_ref().map(|i| short(&compact(i), 160));
            line(view, &format!("  → {} {}", name(task), input.unwrap_or_default()));
        }
        // Every tool row passes through `needs_approval` (approvals.md §3): only a row still
        // held when read is waiting for a person.
        (TaskKind::Tool, TaskStatus::NeedsApproval) if task.status == TaskStatus::NeedsApproval => {
            hold(run, view, task).await?
        }
        (TaskKind::Tool, TaskStatus::Completed) => {
            let heading = task.title.clone().unwrap_or_else(|| name(task));
            let preview = found(task).unwrap_or_else(|| short(task.output_preview.as_deref().unwrap_or_default(), 120));
            let mark = if task.is_error { "✗" } else { "✓" };
            line(view, &format!("  {mark} {heading}: {preview}"));
        }
        (_, status) if is_failure(status) => {
            let why = task
                .error
                .as_ref()
                .map(|e| {
                    format!(
                        "{}{}",
                        e.key,
                        e.detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default()
                    )
                })
                .unwrap_or_default();
            line(view, &format!("  ✗ {} {status}: {why}", name(task)));
        }
        _ => {}
    }
    Ok(())
}

/// A `tool_search` result as the names it found.
fn found(task: &Task) -> Option<String> {
    let wire = nexus_core::registry::resolve_wire(task.tool_name.as_deref()?)?;
    if wire.canonical != nexus_sdk::tools::TOOL_SEARCH {
        return None;
    }
    let result: Value = serde_json::from_str(task.output.as_deref()?).ok()?;
    let names: Vec<&str> = result
        .get("tools")?
        .as_array()?
        .iter()
        .filter_map(|t| t.get("name")?.as_str())
        .collect();
    Some(format!("found {}", names.join(", ")))
}

fn is_failure(status: &TaskStatus) -> bool {
    matches!(
        status,
        TaskStatus::Failed | TaskStatus::TimedOut | TaskStatus::Uncertain | TaskStatus::Canceled
    )
}

/// A tool row's name as the model called it, or a model round's key.
fn name(task: &Task) -> String {
    task.tool_alias
        .clone()
        .or_else(|| task.tool_name.clone())
        .unwrap_or_else(|| task.key.clone())
}

async fn hold(run: &RunRef, view: &mut View, task: &Task) -> Result<(), Failure> {
    let profile = task.rest.get("effect_profile").cloned().unwrap_or(Value::Null);
    let input = task.tool_input.as_ref().map(compact).unwrap_or_default();
    line(
        view,
        &format!(
            "  ⏸ {} needs approval [{}] (task {})",
            name(task),
            badges(&profile),
            task.key
        ),
    );
    line(view, &format!("    input: {}", short(&input, 400)));
    match view.on_hold {
        OnHold::Hint => line(
            view,
            &format!(
                "    approve: nexus approvals approve {} {}   deny: nexus approvals deny {} {} --reason …",
                run.public_id(),
                task.key,
                run.public_id(),
                task.key
            ),
        ),
        OnHold::Approve => match run.approve(&task.key).await {
            Ok(_) => line(view, "    approved by the demo"),
            // Someone decided first (the console, another terminal): the feed shows the rest.
            Err(e) if e.code() == Some("not_awaiting_approval") => line(view, "    decided elsewhere"),
            Err(e) => return Err(e.into()),
        },
    }
    Ok(())
}
