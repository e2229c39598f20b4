//! Declaration refusals and how each door reports them (declarations.md §2, errors-and-auth.md §3).

use crate::codes::Code;

/// How a door reports a [`DeclError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeclErrorKind {
    /// A grammar word: 422 `validation_failed` (`reason` + `path`) from the profile and assembly
    /// doors, 422 `invalid_steps` (`steps: [{code: reason, path}]`) from the run doors.
    Validation,
    /// The set's canonical JSON passes `tool_definitions_bound`: 413 `content_too_large`.
    TooLarge,
    /// 422 `runner_not_declared` (§7.2 step 2).
    RunnerNotDeclared,
    /// 422 `runner_not_eligible` (§7.2 steps 2 and 8).
    RunnerNotEligible,
    /// 422 `tool_not_served` (§7.2 step 8).
    ToolNotServed,
    /// 422 `tool_not_declared` with `detail` = the first missing name (§7.2 step 6, §9).
    ToolNotDeclared,
}

/// A refused declaration, configuration or assembly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DeclError {
    /// How the door reports it.
    pub kind: DeclErrorKind,
    /// The spec word (`kernel_tool_redefined`, `invalid`, `runner_not_eligible`, …).
    pub reason: &'static str,
    /// A JSON pointer to the offending value, e.g. `/tool_definitions/3/params/x/invert`.
    pub path: String,
    /// Human text naming the offending value. Not a contract.
    pub message: String,
    /// For `tool_not_declared`: the first missing name. Otherwise the offending name, if any.
    pub detail: Option<String>,
}

impl DeclError {
    /// A grammar refusal (`validation_failed` / `invalid_steps`).
    pub fn validation(reason: &'static str, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: DeclErrorKind::Validation,
            reason,
            path: path.into(),
            message: message.into(),
            detail: None,
        }
    }

    /// A refusal of another kind, with its word derived from the kind.
    pub fn of_kind(
        kind: DeclErrorKind,
        path: impl Into<String>,
        message: impl Into<String>,
        detail: Option<String>,
    ) -> Self {
        let reason = match kind {
            DeclErrorKind::Validation => "invalid",
            DeclErrorKind::TooLarge => "tool_definitions_bound",
            DeclErrorKind::RunnerNotDeclared => "runner_not_declared",
            DeclErrorKind::RunnerNotEligible => "runner_not_eligible",
            DeclErrorKind::ToolNotServed => "tool_not_served",
            DeclErrorKind::ToolNotDeclared => "tool_not_declared",
        };
        Self {
            kind,
            reason,
            path: path.into(),
            message: message.into(),
            detail,
        }
    }

    /// The HTTP code the profile and assembly doors answer with.
    pub fn code(&self) -> Code {
        match self.kind {
            DeclErrorKind::Validation => Code::ValidationFailed,
            DeclErrorKind::TooLarge => Code::ContentTooLarge,
            DeclErrorKind::RunnerNotDeclared => Code::RunnerNotDeclared,
            DeclErrorKind::RunnerNotEligible => Code::RunnerNotEligible,
            DeclErrorKind::ToolNotServed => Code::ToolNotServed,
            DeclErrorKind::ToolNotDeclared => Code::ToolNotDeclared,
        }
    }

    /// The HTTP code the run create and append doors answer with: grammar words are reported
    /// inside 422 `invalid_steps` (`steps[].code` = [`DeclError::reason`]).
    pub fn step_code(&self) -> Code {
        match self.kind {
            DeclErrorKind::Validation => Code::InvalidSteps,
            _ => self.code(),
        }
    }

    /// Prefixes the path (used when a nested validator reports relative paths).
    pub fn under(mut self, prefix: &str) -> Self {
        self.path = format!("{prefix}{}", self.path);
        self
    }
}
