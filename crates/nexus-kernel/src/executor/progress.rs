//! `POST X/progress` (executor.md §11): the claimant's ephemeral progress frames.
//!
//! A frame is validated, checked against the current claim, thinned to one frame per task per
//! 250 ms, stamped (`executor_public_id`, `at`, `tool_name`) and relayed as an
//! `executor_progress` frame on the run's progress channel. Nothing is persisted and nothing
//! gets an event id: a subscriber that misses a frame has lost nothing durable.
//!
//! The relay is the signals seam's per-run progress channel ([`Kernel::subscribe_progress`]),
//! beside the durable event feed (`runs::stream`), so the SSE route can merge it as id-less
//! frames. The cadence clock is the kernel's state (`cadence.rs`).

use std::time::Instant;

use nexus_core::codes::Code;
use nexus_core::{bounds, jcs};
use nexus_store::{Engine, TaskStatus};
use serde_json::{Map, Value};
use subtle::ConstantTimeEq;
use uuid::Uuid;

use crate::Kernel;
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
    /// The 202 body.
    pub fn to_json(self) -> Value {
        match self {
            ProgressOutcome::Relayed => serde_json::json!({"relayed": true}),
            ProgressOutcome::DroppedSettled => serde_json::json!({"relayed": false, "reason": "settled"}),
            ProgressOutcome::DroppedCadence => serde_json::json!({"relayed": false, "reason": "cadence"}),
        }
    }
}

fn invalid(path: &str, message: &str) -> KernelError {
    KernelError::new(Code::InvalidFrame, format!("invalid progress frame: {message}")).with_path(path)
}

/// The frame's checked fields.
struct Frame<'a> {
    run: Uuid,
    task_key: &'a str,
    claim_token: &'a str,
    text_tail: Option<&'a str>,
    structured: Option<&'a Value>,
}

/// Checks `{frame: {run_public_id, task_key, claim_token, text_tail?, structured?}}`.
fn parse(body: &Value) -> KernelResult<Frame<'_>> {
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
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return Err(invalid("frame.text_tail", "text_tail must be a string")),
    };
    Ok(Frame {
        run,
        task_key,
        claim_token,
        text_tail,
        structured: obj.get("structured"),
    })
}

impl Kernel {
    /// `POST X/progress`: 202 with the outcome, or a refusal (`invalid_frame`,
    /// `frame_too_large`, `not_found`, `not_claimant`).
    pub async fn progress(&self, principal: &ExecutorPrincipal, body: &Value) -> KernelResult<ProgressOutcome> {
        let frame = parse(body)?;
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
            .task_by_key(run.id, frame.task_key)
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
        let mut out = Map::new();
        out.insert("run_public_id".into(), Value::String(run.public_id.to_string()));
        out.insert("task_key".into(), Value::String(task.key.clone()));
        out.insert(
            "executor_public_id".into(),
            Value::String(executor.public_id.to_string()),
        );
        out.insert(
            "tool_name".into(),
            task.tool_name.clone().map(Value::String).unwrap_or(Value::Null),
        );
        out.insert("at".into(), Value::from(self.now_ms()));
        if let Some(t) = frame.text_tail {
            out.insert("text_tail".into(), Value::String(t.to_string()));
        }
        if let Some(s) = frame.structured {
            out.insert("structured".into(), s.clone());
        }
        self.state.signals.relay_ephemeral(
            run.id,
            Ephemeral {
                kind: EVENT,
                data: Value::Object(out),
            },
        );
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
