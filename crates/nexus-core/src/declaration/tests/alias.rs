use serde_json::{Value, json};

use super::{agent, assert_refused, plain, render};

fn with(mut base: Value, key: &str, value: Value) -> Value {
    base[key] = value;
    base
}

#[test]
fn row_2_defer_loading() {
    assert_refused(
        json!([with(agent(), "defer_loading", json!(1))]),
        "invalid",
        "/t/0/defer_loading",
    );
}

#[test]
fn row_3_name() {
    assert_refused(json!([with(agent(), "name", json!(""))]), "invalid", "/t/0/name");
    assert_refused(
        json!([with(agent(), "name", json!("x".repeat(129)))]),
        "invalid",
        "/t/0/name",
    );
    assert_refused(json!([with(agent(), "name", json!("A\0"))]), "invalid", "/t/0/name");
    let mut nested = agent();
    nested.as_object_mut().unwrap().shift_remove("name");
    nested["function"] = json!({"name": ""});
    assert_refused(json!([nested.clone()]), "invalid", "/t/0/function/name");
    nested["function"] = json!({"name": "Agent"});
    assert!(crate::declaration::validate_declaration(&json!([nested]), "/t").is_ok());
}

#[test]
fn row_4_canonical_unknown() {
    assert_refused(
        json!([with(agent(), "canonical", json!("nexus.graph.nope"))]),
        "alias_canonical_unknown",
        "/t/0/canonical",
    );
    assert_refused(
        json!([with(agent(), "canonical", json!("read_file"))]),
        "alias_canonical_unknown",
        "/t/0/canonical",
    );
    assert_refused(
        json!([with(agent(), "canonical", json!(5))]),
        "alias_canonical_unknown",
        "/t/0/canonical",
    );
    // Wire spelling resolves too.
    assert!(
        crate::declaration::validate_declaration(&json!([with(agent(), "canonical", json!("delegate_task"))]), "/t")
            .is_ok()
    );
}

#[test]
fn row_5_kernel_spellings_are_never_repointed() {
    assert_refused(
        json!([with(agent(), "name", json!("wait"))]),
        "alias_name_reserved",
        "/t/0/name",
    );
    assert_refused(
        json!([with(agent(), "name", json!("nexus.graph.wait"))]),
        "alias_name_reserved",
        "/t/0/name",
    );
    // Identity aliases are valid, in either spelling.
    let identity = json!({"name": "skill", "canonical": "nexus.skill.load"});
    assert!(crate::declaration::validate_declaration(&json!([identity]), "/t").is_ok());
    let canonical = json!({"name": "nexus.skill.load", "canonical": "skill"});
    assert!(crate::declaration::validate_declaration(&json!([canonical]), "/t").is_ok());
}

#[test]
fn row_6_description() {
    assert_refused(
        json!([with(agent(), "description", json!(["x"]))]),
        "invalid",
        "/t/0/description",
    );
    assert_refused(
        json!([with(agent(), "description", Value::Null)]),
        "invalid",
        "/t/0/description",
    );
}

#[test]
fn row_7_omit() {
    assert_refused(json!([with(agent(), "omit", json!("model"))]), "invalid", "/t/0/omit");
    assert_refused(
        json!([with(agent(), "omit", json!(["model", 3]))]),
        "invalid",
        "/t/0/omit/1",
    );
    assert_refused(
        json!([with(agent(), "omit", json!(["model", "colour"]))]),
        "alias_param_unknown",
        "/t/0/omit/1",
    );
}

#[test]
fn row_8_params() {
    let a = |params: Value| with(agent(), "params", params);
    assert_refused(json!([a(json!([]))]), "alias_param_unknown", "/t/0/params");
    assert_refused(json!([a(json!({"x": "wait"}))]), "alias_param_unknown", "/t/0/params/x");
    assert_refused(
        json!([a(json!({"x": {"maps_to": "colour"}}))]),
        "alias_param_unknown",
        "/t/0/params/x/maps_to",
    );
    assert_refused(
        json!([a(json!({"x": {}}))]),
        "alias_param_unknown",
        "/t/0/params/x/maps_to",
    );
    assert_refused(
        json!([a(json!({"x": {"maps_to": "model", "default": 1}}))]),
        "alias_param_unknown",
        "/t/0/params/x/default",
    );
    assert_refused(
        json!([a(json!({"x": {"maps_to": "model"}, "y": {"maps_to": "model"}}))]),
        "alias_param_unknown",
        "/t/0/params/y/maps_to",
    );
    let omitted = with(a(json!({"x": {"maps_to": "model"}})), "omit", json!(["model"]));
    assert_refused(json!([omitted]), "alias_param_unknown", "/t/0/params/x/maps_to");
    // Shadowing: `wait` stays unmapped, so no alias parameter may be called `wait`.
    assert_refused(
        json!([a(json!({"wait": {"maps_to": "model"}}))]),
        "alias_param_unknown",
        "/t/0/params/wait",
    );
    // Swaps and identity mappings do not shadow.
    assert!(
        crate::declaration::validate_declaration(
            &json!([a(json!({"model": {"maps_to": "tools"}, "tools": {"maps_to": "model"}}))]),
            "/t"
        )
        .is_ok()
    );
    assert!(crate::declaration::validate_declaration(&json!([a(json!({"wait": {"maps_to": "wait"}}))]), "/t").is_ok());
}

#[test]
fn row_9_param_types() {
    let a = |spec: Value| with(agent(), "params", json!({"x": spec}));
    assert_refused(
        json!([a(json!({"maps_to": "wait", "invert": "yes", "description": "d"}))]),
        "invalid",
        "/t/0/params/x/invert",
    );
    assert_refused(
        json!([a(json!({"maps_to": "model", "description": 4}))]),
        "invalid",
        "/t/0/params/x/description",
    );
}

#[test]
fn row_10_invert_needs_boolean() {
    let a = with(
        agent(),
        "params",
        json!({"x": {"maps_to": "prompt", "invert": true, "description": "d"}}),
    );
    assert_refused(json!([a]), "alias_invert_needs_boolean", "/t/0/params/x/invert");
}

#[test]
fn row_11_invert_needs_description() {
    let a = with(agent(), "params", json!({"x": {"maps_to": "wait", "invert": true}}));
    assert_refused(
        json!([a]),
        "alias_param_description_required",
        "/t/0/params/x/description",
    );
    let blank = with(
        agent(),
        "params",
        json!({"x": {"maps_to": "wait", "invert": true, "description": "  "}}),
    );
    assert_refused(
        json!([blank]),
        "alias_param_description_required",
        "/t/0/params/x/description",
    );
}

#[test]
fn row_12_a_riding_function_block_must_be_the_render() {
    let rendered = render(&[agent()]).remove(0);
    assert!(crate::declaration::validate_declaration(&json!([rendered.clone()]), "/t").is_ok());
    let mut edited = rendered.clone();
    edited["function"]["description"] = json!("Start a helper.");
    assert_refused(json!([edited]), "kernel_tool_redefined", "/t/0/function");
    let mut strict = rendered;
    strict["function"]["strict"] = json!(true);
    assert_refused(json!([strict]), "kernel_tool_redefined", "/t/0/function");
}

#[test]
fn first_failure_wins_in_table_order() {
    // Rows 2 and 4 both fail: row 2 is reported.
    let a = with(with(agent(), "defer_loading", json!("x")), "canonical", json!("nope"));
    assert_refused(json!([a]), "invalid", "/t/0/defer_loading");
    // Rows 4 and 8 both fail: row 4 is reported.
    let b = with(with(agent(), "canonical", json!("nope")), "params", json!([]));
    assert_refused(json!([b]), "alias_canonical_unknown", "/t/0/canonical");
    // Row 1 beats everything, across the whole set.
    let c = with(agent(), "canonical", json!("nope"));
    assert_refused(json!([c.clone(), c]), "duplicate_tool_name", "/t/1");
    // Rows 10 and 11: 10 first.
    let d = with(agent(), "params", json!({"x": {"maps_to": "prompt", "invert": true}}));
    assert_refused(json!([d]), "alias_invert_needs_boolean", "/t/0/params/x/invert");
}

#[test]
fn unknown_alias_keys_are_refused() {
    assert_refused(json!([with(agent(), "colour", json!(1))]), "invalid", "/t/0/colour");
    let _ = plain("wait");
}
