//! `PUT R/default_runner` (runs.md §2): `{default_runner: {executor_public_id: UUID|null}}` →
//! 200 `{run}` with `default_runner_changed {from, to}` when the value changes.
//!
//! Checks, in order: write standing (403; no standing conceals the workspace: 404), the run
//! (404 `not_found`), the body (400 `parameter_missing` / `parameter_invalid`), the run's state
//! (409 `already_terminal`), the runner (404 `runner_not_found`: no runner with that id; 422
//! `runner_not_eligible`: not eligible for the run's answering principal). Tasks already
//! accepted keep their frozen targets; only later steps read the new default.

use nexus_core::codes::Code;
use nexus_store::prelude::*;
use nexus_store::{ExecutorKind, RunRow};
use serde_json::{Value, json};
use uuid::Uuid;

use super::AfterCommit;
use super::refuse;
use super::unit::Unit;
use crate::Runs;
use crate::auth::MemberPrincipal;
use crate::error::KernelResult;

/// A `PUT R/default_runner` body, parsed: the runner chosen, or `None` for no default runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultRunner {
    pub executor_public_id: Option<Uuid>,
}

impl DefaultRunner {
    /// `{default_runner: {executor_public_id: UUID|null}}` as sent (400 `parameter_missing` /
    /// `parameter_invalid`).
    pub fn parse(body: &Value) -> KernelResult<DefaultRunner> {
        parse_selector(body).map(|executor_public_id| DefaultRunner { executor_public_id })
    }
}

/// The body's selector: `Some(id)` for a runner, `None` for no default runner.
fn parse_selector(body: &Value) -> KernelResult<Option<Uuid>> {
    let Some(selector) = body.get("default_runner") else {
        return Err(refuse(
            Code::ParameterMissing,
            "the body needs `default_runner: {executor_public_id}`",
        ));
    };
    let Some(id) = selector.as_object().and_then(|o| o.get("executor_public_id")) else {
        return Err(refuse(
            Code::ParameterMissing,
            "default_runner needs executor_public_id (a runner id, or null for none)",
        ));
    };
    match id {
        Value::Null => Ok(None),
        Value::String(s) => Uuid::parse_str(s).map(Some).map_err(|_| {
            refuse(
                Code::ParameterInvalid,
                format!("default_runner.executor_public_id {s:?} is not a UUID"),
            )
        }),
        other => Err(refuse(
            Code::ParameterInvalid,
            format!("default_runner.executor_public_id must be a UUID string or null, got {other}"),
        )),
    }
}

impl Runs<'_> {
    /// `PUT R/default_runner` → 200 `{run}`. The body ([`DefaultRunner::parse`]) is answered
    /// after the standing and the run.
    pub async fn set_default_runner(
        &self,
        p: &MemberPrincipal,
        ws: Uuid,
        run: Uuid,
        request: KernelResult<DefaultRunner>,
    ) -> KernelResult<nexus_api::runs::RunEnvelope> {
        let (ws_row, _) = self.workspace_for(p, ws, true).await?;
        let found = self.run_in(&ws_row, run).await?;
        let selected = request?.executor_public_id;
        crate::conversations::hosting::refuse_hosted(&found.hosting)?;
        refuse_ended(&found)?;
        let runner = match selected {
            None => None,
            Some(id) => {
                let runner = self
                    .store
                    .executor_by_public_id(id)
                    .await?
                    .filter(|e| e.kind == ExecutorKind::Runner)
                    .ok_or_else(|| refuse(Code::RunnerNotFound, format!("no runner {id}")))?;
                let answering = self.store.member_by_id(found.answering_member_id).await?;
                let eligible = match &answering {
                    Some(m) => self.runner_eligible_for(&runner, m).await?,
                    None => false,
                };
                if !eligible {
                    return Err(refuse(
                        Code::RunnerNotEligible,
                        "the runner is not eligible for the run's answering principal",
                    ));
                }
                Some(runner)
            }
        };
        let now = self.now_ms();
        let mut tx = self.store.begin().await?;
        let mut run = tx.lock_run(found.id).await?;
        refuse_ended(&run)?;
        let to = runner.as_ref().map(|r| r.id);
        let mut effects = Vec::new();
        if run.default_runner_id != to {
            let from = match run.default_runner_id {
                Some(id) => self.store.executor_by_id(id).await?.map(|e| e.public_id),
                None => None,
            };
            run.default_runner_id = to;
            let data = json!({"from": from, "to": runner.as_ref().map(|r| r.public_id)});
            self.emit(
                &mut Unit::of(&mut tx, &mut run, now, &mut effects),
                nexus_store::EventKind::DefaultRunnerChanged,
                None,
                data,
            )
            .await?;
            tx.update_run(&run).await?;
            effects.push(AfterCommit::RunEvents(run.id));
        }
        tx.commit().await?;
        self.publish(effects).await;
        self.run_envelope(ws_row.public_id, &run).await
    }
}

/// 409 `already_terminal` for a run that has ended.
fn refuse_ended(run: &RunRow) -> KernelResult<()> {
    if run.status.is_terminal() {
        return Err(refuse(
            Code::AlreadyTerminal,
            format!("the run is already {}", run.status),
        ));
    }
    Ok(())
}
