//! Self-reads: the member profile (declarations.md §12.2) and the executor description
//! (executor.md §2).

use nexus_store::MemberKind;
use serde_json::{Map, Value, json};

use crate::auth::{ExecutorPrincipal, MemberPrincipal};
use crate::error::KernelResult;
use crate::{Kernel, time};

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
        body.insert(
            "member".into(),
            json!({
                "public_id": m.public_id,
                "handle": m.handle,
                "kind": m.kind.as_str(),
                "role": m.role,
                "display_name": m.display_name,
            }),
        );
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
