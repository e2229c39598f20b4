use serde_json::{Value, json};

use super::{agent, func, plain};
use crate::declaration::{ApprovalMode, DeclErrorKind, validate_configuration};

fn refused(config: Value) -> (&'static str, String) {
    let e = validate_configuration(&config).unwrap_err();
    (e.reason, e.path)
}

#[test]
fn an_empty_configuration_reads_back_with_every_field() {
    let c = validate_configuration(&json!({})).unwrap();
    assert_eq!(
        c.to_stored_json(),
        json!({"tool_definitions": [], "kernel_tools": null, "runner_executor_public_ids": null,
            "runner_tool_names": null, "approval_mode": null, "approval_rules": null,
            "default_model": null, "instructions": null})
    );
    assert!(validate_configuration(&json!([])).is_err());
}

#[test]
fn tool_definitions_are_stored_rendered_and_sorted() {
    let c = validate_configuration(
        &json!({"tool_definitions": [plain("wait"), agent(), func("a")], "approval_mode": "ask"}),
    )
    .unwrap();
    let names: Vec<&str> = c
        .tool_definitions
        .iter()
        .filter_map(crate::declaration::callable_of)
        .collect();
    assert_eq!(names, ["Agent", "a", "wait"]);
    assert_eq!(c.tool_definitions[0]["canonical"], json!("nexus.graph.delegate_task"));
    assert_eq!(c.approval_mode, Some(ApprovalMode::Ask));
    let again = validate_configuration(&c.to_stored_json()).unwrap();
    assert_eq!(again.to_stored_json(), c.to_stored_json());
}

#[test]
fn approval_mode_is_required_when_tools_are_declared() {
    let path = "/configuration/approval_mode".to_string();
    assert_eq!(
        refused(json!({"tool_definitions": [func("a")]})),
        ("approval_mode_required", path.clone())
    );
    assert_eq!(
        refused(json!({"kernel_tools": ["nexus.graph.wait"]})),
        ("approval_mode_required", path.clone())
    );
    let ids = json!(["0190a000-0000-7000-8000-000000000001"]);
    assert_eq!(
        refused(json!({"runner_executor_public_ids": ids})),
        ("approval_mode_required", path.clone())
    );
    assert_eq!(
        refused(json!({"runner_executor_public_ids": ids, "runner_tool_names": ["read"]})),
        ("approval_mode_required", path.clone())
    );
    assert!(validate_configuration(&json!({"runner_executor_public_ids": ids, "runner_tool_names": []})).is_ok());
    assert!(validate_configuration(&json!({"kernel_tools": []})).is_ok());
    assert_eq!(
        refused(json!({"approval_mode": "sometimes"})),
        ("invalid", path.clone())
    );
    assert_eq!(refused(json!({"approval_mode": 1})), ("invalid", path));
    for mode in ["bypass", "ask", "rules"] {
        let c = validate_configuration(&json!({"tool_definitions": [func("a")], "approval_mode": mode})).unwrap();
        assert_eq!(c.to_stored_json()["approval_mode"], json!(mode));
    }
}

#[test]
fn import_fields_are_normalized() {
    let c = validate_configuration(&json!({
        "runner_executor_public_ids": ["0190A000-0000-7000-8000-00000000000B"], "runner_tool_names": [],
        "kernel_tools": []}))
    .unwrap();
    let s = c.to_stored_json();
    assert_eq!(
        s["runner_executor_public_ids"],
        json!(["0190a000-0000-7000-8000-00000000000b"])
    );
    assert_eq!(s["runner_tool_names"], json!([]));
    assert_eq!(s["kernel_tools"], json!([]));
    assert_eq!(
        refused(json!({"kernel_tools": ["wait"]})),
        ("invalid", "/configuration/kernel_tools/0".into())
    );
}

#[test]
fn declaration_words_point_under_the_configuration() {
    let mut bad = agent();
    bad["params"]["run_in_background"]["invert"] = json!("yes");
    assert_eq!(
        refused(json!({"tool_definitions": [bad], "approval_mode": "ask"})),
        (
            "invalid",
            "/configuration/tool_definitions/0/params/run_in_background/invert".into()
        )
    );
    let big = json!({"type": "function", "name": "a", "description": "x".repeat(1_100_000), "parameters": {}});
    let e = validate_configuration(&json!({"tool_definitions": [big], "approval_mode": "ask"})).unwrap_err();
    assert_eq!(e.kind, DeclErrorKind::TooLarge);
}

#[test]
fn approval_rules_words_are_the_reason() {
    assert_eq!(
        refused(json!({"approval_rules": {}})),
        ("not_a_list", "/configuration/approval_rules".into())
    );
    assert_eq!(
        refused(json!({"approval_rules": [{"tool": "*", "verdict": "maybe"}]})),
        ("verdict_invalid", "/configuration/approval_rules/0/verdict".into())
    );
    let rules = json!([{"tool": "read|grep", "verdict": "allow"}]);
    let c = validate_configuration(&json!({"approval_rules": rules})).unwrap();
    assert_eq!(c.to_stored_json()["approval_rules"], rules);
    assert_eq!(c.approval_rules.unwrap().len(), 1);
}

#[test]
fn default_model_grammar() {
    assert!(validate_configuration(&json!({"default_model": "anthropic/claude-sonnet-4-5"})).is_ok());
    assert_eq!(
        refused(json!({"default_model": "claude"})),
        ("unknown_provider", "/configuration/default_model".into())
    );
    assert_eq!(
        refused(json!({"default_model": "/claude"})),
        ("unknown_provider", "/configuration/default_model".into())
    );
    assert_eq!(
        refused(json!({"default_model": "anthropic/"})),
        ("unknown_model", "/configuration/default_model".into())
    );
    assert_eq!(
        refused(json!({"default_model": 3})),
        ("invalid", "/configuration/default_model".into())
    );
}

#[test]
fn instructions_are_bounded() {
    let ok = "x".repeat(crate::bounds::INSTRUCTIONS);
    assert!(validate_configuration(&json!({"instructions": ok})).is_ok());
    let path = "/configuration/instructions".to_string();
    assert_eq!(
        refused(json!({"instructions": format!("{ok}x")})),
        ("invalid", path.clone())
    );
    assert_eq!(refused(json!({"instructions": "a\0b"})), ("invalid", path.clone()));
    assert_eq!(refused(json!({"instructions": ["x"]})), ("invalid", path));
}
