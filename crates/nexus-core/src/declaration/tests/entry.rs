use serde_json::json;

use super::{agent, assert_refused, func, plain, refuse};
use crate::codes::Code;
use crate::declaration::{DeclErrorKind, validate_declaration};

const RUNNER: &str = "0190a000-0000-7000-8000-000000000001";

fn routed(name: &str, route: serde_json::Value) -> serde_json::Value {
    let mut e = func(name);
    e["route"] = route;
    e
}

#[test]
fn an_entry_must_be_an_object_with_a_shape() {
    assert_refused(json!(["x"]), "invalid", "/t/0");
    assert_refused(json!([{"name": "x"}]), "invalid", "/t/0");
    assert_refused(json!({"a": 1}), "invalid", "/t");
}

#[test]
fn defer_loading_is_true_or_false() {
    let mut e = func("x");
    e["defer_loading"] = json!("yes");
    assert_refused(json!([e]), "invalid", "/t/0/defer_loading");
    e["defer_loading"] = json!(false);
    assert!(validate_declaration(&json!([e]), "/t").is_ok());
}

#[test]
fn callable_names_are_bounded() {
    assert_refused(json!([func("")]), "invalid", "/t/0/function/name");
    assert_refused(json!([func(&"x".repeat(129))]), "invalid", "/t/0/function/name");
    assert_refused(json!([func("a\0b")]), "invalid", "/t/0/function/name");
    assert_refused(
        json!([{"type": "function", "function": {"description": "d"}}]),
        "invalid",
        "/t/0/function/name",
    );
    assert_refused(
        json!([{"type": "function", "function": "x"}]),
        "invalid",
        "/t/0/function",
    );
    assert_refused(json!([{"type": "function", "name": 5}]), "invalid", "/t/0/name");
    // 128 characters (multi-byte) are fine.
    assert!(validate_declaration(&json!([func(&"é".repeat(128))]), "/t").is_ok());
}

#[test]
fn callables_are_unique_across_shapes() {
    assert_refused(json!([func("a"), func("b"), func("a")]), "duplicate_tool_name", "/t/2");
    let flat = json!({"type": "function", "name": "a", "description": "", "parameters": {}});
    assert_refused(json!([func("a"), flat]), "duplicate_tool_name", "/t/1");
    assert_refused(
        json!([{"type": "web_search_20250305", "name": "web_search"}, func("web_search")]),
        "duplicate_tool_name",
        "/t/1",
    );
    assert_refused(
        json!([{"type": "web_search"}, {"type": "web_search"}]),
        "duplicate_tool_name",
        "/t/1",
    );
    let mut alias = agent();
    alias["name"] = json!("a");
    assert_refused(json!([func("a"), alias]), "duplicate_tool_name", "/t/1");
    assert_eq!(refuse(json!([func("a"), func("a")])).detail.as_deref(), Some("a"));
}

#[test]
fn shape_five_passes_untouched() {
    let e = json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 3});
    assert_eq!(validate_declaration(&json!([e]), "/t").unwrap(), vec![e]);
}

#[test]
fn plain_kernel_entries_must_match_the_catalog() {
    let def = plain("delegate_task");
    assert!(validate_declaration(&json!([def]), "/t").is_ok());
    // flat form and defer_loading are accepted, and stored as given.
    let f = &def["function"];
    let flat = json!({"type": "function", "name": f["name"], "description": f["description"],
        "parameters": f["parameters"], "defer_loading": true});
    assert_eq!(validate_declaration(&json!([flat]), "/t").unwrap(), vec![flat.clone()]);

    let mut prose = def.clone();
    prose["function"]["description"] = json!("A paraphrase.");
    assert_refused(json!([prose]), "kernel_tool_redefined", "/t/0");

    let mut strict = def.clone();
    strict["function"]["strict"] = json!(true);
    assert_refused(json!([strict]), "kernel_tool_redefined", "/t/0");

    let mut extra = def.clone();
    extra["function"]["parameters"]["minProperties"] = json!(1);
    assert_refused(json!([extra]), "kernel_tool_redefined", "/t/0");

    // Reordered properties: same members, other order.
    let mut reordered = def.clone();
    let props = reordered["function"]["parameters"]["properties"]
        .as_object_mut()
        .unwrap();
    let prompt = props.shift_remove("prompt").unwrap();
    props.insert("prompt".into(), prompt);
    assert_refused(json!([reordered]), "kernel_tool_redefined", "/t/0");

    // The canonical spelling can never pass §3.
    let mut canonical = def.clone();
    canonical["function"]["name"] = json!("nexus.graph.delegate_task");
    assert_refused(json!([canonical]), "kernel_tool_redefined", "/t/0/function/name");
}

#[test]
fn route_rules() {
    let ok = json!({"kind": "runner", "runner_executor_public_id": RUNNER, "tool_name": "read"});
    assert!(validate_declaration(&json!([routed("my_read", ok.clone())]), "/t").is_ok());
    let upper = json!({"kind": "runner", "runner_executor_public_id": RUNNER.to_uppercase(), "tool_name": "read"});
    assert!(validate_declaration(&json!([routed("my_read", upper)]), "/t").is_ok());

    assert_refused(
        json!([routed("r", json!({"kind": "runner", "tool_name": "read"}))]),
        "runner_target_required",
        "/t/0/route/runner_executor_public_id",
    );
    assert_refused(
        json!([routed(
            "r",
            json!({"kind": "runner", "runner_executor_public_id": "nope", "tool_name": "read"})
        )]),
        "invalid_tool_route",
        "/t/0/route/runner_executor_public_id",
    );
    assert_refused(
        json!([routed(
            "r",
            json!({"kind": "runner", "runner_executor_public_id": 7, "tool_name": "read"})
        )]),
        "invalid_tool_route",
        "/t/0/route/runner_executor_public_id",
    );
    assert_refused(
        json!([routed("r", json!("runner"))]),
        "invalid_tool_route",
        "/t/0/route",
    );
    assert_refused(
        json!([routed(
            "r",
            json!({"kind": "mcp", "runner_executor_public_id": RUNNER, "tool_name": "read"})
        )]),
        "invalid_tool_route",
        "/t/0/route/kind",
    );
    for bad in [
        json!(""),
        json!("x".repeat(129)),
        json!("a\0"),
        json!(3),
        json!("wait"),
        json!("nexus.graph.wait"),
        json!("memory_read"),
    ] {
        assert_refused(
            json!([routed(
                "r",
                json!({"kind": "runner", "runner_executor_public_id": RUNNER, "tool_name": bad})
            )]),
            "invalid_tool_route",
            "/t/0/route/tool_name",
        );
    }
    // skill is source-routed: a runner may serve it.
    let skill = json!({"kind": "runner", "runner_executor_public_id": RUNNER, "tool_name": "skill"});
    assert!(validate_declaration(&json!([routed("mac_skill", skill)]), "/t").is_ok());
    // A route on a kernel callable or on an alias.
    let mut k = plain("wait");
    k["route"] = ok.clone();
    assert_refused(json!([k]), "invalid_tool_route", "/t/0/route");
    let mut a = agent();
    a["route"] = ok;
    assert_refused(json!([a]), "invalid_tool_route", "/t/0/route");
}

#[test]
fn refusals_map_to_codes() {
    let e = refuse(json!([func("a"), func("a")]));
    assert_eq!(e.kind, DeclErrorKind::Validation);
    assert_eq!(e.code(), Code::ValidationFailed);
    assert_eq!(e.step_code(), Code::InvalidSteps);
}
