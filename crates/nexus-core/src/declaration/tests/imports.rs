use std::collections::HashSet;

use serde_json::json;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::declaration::{
    import_callable, parse_kernel_tools, parse_runner_executor_public_ids, parse_runner_tool_names,
};

#[test]
fn kernel_tools_grammar() {
    assert_eq!(parse_kernel_tools(&json!(null), "/k").unwrap(), None);
    assert_eq!(parse_kernel_tools(&json!([]), "/k").unwrap(), Some(vec![]));
    assert_eq!(
        parse_kernel_tools(&json!(["nexus.skill.load", "nexus.graph.wait"]), "/k").unwrap(),
        Some(vec!["nexus.skill.load".to_string(), "nexus.graph.wait".to_string()])
    );
    for (bad, path) in [
        (json!("nexus.skill.load"), "/k"),
        (json!(["skill"]), "/k/0"),
        (json!(["nexus.skill.*"]), "/k/0"),
        (json!(["nexus.skill.load", "nexus.skill.load"]), "/k/1"),
        (json!([1]), "/k/0"),
    ] {
        let e = parse_kernel_tools(&bad, "/k").unwrap_err();
        assert_eq!((e.reason, e.path.as_str()), ("invalid", path), "{bad}");
    }
}

#[test]
fn runner_ids_grammar() {
    let id = "0190A000-0000-7000-8000-00000000000A";
    let got = parse_runner_executor_public_ids(&json!([id]), "/c").unwrap().unwrap();
    assert_eq!(got[0].to_string(), id.to_lowercase());
    for (bad, path) in [
        (json!([id, id.to_lowercase()]), "/c/1"),
        (json!(["nope"]), "/c/0"),
        (json!(["0190a0000000700080000000000000aa"]), "/c/0"),
        (json!([5]), "/c/0"),
        (json!({}), "/c"),
    ] {
        let e = parse_runner_executor_public_ids(&bad, "/c").unwrap_err();
        assert_eq!((e.reason, e.path.as_str()), ("invalid", path), "{bad}");
    }
}

#[test]
fn runner_tool_names_grammar() {
    assert_eq!(parse_runner_tool_names(&json!(null), "/a").unwrap(), None);
    assert_eq!(parse_runner_tool_names(&json!([]), "/a").unwrap(), Some(vec![]));
    for (bad, path) in [
        (json!([""]), "/a/0"),
        (json!(["a", "a"]), "/a/1"),
        (json!(["x".repeat(129)]), "/a/0"),
        (json!(["a\0"]), "/a/0"),
        (json!("read"), "/a"),
    ] {
        let e = parse_runner_tool_names(&bad, "/a").unwrap_err();
        assert_eq!((e.reason, e.path.as_str()), ("invalid", path), "{bad}");
    }
}

#[test]
fn collision_rule() {
    let runner = Uuid::parse_str("0190A000-0000-7000-8000-000000000001").unwrap();
    let none = HashSet::new();
    assert_eq!(import_callable("read", runner, &none), "read");
    let taken: HashSet<String> = ["read".to_string()].into();
    let mut h = Sha256::new();
    h.update(b"0190a000-0000-7000-8000-000000000001\0read");
    let expect = format!("read__{}", &hex::encode(h.finalize())[..12]);
    assert_eq!(import_callable("read", runner, &taken), expect);
    // A kernel wire name always collides.
    assert!(import_callable("memory_read", runner, &none).starts_with("memory_read__"));
    // Long names are cut to 49 characters: at most 63 in all.
    let long = "y".repeat(64);
    let taken: HashSet<String> = [long.clone()].into();
    let c = import_callable(&long, runner, &taken);
    assert_eq!(c.len(), 63);
    assert!(c.starts_with(&"y".repeat(49)));
    assert_eq!(&c[49..51], "__");
}
