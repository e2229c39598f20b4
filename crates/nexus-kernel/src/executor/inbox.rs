//! `GET X/inbox?after=&limit=` (executor.md §6): the level-triggered view of the parked rows
//! addressed to this executor on runs that are `running` or `canceling`.
//!
//! Three rows are listed while they sit in their parked status: a tool row at `dispatched`
//! (`tool_call`), a tool row at `needs_approval` (`approval`) and an await at
//! `awaiting_input` (`ask`). Rows are ordered by internal id; `after` is an opaque cursor
//! (the last internal id of the previous page) and `next_after` is returned only when a full
//! page was fetched.

use std::collections::HashMap;

use nexus_core::codes::Code;
use nexus_store::{Engine, ExecutorRow, RunRow, TaskRow};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::auth::ExecutorPrincipal;
use crate::error::{KernelError, KernelResult};
use crate::runs::FrozenContext;
use crate::runs::read::{object, pagination};
use crate::{Kernel, time};

/// The inbox kind of a row in its current status (`None`: the row is not an inbox row).
pub(crate) fn inbox_kind(task: &TaskRow) -> Option<&'static str> {
    match (task.kind.as_str(), task.status.as_str()) {
        ("tool_task", "dispatched") => Some("tool_call"),
        ("tool_task", "needs_approval") => Some("approval"),
        ("await_task", "awaiting_input") => Some("ask"),
        _ => None,
    }
}

/// The kind a row is claimed or committed as, whatever its status: an await is an `ask`, a
/// tool row held for approval an `approval`, any other tool row a `tool_call`.
pub(crate) fn row_kind(task: &TaskRow) -> &'static str {
    match (task.kind.as_str(), task.status.as_str()) {
        ("await_task", _) => "ask",
        ("tool_task", "needs_approval") => "approval",
        _ => "tool_call",
    }
}

fn parse(text: Option<&str>) -> Option<Value> {
    text.and_then(|t| serde_json::from_str(t).ok())
}

/// Parses the inbox cursor: absent or empty → 0; a non-negative integer, else 400
/// `parameter_invalid`.
pub(crate) fn parse_after(after: Option<&str>) -> KernelResult<i64> {
    match after {
        None | Some("") => Ok(0),
        Some(s) => s.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
            KernelError::new(
                Code::ParameterInvalid,
                format!("after {s:?} is not a cursor this route issued"),
            )
        }),
    }
}

/// A page size: default 50, clamped to 1–200.
pub(crate) fn inbox_limit(limit: Option<i64>) -> i64 {
    limit
        .unwrap_or(nexus_core::bounds::PAGE_DEFAULT as i64)
        .clamp(1, nexus_core::bounds::PAGE_MAX as i64)
}

/// Memoized lookups for one projection (workspaces' public ids, executors, members).
#[derive(Default)]
pub(crate) struct Lookups {
    workspaces: HashMap<i64, Option<Uuid>>,
    executors: HashMap<i64, Option<(Uuid, String)>>,
    members: HashMap<i64, Option<Uuid>>,
}

impl Lookups {
    /// Lookups that already know the caller's own executor and, when given, a run's
    /// workspace public id (both read by the door before the projection).
    pub(crate) fn knowing(executor: &ExecutorRow, workspace: Option<(i64, Uuid)>) -> Lookups {
        let mut l = Lookups::default();
        l.executors
            .insert(executor.id, Some((executor.public_id, executor.display_name.clone())));
        if let Some((id, public_id)) = workspace {
            l.workspaces.insert(id, Some(public_id));
        }
        l
    }
}

impl Kernel {
    async fn lookup_workspace(&self, l: &mut Lookups, id: i64) -> KernelResult<Option<Uuid>> {
        if let Some(w) = l.workspaces.get(&id) {
            return Ok(*w);
        }
        let w = self.store.workspace_by_id(id).await?.map(|w| w.public_id);
        l.workspaces.insert(id, w);
        Ok(w)
    }

    async fn lookup_executor(&self, l: &mut Lookups, id: i64) -> KernelResult<Option<(Uuid, String)>> {
        if let Some(e) = l.executors.get(&id) {
            return Ok(e.clone());
        }
        let e = self
            .store
            .executor_by_id(id)
            .await?
            .map(|e| (e.public_id, e.display_name));
        l.executors.insert(id, e.clone());
        Ok(e)
    }

    async fn lookup_member(&self, l: &mut Lookups, id: i64) -> KernelResult<Option<Uuid>> {
        if let Some(m) = l.members.get(&id) {
            return Ok(*m);
        }
        let m = self.store.member_by_id(id).await?.map(|m| m.public_id);
        l.members.insert(id, m);
        Ok(m)
    }

    /// The memory scope of the round that declared `task` (`{workspace_public_id,
    /// conversation_public_id, user_public_id}`), else one built from the run.
    async fn scope_of(
        &self,
        l: &mut Lookups,
        run: &RunRow,
        task: &TaskRow,
        ws_public: Uuid,
        conversation: &Value,
    ) -> KernelResult<Value> {
        let mut declaring = task.declaring_task_id;
        for _ in 0..16 {
            let Some(id) = declaring else { break };
            let Some(row) = self.store.task_by_id(id).await? else {
                break;
            };
            if row.kind == "model_task" {
                let memory = FrozenContext::of(&row).memory;
                if memory.is_object() {
                    return Ok(memory);
                }
                break;
            }
            declaring = row.declaring_task_id;
        }
        let user = self.lookup_member(l, run.answering_member_id).await?;
        Ok(json!({
            "workspace_public_id": ws_public.to_string(),
            "conversation_public_id": conversation,
            "user_public_id": user.map_or(Value::Null, |u| Value::String(u.to_string())),
        }))
    }

    /// The inbox row projection of executor.md §6. Null fields are omitted, except
    /// `conversation_public_id` and `parent_public_id`, which are always present.
    pub(crate) async fn inbox_row(&self, l: &mut Lookups, run: &RunRow, task: &TaskRow) -> KernelResult<Value> {
        let kind = row_kind(task);
        let ws_public = self.lookup_workspace(l, run.workspace_id).await?.unwrap_or_default();
        let hosting = parse(Some(&run.hosting)).unwrap_or(Value::Null);
        let conversation = hosting
            .get("conversation_public_id")
            .cloned()
            .filter(Value::is_string)
            .unwrap_or(Value::Null);
        let parent = hosting
            .get("parent_public_id")
            .cloned()
            .filter(Value::is_string)
            .unwrap_or(Value::Null);
        let mut m = Map::new();
        m.insert("kind".into(), json!(kind));
        m.insert("run_public_id".into(), json!(run.public_id.to_string()));
        m.insert("workspace_public_id".into(), json!(ws_public.to_string()));
        m.insert("task_key".into(), json!(task.key));
        if let Some(at) = task.started_at.or(task.await_started_at) {
            m.insert("started_at".into(), json!(time::iso(at)));
        }
        if let Some(d) = task.deadline_at {
            m.insert("deadline_at".into(), json!(time::iso(d)));
        }
        if let Some(t) = task.timeout_ms {
            m.insert("timeout_ms".into(), json!(t));
        }
        m.insert("claimed".into(), json!(task.claimed_at.is_some()));
        if let Some(a) = task.addressed_executor_id
            && let Some((id, _)) = self.lookup_executor(l, a).await?
        {
            m.insert(
                "addressed_to".into(),
                json!({"role": task.addressed_role, "executor_public_id": id.to_string()}),
            );
        }
        m.insert("conversation_public_id".into(), conversation.clone());
        m.insert("parent_public_id".into(), parent);
        let frozen = parse(task.frozen_context.as_deref()).unwrap_or(Value::Null);
        match kind {
            "tool_call" | "approval" => {
                m.insert("tool_name".into(), json!(task.tool_name));
                if let Some(a) = &task.tool_alias {
                    m.insert("tool_alias".into(), json!(a));
                }
                if let Some(t) = task.target_executor_id
                    && let Some((id, name)) = self.lookup_executor(l, t).await?
                {
                    m.insert(
                        "target".into(),
                        json!({"executor_public_id": id.to_string(), "display_name": name}),
                    );
                }
                m.insert(
                    "tool_input".into(),
                    parse(task.tool_input.as_deref()).unwrap_or_else(|| json!({})),
                );
                if let Some(c) = &task.tool_call_id {
                    m.insert("tool_call_id".into(), json!(c));
                }
                if kind == "approval"
                    && let Some(p) = parse(task.effect_profile.as_deref()).filter(|p| !p.is_null())
                {
                    m.insert("effect_profile".into(), p);
                }
                if kind == "tool_call" {
                    // A kernel-named row dispatched externally (in v1: `skill` loads).
                    if task
                        .tool_name
                        .as_deref()
                        .is_some_and(|n| nexus_core::registry::resolve_wire(n).is_some())
                    {
                        let scope = self.scope_of(l, run, task, ws_public, &conversation).await?;
                        m.insert("scope".into(), scope);
                    }
                    if let Some(ctx) = frozen.get("model_context").filter(|v| !v.is_null()) {
                        m.insert("model_context".into(), ctx.clone());
                    }
                }
            }
            _ => {
                let ask = frozen.get("ask").cloned().unwrap_or(Value::Null);
                m.insert(
                    "prompt".into(),
                    ask.get("prompt").cloned().filter(|v| !v.is_null()).unwrap_or(json!("")),
                );
                for key in ["options", "multi"] {
                    if let Some(v) = ask.get(key).filter(|v| !v.is_null()) {
                        m.insert(key.into(), v.clone());
                    }
                }
            }
        }
        Ok(Value::Object(m))
    }

    /// `GET X/inbox?after=&limit=` → `{tasks, pagination: {next_after}}`.
    pub async fn inbox(&self, p: &ExecutorPrincipal, after: Option<&str>, limit: Option<i64>) -> KernelResult<Value> {
        let after = parse_after(after)?;
        let limit = inbox_limit(limit);
        let page = self.store.inbox_page(p.executor.id, after, limit).await?;
        let full = page.len() as i64 == limit;
        let last = page.last().map(|(t, _)| t.id);
        let mut l = Lookups::knowing(&p.executor, None);
        let mut tasks = Vec::with_capacity(page.len());
        for (task, run) in &page {
            if inbox_kind(task).is_none() {
                continue;
            }
            tasks.push(self.inbox_row(&mut l, run, task).await?);
        }
        let next = if full { last } else { None };
        Ok(object([
            ("tasks", Value::Array(tasks)),
            ("pagination", pagination(next)),
        ]))
    }
}
