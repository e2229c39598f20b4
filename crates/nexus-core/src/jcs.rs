//! Canonical JSON (RFC 8785) for size measurement, hashing and sort tie-breaks.
//! Stored JSON keeps member order; canonical JSON is never stored.

use serde_json::Value;

/// The RFC 8785 serialization of `value`.
pub fn to_string(value: &Value) -> String {
    serde_jcs::to_string(value).expect("a serde_json::Value always canonicalizes")
}

/// The byte length of the canonical serialization: how every byte bound is measured.
pub fn len(value: &Value) -> usize {
    to_string(value).len()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn canonical_form_sorts_keys_and_drops_whitespace() {
        assert_eq!(
            super::to_string(&json!({"b": 1, "a": [true, null]})),
            r#"{"a":[true,null],"b":1}"#
        );
        assert_eq!(super::len(&json!({"b": 1})), 7);
    }
}
