//! Member-plane reads of runs (runs.md §1, §9–§11): run and task projections, the sealed
//! request, the transcript, the graph and the durable event feed.
//!
//! Standing (errors-and-auth.md §2): with no standing in the workspace every route answers 404
//! `not_found`; reads need only `read` standing, verbs `write` ([`require_write`]).

use std::collections::HashMap;

use nexus_api::common::Pagination;
use nexus_api::events::{Event, EventPage};
use nexus_api::runs::{RunEnvelope, RunPage};
use nexus_api::views::{self, Graph, Transcript, TranscriptRow};
use nexus_core::codes::Code;
use nexus_core::graph::{self, GraphNode};
use nexus_core::results::{self};
use nexus_store::prelude::*;
use nexus_store::{EventRow, RunRow, RunStatus, TaskKind, TaskRow, Tx, Visibility};
use serde::Serialize;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::columns::Frozen;
use super::render::blocks_of;
use super::view::{AddressedTo, RunNames, Target, parse, run_record};

/// The query of `GET W/runs` (runs.md §2).
#[derive(Debug, Default, Clone, Copy)]
pub struct RunsQuery<'a> {
    pub status: Option<&'a str>,
    pub after: Option<&'a str>,
    pub limit: Option<i64>,
    /// `asc` (the default) or `desc` (newest first).
    pub order: Option<&'a str>,
}
use super::view::{
    AskDetail, AwaitDetail, CallRef, Dep, KindDetail, ModelDetail, Outcome, TaskReply, TaskView, ToolDetail, ToolNames,
    Trace, TraceRow, preview,
};
use super::{FrozenContext, RequestSurface, StoredReply};
use crate::auth::MemberPrincipal;
use crate::error::{KernelError, KernelResult};
use crate::names::Names;
use crate::paging::{page_limit, pagination, parse_cursor};
use crate::{Kernel, Runs, time};

const EVENTS_DEFAULT: i64 = 100;
const EVENTS_MAX: i64 = 500;

/// `GET R`: the run and its model rounds' usage summed.
#[derive(Debug, Clone, Serialize)]
pub struct RunRead {
    pub run: nexus_api::runs::Run,
    pub usage: nexus_providers::Usage,
}

/// `GET R/tasks/{k}/request`: the sealed record, or the exact provider body bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestRead {
    /// `{request: {entries, request_options, body_sha256, request_bytes, attempts}}`.
    Json(Value),
    /// `?format=provider`: the body bytes as sent, and their SHA-256 (hex).
    Provider { body: Vec<u8>, body_sha256: String },
}

fn not_found(what: &str) -> KernelError {
    KernelError::new(Code::NotFound, format!("no such {what}"))
}

/// `GET R/tasks`: one page of trace rows.
#[derive(Debug, Clone, Serialize)]
pub struct TracePage {
    pub tasks: Vec<TraceRow>,
    pub pagination: Pagination,
}

/// The transcript's order: creation order, except that a row a tool call declared (the tool
/// `tool_call` runs, say, created only once the call ran) follows its declaring call at once,
/// not the continuation round created beside that call.
fn transcript_order(tasks: &[TaskRow]) -> Vec<&TaskRow> {
    let tools: std::collections::HashSet<i64> = tasks
        .iter()
        .filter(|t| t.kind == TaskKind::Tool)
        .map(|t| t.id)
        .collect();
    let mut children: HashMap<i64, Vec<&TaskRow>> = HashMap::new();
    for t in tasks {
        if let Some(d) = t.declaring_task_id.filter(|d| tools.contains(d)) {
            children.entry(d).or_default().push(t);
        }
    }
    let mut out = Vec::with_capacity(tasks.len());
    let mut stack: Vec<&TaskRow> = Vec::new();
    for t in tasks.iter().rev() {
        if !t.declaring_task_id.is_some_and(|d| tools.contains(&d)) {
            stack.push(t);
        }
    }
    while let Some(t) = stack.pop() {
        out.push(t);
        if let Some(kids) = children.get(&t.id) {
            stack.extend(kids.iter().rev());
        }
    }
    out
}

/// A transcript row of `t` under `role`, its text and tool members unset.
fn transcript_row(t: &TaskRow, role: &str) -> TranscriptRow {
    TranscriptRow {
        key: t.key.clone(),
        kind: t.kind.as_str().into(),
        role: role.to_string(),
        mainline: t.mainline,
        branch_of: t.branch_of.clone(),
        status: t.status.as_str().into(),
        text: None,
        tool_calls: None,
        tool_name: None,
        tool_alias: None,
        title: None,
        output_preview: None,
        is_error: false,
        visibility: Some(t.visibility.as_str().to_string()),
        rest: Map::new(),
    }
}

/// A model row's transcript rows: the root round's prompt as the user's, then the reply with
/// the calls it declared.
fn model_rows(t: &TaskRow, tasks: &[TaskRow], rows: &mut Vec<TranscriptRow>) {
    let root = t
        .declaring_task_id
        .and_then(|d| tasks.iter().find(|x| x.id == d))
        .is_none_or(|d| d.kind != TaskKind::Model);
    let prompt = root.then(|| FrozenContext::of(t).prompt).filter(|p| !p.is_empty());
    if let Some(prompt) = prompt {
        rows.push(TranscriptRow {
            text: Some(prompt),
            ..transcript_row(t, "user")
        });
    }
    let text = StoredReply::of(t).and_then(|r| r.text).or_else(|| {
        t.status
            .is_settled()
            .then(|| results::text_projection(&blocks_of(t)))
            .filter(|s| !s.is_empty())
    });
    let calls: Vec<nexus_api::common::CallRef> = tasks
        .iter()
        .filter(|c| c.kind == TaskKind::Tool && c.declaring_task_id == Some(t.id))
        .map(|c| CallRef::of(c).into())
        .collect();
    rows.push(TranscriptRow {
        text,
        tool_calls: Some(calls).filter(|c| !c.is_empty()),
        ..transcript_row(t, "assistant")
    });
}

/// A tool row's transcript row: its names, status and output preview.
fn tool_row(t: &TaskRow) -> TranscriptRow {
    let output = t
        .status
        .is_settled()
        .then(|| preview(&results::text_projection(&blocks_of(t))));
    TranscriptRow {
        tool_name: t.tool_name.clone(),
        tool_alias: t.tool_alias.clone(),
        title: t.title.clone(),
        is_error: output.is_some() && t.is_error,
        output_preview: output,
        ..transcript_row(t, "tool")
    }
}

/// An await row's members of the task read: its frozen wait or ask.
fn await_detail(task: &TaskRow) -> KindDetail {
    let frozen = Frozen::of(task);
    KindDetail::Await(Box::new(AwaitDetail {
        wait: match &frozen {
            Some(Frozen::Wait(w)) => Some(json!(w)),
            _ => None,
        },
        ask: match &frozen {
            Some(Frozen::Ask(ask)) => Some(AskDetail {
                options: json!(ask.options),
                multi: Value::Bool(ask.multi),
            }),
            _ => None,
        },
    }))
}

/// A committed row's dependency edges and the rows they name
/// ([`Kernel::committed_neighbours`]).
pub(crate) struct Neighbours {
    edges: Vec<nexus_store::EdgeRow>,
    deps: Vec<TaskRow>,
}

impl Kernel {
    /// The run record of runs.md §1, its public names read through `names`.
    pub(crate) async fn run_record_with(
        &self,
        names: &mut Names,
        ws_public_id: Uuid,
        run: &RunRow,
    ) -> KernelResult<nexus_api::runs::Run> {
        let declaring_agent = match run.declaring_agent_id {
            Some(a) => self.member_public(names, a).await?,
            None => None,
        };
        let default_runner = match run.default_runner_id {
            Some(e) => self.executor_public(names, e).await?.map(|(u, _)| u),
            None => None,
        };
        let deliverable_task_key = match run.deliverable_task_id {
            Some(t) => self.task_key_of(names, t).await?,
            None => None,
        };
        let record_names = RunNames {
            workspace_public_id: ws_public_id,
            created_by: self.member_public(names, run.created_by_id).await?,
            answering: self.member_public(names, run.answering_member_id).await?,
            declaring_agent,
            default_runner,
            deliverable_task_key,
        };
        Ok(run_record(run, record_names))
    }

    /// The `{run}` answer of the run verbs (start, stop, the default runner).
    pub(crate) async fn run_envelope(&self, ws_public_id: Uuid, run: &RunRow) -> KernelResult<RunEnvelope> {
        let mut names = Names::default();
        Ok(RunEnvelope {
            run: self.run_record_with(&mut names, ws_public_id, run).await?,
        })
    }
}

impl Runs<'_> {
    /// `GET R` → `{run, usage}`: `usage` sums the token usage of the run's model rounds (beside
    /// the run, so the run object stays the one every other read serves).
    pub async fn get_run(&self, p: &MemberPrincipal, ws: Uuid, run: Uuid) -> KernelResult<RunRead> {
        let (ws_row, _) = self.workspace_for(p, ws, false).await?;
        let run = self.run_in(&ws_row, run).await?;
        let mut names = Names::default();
        Ok(RunRead {
            run: self.run_record_with(&mut names, ws_row.public_id, &run).await?,
            usage: self.run_usage(run.id).await?,
        })
    }

    /// `GET W/runs?status=&after=&limit=&order=` → `{runs, pagination}`: oldest first by
    /// default, newest first with `order=desc` (the console's runs list; `after` then continues
    /// below the cursor).
    pub async fn list_runs(&self, p: &MemberPrincipal, ws: Uuid, q: &RunsQuery<'_>) -> KernelResult<RunPage> {
        let (ws_row, _) = self.workspace_for(p, ws, false).await?;
        let status = match q.status {
            None => None,
            Some(s) => Some(RunStatus::parse(s).ok_or_else(|| {
                KernelError::new(Code::ParameterInvalid, format!("status {s:?} is not a run status"))
            })?),
        };
        let newest_first = match q.order {
            None | Some("asc") => false,
            Some("desc") => true,
            Some(o) => {
                return Err(KernelError::new(
                    Code::ParameterInvalid,
                    format!("order {o:?} is not asc or desc"),
                ));
            }
        };
        let after = parse_cursor(q.after)?;
        let limit = page_limit(q.limit);
        let rows = if newest_first {
            let before = if after == 0 { i64::MAX } else { after };
            self.store
                .runs_of_workspace_newest(ws_row.id, status, before, limit)
                .await?
        } else {
            self.store.runs_of_workspace(ws_row.id, status, after, limit).await?
        };
        let mut names = Names::default();
        let mut runs = Vec::with_capacity(rows.len());
        for r in &rows {
            runs.push(self.run_record_with(&mut names, ws_row.public_id, r).await?);
        }
        self.summarize_runs(&mut runs, &rows).await?;
        let next = (rows.len() as i64 == limit)
            .then(|| rows.last().map(|r| r.id))
            .flatten();
        Ok(RunPage {
            runs,
            pagination: pagination(next),
        })
    }
}

impl Kernel {
    /// The dependencies of each task.
    fn deps_of(tasks: &[TaskRow], edges: &[nexus_store::EdgeRow]) -> HashMap<i64, Vec<Dep>> {
        let by_id: HashMap<i64, &TaskRow> = tasks.iter().map(|t| (t.id, t)).collect();
        let mut out: HashMap<i64, Vec<Dep>> = HashMap::new();
        for e in edges {
            if let Some(dep) = by_id.get(&e.depends_on_id) {
                out.entry(e.task_id).or_default().push(Dep {
                    key: dep.key.clone(),
                    edge: e.kind,
                    settled: dep.status.is_settled(),
                });
            }
        }
        out
    }

    /// A model row's members of the task read: its frozen context, surface, declared calls and
    /// sealed request size.
    async fn model_detail(&self, task: &TaskRow, tasks: &[TaskRow]) -> KernelResult<KindDetail> {
        let frozen = FrozenContext::of(task);
        let surface = RequestSurface::of(task);
        let calls: Vec<CallRef> = tasks
            .iter()
            .filter(|t| t.kind == TaskKind::Tool && t.declaring_task_id == Some(task.id))
            .map(CallRef::of)
            .collect();
        let sealed = self.store.sealed_request(task.id, task.generation).await?;
        Ok(KindDetail::Model(Box::new(ModelDetail {
            mainline: task.mainline,
            branch_of: task.branch_of.clone(),
            model: Some(surface.model).filter(|m| !m.is_empty()),
            tool_calls: Some(calls).filter(|c| !c.is_empty()),
            usage: parse(task.usage.as_deref()),
            prompt: frozen.prompt,
            instructions: surface.instructions,
            tool_definitions: frozen.tool_definitions,
            environment: if frozen.environment.is_object() {
                frozen.environment
            } else {
                Value::Object(Map::new())
            },
            skills: frozen.skills,
            request_bytes: sealed.map(|s| s.request_bytes),
        })))
    }

    /// A tool row's members of the task read: names, input, its addressing and approval.
    async fn tool_detail(&self, names: &mut Names, task: &TaskRow) -> KernelResult<KindDetail> {
        let declaring_task_key = match task.declaring_task_id {
            Some(d) => self.task_key_of(names, d).await?,
            None => None,
        };
        let target = match task.target_executor_id {
            Some(t) => self.executor_public(names, t).await?.map(|(id, name)| Target {
                executor_public_id: id,
                display_name: name,
            }),
            None => None,
        };
        let addressed_to = match task.addressed_executor_id {
            Some(a) => self.executor_public(names, a).await?.map(|(id, _)| AddressedTo {
                role: task.addressed_role.map(|r| r.as_str().to_string()),
                executor_public_id: id,
            }),
            None => None,
        };
        let claimed_by = match task.claimant_id {
            Some(c) => self.executor_public(names, c).await?.map(|(id, _)| id),
            None => None,
        };
        Ok(KindDetail::Tool(Box::new(ToolDetail {
            names: ToolNames {
                tool_name: task.tool_name.clone(),
                tool_alias: task.tool_alias.clone(),
            },
            tool_input: parse(task.tool_input.as_deref()).unwrap_or_else(|| Value::Object(Map::new())),
            tool_call_id: task.tool_call_id.clone(),
            declaring_task_key,
            target,
            addressed_to,
            claimed_by,
            approval: parse(task.approval.as_deref()),
            effect_profile: parse(task.effect_profile.as_deref()),
            model_context: Frozen::model_context_of(task).filter(|v| !v.is_null()),
        })))
    }

    /// The full task read of runs.md §9.
    async fn task_view_of(
        &self,
        names: &mut Names,
        task: &TaskRow,
        tasks: &[TaskRow],
        deps: &[Dep],
    ) -> KernelResult<TaskView> {
        let detail = match task.kind {
            TaskKind::Model => Some(self.model_detail(task, tasks).await?),
            TaskKind::Tool => Some(self.tool_detail(names, task).await?),
            TaskKind::Await => Some(await_detail(task)),
        };
        let clock = task.status.is_parked() && task.deadline_at.is_some();
        let tool = task.kind == TaskKind::Tool;
        Ok(TaskView {
            trace: Trace::of(task, deps),
            detail,
            deadline_at: task.deadline_at.filter(|_| clock).map(time::iso),
            timeout_ms: task.timeout_ms.filter(|_| clock),
            outcome: task.status.is_settled().then(|| Outcome::of(task)),
            title: task.title.clone().filter(|_| tool),
            metadata: parse(task.metadata.as_deref()).filter(|_| tool),
        })
    }

    /// The full task read of one row (`{task}` bodies of the member verbs use it).
    /// One task's full read: the row and what it depends on, its edges, and (for a round) the
    /// calls it declared; never the whole run, so its cost does not grow with the run.
    pub(crate) async fn task_view(&self, run: &RunRow, task_id: i64) -> KernelResult<TaskView> {
        let rows = self.store.task_and_deps(task_id).await?;
        let Some(task) = rows.iter().find(|t| t.id == task_id && t.run_id == run.id) else {
            return Err(not_found("task"));
        };
        let edges = self.store.edges_from(task_id).await?;
        self.task_view_from(run, task, &rows, &edges, Names::default()).await
    }

    /// What [`Self::task_view_committed`] needs besides the row, read inside the unit of work
    /// that settled it (before its commit): the row's dependency edges and, when it has any,
    /// the rows they name.
    pub(crate) async fn committed_neighbours(tx: &mut Tx, task: &TaskRow) -> KernelResult<Neighbours> {
        let edges = tx.edges_from(task.id).await?;
        let deps = if edges.is_empty() {
            Vec::new()
        } else {
            let mut rows = tx.task_and_deps(task.id).await?;
            rows.retain(|t| t.id != task.id);
            rows
        };
        Ok(Neighbours { edges, deps })
    }

    /// [`Self::task_view`] of a row the caller has just committed (`task`, as written) and
    /// whose executor it holds (`known`, the caller's own address): the row, its neighbours
    /// and the executor's names are not read again.
    pub(crate) async fn task_view_committed(
        &self,
        run: &RunRow,
        task: &TaskRow,
        known: &nexus_store::ExecutorRow,
        neighbours: Neighbours,
    ) -> KernelResult<TaskView> {
        let Neighbours { edges, mut deps } = neighbours;
        deps.push(task.clone());
        let names = Names::knowing(known, None);
        self.task_view_from(run, task, &deps, &edges, names).await
    }

    async fn task_view_from(
        &self,
        run: &RunRow,
        task: &TaskRow,
        rows: &[TaskRow],
        edges: &[nexus_store::EdgeRow],
        mut names: Names,
    ) -> KernelResult<TaskView> {
        let deps = Self::deps_of(rows, edges);
        let declared = if task.kind == TaskKind::Model {
            self.store.tasks_declared_by(run.id, task.id).await?
        } else {
            Vec::new()
        };
        names.know_tasks(rows.iter().chain(&declared));
        let empty = Vec::new();
        self.task_view_of(&mut names, task, &declared, deps.get(&task.id).unwrap_or(&empty))
            .await
    }
}

impl Runs<'_> {
    /// `GET R/tasks/{key}` → `{task}`.
    pub async fn get_task(&self, p: &MemberPrincipal, ws: Uuid, run: Uuid, key: &str) -> KernelResult<TaskReply> {
        let (ws_row, _) = self.workspace_for(p, ws, false).await?;
        let run = self.run_in(&ws_row, run).await?;
        let Some(task) = self.store.task_by_key(run.id, key).await? else {
            return Err(not_found("task"));
        };
        Ok(TaskReply::of(self.task_view(&run, task.id).await?))
    }

    /// `GET R/tasks?after=&limit=` → `{tasks, pagination}`: trace rows in creation order.
    pub async fn list_tasks(
        &self,
        p: &MemberPrincipal,
        ws: Uuid,
        run: Uuid,
        after: Option<&str>,
        limit: Option<i64>,
    ) -> KernelResult<TracePage> {
        let (ws_row, _) = self.workspace_for(p, ws, false).await?;
        let run = self.run_in(&ws_row, run).await?;
        let after = parse_cursor(after)?;
        let limit = page_limit(limit);
        let page = self.store.tasks_of_run(run.id, after, limit).await?;
        let all = self.store.tasks_of_run(run.id, 0, i64::MAX).await?;
        let edges = self.store.edges_of_run(run.id).await?;
        let deps = Kernel::deps_of(&all, &edges);
        let empty = Vec::new();
        let tasks: Vec<TraceRow> = page
            .iter()
            .map(|t| TraceRow {
                trace: Trace::of(t, deps.get(&t.id).unwrap_or(&empty)),
                names: (t.kind == TaskKind::Tool).then(|| ToolNames {
                    tool_name: t.tool_name.clone(),
                    tool_alias: t.tool_alias.clone(),
                }),
                model: (t.kind == TaskKind::Model)
                    .then(|| RequestSurface::of(t).model)
                    .filter(|m| !m.is_empty()),
            })
            .collect();
        let next = (page.len() as i64 == limit)
            .then(|| page.last().map(|t| t.id))
            .flatten();
        Ok(TracePage {
            tasks,
            pagination: pagination(next),
        })
    }

    /// `GET R/tasks/{k}/request` (`?format=provider` → the exact body bytes): the current
    /// generation's sealed record.
    pub async fn get_request(
        &self,
        p: &MemberPrincipal,
        ws: Uuid,
        run: Uuid,
        key: &str,
        provider_format: bool,
    ) -> KernelResult<RequestRead> {
        self.get_request_of(p, ws, run, key, None, provider_format).await
    }

    /// [`Self::get_request`] of generation `generation` (`?generation=`; the current one when
    /// `None`): a retried round's earlier generations keep their sealed records. A generation
    /// the row never sealed is 404 `request_not_sealed`.
    pub async fn get_request_of(
        &self,
        p: &MemberPrincipal,
        ws: Uuid,
        run: Uuid,
        key: &str,
        generation: Option<i64>,
        provider_format: bool,
    ) -> KernelResult<RequestRead> {
        let (ws_row, _) = self.workspace_for(p, ws, false).await?;
        let run = self.run_in(&ws_row, run).await?;
        let Some(task) = self.store.task_by_key(run.id, key).await? else {
            return Err(not_found("task"));
        };
        let generation = generation.unwrap_or(task.generation);
        let sealed = if task.kind == TaskKind::Model && (1..=task.generation).contains(&generation) {
            self.store.sealed_request(task.id, generation).await?
        } else {
            None
        };
        let Some(sealed) = sealed else {
            return Err(KernelError::of(Code::RequestNotSealed));
        };
        if provider_format {
            return Ok(RequestRead::Provider {
                body: sealed.body,
                body_sha256: sealed.body_sha256,
            });
        }
        let mut m = match parse(Some(&sealed.record)) {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        m.insert("body_sha256".into(), json!(sealed.body_sha256));
        m.insert("request_bytes".into(), json!(sealed.request_bytes));
        m.insert("tools_sha256".into(), json!(sealed.tools_sha256));
        m.insert(
            "attempts".into(),
            parse(Some(&sealed.attempts)).unwrap_or_else(|| json!([])),
        );
        Ok(RequestRead::Json(json!({"request": Value::Object(m)})))
    }

    /// `GET R/transcript?include_hidden=` → `{rows}` (runs.md §10).
    pub async fn transcript(
        &self,
        p: &MemberPrincipal,
        ws: Uuid,
        run: Uuid,
        include_hidden: bool,
    ) -> KernelResult<Transcript> {
        let (ws_row, _) = self.workspace_for(p, ws, false).await?;
        let run = self.run_in(&ws_row, run).await?;
        let tasks = self.store.tasks_of_run(run.id, 0, i64::MAX).await?;
        let mut rows = Vec::new();
        for t in transcript_order(&tasks) {
            if t.visibility == Visibility::Hidden && !include_hidden {
                continue;
            }
            match t.kind {
                TaskKind::Model => model_rows(t, &tasks, &mut rows),
                TaskKind::Tool => rows.push(tool_row(t)),
                TaskKind::Await => {}
            }
        }
        Ok(Transcript { rows })
    }

    /// `GET R/graph` → `{nodes, edges, mermaid}` (runs.md §10).
    pub async fn graph(&self, p: &MemberPrincipal, ws: Uuid, run: Uuid) -> KernelResult<Graph> {
        let (ws_row, _) = self.workspace_for(p, ws, false).await?;
        let run = self.run_in(&ws_row, run).await?;
        let tasks = self.store.tasks_of_run(run.id, 0, i64::MAX).await?;
        let edges = self.store.edges_of_run(run.id).await?;
        let ids: Vec<String> = (0..tasks.len()).map(|i| format!("n{i}")).collect();
        let index: HashMap<i64, usize> = tasks.iter().enumerate().map(|(i, t)| (t.id, i)).collect();
        let nodes: Vec<views::GraphNode> = tasks
            .iter()
            .enumerate()
            .map(|(i, t)| views::GraphNode {
                id: ids[i].clone(),
                key: t.key.clone(),
                kind: t.kind.as_str().into(),
                status: t.status.as_str().into(),
                mainline: t.mainline,
                tool_name: t.tool_name.clone(),
                tool_alias: t.tool_alias.clone(),
                model: (t.kind == TaskKind::Model)
                    .then(|| RequestSurface::of(t).model)
                    .filter(|m| !m.is_empty()),
                rest: Map::new(),
            })
            .collect();
        let mut pairs: Vec<(usize, usize, &str)> = edges
            .iter()
            .filter_map(|e| Some((*index.get(&e.depends_on_id)?, *index.get(&e.task_id)?, e.kind.as_str())))
            .collect();
        pairs.sort_by_key(|(from, to, _)| (*to, *from));
        let graph_edges: Vec<views::GraphEdge> = pairs
            .iter()
            .map(|(from, to, kind)| views::GraphEdge {
                from: ids[*from].clone(),
                to: ids[*to].clone(),
                kind: (*kind).to_string(),
            })
            .collect();
        let graph_nodes: Vec<GraphNode> = tasks
            .iter()
            .enumerate()
            .map(|(i, t)| GraphNode {
                id: &ids[i],
                key: &t.key,
                kind: t.kind.as_str(),
                status: t.status.as_str(),
                tool_name: t.tool_name.as_deref(),
            })
            .collect();
        let mut lines: Vec<(&str, &str)> = Vec::new();
        for (from, to, _) in &pairs {
            let pair = (ids[*from].as_str(), ids[*to].as_str());
            if !lines.contains(&pair) {
                lines.push(pair);
            }
        }
        let mermaid = graph::mermaid(&graph_nodes, &lines);
        Ok(Graph {
            nodes,
            edges: graph_edges,
            mermaid,
        })
    }
}

impl Kernel {
    /// One durable event on the wire (runs.md §11).
    pub(crate) fn event_record(run_public_id: Uuid, e: &EventRow) -> Event {
        Event {
            sequence: e.sequence,
            kind: e.kind.as_str().into(),
            at: time::iso(e.at),
            at_ms: Some(e.at),
            run_public_id: run_public_id.to_string(),
            task_key: e.task_key.clone(),
            data: parse(Some(&e.data)).unwrap_or_else(|| Value::Object(Map::new())),
            rest: Map::new(),
        }
    }

    /// [`Self::event_record`] as JSON, for the event stream's frames.
    pub(crate) fn event_json(run_public_id: Uuid, e: &EventRow) -> Value {
        json!(Self::event_record(run_public_id, e))
    }
}

impl Runs<'_> {
    /// `GET R/events?after=&limit=` → `{events, next_after}` (limit default 100, max 500).
    pub async fn events(
        &self,
        p: &MemberPrincipal,
        ws: Uuid,
        run: Uuid,
        after: Option<i64>,
        limit: Option<i64>,
    ) -> KernelResult<EventPage> {
        let (ws_row, _) = self.workspace_for(p, ws, false).await?;
        let run = self.run_in(&ws_row, run).await?;
        let after = after.unwrap_or(0);
        if after < 0 {
            return Err(KernelError::new(
                Code::ParameterInvalid,
                "after must be a non-negative sequence",
            ));
        }
        let limit = limit.unwrap_or(EVENTS_DEFAULT).clamp(1, EVENTS_MAX);
        let rows = self.store.events_after(run.id, after, limit).await?;
        let next = rows.last().map_or(after, |e| e.sequence);
        let events = rows.iter().map(|e| Kernel::event_record(run.public_id, e)).collect();
        Ok(EventPage {
            events,
            next_after: next,
        })
    }
}
