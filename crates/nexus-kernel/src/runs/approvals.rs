//! Approve, deny and the approval queue (approvals.md §5–§6).

use std::collections::HashMap;

use nexus_api::approvals::{Approval, ApprovalPage};
use nexus_core::codes::{Code, task_error};
use nexus_store::prelude::*;
use nexus_store::{MemberKind, RunStatus, TaskKind, TaskRow, TaskStatus};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::gate::approval_fact;
use super::view::TaskReply;
use crate::auth::MemberPrincipal;
use crate::error::{KernelError, KernelResult};
use crate::paging::{page_limit, pagination, parse_cursor};
use crate::runs::settle::SettleError;
use crate::runs::unit::Unit;
use crate::{Runs, time};

/// A deny `reason` is carried as `error.detail` cut to this many bytes.
const REASON_BYTES: usize = nexus_core::bounds::REASON_BYTES;

fn cut_bytes(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Verb {
    Approve,
    Deny,
}

impl Verb {
    fn word(self) -> &'static str {
        match self {
            Verb::Approve => "approved",
            Verb::Deny => "denied",
        }
    }
}

fn parse_json(text: Option<&str>) -> Value {
    text.and_then(|t| serde_json::from_str(t).ok()).unwrap_or(Value::Null)
}

/// A `POST R/tasks/{key}/deny` body, parsed: `{reason?: string}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deny {
    /// Carried as the row's `error.detail`, cut to [`REASON_BYTES`].
    pub reason: Option<String>,
}

impl Deny {
    /// The body's grammar. A refusal is answered after the caller's standing (approvals.md §5
    /// check 1), so [`Runs::deny`] takes this result as it is.
    pub fn parse(body: &Value) -> KernelResult<Deny> {
        match body.get("reason") {
            None | Some(Value::Null) => Ok(Deny { reason: None }),
            Some(Value::String(s)) => Ok(Deny {
                reason: Some(s.clone()),
            }),
            Some(other) => Err(KernelError::new(
                Code::ParameterInvalid,
                format!("reason must be a string, got {other}"),
            )),
        }
    }
}

/// Who decides a held row, and when.
struct Decider {
    origin: &'static str,
    by: Uuid,
    now: i64,
}

impl Runs<'_> {
    /// `POST R/tasks/{key}/approve` → `{task}` (the body names nothing).
    pub async fn approve(&self, p: &MemberPrincipal, ws: Uuid, run: Uuid, key: &str) -> KernelResult<TaskReply> {
        self.adjudicate(p, ws, run, key, Verb::Approve, None).await
    }

    /// `POST R/tasks/{key}/deny` with `{reason?: string}` ([`Deny::parse`]) → `{task}`.
    pub async fn deny(
        &self,
        p: &MemberPrincipal,
        ws: Uuid,
        run: Uuid,
        key: &str,
        body: KernelResult<Deny>,
    ) -> KernelResult<TaskReply> {
        let body = match body {
            Ok(body) => body,
            Err(refused) => {
                // Standing is checked first (approvals.md §5 check 1).
                self.workspace_for(p, ws, true).await?;
                return Err(refused);
            }
        };
        self.adjudicate(p, ws, run, key, Verb::Deny, body.reason).await
    }

    async fn adjudicate(
        &self,
        p: &MemberPrincipal,
        ws: Uuid,
        run: Uuid,
        key: &str,
        verb: Verb,
        reason: Option<String>,
    ) -> KernelResult<TaskReply> {
        // 1. Write standing (no standing at all conceals the workspace: 404).
        let (ws_row, _) = self.workspace_for(p, ws, true).await?;
        // 2. The key.
        let run_row = self.run_in(&ws_row, run).await?;
        let mut tx = self.store.begin().await?;
        let mut run = tx.lock_run(run_row.id).await?;
        let Some(mut task) = tx.task_by_key(run.id, key).await? else {
            tx.rollback().await?;
            return Err(KernelError::new(Code::NotFound, format!("no task {key:?} in this run")));
        };
        // 3. The run is adjudicable.
        if !matches!(run.status, RunStatus::Running | RunStatus::NeedsAttention) {
            tx.rollback().await?;
            return Err(KernelError::new(
                Code::NotAdjudicable,
                format!("the run is {}, so its approvals cannot be decided", run.status),
            ));
        }
        // 4. The row is held.
        if task.kind != TaskKind::Tool || task.status != TaskStatus::NeedsApproval {
            tx.rollback().await?;
            return Err(not_awaiting(&task));
        }
        let now = self.now_ms();
        let mut effects = Vec::new();
        // 5. The hold has not expired.
        if task.deadline_at.is_some_and(|d| d <= now) {
            self.settle_with(
                &mut Unit::of(&mut tx, &mut run, now, &mut effects),
                &mut task,
                TaskStatus::TimedOut,
                SettleError::new(task_error::APPROVAL_EXPIRED, None),
            )
            .await?;
            tx.commit().await?;
            self.publish(effects).await;
            return Err(KernelError::new(
                Code::NotAwaitingApproval,
                format!("the approval window of {key:?} closed before this decision"),
            ));
        }
        let origin = match p.member.kind {
            MemberKind::Human => "human",
            MemberKind::Agent => "agent",
        };
        let decider = Decider {
            origin,
            by: p.member.public_id,
            now,
        };
        let mut u = Unit::of(&mut tx, &mut run, now, &mut effects);
        match verb {
            Verb::Deny => self.decide_deny(&mut u, &mut task, &decider, reason).await?,
            Verb::Approve => self.decide_approve(&mut u, &mut task, &decider).await?,
        }
        tx.commit().await?;
        self.publish(effects).await;
        Ok(TaskReply::of(self.task_view(&run, task.id).await?))
    }

    /// A deny: the decision's event, then the row fails `approval_denied` with the reason.
    async fn decide_deny(
        &self,
        u: &mut Unit<'_>,
        task: &mut TaskRow,
        d: &Decider,
        reason: Option<String>,
    ) -> KernelResult<()> {
        self.decided_event(u, task, Verb::Deny, d.origin, d.by).await?;
        task.approval = Some(approval_fact(d.origin, Some(d.by), d.now));
        let detail = reason.map(|r| cut_bytes(&r, REASON_BYTES));
        self.fail(u, task, SettleError::new(task_error::APPROVAL_DENIED, detail))
            .await?;
        Ok(())
    }

    /// An approval: addressing again (6), the effect profile the approver saw (7), release (8).
    async fn decide_approve(&self, u: &mut Unit<'_>, task: &mut TaskRow, d: &Decider) -> KernelResult<()> {
        // 6. Addressing again, against the frozen target or name.
        let addressing = match self.address(&mut *u.tx, &*u.run, task).await? {
            Err(detail) => {
                self.fail(u, task, SettleError::new(task_error::TOOL_NOT_SERVED, Some(detail)))
                    .await?;
                return Ok(());
            }
            Ok(addressing) => addressing,
        };
        // 7. The effect profile the approver saw must still hold.
        let frozen = parse_json(task.effect_profile.as_deref());
        if frozen != addressing.effect_profile {
            task.effect_profile = Some(addressing.effect_profile.to_string());
            self.hold(&mut *u.tx, &mut *u.run, task, d.now, false, &mut *u.effects)
                .await?;
            return Ok(());
        }
        // 8. Release.
        self.decided_event(u, task, Verb::Approve, d.origin, d.by).await?;
        let fact = approval_fact(d.origin, Some(d.by), d.now);
        self.release(u, task, &addressing, fact).await?;
        Ok(())
    }

    async fn decided_event(
        &self,
        u: &mut Unit<'_>,
        task: &TaskRow,
        verb: Verb,
        origin: &str,
        by: Uuid,
    ) -> KernelResult<()> {
        let data = json!({"decision": verb.word(), "origin": origin, "decided_by": by.to_string()});
        self.emit(u, nexus_store::EventKind::ApprovalDecided, Some(&task.key), data)
            .await
    }

    /// `GET W/approvals?after=&limit=` → `{approvals, pagination}`: held rows of the
    /// workspace's runs, oldest first.
    pub async fn list_approvals(
        &self,
        p: &MemberPrincipal,
        ws: Uuid,
        after: Option<&str>,
        limit: Option<i64>,
    ) -> KernelResult<ApprovalPage> {
        let (ws_row, _) = self.workspace_for(p, ws, false).await?;
        let after = parse_cursor(after)?;
        let limit = page_limit(limit);
        let rows = self.store.held_approvals(ws_row.id, after, limit).await?;
        let mut runs: HashMap<i64, Option<Uuid>> = HashMap::new();
        let mut keys: HashMap<i64, Option<String>> = HashMap::new();
        let mut out = Vec::with_capacity(rows.len());
        for t in &rows {
            let run_public = match runs.get(&t.run_id) {
                Some(r) => *r,
                None => {
                    let r = self.store.run_by_id(t.run_id).await?.map(|r| r.public_id);
                    runs.insert(t.run_id, r);
                    r
                }
            };
            let declaring = match t.declaring_task_id {
                None => None,
                Some(d) => match keys.get(&d) {
                    Some(k) => k.clone(),
                    None => {
                        let k = self.store.task_by_id(d).await?.map(|r| r.key);
                        keys.insert(d, k.clone());
                        k
                    }
                },
            };
            // A held row's run is its foreign key: a row without one is damaged.
            let run_public = run_public.ok_or_else(|| KernelError::of(Code::CorruptRow))?;
            out.push(Approval {
                run_public_id: run_public.to_string(),
                task_key: t.key.clone(),
                tool_name: t.tool_name.clone(),
                tool_alias: t.tool_alias.clone(),
                tool_input: parse_json(t.tool_input.as_deref()),
                effect_profile: parse_json(t.effect_profile.as_deref()),
                deadline_at: t.deadline_at.map(time::iso),
                declaring_task_key: declaring,
                rest: Map::new(),
            });
        }
        let next = (rows.len() as i64 == limit)
            .then(|| rows.last().map(|t| t.id))
            .flatten();
        Ok(ApprovalPage {
            approvals: out,
            pagination: pagination(next),
        })
    }
}

fn not_awaiting(task: &TaskRow) -> KernelError {
    KernelError::new(
        Code::NotAwaitingApproval,
        format!("task {:?} is {}, not awaiting approval", task.key, task.status),
    )
}
