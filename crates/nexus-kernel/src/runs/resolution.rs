//! `POST R/tasks/{key}/resolution` (runs.md §6): a member answers an ask await.
//!
//! Checks, in order: write standing (403; no standing conceals the workspace: 404), the key
//! (404), `not_resolvable` (not an ask: kernel-held awaits and every other row), then the
//! body's grammar (`invalid_outcome`, a `resolution_token` that is not a string, the payload
//! refusals of the content grammar, `nexus_core::results`, 422), then the settle engine
//! (executor.md §9): an idle answer (200 `{task, idle: true}`), `task_not_running` (the await
//! has not opened), `stale_claim` (a tokened ask without its `resolution_token`), the deadline
//! (the await settles `timed_out` / `await_timeout` and the content is discarded),
//! `unknown_result_upload`, and `result_unstorable` (422, the park stands: a person answers
//! again). `outcome: failed` settles `failed` / `await_failed` with the first text as detail;
//! otherwise the await completes with the content as its answer.

use nexus_core::codes::Code;
use nexus_core::nul::contains_nul;
use nexus_core::results;
use nexus_store::prelude::*;
use nexus_store::{RunRow, TaskKind, TaskRow, TaskStatus};
use serde_json::Value;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use uuid::Uuid;

use super::columns::Frozen;
use super::view::TaskReply;
use super::{AfterCommit, refuse};
use crate::Runs;
use crate::auth::MemberPrincipal;
use crate::error::{KernelError, KernelResult};
use crate::executor::commit::{blocks_of, outcome_of, token_of};
use crate::runs::settle::SettleError;
use crate::runs::unit::Unit;

/// The error key of an await answered with `outcome: failed`.
const AWAIT_FAILED: &str = "await_failed";
/// The error key of an await whose deadline passed.
const AWAIT_TIMEOUT: &str = "await_timeout";

/// A resolution body, parsed: `{resolution_token?, content?, outcome?}`.
#[derive(Debug, Clone)]
pub struct Answer {
    /// `outcome: failed`.
    failed: bool,
    /// The `resolution_token` given (empty when absent).
    token: String,
    /// The content (absent is an empty answer; `null` is not content, the schema says so).
    blocks: Vec<results::Block>,
}

impl Answer {
    /// The body as sent (`invalid_outcome`, a `resolution_token` that is not a string, the
    /// content grammar's refusals).
    pub fn parse(body: &Value) -> KernelResult<Answer> {
        Ok(Answer {
            failed: outcome_of(body)?,
            token: token_of(body, "resolution_token")?.to_string(),
            blocks: body.get("content").map(blocks_of).transpose()?.unwrap_or_default(),
        })
    }
}

/// Whether `given` is the token whose SHA-256 the ask keeps (compared in constant time).
fn token_matches(given: &str, expected: &str) -> bool {
    let digest = hex::encode(Sha256::digest(given.as_bytes()));
    !given.is_empty() && bool::from(digest.as_bytes().ct_eq(expected.as_bytes()))
}

fn unstorable(message: &str) -> KernelError {
    refuse(Code::ResultUnstorable, message.to_string())
}

impl Runs<'_> {
    /// `POST R/tasks/{key}/resolution` with `{resolution_token?, content?, outcome?}`
    /// ([`Answer::parse`]) → 200 `{task}` (or `{task, idle: true}` when the await had already
    /// settled).
    pub async fn resolve_task(
        &self,
        p: &MemberPrincipal,
        ws: Uuid,
        run: Uuid,
        key: &str,
        request: KernelResult<Answer>,
    ) -> KernelResult<TaskReply> {
        // 1. Write standing.
        let (ws_row, _) = self.workspace_for(p, ws, true).await?;
        // 2. The key.
        let run_row = self.run_in(&ws_row, run).await?;
        let Some(found) = self.store.task_by_key(run_row.id, key).await? else {
            return Err(refuse(Code::NotFound, format!("no task {key:?} in this run")));
        };
        // 3. Only an ask await is resolvable.
        if found.kind != TaskKind::Await || Frozen::ask_of(&found).is_none() {
            return Err(refuse(
                Code::NotResolvable,
                format!("{key:?} is not an ask: only ask awaits are answered through this door"),
            ));
        }
        // 4. The body's grammar, before the row's state: a malformed answer is refused even
        // when the await has settled.
        let answer = request?;
        // 5. The settle engine.
        self.settle_answer(p, run_row.id, found.id, key, answer).await
    }

    /// The settle engine's checks under the run lock, then the await's settle.
    async fn settle_answer(
        &self,
        p: &MemberPrincipal,
        run_id: i64,
        task_id: i64,
        key: &str,
        answer: Answer,
    ) -> KernelResult<TaskReply> {
        let now = self.now_ms();
        let mut tx = self.store.begin().await?;
        let mut run = tx.lock_run(run_id).await?;
        let Some(mut task) = tx.task_by_id(task_id).await? else {
            tx.rollback().await?;
            return Err(refuse(Code::NotFound, format!("no task {key:?} in this run")));
        };
        if run.status.is_terminal() || task.status.is_settled() {
            tx.rollback().await?;
            return Ok(TaskReply::idle(self.task_view(&run, task.id).await?));
        }
        if task.status == TaskStatus::Waiting {
            tx.rollback().await?;
            return Err(refuse(
                Code::TaskNotRunning,
                format!("{key:?} has not opened yet: it still waits for its dependencies"),
            ));
        }
        if let Some(expected) = task.resolution_token_sha256.as_deref()
            && !token_matches(&answer.token, expected)
        {
            tx.rollback().await?;
            return Err(refuse(
                Code::StaleClaim,
                "this ask needs the resolution_token its step's receipt returned",
            ));
        }
        if task.deadline_at.is_some_and(|d| d <= now) {
            return self.time_out_await(tx, run, task, now).await;
        }
        let mut effects: Vec<AfterCommit> = Vec::new();
        let linked = results::linked_uploads(&answer.blocks);
        if !linked.is_empty() {
            self.uploads()
                .check_result_uploads(&mut tx, crate::uploads::Committer::Member(p.member.id), &linked)
                .await?;
        }
        let Some(to) = answer_into(&mut task, &answer) else {
            tx.rollback().await?;
            return Err(unstorable(
                "the answer holds U+0000, which cannot be stored; the ask stays open: answer again without it",
            ));
        };
        let moved = match self.transition(&mut tx, &mut run, &mut task, to, now).await {
            Ok(m) => m,
            Err(e) if e.reason.as_deref() == Some("unsupported_text") => {
                drop(tx);
                return Err(unstorable(
                    "the answer cannot be stored; the ask stays open: answer again",
                ));
            }
            Err(e) => return Err(e),
        };
        if !moved {
            tx.rollback().await?;
            return Ok(TaskReply::idle(self.task_view(&run, task.id).await?));
        }
        if !linked.is_empty() {
            self.uploads().bind_result_uploads(&mut tx, task.id, &linked).await?;
        }
        effects.extend(self.after_settle(&mut tx, &mut run, &task, now).await?);
        tx.commit().await?;
        self.publish(effects).await;
        Ok(TaskReply::of(self.task_view(&run, task.id).await?))
    }

    /// The deadline wins over a late answer: the await settles `timed_out` (`await_timeout`)
    /// and the content is discarded.
    async fn time_out_await(
        &self,
        mut tx: nexus_store::Tx,
        mut run: RunRow,
        mut task: TaskRow,
        now: i64,
    ) -> KernelResult<TaskReply> {
        let mut effects: Vec<AfterCommit> = Vec::new();
        self.settle_with(
            &mut Unit::of(&mut tx, &mut run, now, &mut effects),
            &mut task,
            TaskStatus::TimedOut,
            SettleError::new(AWAIT_TIMEOUT, None),
        )
        .await?;
        tx.commit().await?;
        self.publish(effects).await;
        Ok(TaskReply::of(self.task_view(&run, task.id).await?))
    }
}

/// Writes the answer into the await's row and names the status it settles into: `failed`
/// (`await_failed`, the first text line as detail) or `completed`. `None` when the content
/// holds U+0000, which cannot be stored.
fn answer_into(task: &mut TaskRow, answer: &Answer) -> Option<TaskStatus> {
    let stored = results::blocks_to_json(&answer.blocks);
    if contains_nul(&stored) {
        return None;
    }
    task.content = Some(stored.to_string());
    task.is_error = false;
    if answer.failed {
        let first = results::text_projection(&answer.blocks);
        let first = first.lines().next().unwrap_or("").to_string();
        task.error_key = Some(AWAIT_FAILED.into());
        task.error_detail = (!first.is_empty()).then_some(first);
        Some(TaskStatus::Failed)
    } else {
        task.error_key = None;
        task.error_detail = None;
        Some(TaskStatus::Completed)
    }
}
