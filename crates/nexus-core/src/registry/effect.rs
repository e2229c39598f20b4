//! Effect profiles: trusted five-key host metadata (registry.md §4).
//!
//! An effect profile never rides the provider wire. It is shown to approvers and decides
//! between `timed_out` and `uncertain` at expiry.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Whether the call changes state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum EffectKind {
    Pure,
    ReadOnly,
    Write,
}

/// `closed`: effects stay inside systems the kernel or runner controls; `open`: they reach out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum EffectScope {
    Closed,
    Open,
}

/// Whether repeating the call is harmless by nature, only with a key, or unsafe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Idempotency {
    Intrinsic,
    Keyed,
    None,
}

/// Whether the effect can be checked afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Reconciliation {
    None,
    Lookup,
}

/// The five keys, serialized in this member order (registry.md §4). Exactly these keys; a
/// `read_only` or `pure` profile is never destructive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EffectProfile {
    /// Whether the call changes state.
    pub kind: EffectKind,
    /// Whether the change can destroy data (`false` for `pure` and `read_only`).
    pub destructive: bool,
    /// Whether effects stay in systems the kernel or runner controls.
    pub effect_scope: EffectScope,
    /// Whether repeating the call is harmless.
    pub idempotency: Idempotency,
    /// Whether the effect can be checked afterwards.
    pub reconciliation: Reconciliation,
}

/// The five key names, in serialization order.
pub const EFFECT_KEYS: [&str; 5] = ["kind", "destructive", "effect_scope", "idempotency", "reconciliation"];

/// Why a JSON value is not an effect profile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EffectProfileError {
    #[error("effect_profile must be an object")]
    NotAnObject,
    #[error("effect_profile must have exactly the keys kind, destructive, effect_scope, idempotency, reconciliation")]
    WrongKeys,
    #[error("effect_profile.{0} has a value outside its vocabulary")]
    BadValue(&'static str),
    #[error("a read_only or pure effect_profile cannot be destructive")]
    DestructiveRead,
}

impl EffectProfile {
    /// `read_only, false, closed, intrinsic, none`
    pub const READ: Self = Self {
        kind: EffectKind::ReadOnly,
        destructive: false,
        effect_scope: EffectScope::Closed,
        idempotency: Idempotency::Intrinsic,
        reconciliation: Reconciliation::None,
    };
    /// `write, false, closed, intrinsic, lookup`
    pub const GRAPH_WRITE: Self = Self {
        kind: EffectKind::Write,
        destructive: false,
        effect_scope: EffectScope::Closed,
        idempotency: Idempotency::Intrinsic,
        reconciliation: Reconciliation::Lookup,
    };
    /// `write, true, closed, intrinsic, lookup`
    pub const MEMORY_WRITE: Self = Self {
        kind: EffectKind::Write,
        destructive: true,
        effect_scope: EffectScope::Closed,
        idempotency: Idempotency::Intrinsic,
        reconciliation: Reconciliation::Lookup,
    };
    /// `write, true, closed, none, lookup`
    pub const MEMORY_EDIT: Self = Self {
        kind: EffectKind::Write,
        destructive: true,
        effect_scope: EffectScope::Closed,
        idempotency: Idempotency::None,
        reconciliation: Reconciliation::Lookup,
    };

    /// Replayable: `kind ∈ {pure, read_only}` or `idempotency = intrinsic` (registry.md §4).
    pub fn is_replayable(&self) -> bool {
        matches!(self.kind, EffectKind::Pure | EffectKind::ReadOnly) || self.idempotency == Idempotency::Intrinsic
    }

    /// The five-key JSON object, in the fixed member order.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("an effect profile always serializes")
    }

    /// Strict parse: an object with exactly the five keys, closed vocabulary, and no
    /// destructive read. Used by the announcement door and by stored-profile reads.
    pub fn parse(value: &Value) -> Result<Self, EffectProfileError> {
        let obj: &Map<String, Value> = value.as_object().ok_or(EffectProfileError::NotAnObject)?;
        if obj.len() != EFFECT_KEYS.len() || !EFFECT_KEYS.iter().all(|k| obj.contains_key(*k)) {
            return Err(EffectProfileError::WrongKeys);
        }
        fn field<T: serde::de::DeserializeOwned>(
            obj: &Map<String, Value>,
            key: &'static str,
        ) -> Result<T, EffectProfileError> {
            serde_json::from_value(obj[key].clone()).map_err(|_| EffectProfileError::BadValue(key))
        }
        let profile = Self {
            kind: field(obj, "kind")?,
            destructive: field(obj, "destructive")?,
            effect_scope: field(obj, "effect_scope")?,
            idempotency: field(obj, "idempotency")?,
            reconciliation: field(obj, "reconciliation")?,
        };
        if profile.destructive && matches!(profile.kind, EffectKind::Pure | EffectKind::ReadOnly) {
            return Err(EffectProfileError::DestructiveRead);
        }
        Ok(profile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serializes_exactly_five_keys_in_order() {
        let v = EffectProfile::GRAPH_WRITE.to_json();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, EFFECT_KEYS);
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"kind":"write","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"lookup"}"#
        );
    }

    #[test]
    fn parse_is_strict() {
        assert_eq!(
            EffectProfile::parse(&EffectProfile::READ.to_json()),
            Ok(EffectProfile::READ)
        );
        assert_eq!(EffectProfile::parse(&json!([])), Err(EffectProfileError::NotAnObject));
        let mut extra = EffectProfile::READ.to_json();
        extra["x"] = json!(1);
        assert_eq!(EffectProfile::parse(&extra), Err(EffectProfileError::WrongKeys));
        let mut missing = EffectProfile::READ.to_json();
        missing.as_object_mut().unwrap().shift_remove("kind");
        assert_eq!(EffectProfile::parse(&missing), Err(EffectProfileError::WrongKeys));
        let mut bad = EffectProfile::READ.to_json();
        bad["kind"] = json!("delete");
        assert_eq!(EffectProfile::parse(&bad), Err(EffectProfileError::BadValue("kind")));
        let mut destructive_read = EffectProfile::READ.to_json();
        destructive_read["destructive"] = json!(true);
        assert_eq!(
            EffectProfile::parse(&destructive_read),
            Err(EffectProfileError::DestructiveRead)
        );
    }

    #[test]
    fn replayable_rule() {
        assert!(EffectProfile::READ.is_replayable());
        assert!(EffectProfile::GRAPH_WRITE.is_replayable());
        assert!(!EffectProfile::MEMORY_EDIT.is_replayable());
        let keyed_write = EffectProfile {
            idempotency: Idempotency::Keyed,
            ..EffectProfile::MEMORY_EDIT
        };
        assert!(!keyed_write.is_replayable());
    }
}
