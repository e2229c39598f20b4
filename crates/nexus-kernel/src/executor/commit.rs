//! `POST X/inbox/{run}/{task}/commit` (executor.md §9; seed "The result envelope"): the body's
//! grammar, then the door checks, then the settle engine, in the spec's order.
//!
//! The envelope is flat: `claim_token`, `content`, `structured_content`, `result_type`,
//! `is_error`, `outcome`, `title`, `metadata`. `content` follows the core's result grammar
//! (`nexus_core::results`): a bare string and a single text block store the same bytes, and a
//! blank result writes no body. `structured_content` presence is significant (explicit `null`
//! and `false` are stored). The body's grammar is checked before the row is read, so a malformed
//! commit is refused even when the row has settled (bad input always gets its code, never an
//! idle 200). Payload refusals leave the park standing; unstorable text on a
//! tool row closes it (`failed`, `result_unstorable` / `unsupported_text`) and still answers
//! 422. A commit after the deadline loses: the expiry rule settles the row and the commit
//! answers 200 with the settled task.

use nexus_core::codes::{Code, task_error};
use nexus_core::nul::contains_nul;
use nexus_core::results::{self, Block};
use nexus_core::{bounds, jcs};
use nexus_store::{ExecutorRow, RunRow, TaskRow, TaskStatus, Tx};
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use super::claim::{deadline_passed, is_claimant};
use super::inbox::row_kind;
use crate::auth::ExecutorPrincipal;
use crate::error::{KernelError, KernelResult};
use crate::runs::AfterCommit;
use crate::runs::settle::SettleError;
use crate::runs::unit::Unit;
use crate::runs::view::TaskView;
use crate::uploads::Committer;
use crate::{Executor, Kernel};

/// The storage guard's word for text the store refuses (a U+0000).
pub const UNSUPPORTED_TEXT: &str = "unsupported_text";

fn refuse(code: Code, message: impl Into<String>) -> KernelError {
    KernelError::new(code, message)
}

/// The commit's reply: `{task}`, or `{task, idle: true}` when the row had already settled.
#[derive(Debug, Clone, Serialize)]
pub struct CommitReply {
    pub task: TaskView,
    /// Served only when true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub idle: bool,
}

/// A commit body, its grammar checked (door 1): the request of [`Executor::commit`], built by
/// [`CommitRequest::parse`].
#[derive(Debug, Clone, PartialEq)]
pub struct CommitRequest {
    /// `claim_token`, `""` when absent or `null`.
    pub token: String,
    /// `outcome: failed`.
    pub failed: bool,
    /// The result.
    pub payload: Payload,
}

impl CommitRequest {
    /// Door 1, which needs no row: the outcome word, the token's type and the payload, refused
    /// in that order.
    pub fn parse(body: &Value) -> KernelResult<CommitRequest> {
        let failed = outcome_of(body)?;
        let token = token_of(body, "claim_token")?.to_string();
        let payload = validate_payload(body)?;
        Ok(CommitRequest { token, failed, payload })
    }
}

/// A validated commit payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Payload {
    pub blocks: Vec<Block>,
    /// `Some(v)` when the key was present (`v` may be `null` or `false`).
    pub structured: Option<Value>,
    pub is_error: bool,
    pub title: Option<String>,
    pub metadata: Option<Value>,
}

/// `outcome`: `completed` (default) or `failed`; anything else is 422 `invalid_outcome`.
pub(crate) fn outcome_of(body: &Value) -> KernelResult<bool /* failed */> {
    match body.get("outcome") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::String(s)) if s == "completed" => Ok(false),
        Some(Value::String(s)) if s == "failed" => Ok(true),
        Some(other) => Err(refuse(
            Code::InvalidOutcome,
            format!("outcome must be \"completed\" or \"failed\", got {other}"),
        )),
    }
}

fn content_code(code: &str) -> Code {
    match code {
        results::code::UNSUPPORTED_CONTENT_KIND => Code::UnsupportedContentKind,
        results::code::TOO_MANY_CONTENT_BLOCKS => Code::TooManyContentBlocks,
        results::code::RESULT_TOO_LARGE => Code::ResultTooLarge,
        _ => Code::InvalidContent,
    }
}

/// `content` in the result grammar (executor.md §9.1), refused with the grammar's code.
pub(crate) fn blocks_of(content: &Value) -> KernelResult<Vec<Block>> {
    results::normalize_content(content).map_err(|e| refuse(content_code(e.code), e.message))
}

/// A commit's `content`: absent or `null` is no content.
fn content_of(body: &Value) -> KernelResult<Vec<Block>> {
    match body.get("content") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(content) => blocks_of(content),
    }
}

/// A token member (`claim_token`, `resolution_token`): absent, `null` or a string; the string,
/// `""` when absent. Anything else is 422 `validation_failed` at `/member`.
pub(crate) fn token_of<'a>(body: &'a Value, member: &str) -> KernelResult<&'a str> {
    match body.get(member) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(KernelError::validation(
            "invalid",
            &format!("/{member}"),
            format!("{member} must be a string"),
        )),
    }
}

/// The payload refusals (all 422; a park stands), checked before the row is read, except
/// `unknown_result_upload`, which needs the store. Order: `result_type`, `content`,
/// `is_error`, `title`, `metadata`.
pub(crate) fn validate_payload(body: &Value) -> KernelResult<Payload> {
    match body.get("result_type") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == "complete" => {}
        Some(other) => {
            return Err(refuse(
                Code::InvalidResultType,
                format!("result_type must be absent or \"complete\", got {other}"),
            ));
        }
    }
    let blocks = content_of(body)?;
    let is_error = match body.get("is_error") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(KernelError::validation(
                "invalid",
                "/is_error",
                "is_error must be a boolean",
            ));
        }
    };
    let title = match body.get("title") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.contains('\0') => Some(s.chars().take(bounds::TITLE_CHARS).collect()),
        Some(Value::String(_)) => return Err(refuse(Code::InvalidTitle, "title must not contain U+0000")),
        Some(_) => return Err(refuse(Code::InvalidTitle, "title must be a string")),
    };
    let metadata = match body.get("metadata") {
        None | Some(Value::Null) => None,
        Some(m @ Value::Object(obj)) => {
            if contains_nul(m) {
                return Err(refuse(Code::InvalidMetadata, "metadata must not contain U+0000"));
            }
            if let Some(cp) = obj.get("checkpoint") {
                let ok = cp
                    .as_object()
                    .is_some_and(|c| c.get("hash").is_some_and(Value::is_string));
                if !ok {
                    return Err(refuse(
                        Code::InvalidMetadata,
                        "metadata.checkpoint must be an object with a string hash",
                    ));
                }
            }
            let len = jcs::len(m);
            if len > bounds::ENVELOPE {
                return Err(refuse(
                    Code::MetadataTooLarge,
                    format!(
                        "metadata is {len} bytes of canonical JSON; at most {} are allowed",
                        bounds::ENVELOPE
                    ),
                ));
            }
            Some(m.clone())
        }
        Some(_) => return Err(refuse(Code::InvalidMetadata, "metadata must be an object")),
    };
    Ok(Payload {
        blocks,
        structured: body.get("structured_content").cloned(),
        is_error,
        title,
        metadata,
    })
}

impl Payload {
    /// The storage guard: text the store refuses outright (a U+0000 in content text or
    /// structured_content strings).
    pub(crate) fn unstorable(&self) -> bool {
        self.blocks.iter().any(|b| contains_nul(&b.to_json())) || self.structured.as_ref().is_some_and(contains_nul)
    }

    /// The first text block (a failed outcome's `error.detail`).
    fn first_text(&self) -> Option<String> {
        self.blocks.iter().find_map(|b| match b {
            Block::Text(t) => Some(t.clone()),
            Block::ResourceLink(_) => None,
        })
    }

    /// Writes the result columns onto `task`.
    fn write(&self, task: &mut TaskRow) {
        task.content = if self.blocks.is_empty() {
            None
        } else {
            Some(results::blocks_to_json(&self.blocks).to_string())
        };
        task.structured_present = self.structured.is_some();
        task.structured_content = self.structured.as_ref().map(Value::to_string);
        task.is_error = self.is_error;
        task.title = self.title.clone();
        task.metadata = self.metadata.as_ref().map(Value::to_string);
    }
}

impl Executor<'_> {
    /// `{task, idle: true}`: the commit found the row already settled.
    async fn idle(&self, run: &RunRow, task_id: i64) -> KernelResult<CommitReply> {
        Ok(CommitReply {
            task: self.task_view(run, task_id).await?,
            idle: true,
        })
    }

    /// `POST X/inbox/{run}/{task}/commit` at the process clock.
    pub async fn commit(
        &self,
        p: &ExecutorPrincipal,
        run: Uuid,
        key: &str,
        body: &CommitRequest,
    ) -> KernelResult<CommitReply> {
        self.commit_at(p, run, key, body, self.now_ms()).await
    }

    /// `POST X/inbox/{run}/{task}/commit` at `now` → `{task}` or `{task, idle: true}`.
    pub async fn commit_at(
        &self,
        p: &ExecutorPrincipal,
        run: Uuid,
        key: &str,
        body: &CommitRequest,
        now: i64,
    ) -> KernelResult<CommitReply> {
        // Door 1, the body's grammar, was [`CommitRequest::parse`]: it is worked out before the
        // unit of work opens, so that holds the store's write gate (SQLite) only for the row's
        // statements. Door 2: the row.
        let super::claim::Opened {
            mut tx,
            found,
            mut run,
            mut task,
        } = self.open_door(p, run, key).await?;
        let presented = Presented {
            token: &body.token,
            failed: body.failed,
            creator_standing: super::claim::creator_has_standing(&found),
            payload: &body.payload,
        };
        match self.commit_in(&mut tx, &mut run, &mut task, p, presented, now).await {
            Ok(Step::Idle) => {
                tx.rollback().await?;
                self.idle(&run, task.id).await
            }
            Ok(Step::Settled(effects)) => {
                // The reply's dependencies come from the unit that settled the row: the row as
                // committed, and no cold read after the commit.
                let neighbours = match Kernel::committed_neighbours(&mut tx, &task).await {
                    Ok(n) => n,
                    Err(e) => {
                        tx.rollback().await?;
                        return Err(e);
                    }
                };
                tx.commit().await?;
                self.publish(effects).await;
                let task = self.task_view_committed(&run, &task, &p.executor, neighbours).await?;
                Ok(CommitReply { task, idle: false })
            }
            Ok(Step::Unstorable(effects)) => {
                tx.commit().await?;
                self.publish(effects).await;
                Err(unstorable())
            }
            Err(e) => {
                tx.rollback().await?;
                Err(e)
            }
        }
    }

    /// Doors 3–5 and the settle engine's steps 1–8, in the spec's order.
    async fn commit_in(
        &self,
        tx: &mut Tx,
        run: &mut RunRow,
        task: &mut TaskRow,
        p: &ExecutorPrincipal,
        presented: Presented<'_>,
        now: i64,
    ) -> KernelResult<Step> {
        let ask = self.commit_doors(tx, run, task, p, presented.creator_standing).await?;
        // Settle 1: already terminal → idle.
        if run.status.is_terminal() || task.status.is_settled() {
            return Ok(Step::Idle);
        }
        let expect_token = expected_token(task, &p.executor, ask, presented.token)?;
        let mut effects: Vec<AfterCommit> = Vec::new();
        // Settle 4: the deadline wins.
        if deadline_passed(task, now) {
            let unit = &mut Unit::of(tx, run, now, &mut effects);
            let expired = self.expire_park(unit, task, expect_token).await?;
            return Ok(if expired { Step::Settled(effects) } else { Step::Idle });
        }
        let payload = presented.payload;
        // Settle 5: the payload's links (its grammar was door 1; the park stands).
        let links = results::linked_uploads(&payload.blocks);
        // Whole or nothing: every link must be this executor's own capture (uploads hand-off).
        self.uploads()
            .check_result_uploads(tx, Committer::Executor(p.executor.id), &links)
            .await?;
        // Settle 6: unstorable bytes close a tool park; an await stays open.
        if payload.unstorable() {
            if ask {
                return Err(unstorable());
            }
            let error = SettleError {
                key: task_error::RESULT_UNSTORABLE.to_string(),
                detail: Some(UNSUPPORTED_TEXT.to_string()),
            };
            let (unit, next) = (&mut Unit::of(tx, run, now, &mut effects), task.clone());
            let closed = self
                .settle_park(unit, task, next, TaskStatus::Failed, Some(error), expect_token)
                .await?;
            return Ok(if closed { Step::Unstorable(effects) } else { Step::Idle });
        }
        // Settle 7–8: failed or completed.
        let (next, to, error) = settlement(task, payload, presented.failed, ask);
        let unit = &mut Unit::of(tx, run, now, &mut effects);
        if !self.settle_park(unit, task, next, to, error, expect_token).await? {
            return Ok(Step::Idle);
        }
        self.uploads().bind_result_uploads(tx, task.id, &links).await?;
        Ok(Step::Settled(effects))
    }

    /// Doors 3–5: addressed here (approvals are decided, not committed), an ask's executor
    /// eligible (a claimant only needs to be active), the run's creator keeping write standing.
    /// Whether the row is an ask.
    async fn commit_doors(
        &self,
        tx: &mut Tx,
        run: &RunRow,
        task: &TaskRow,
        p: &ExecutorPrincipal,
        creator_standing: bool,
    ) -> KernelResult<bool> {
        if task.addressed_executor_id != Some(p.executor.id) {
            return Err(refuse(
                Code::NotAddressedHere,
                "the row is not addressed to this executor",
            ));
        }
        let kind = row_kind(task);
        if kind == "approval" {
            return Err(refuse(
                Code::NotClaimableKind,
                "an approval row is decided, not committed",
            ));
        }
        let ask = kind == "ask";
        if ask && !self.executor_eligible(tx, run, p).await? {
            return Err(refuse(Code::NotEligible, "this executor is not eligible for the run"));
        }
        if !creator_standing {
            return Err(super::claim::no_standing());
        }
        Ok(ask)
    }
}

/// Settle 2–3: the row is at its park (else it was never started), and a tool row's token is
/// the current one (a tokenless ask is accepted by address). The token the settle expects.
fn expected_token<'t>(
    task: &TaskRow,
    executor: &ExecutorRow,
    ask: bool,
    token: &'t str,
) -> KernelResult<Option<&'t str>> {
    let parked = if ask {
        TaskStatus::AwaitingInput
    } else {
        TaskStatus::Dispatched
    };
    if task.status != parked {
        return Err(refuse(
            Code::TaskNotRunning,
            format!("the row is {}: it was never started", task.status),
        ));
    }
    if ask {
        return Ok(None);
    }
    if !is_claimant(task, executor, token) {
        return Err(refuse(
            Code::StaleClaim,
            "the claim token is not the row's current token",
        ));
    }
    Ok(Some(token))
}

/// Settle 7–8: the row with the result written, and its settled status (`failed` with the
/// first text block as the error's detail, or `completed`).
fn settlement(
    task: &TaskRow,
    payload: &Payload,
    failed: bool,
    ask: bool,
) -> (TaskRow, TaskStatus, Option<SettleError>) {
    let mut next = task.clone();
    payload.write(&mut next);
    if !failed {
        return (next, TaskStatus::Completed, None);
    }
    let key = if ask { "await_failed" } else { task_error::TOOL_FAILED };
    let error = SettleError {
        key: key.to_string(),
        detail: payload.first_text(),
    };
    (next, TaskStatus::Failed, Some(error))
}

/// A commit request, with what could be worked out before the row lock.
struct Presented<'a> {
    /// `claim_token`, `""` when absent.
    token: &'a str,
    /// `outcome: failed`.
    failed: bool,
    /// The run's creator keeps write standing (door 5).
    creator_standing: bool,
    /// The payload, its grammar checked (door 1).
    payload: &'a Payload,
}

/// What the settle engine decided.
enum Step {
    Idle,
    Settled(Vec<AfterCommit>),
    Unstorable(Vec<AfterCommit>),
}

fn unstorable() -> KernelError {
    refuse(
        Code::ResultUnstorable,
        "unsupported_text: the result holds U+0000, which cannot be stored; the task settled failed",
    )
    .with_detail(UNSUPPORTED_TEXT)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_bare_string_and_one_text_block_store_the_same_bytes() {
        let a = validate_payload(&json!({"content": "hello"})).unwrap();
        let b = validate_payload(&json!({"content": [{"type": "text", "text": "hello"}]})).unwrap();
        let (mut ta, mut tb) = (TaskRow::default(), TaskRow::default());
        a.write(&mut ta);
        b.write(&mut tb);
        assert_eq!(ta.content, tb.content);
        let blank = validate_payload(&json!({"content": "  \n"})).unwrap();
        let mut t = TaskRow::default();
        blank.write(&mut t);
        assert_eq!(t.content, None);
    }

    #[test]
    fn structured_presence_is_kept() {
        for v in [json!(null), json!(false), json!({"a": 1})] {
            let p = validate_payload(&json!({"structured_content": v.clone()})).unwrap();
            assert_eq!(p.structured, Some(v));
        }
        assert_eq!(validate_payload(&json!({})).unwrap().structured, None);
    }

    #[test]
    fn payload_refusals() {
        let code = |body: Value| validate_payload(&body).unwrap_err().code;
        assert_eq!(code(json!({"result_type": "incomplete"})), Code::InvalidResultType);
        assert_eq!(code(json!({"content": 3})), Code::InvalidContent);
        assert_eq!(
            code(json!({"content": [{"type": "image"}]})),
            Code::UnsupportedContentKind
        );
        assert_eq!(code(json!({"title": "a\u{0}b"})), Code::InvalidTitle);
        assert_eq!(code(json!({"title": 5})), Code::InvalidTitle);
        assert_eq!(code(json!({"metadata": []})), Code::InvalidMetadata);
        assert_eq!(
            code(json!({"metadata": {"checkpoint": {"hash": 1}}})),
            Code::InvalidMetadata
        );
        assert_eq!(
            code(json!({"metadata": {"x": "y".repeat(70_000)}})),
            Code::MetadataTooLarge
        );
        let p = validate_payload(&json!({"title": "t".repeat(300)})).unwrap();
        assert_eq!(p.title.unwrap().chars().count(), 200);
        assert!(validate_payload(&json!({"content": "a\u{0}"})).unwrap().unstorable());
        assert!(
            validate_payload(&json!({"structured_content": {"k": "\u{0}"}}))
                .unwrap()
                .unstorable()
        );
        assert_eq!(
            outcome_of(&json!({"outcome": "done"})).unwrap_err().code,
            Code::InvalidOutcome
        );
        assert!(outcome_of(&json!({"outcome": "failed"})).unwrap());
    }
}
