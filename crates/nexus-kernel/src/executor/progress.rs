//! `POST X/progress` (executor.md §11): the claimant's ephemeral progress frames.
//!
//! A frame is validated, checked against the current claim, thinned to one frame per task per
//! 250 ms, stamped (`executor_public_id`, `at`, `tool_name`) and relayed as an
//! `executor_progress` frame on the run's progress channel. Nothing is persisted and nothing
//! gets an event id: a subscriber that misses a frame has lost nothing durable.
//!
//! The relay is the signals seam's per-run progress channel ([`Executor::subscribe_progress`]),
//! beside the durable event feed (`runs::stream`), so the SSE route can merge it as id-less
//! frames. The cadence clock is the kernel's state (`cadence.rs`).

use std::time::Instant;

use nexus_core::codes::Code;
use nexus_core::{bounds, jcs};
use nexus_store::TaskStatus;
use nexus_store::prelude::*;
use serde::Serialize;
use serde_json::{Map, Value};
use subtle::ConstantTimeEq;
use uuid::Uuid;

use crate::Executor;
use crate::auth::ExecutorPrincipal;
use crate::error::{KernelError, KernelResult};
use crate::signals::{Ephemeral, Subscription};

pub use super::cadence::CADENCE;

/// The SSE event name of a relayed frame.
pub const EVENT: &str = crate::signals::Ephemeral::EXECUTOR_PROGRESS;

/// What became of an accepted (202) frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressOutcome {
    /// Relayed on the run's feed.
    Relayed,
    /// Dropped: the row is settled (or its run ended).
    DroppedSettled,
    /// Dropped: another frame of this task was relayed less than 250 ms ago.
    DroppedCadence,
}

impl ProgressOutcome {
    /// The 202 body's `reason` (`None` when relayed).
    pub fn reason(self) -> Option<&'static str> {
        match self {
            ProgressOutcome::Relayed => None,
            ProgressOutcome::DroppedSettled => Some("settled"),
            ProgressOutcome::DroppedCadence => Some("cadence"),
        }
    }
}

/// The 202 body: `{relayed: true}` or `{relayed: false, reason}`.
impl Serialize for ProgressOutcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Body {
            relayed: bool,
            #[serde(skip_serializing_if = "Option::is_none")]
            reason: Option<&'static str>,
        }
        Body {
            relayed: *self == ProgressOutcome::Relayed,
            reason: self.reason(),
        }
        .serialize(s)
    }
}

fn invalid(path: &str, message: &str) -> KernelError {
    KernelError::new(Code::InvalidFrame, format!("invalid progress frame: {message}")).with_path(path)
}

/// A checked progress frame, the request of [`Executor::progress`]: built by [`parse`].
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub run: Uuid,
    pub task_key: String,
    pub claim_token: String,
    pub text_tail: Option<String>,
    pub structured: Option<Value>,
}

/// The relayed `executor_progress` frame: the sent frame stamped with its sender, tool and
/// time.
#[derive(Serialize)]
struct Relayed<'a> {
    run_public_id: Uuid,
    task_key: &'a str,
    executor_public_id: Uuid,
    tool_name: Option<&'a str>,
    at: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    text_tail: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    structured: Option<&'a Value>,
}

/// Checks `{frame: {run_public_id, task_key, claim_token, text_tail?, structured?}}`.
pub fn parse(body: &Value) -> KernelResult<Frame> {
    let Some(frame) = body.get("frame") else {
        return Err(invalid("frame", "the body needs a frame object"));
    };
    if jcs::len(frame) > bounds::ENVELOPE {
        return Err(KernelError::new(
            Code::FrameTooLarge,
            format!("the frame is larger than {} bytes of canonical JSON", bounds::ENVELOPE),
        ));
    }
    let Some(obj): Option<&Map<String, Value>> = frame.as_object() else {
        return Err(invalid("frame", "frame must be an object"));
    };
    let string = |key: &str| obj.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
    let run = string("run_public_id")
        .and_then(|s| Uuid::parse_str(s).ok())
        .ok_or_else(|| invalid("frame.run_public_id", "run_public_id must be a run id"))?;
    let task_key = string("task_key").ok_or_else(|| invalid("frame.task_key", "task_key must be a string"))?;
    let claim_token =
        string("claim_token").ok_or_else(|| invalid("frame.claim_token", "claim_token must be a string"))?;
    let text_tail = match obj.get("text_tail") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(invalid("frame.text_tail", "text_tail must be a string")),
    };
    Ok(Frame {
        run,
        task_key: task_key.to_string(),
        claim_token: claim_token.to_string(),
        text_tail,
        structured: obj.get("structured").cloned(),
    })
}

impl Executor<'_> {
    /// `POST X/progress`: 202 with the outcome, or a refusal (`not_found`, `not_claimant`;
    /// [`parse`] refuses `invalid_frame` and `frame_too_large`).
    pub async fn progress(&self, principal: &ExecutorPrincipal, frame: &Frame) -> KernelResult<ProgressOutcome> {
        let executor = &principal.executor;
        let not_found = || KernelError::new(Code::NotFound, "no such task in this executor's account");
        let run = self.store.run_by_public_id(frame.run).await?.ok_or_else(not_found)?;
        self.store
            .workspace_by_id(run.workspace_id)
            .await?
            .filter(|w| w.account_id == executor.account_id)
            .ok_or_else(not_found)?;
        let task = self
            .store
            .task_by_key(run.id, &frame.task_key)
            .await?
            .ok_or_else(not_found)?;
        if task.status.is_settled() || run.status.is_terminal() {
            return Ok(ProgressOutcome::DroppedSettled);
        }
        let token_ok = task
            .claim_token
            .as_deref()
            .is_some_and(|t| bool::from(t.as_bytes().ct_eq(frame.claim_token.as_bytes())));
        if !(token_ok && task.claimant_id == Some(executor.id) && task.status == TaskStatus::Dispatched) {
            return Err(KernelError::new(
                Code::NotClaimant,
                "only the current claimant may send progress for this row",
            ));
        }
        if !self.state.progress_cadence.take_slot(task.id, Instant::now()) {
            return Ok(ProgressOutcome::DroppedCadence);
        }
        let relayed = Relayed {
            run_public_id: run.public_id,
            task_key: &task.key,
            executor_public_id: executor.public_id,
            tool_name: task.tool_name.as_deref(),
            at: self.now_ms(),
            text_tail: frame.text_tail.as_deref(),
            structured: frame.structured.as_ref(),
        };
        let data = serde_json::to_value(relayed).expect("a progress frame always serializes");
        self.state
            .signals
            .relay_ephemeral(run.id, Ephemeral { kind: EVENT, data });
        Ok(ProgressOutcome::Relayed)
    }

    /// The run's ephemeral `executor_progress` frames from now on (never stored, no ids).
    pub fn subscribe_progress(&self, run_id: i64) -> Subscription<Ephemeral> {
        self.state.signals.subscribe_ephemeral(run_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_outcome_serializes_as_the_202_body() {
        let body = |o| serde_json::to_string(&o).unwrap();
        assert_eq!(body(ProgressOutcome::Relayed), r#"{"relayed":true}"#);
        assert_eq!(
            body(ProgressOutcome::DroppedSettled),
            r#"{"relayed":false,"reason":"settled"}"#
        );
        assert_eq!(
            body(ProgressOutcome::DroppedCadence),
            r#"{"relayed":false,"reason":"cadence"}"#
        );
    }

    #[test]
    fn frame_grammar() {
        let run = Uuid::now_v7().to_string();
        let ok = json!({"frame": {"run_public_id": run, "task_key": "k", "claim_token": "t", "text_tail": "x", "structured": [1]}});
        assert!(parse(&ok).is_ok());
        for (bad, path) in [
            (json!({}), "frame"),
            (json!({"frame": []}), "frame"),
            (
                json!({"frame": {"run_public_id": "nope", "task_key": "k", "claim_token": "t"}}),
                "frame.run_public_id",
            ),
            (
                json!({"frame": {"run_public_id": run, "task_key": 1, "claim_token": "t"}}),
                "frame.task_key",
            ),
            (
                json!({"frame": {"run_public_id": run, "task_key": "k"}}),
                "frame.claim_token",
            ),
            (
                json!({"frame": {"run_public_id": run, "task_key": "k", "claim_token": "t", "text_tail": 3}}),
                "frame.text_tail",
            ),
        ] {
            let e = parse(&bad).err().unwrap();
            assert_eq!((e.code, e.path.as_deref()), (Code::InvalidFrame, Some(path)), "{bad}");
        }
        let big = json!({"frame": {"run_public_id": run, "task_key": "k", "claim_token": "t", "text_tail": "x".repeat(70_000)}});
        assert_eq!(parse(&big).err().unwrap().code, Code::FrameTooLarge);
    }
}
