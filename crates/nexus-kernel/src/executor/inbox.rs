//! `GET X/inbox?after=&limit=` (executor.md §6): the level-triggered view of the parked rows
//! addressed to this executor on runs that are `running` or `canceling`.
//!
//! Three rows are listed while they sit in their parked status: a tool row at `dispatched`
//! (`tool_call`), a tool row at `needs_approval` (`approval`) and an await at
//! `awaiting_input` (`ask`). Rows are ordered by internal id; `after` is an opaque cursor
//! (the last internal id of the previous page) and `next_after` is returned only when a full
//! page was fetched.

use nexus_store::prelude::*;
use nexus_store::{Hosting, RunRow, TaskKind, TaskRow, TaskStatus};
use serde::Serialize;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::auth::ExecutorPrincipal;
use crate::error::KernelResult;
use crate::names::Names;
use crate::paging::{page_limit, pagination, parse_cursor};
use crate::runs::FrozenContext;
use crate::runs::columns::Frozen;
use crate::runs::view::{AddressedTo, Target, parse};
use crate::{Executor, Kernel, time};

/// The inbox kind of a row in its current status (`None`: the row is not an inbox row).
pub(crate) fn inbox_kind(task: &TaskRow) -> Option<&'static str> {
    match (task.kind, task.status) {
        (TaskKind::Tool, TaskStatus::Dispatched) => Some("tool_call"),
        (TaskKind::Tool, TaskStatus::NeedsApproval) => Some("approval"),
        (TaskKind::Await, TaskStatus::AwaitingInput) => Some("ask"),
        _ => None,
    }
}

/// The kind a row is claimed or committed as, whatever its status: an await is an `ask`, a
/// tool row held for approval an `approval`, any other tool row a `tool_call`.
pub(crate) fn row_kind(task: &TaskRow) -> &'static str {
    match (task.kind, task.status) {
        (TaskKind::Await, _) => "ask",
        (TaskKind::Tool, TaskStatus::NeedsApproval) => "approval",
        _ => "tool_call",
    }
}

/// An inbox row as served (executor.md §6): a page's rows, and the `task` of the claim and
/// extend replies. Typed rather than built as a `Value` tree: a reply is written straight from
/// it (no map per object, no hashing of every key). Members serialize in declaration order; an
/// absent option is omitted, except `conversation_public_id` and `parent_public_id`, which are
/// always present (null when the run has none).
#[derive(Debug, Clone, Serialize)]
pub struct InboxRow {
    /// `tool_call`, `approval` or `ask`.
    pub kind: &'static str,
    pub run_public_id: Uuid,
    pub workspace_public_id: Uuid,
    pub task_key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<i64>,
    pub claimed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addressed_to: Option<AddressedTo>,
    /// The hosting conversation, or null for a standalone run.
    pub conversation_public_id: Option<Uuid>,
    /// The parent conversation: a run's hosting names none, so always null today.
    pub parent_public_id: Option<Uuid>,
    #[serde(flatten)]
    pub detail: RowDetail,
}

/// The members of an inbox row that depend on its kind, after the common ones.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
// Built once per served row and written out at once: never held in bulk.
#[allow(clippy::large_enum_variant)]
pub enum RowDetail {
    /// A `tool_call` or an `approval`.
    Tool {
        tool_name: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_alias: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        target: Option<Target>,
        tool_input: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_call_id: Option<String>,
        /// Approval rows only.
        #[serde(skip_serializing_if = "Option::is_none")]
        effect_profile: Option<Value>,
        /// Kernel-named rows dispatched externally (`skill` loads) only.
        #[serde(skip_serializing_if = "Option::is_none")]
        scope: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        model_context: Option<Value>,
    },
    /// An `ask`.
    Ask {
        prompt: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        options: Option<Vec<String>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        multi: Option<bool>,
    },
}

/// `GET X/inbox` → `{tasks, pagination: {next_after}}`.
#[derive(Debug, Clone, Serialize)]
pub struct InboxPage {
    pub tasks: Vec<InboxRow>,
    pub pagination: nexus_api::common::Pagination,
}

/// The claim and extend replies: `{task: <inbox row>, claim: {claim_token, deadline_at}}`.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimReply {
    pub task: InboxRow,
    pub claim: ClaimGrant,
}

/// The grant of a claim or an extension.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimGrant {
    pub claim_token: String,
    pub deadline_at: String,
}

/// Where an inbox row's tool members are read from.
struct RowAt<'a> {
    run: &'a RunRow,
    task: &'a TaskRow,
    /// `tool_call` or `approval`.
    kind: &'static str,
    ws_public: Uuid,
    /// The hosting conversation's id, if any.
    conversation: Option<Uuid>,
}

/// The members of an `ask` row: its frozen prompt, options and `multi`.
fn inbox_ask_detail(task: &TaskRow) -> RowDetail {
    let ask = Frozen::ask_of(task);
    RowDetail::Ask {
        prompt: ask.as_ref().map_or_else(String::new, |a| a.prompt.clone()),
        options: ask.as_ref().and_then(|a| a.options.clone()),
        multi: ask.as_ref().map(|a| a.multi),
    }
}

impl Kernel {
    /// The memory scope of the round that declared `task` (`{workspace_public_id,
    /// conversation_public_id, user_public_id}`), else one built from the run.
    async fn scope_of(
        &self,
        l: &mut Names,
        run: &RunRow,
        task: &TaskRow,
        ws_public: Uuid,
        conversation: Option<Uuid>,
    ) -> KernelResult<Value> {
        let mut declaring = task.declaring_task_id;
        for _ in 0..16 {
            let Some(id) = declaring else { break };
            let Some(row) = self.store.task_by_id(id).await? else {
                break;
            };
            if row.kind == TaskKind::Model {
                let memory = FrozenContext::of(&row).memory;
                if memory.is_object() {
                    return Ok(memory);
                }
                break;
            }
            declaring = row.declaring_task_id;
        }
        let user = self.member_public(l, run.answering_member_id).await?;
        Ok(json!({
            "workspace_public_id": ws_public.to_string(),
            "conversation_public_id": conversation.map(|c| c.to_string()),
            "user_public_id": user.map_or(Value::Null, |u| Value::String(u.to_string())),
        }))
    }

    /// The inbox row projection of executor.md §6 (see [`InboxRow`]).
    pub(crate) async fn inbox_row(&self, l: &mut Names, run: &RunRow, task: &TaskRow) -> KernelResult<InboxRow> {
        let kind = row_kind(task);
        let ws_public = self.workspace_public(l, run.workspace_id).await?.unwrap_or_default();
        let conversation = match run.hosting {
            Hosting::Conversation {
                conversation_public_id, ..
            } => Some(conversation_public_id),
            Hosting::Standalone => None,
        };
        let addressed_to = match task.addressed_executor_id {
            Some(a) => self
                .executor_public(l, a)
                .await?
                .map(|(executor_public_id, _)| AddressedTo {
                    role: task.addressed_role.map(|r| r.as_str().to_string()),
                    executor_public_id,
                }),
            None => None,
        };
        let detail = match kind {
            "tool_call" | "approval" => {
                let at = RowAt {
                    run,
                    task,
                    kind,
                    ws_public,
                    conversation,
                };
                self.inbox_tool_detail(l, at).await?
            }
            _ => inbox_ask_detail(task),
        };
        Ok(InboxRow {
            kind,
            run_public_id: run.public_id,
            workspace_public_id: ws_public,
            task_key: task.key.clone(),
            started_at: task.started_at.or(task.await_started_at).map(time::iso),
            deadline_at: task.deadline_at.map(time::iso),
            timeout_ms: task.timeout_ms,
            claimed: task.claimed_at.is_some(),
            addressed_to,
            conversation_public_id: conversation,
            parent_public_id: None,
            detail,
        })
    }

    /// The members of a `tool_call` or `approval` row: the target runner, the frozen input, an
    /// approval's effect profile, and a kernel-named row's memory scope and model context.
    async fn inbox_tool_detail(&self, l: &mut Names, at: RowAt<'_>) -> KernelResult<RowDetail> {
        let RowAt {
            run,
            task,
            kind,
            ws_public,
            conversation,
        } = at;
        let target = match task.target_executor_id {
            Some(t) => self
                .executor_public(l, t)
                .await?
                .map(|(executor_public_id, display_name)| Target {
                    executor_public_id,
                    display_name,
                }),
            None => None,
        };
        let effect_profile = if kind == "approval" {
            parse(task.effect_profile.as_deref()).filter(|p| !p.is_null())
        } else {
            None
        };
        let (mut scope, mut model_context) = (None, None);
        if kind == "tool_call" {
            // A kernel-named row dispatched externally (in v1: `skill` loads).
            if task
                .tool_name
                .as_deref()
                .is_some_and(|n| nexus_core::registry::resolve_wire(n).is_some())
            {
                scope = Some(self.scope_of(l, run, task, ws_public, conversation).await?);
            }
            model_context = Frozen::model_context_of(task).filter(|v| !v.is_null());
        }
        Ok(RowDetail::Tool {
            tool_name: task.tool_name.clone(),
            tool_alias: task.tool_alias.clone(),
            target,
            tool_input: parse(task.tool_input.as_deref()).unwrap_or_else(|| json!({})),
            tool_call_id: task.tool_call_id.clone(),
            effect_profile,
            scope,
            model_context,
        })
    }
}

impl Executor<'_> {
    /// `GET X/inbox?after=&limit=` → `{tasks, pagination: {next_after}}`.
    pub async fn inbox(
        &self,
        p: &ExecutorPrincipal,
        after: Option<&str>,
        limit: Option<i64>,
    ) -> KernelResult<InboxPage> {
        let after = parse_cursor(after)?;
        let limit = page_limit(limit);
        let page = self.store.inbox_page(p.executor.id, after, limit).await?;
        let full = page.len() as i64 == limit;
        let last = page.last().map(|(t, _)| t.id);
        let mut l = Names::knowing(&p.executor, None);
        let mut tasks = Vec::with_capacity(page.len());
        for (task, run) in &page {
            if inbox_kind(task).is_none() {
                continue;
            }
            tasks.push(self.inbox_row(&mut l, run, task).await?);
        }
        let next = if full { last } else { None };
        Ok(InboxPage {
            tasks,
            pagination: pagination(next),
        })
    }
}
