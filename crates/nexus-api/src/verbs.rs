//! The small request bodies of the member verbs (runs.md §2, §6; runs.md §12): stop, deny,
//! retry, and a run's or conversation's default runner.

use serde::{Deserialize, Serialize};

/// The body of `POST R/stop`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Stop {
    /// Cancel live work at once (the default) rather than let it drain.
    #[serde(default = "yes")]
    pub force: bool,
}

fn yes() -> bool {
    true
}

/// The body of `POST R/tasks/{key}/deny`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Deny {
    /// Why, recorded as the failed row's `error.detail`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The body of `POST R/tasks/{key}/retry`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Retry {
    /// A model task's new model reference (model tasks only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Which runner: an executor id, or `null` for none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunnerChoice {
    /// The runner's executor id, or `null` to clear it.
    #[schema(required = true, schema_with = crate::ids::nullable_uuid)]
    pub executor_public_id: Option<String>,
}

/// The body of `PUT R/default_runner` and `PUT C/default_runner`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SetDefaultRunner {
    /// The new default runner.
    pub default_runner: RunnerChoice,
}

impl SetDefaultRunner {
    /// The body naming `executor_public_id` (or clearing the default with `None`).
    pub fn new(executor_public_id: Option<&str>) -> SetDefaultRunner {
        SetDefaultRunner {
            default_runner: RunnerChoice {
                executor_public_id: executor_public_id.map(str::to_owned),
            },
        }
    }
}
