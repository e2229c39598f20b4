//! The checked bodies of the conversation routes that take one: each `parse` does the body's
//! shape checks with the route's codes before the kernel applies it.

use nexus_core::codes::Code;
use serde_json::Value;
use uuid::Uuid;

use super::{Named, opt_string, refuse};
use crate::error::KernelResult;

/// The body of `POST W/conversations`: `{conversation: {title?, answering_user_public_id?,
/// default_runner_executor_public_id?}}`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateConversationRequest {
    /// The body as sent: an `Idempotency-Key` is bound to its digest.
    pub(super) envelope: Value,
    pub(super) title: Option<String>,
    pub(super) answerer: Option<Named>,
    pub(super) runner: Option<Named>,
}

impl CreateConversationRequest {
    /// 400 `parameter_missing` without a `conversation` object; 422 `validation_failed`
    /// (reason `invalid`) for a title that is not a string without U+0000. The answerer and
    /// the runner are checked against the workspace when applied.
    pub fn parse(body: &Value) -> KernelResult<CreateConversationRequest> {
        let Some(shell) = body.get("conversation").filter(|c| c.is_object()) else {
            return Err(refuse(Code::ParameterMissing, "the body needs a `conversation` object"));
        };
        Ok(CreateConversationRequest {
            title: opt_string(shell, "title", "/conversation/title")?,
            answerer: Named::of(shell.get("answering_user_public_id")),
            runner: Named::of(shell.get("default_runner_executor_public_id")),
            envelope: body.clone(),
        })
    }
}

/// The body of `PUT C/default_runner`: `{default_runner: {executor_public_id: id | null}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultRunnerRequest {
    /// The runner later turns import from (`None`: no default runner).
    pub runner: Option<Uuid>,
}

impl DefaultRunnerRequest {
    /// 400 `parameter_missing` without `default_runner.executor_public_id`; 400
    /// `parameter_invalid` for a value that is neither null nor a UUID string.
    pub fn parse(body: &Value) -> KernelResult<DefaultRunnerRequest> {
        let Some(selector) = body
            .get("default_runner")
            .filter(|d| d.is_object())
            .and_then(|d| d.get("executor_public_id"))
        else {
            return Err(refuse(
                Code::ParameterMissing,
                "the body needs {default_runner: {executor_public_id: id | null}}",
            ));
        };
        let runner = match selector {
            Value::Null => None,
            Value::String(s) => Some(Uuid::parse_str(s).map_err(|_| {
                refuse(
                    Code::ParameterInvalid,
                    format!("executor_public_id {s:?} is not a UUID"),
                )
            })?),
            other => {
                return Err(refuse(
                    Code::ParameterInvalid,
                    format!("executor_public_id must be a UUID string or null, got {other}"),
                ));
            }
        };
        Ok(DefaultRunnerRequest { runner })
    }
}
