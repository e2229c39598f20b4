//! Effect profiles for bridged tools (executor.md §14). MCP annotations are hints from the
//! server; the MCP specification says a client must not act on them unless it trusts the
//! server. So an untrusted server's every tool gets the fail-closed profile, and only a server
//! marked `trusted = true` has its hints read.

use nexus_sdk::runner::{EffectKind, EffectProfile, EffectScope, Idempotency, Reconciliation};
use rmcp::model::ToolAnnotations;

/// The profile of every tool of an untrusted server: it may write, destroy, reach the open
/// world, and is neither idempotent nor checkable afterwards.
pub const FAIL_CLOSED: EffectProfile = EffectProfile {
    kind: EffectKind::Write,
    destructive: true,
    effect_scope: EffectScope::Open,
    idempotency: Idempotency::None,
    reconciliation: Reconciliation::None,
};

/// The profile of one tool. Untrusted: [`FAIL_CLOSED`], whatever the annotations say.
/// Trusted: derived from the hints, each absent hint read as its fail-closed value.
pub fn derive(trusted: bool, annotations: Option<&ToolAnnotations>) -> EffectProfile {
    if !trusted {
        return FAIL_CLOSED;
    }
    let Some(hints) = annotations else {
        return FAIL_CLOSED;
    };
    let read_only = hints.read_only_hint == Some(true);
    EffectProfile {
        kind: if read_only {
            EffectKind::ReadOnly
        } else {
            EffectKind::Write
        },
        destructive: !read_only && hints.destructive_hint != Some(false),
        effect_scope: if hints.open_world_hint == Some(false) {
            EffectScope::Closed
        } else {
            EffectScope::Open
        },
        idempotency: if hints.idempotent_hint == Some(true) {
            Idempotency::Intrinsic
        } else {
            Idempotency::None
        },
        reconciliation: Reconciliation::None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn hints(value: serde_json::Value) -> ToolAnnotations {
        serde_json::from_value(value).unwrap()
    }

    fn profile(kind: EffectKind, destructive: bool, scope: EffectScope, idem: Idempotency) -> EffectProfile {
        EffectProfile {
            kind,
            destructive,
            effect_scope: scope,
            idempotency: idem,
            reconciliation: Reconciliation::None,
        }
    }

    #[test]
    fn an_untrusted_server_is_fail_closed_whatever_it_claims() {
        let benign = hints(json!({
            "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false
        }));
        assert_eq!(derive(false, Some(&benign)), FAIL_CLOSED);
        assert_eq!(derive(false, None), FAIL_CLOSED);
        assert_eq!(
            FAIL_CLOSED,
            profile(EffectKind::Write, true, EffectScope::Open, Idempotency::None)
        );
    }

    #[test]
    fn a_trusted_read_only_tool_is_read_only_and_not_destructive() {
        let h = hints(json!({
            "readOnlyHint": true, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false
        }));
        assert_eq!(
            derive(true, Some(&h)),
            profile(EffectKind::ReadOnly, false, EffectScope::Closed, Idempotency::Intrinsic)
        );
        // Without the other hints: open world, no idempotency.
        let h = hints(json!({"readOnlyHint": true}));
        assert_eq!(
            derive(true, Some(&h)),
            profile(EffectKind::ReadOnly, false, EffectScope::Open, Idempotency::None)
        );
    }

    #[test]
    fn a_trusted_writer_is_destructive_unless_it_says_otherwise() {
        let h = hints(json!({"readOnlyHint": false}));
        assert_eq!(derive(true, Some(&h)), FAIL_CLOSED);
        let h = hints(json!({"destructiveHint": false}));
        assert_eq!(
            derive(true, Some(&h)),
            profile(EffectKind::Write, false, EffectScope::Open, Idempotency::None)
        );
        let h = hints(json!({"destructiveHint": true, "openWorldHint": false, "idempotentHint": true}));
        assert_eq!(
            derive(true, Some(&h)),
            profile(EffectKind::Write, true, EffectScope::Closed, Idempotency::Intrinsic)
        );
    }

    #[test]
    fn only_an_explicit_hint_moves_a_key_off_its_fail_closed_value() {
        let h = hints(json!({"openWorldHint": true, "idempotentHint": false}));
        assert_eq!(derive(true, Some(&h)), FAIL_CLOSED);
        assert_eq!(derive(true, Some(&hints(json!({})))), FAIL_CLOSED);
        assert_eq!(derive(true, None), FAIL_CLOSED);
    }
}
