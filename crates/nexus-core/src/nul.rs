//! U+0000 in stored text (errors-and-auth.md §5): PostgreSQL's `TEXT` cannot hold it, so every
//! door refuses a value that carries one, in a string or a member name, before anything is
//! stored. One check, used by the step grammar, the round's call planning, `tool_call`, the
//! resolution door and the result envelope.

use serde_json::Value;

/// Whether any string or member name in `value` holds U+0000.
pub fn contains_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(contains_nul),
        Value::Object(m) => m.iter().any(|(k, v)| k.contains('\0') || contains_nul(v)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::contains_nul;

    #[test]
    fn a_nul_anywhere_is_found() {
        assert!(contains_nul(&json!("a\u{0}b")));
        assert!(contains_nul(&json!({"a": [{"b": ["\u{0}"]}]})));
        assert!(contains_nul(&json!({"k\u{0}": 1})));
        assert!(!contains_nul(&json!({"k": ["a", 1, null, true, {"b": "c"}]})));
    }
}
