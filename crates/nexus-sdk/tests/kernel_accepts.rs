//! What a pack emits is a declaration the kernel's own validator accepts and renders as the
//! tables of declarations.md §13 intend.

use nexus_core::declaration::{resolve_call, validate_declaration};
use nexus_sdk::Catalog;
use nexus_sdk::adaptations::{self, Row};
use serde_json::{Value, json};

fn catalog() -> Catalog {
    serde_json::from_value(nexus_core::registry::catalog()).expect("the catalog deserializes")
}

fn function<'a>(rendered: &'a [Value], name: &str) -> &'a Value {
    rendered
        .iter()
        .map(|e| &e["function"])
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("{name} is rendered"))
}

#[test]
fn every_style_combination_validates() {
    let catalog = catalog();
    let combos: [&[&str]; 7] = [
        &["nexus"],
        &["claude"],
        &["codex"],
        &["nexus", "claude"],
        &["nexus", "codex"],
        &["claude", "codex"],
        &["nexus", "claude", "codex"],
    ];
    for styles in combos {
        let out = adaptations::apply(&catalog, styles, &[]).unwrap();
        validate_declaration(&Value::Array(out), "/tools").unwrap_or_else(|e| panic!("{styles:?}: {e:?}"));
    }
    for row in Row::all_shipped() {
        let out = row.apply(&catalog).unwrap();
        validate_declaration(&Value::Array(out), "/tools").unwrap_or_else(|e| panic!("row {}: {e:?}", row.row));
    }
}

#[test]
fn the_claude_render_and_call_resolution() {
    let out = adaptations::apply(&catalog(), &["claude"], &[]).unwrap();
    let rendered = validate_declaration(&Value::Array(out), "/tools").unwrap();
    let agent = function(&rendered, "Agent");
    let background = &agent["parameters"]["properties"]["run_in_background"];
    assert_eq!(background["default"], json!(true));
    assert!(
        agent["description"]
            .as_str()
            .unwrap()
            .contains("`run_in_background: false`")
    );
    let skill = function(&rendered, "Skill");
    assert!(skill["parameters"]["properties"].get("skill").is_some());

    let call = resolve_call(&rendered, "Agent", &json!({"prompt": "x", "run_in_background": false}));
    assert_eq!(call.tool_name, "delegate_task");
    assert_eq!(call.tool_input, json!({"prompt": "x", "wait": true}));
    assert_eq!(call.tool_alias.as_deref(), Some("Agent"));
}

#[test]
fn the_codex_render_hides_wait() {
    let out = adaptations::apply(&catalog(), &["codex"], &[]).unwrap();
    let rendered = validate_declaration(&Value::Array(out), "/tools").unwrap();
    let spawn = function(&rendered, "spawn_agent");
    assert!(spawn["parameters"]["properties"].get("wait").is_none());
    let call = resolve_call(&rendered, "send_message", &json!({"target": "c1", "message": "hi"}));
    assert_eq!(call.tool_name, "send");
    assert_eq!(call.tool_input, json!({"message": "hi", "to": "c1"}));
}
