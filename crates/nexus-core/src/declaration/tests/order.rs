use serde_json::{Value, json};

use super::{func, refuse};
use crate::codes::Code;
use crate::declaration::{DeclErrorKind, canonical_len, check_bound, sort, validate_declaration};
use crate::jcs;

#[test]
fn sorted_by_callable_in_byte_order() {
    let out = validate_declaration(
        &json!([func("b"), func("B"), func("a"), {"type": "web_search", "name": "aa"}, {"type": "zz"}]),
        "/t",
    )
    .unwrap();
    let names: Vec<String> = out
        .iter()
        .map(|e| crate::declaration::duplicate_name_of(e).unwrap().into_owned())
        .collect();
    assert_eq!(names, ["B", "a", "aa", "b", "zz"]);
}

#[test]
fn ties_break_by_canonical_json() {
    let mut v = vec![json!({"type": "x", "b": 2}), json!({"type": "x", "a": 1})];
    sort(&mut v);
    assert_eq!(v[0], json!({"type": "x", "a": 1}));
}

#[test]
fn the_bound_is_canonical_bytes() {
    let big = "x".repeat(600_000);
    let mut a = func("a");
    a["function"]["description"] = json!(big);
    let mut b = func("b");
    b["function"]["description"] = json!(big);
    let e = refuse(json!([a.clone(), b]));
    assert_eq!(e.kind, DeclErrorKind::TooLarge);
    assert_eq!(e.code(), Code::ContentTooLarge);
    assert!(validate_declaration(&json!([a]), "/t").is_ok());
    // Exactly at the bound passes; one byte more is refused.
    let at = vec![json!("x".repeat(crate::bounds::TOOL_DEFINITIONS - 4))];
    assert_eq!(jcs::len(&Value::Array(at.clone())), crate::bounds::TOOL_DEFINITIONS);
    assert!(check_bound(&at, "").is_ok());
    let over = vec![json!("x".repeat(crate::bounds::TOOL_DEFINITIONS - 3))];
    assert!(check_bound(&over, "").is_err());
}

#[test]
fn canonical_len_matches_jcs() {
    for v in [
        json!({"b": [1, -2, 3.5, 1e300, 9007199254740993u64, null, true, false], "a": "q\"\\\n\t\u{1}\u{7f}é😀\u{2028}"}),
        json!([]),
        json!({}),
        json!(0),
        json!(-0.0),
        json!(1.0),
    ] {
        assert_eq!(canonical_len(&v), jcs::len(&v), "{v}");
    }
}
