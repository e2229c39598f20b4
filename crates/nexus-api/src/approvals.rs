//! Held approvals (approvals.md §4–§6).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::common::Pagination;

/// One held row of `GET W/approvals`: a tool call waiting for an approver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Approval {
    /// The run the row belongs to.
    pub run_public_id: String,
    /// The held row's key.
    pub task_key: String,
    /// The resolved wire name of the call.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// The alias the model called, when it used one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_alias: Option<String>,
    /// The call's input, in full.
    #[serde(default)]
    pub tool_input: Value,
    /// The frozen effect profile shown to the approver. Documented as the core's
    /// `EffectProfile`; held here as JSON so that an SDK reads a row whose profile grew a key.
    #[serde(default)]
    #[schema(value_type = nexus_core::registry::effect::EffectProfile)]
    pub effect_profile: Value,
    /// When the hold expires (`approval_expired`).
    #[serde(default)]
    pub deadline_at: Option<String>,
    /// The round that made the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declaring_task_key: Option<String>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// `GET W/approvals`: held rows across the workspace's runs, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ApprovalPage {
    /// The held rows of this page.
    pub approvals: Vec<Approval>,
    /// The cursor of the next page.
    #[serde(default)]
    pub pagination: Pagination,
}
