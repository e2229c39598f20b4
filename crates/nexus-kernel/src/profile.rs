//! Self-reads: the member profile (declarations.md §12.2) and the executor description
//! (executor.md §2); and who else is in a workspace (`GET W/members`, runs.md §12).

use nexus_api::executors::{ExecutorDescription, ExecutorRecord};
use nexus_api::profile::{MemberList, ProfileCredential, ProfileMember, WorkspaceMember};
use nexus_core::codes::Code;
use nexus_store::prelude::*;
use nexus_store::{MemberKind, MemberRow};
use serde::Serialize;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::auth::{ExecutorPrincipal, MemberPrincipal};
use crate::error::{KernelError, KernelResult};
use crate::{Admin, time};

/// A member as the profile and the workspace's member list read it.
fn profile_member(m: &MemberRow) -> ProfileMember {
    ProfileMember {
        public_id: m.public_id.to_string(),
        handle: m.handle.clone(),
        kind: m.kind.as_str().into(),
        role: m.role.to_string(),
        display_name: m.display_name.clone(),
        rest: Map::new(),
    }
}

/// `GET /agent_api/v1/profile` (and the answer of `PUT …/profile/configuration`):
/// `{member, credential, configuration?, measured_at}`. The wire type is
/// `nexus_api::profile::Profile`; the configuration stays the agent's stored document, read
/// with every field present ([`configuration_read`]), which that type's optional members would
/// omit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileReply {
    pub member: ProfileMember,
    pub credential: ProfileCredential,
    /// Agents only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub configuration: Option<Value>,
    pub measured_at: String,
}

/// A configuration field's name and its unset value.
type FieldDefault = (&'static str, fn() -> Value);

/// The configuration fields of an agent profile, in read-back order, with their unset value.
pub const CONFIGURATION_FIELDS: [FieldDefault; 8] = [
    ("tool_definitions", || json!([])),
    ("kernel_tools", || Value::Null),
    ("runner_executor_public_ids", || Value::Null),
    ("runner_tool_names", || Value::Null),
    ("approval_mode", || Value::Null),
    ("approval_rules", || Value::Null),
    ("default_model", || Value::Null),
    ("instructions", || Value::Null),
];

/// An agent's stored configuration, with every field present (unset → null, tool_definitions → []).
pub fn configuration_read(stored: Option<&str>) -> Value {
    let stored: Map<String, Value> = stored
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    let mut out = Map::new();
    for (field, unset) in CONFIGURATION_FIELDS {
        let value = match stored.get(field) {
            Some(Value::Null) | None => unset(),
            Some(v) => v.clone(),
        };
        out.insert(field.to_string(), value);
    }
    Value::Object(out)
}

impl Admin<'_> {
    /// `GET /agent_api/v1/profile`.
    pub async fn profile(&self, principal: &MemberPrincipal) -> KernelResult<ProfileReply> {
        let m = &principal.member;
        Ok(ProfileReply {
            member: profile_member(m),
            credential: ProfileCredential {
                plane: "member".to_string(),
                expires_at: principal.credential.expires_at.map(time::iso),
                rest: Map::new(),
            },
            configuration: (m.kind == MemberKind::Agent).then(|| configuration_read(m.configuration.as_deref())),
            measured_at: time::iso(self.now_ms()),
        })
    }

    /// `GET W/members?kind=agent|human`: `{members: [{public_id, handle, kind, role,
    /// display_name, standing}]}`, every member holding standing in the workspace, by handle.
    /// Another `kind` is 400 `parameter_invalid`.
    pub async fn workspace_members(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        kind: Option<&str>,
    ) -> KernelResult<MemberList> {
        let kind = kind
            .map(|k| {
                MemberKind::parse(k).ok_or_else(|| {
                    KernelError::new(
                        Code::ParameterInvalid,
                        format!("kind must be \"agent\" or \"human\", got {k:?}"),
                    )
                })
            })
            .transpose()?;
        let (ws, _) = self.workspace_for(principal, workspace, false).await?;
        let members = self
            .store
            .workspace_members(ws.id)
            .await?
            .into_iter()
            .filter(|(m, _)| kind.is_none_or(|k| m.kind == k))
            .map(|(m, standing)| WorkspaceMember {
                member: profile_member(&m),
                standing: standing.as_str().to_string(),
            })
            .collect();
        Ok(MemberList { members })
    }

    /// `GET /agent_api/v1/executor`.
    pub fn executor_description(&self, principal: &ExecutorPrincipal) -> ExecutorDescription {
        let e = &principal.executor;
        ExecutorDescription {
            executor: ExecutorRecord {
                public_id: e.public_id.to_string(),
                kind: e.kind.as_str().into(),
                status: e.status.as_str().to_string(),
                display_name: e.display_name.clone(),
                credential_epoch: e.credential_epoch,
                rest: Map::new(),
            },
            measured_at: time::iso(self.now_ms()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_configuration_reads_nulls_and_empty_tools() {
        let v = configuration_read(None);
        assert_eq!(v["tool_definitions"], json!([]));
        assert_eq!(v["approval_mode"], Value::Null);
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 8);
        let v = configuration_read(Some(r#"{"approval_mode":"ask","tool_definitions":null}"#));
        assert_eq!(v["approval_mode"], json!("ask"));
        assert_eq!(v["tool_definitions"], json!([]));
    }
}
