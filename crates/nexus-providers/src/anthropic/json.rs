//! Small JSON writing helpers of the encoder: bytes are written by hand into one `Vec<u8>`, and
//! free-form values (stored tools, `native` blocks, tool inputs) through `serde_json`, which
//! keeps their member order (the workspace enables `preserve_order`).

use serde_json::{Map, Value};

pub(crate) use crate::canonical::write_str;

/// `{"type":"ephemeral"}`: the value of every `cache_control` breakpoint.
pub(crate) const EPHEMERAL: &[u8] = br#"{"type":"ephemeral"}"#;

/// The member a breakpoint adds to a block, written just before the block's closing brace.
pub(crate) const CACHE_CONTROL_MEMBER: &[u8] = br#","cache_control":{"type":"ephemeral"}"#;

/// Appends `value` as compact JSON, members in their stored order.
pub(crate) fn write_value(out: &mut Vec<u8>, value: &Value) {
    // Writing a `Value` into a `Vec` cannot fail: keys are strings and there is no I/O.
    serde_json::to_writer(&mut *out, value).expect("a JSON value always serializes");
}

/// Appends `object` with its members in stored order, except those named in `extra`, which are
/// written last with the given raw JSON values (so an added member never appears twice).
pub(crate) fn write_object_with(out: &mut Vec<u8>, object: &Map<String, Value>, extra: &[(&str, &[u8])]) {
    out.push(b'{');
    let mut first = true;
    for (key, value) in object {
        if extra.iter().any(|(k, _)| k == key) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        write_str(out, key);
        out.push(b':');
        write_value(out, value);
    }
    for (key, raw) in extra {
        if !first {
            out.push(b',');
        }
        first = false;
        write_str(out, key);
        out.push(b':');
        out.extend_from_slice(raw);
    }
    out.push(b'}');
}

/// Whether `a` and `b` serialize to the same bytes: equal values with members in the same order
/// (`Value`'s own `==` ignores member order and equates `0.0` with `-0.0`).
pub(crate) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
        }
        (Value::Array(x), Value::Array(y)) => same_list(x, y),
        (Value::Number(x), Value::Number(y)) => match (x.is_f64(), y.is_f64()) {
            (true, true) => x.as_f64().map(f64::to_bits) == y.as_f64().map(f64::to_bits),
            (false, false) => x == y,
            _ => false,
        },
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Null, Value::Null) => true,
        _ => false,
    }
}

/// [`same`] over two lists.
pub(crate) fn same_list(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
}

/// Whether `s` is empty or only whitespace (such text blocks are refused upstream).
pub(crate) fn blank(s: &str) -> bool {
    s.trim().is_empty()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn sameness_is_byte_sameness() {
        assert!(same(&json!({"a":1,"b":[1.5,"x"]}), &json!({"a":1,"b":[1.5,"x"]})));
        assert!(
            !same(&json!({"a":1,"b":2}), &json!({"b":2,"a":1})),
            "member order counts"
        );
        assert!(!same(&json!(0.0), &json!(-0.0)));
        assert!(!same(&json!(1), &json!(1.0)));
        assert!(same(&json!(u64::MAX), &json!(u64::MAX)));
        assert!(!same(&json!([1]), &json!([1, 2])));
    }

    #[test]
    fn objects_with_added_members() {
        let Value::Object(m) = json!({"name":"x","cache_control":{"type":"other"},"z":[1]}) else {
            unreachable!()
        };
        let mut out = Vec::new();
        write_object_with(
            &mut out,
            &m,
            &[("defer_loading", b"true"), ("cache_control", EPHEMERAL)],
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"name":"x","z":[1],"defer_loading":true,"cache_control":{"type":"ephemeral"}}"#
        );
        let mut out = Vec::new();
        write_object_with(&mut out, &Map::new(), &[]);
        assert_eq!(out, b"{}");
    }
}
