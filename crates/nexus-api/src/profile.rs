//! The caller's profile (declarations.md §12.2) and an agent's configuration, read back there
//! and replaced whole by `PUT /agent_api/v1/profile/configuration` (§12.3).

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::common::{ApprovalMode, open_words};

open_words! {
    /// Whether a member is a person or an agent.
    pub enum MemberKind {
        /// A person.
        Human = "human",
        /// An agent: it has a profile configuration.
        Agent = "agent",
    }
}

/// `GET /agent_api/v1/profile`: `{member, credential, configuration?, measured_at}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Profile {
    /// The calling member.
    pub member: ProfileMember,
    /// The credential the call was made with.
    pub credential: ProfileCredential,
    /// The agent's configuration, every field present (agents only; absent for a person).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub configuration: Option<Configuration>,
    /// RFC 3339 time of the read.
    pub measured_at: String,
    /// Members this crate does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// The profile's `member`: `{public_id, handle, kind, role, display_name}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ProfileMember {
    /// The member's id.
    #[schema(schema_with = crate::ids::uuid)]
    pub public_id: String,
    /// Its handle, unique in the account.
    pub handle: String,
    /// `agent` or `human`.
    pub kind: MemberKind,
    /// Its account role (`admin` or `member`).
    pub role: String,
    /// Its display name.
    pub display_name: String,
    /// Members this crate does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// `GET W/members`: every member holding standing in the workspace, by handle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MemberList {
    /// The members.
    pub members: Vec<WorkspaceMember>,
}

/// One member of `GET W/members`: the profile's `member` and its standing in the workspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WorkspaceMember {
    /// The member's id, its handle, kind, role and display name.
    #[serde(flatten)]
    pub member: ProfileMember,
    /// `read` or `write`.
    pub standing: String,
}

/// The profile's `credential`: `{plane: "member", expires_at}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ProfileCredential {
    /// `member`.
    pub plane: String,
    /// RFC 3339 expiry, or `null` for a credential that does not expire.
    #[schema(required = true)]
    pub expires_at: Option<String>,
    /// Members this crate does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// An agent's profile configuration (declarations.md §12.3). The profile read has every field
/// (unset: `null`, `tool_definitions`: `[]`); as a `PUT` body it is a whole replacement, an
/// omitted field is cleared. Other members are ignored by the server.
///
/// The free parts stay JSON: each `tool_definitions` entry is one of the entry shapes of
/// declarations.md §2 (a grammar checked by the server, answered with 422 `validation_failed`,
/// `reason` and `path`), and `approval_rules` follows approvals.md §2.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Configuration {
    /// The explicit declaration entries (declarations.md §2–§6); `null` reads as `[]`.
    #[serde(default, deserialize_with = "null_as_empty")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub tool_definitions: Vec<Map<String, Value>>,
    /// Canonical names of kernel tools to declare (declarations.md §7.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_tools: Option<Vec<String>>,
    /// The runners tools may be imported from, in order (declarations.md §7.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = crate::ids::nullable_uuid_list)]
    pub runner_executor_public_ids: Option<Vec<String>>,
    /// The served names to import (`null`: every model-describable tool; `[]`: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_tool_names: Option<Vec<String>>,
    /// The approval mode of the agent's turns; required when the profile declares tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_mode: Option<ApprovalMode>,
    /// The approval rules (approvals.md §2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_rules: Option<Value>,
    /// `provider/model`, resolvable for the account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// The system text of the agent's turns (at most 65,536 bytes, no NUL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Members this crate does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// The body of `PUT /agent_api/v1/profile/configuration`: `{configuration}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PutConfiguration {
    /// The whole new configuration.
    pub configuration: Configuration,
}

/// `null` or absent as the empty list.
pub(crate) fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_configuration_reads_back_unset_fields_and_sends_only_what_is_set() {
        let read: Configuration = serde_json::from_value(json!({
            "tool_definitions": null, "kernel_tools": ["nexus.memory.read"], "approval_mode": "ask",
            "runner_executor_public_ids": null, "future_field": 1,
        }))
        .unwrap();
        assert!(read.tool_definitions.is_empty());
        assert_eq!(read.approval_mode, Some(ApprovalMode::Ask));
        assert_eq!(read.rest["future_field"], json!(1));
        let sent = Configuration {
            kernel_tools: Some(vec!["nexus.memory.read".into()]),
            ..Configuration::default()
        };
        assert_eq!(
            serde_json::to_value(sent).unwrap(),
            json!({"tool_definitions": [], "kernel_tools": ["nexus.memory.read"]})
        );
    }
}
