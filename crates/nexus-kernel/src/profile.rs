//! Self-reads: the member profile (declarations.md §12.2) and the executor description
//! (executor.md §2); and who else is in a workspace (`GET W/members`, runs.md §12).

use nexus_core::codes::Code;
use nexus_store::{Engine, MemberKind, MemberRow};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::auth::{ExecutorPrincipal, MemberPrincipal};
use crate::error::{KernelError, KernelResult};
use crate::{Kernel, time};

/// A member as the profile and the workspace's member list read it.
fn member_json(m: &MemberRow) -> Value {
    json!({
        "public_id": m.public_id,
        "handle": m.handle,
        "kind": m.kind.as_str(),
        "role": m.role,
        "display_name": m.display_name,
    })
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

impl Kernel {
    /// `GET /agent_api/v1/profile`.
    pub async fn profile(&self, principal: &MemberPrincipal) -> KernelResult<Value> {
        let m = &principal.member;
        let mut body = Map::new();
        body.insert("member".into(), member_json(m));
        body.insert(
            "credential".into(),
            json!({ "plane": "member", "expires_at": principal.credential.expires_at.map(time::iso) }),
        );
        if m.kind == MemberKind::Agent {
            body.insert("configuration".into(), configuration_read(m.configuration.as_deref()));
        }
        body.insert("measured_at".into(), json!(time::iso(self.now_ms())));
        Ok(Value::Object(body))
    }

    /// `GET W/members?kind=agent|human`: `{members: [{public_id, handle, kind, role,
    /// display_name, standing}]}`, every member holding standing in the workspace, by handle.
    /// Another `kind` is 400 `parameter_invalid`.
    pub async fn workspace_members(
        &self,
        principal: &MemberPrincipal,
        workspace: Uuid,
        kind: Option<&str>,
    ) -> KernelResult<Value> {
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
        let members: Vec<Value> = self
            .store
            .workspace_members(ws.id)
            .await?
            .into_iter()
            .filter(|(m, _)| kind.is_none_or(|k| m.kind == k))
            .map(|(m, standing)| {
                let mut out = member_json(&m);
                out["standing"] = json!(standing.as_str());
                out
            })
            .collect();
        Ok(json!({ "members": members }))
    }

    /// `GET /agent_api/v1/executor`.
    pub fn executor_description(&self, principal: &ExecutorPrincipal) -> Value {
        let e = &principal.executor;
        json!({
            "executor": {
                "public_id": e.public_id,
                "kind": e.kind.as_str(),
                "status": e.status,
                "display_name": e.display_name,
                "credential_epoch": e.credential_epoch,
            },
            "measured_at": time::iso(self.now_ms()),
        })
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
