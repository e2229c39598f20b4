use std::collections::HashMap;

use serde_json::{Value, json};

use super::{agent, assert_refused, bytes, func, plain, render};
use crate::declaration::validate_declaration;
use crate::registry::{self, render::render_text};

fn prop_names(entry: &Value) -> Vec<String> {
    entry["function"]["parameters"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[test]
fn agent_renders_run_in_background_at_waits_position_with_default_true() {
    let out = render(&[agent()]);
    let e = &out[0];
    let kernel = registry::resolve_wire("delegate_task").unwrap();
    let wait_at = kernel.parameter_names().iter().position(|p| p == "wait").unwrap();
    let names = prop_names(e);
    assert_eq!(names[wait_at], "run_in_background");
    assert!(!names.contains(&"wait".to_string()));
    let p = &e["function"]["parameters"]["properties"]["run_in_background"];
    assert_eq!(p["default"], json!(true));
    assert_eq!(p["type"], json!("boolean"));
    assert_eq!(
        p["description"],
        json!("false: block until the branch finishes and return its final message.")
    );
    // Other schema keys are preserved, and required is kept.
    assert_eq!(e["function"]["parameters"]["additionalProperties"], json!(false));
    assert_eq!(e["function"]["parameters"]["required"], json!(["prompt"]));
    // The rendered shape and key order.
    let keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["type", "function", "canonical", "params"]);
    let fkeys: Vec<&str> = e["function"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(fkeys, ["name", "description", "parameters"]);
    assert_eq!(e["function"]["name"], json!("Agent"));
    assert_eq!(
        e["function"]["description"],
        json!(kernel.description(&crate::registry::Identity))
    );
}

#[test]
fn other_kernel_texts_spell_delegate_task_as_agent() {
    let m: HashMap<String, String> = [("delegate_task".to_string(), "Agent".to_string())].into();
    let mut checked = 0;
    for tool in registry::entries().iter().filter(|t| t.wire != "delegate_task") {
        let out = render(&[agent(), plain(tool.wire)]);
        let e = &out[1];
        assert_eq!(
            e["function"]["description"],
            json!(render_text(tool.template, &m)),
            "{}",
            tool.wire
        );
        assert_eq!(
            e["function"]["parameters"],
            tool.rendered_parameters(&m),
            "{}",
            tool.wire
        );
        if tool.template.contains("{{delegate_task}}") {
            assert!(e["function"]["description"].as_str().unwrap().contains("Agent"));
            checked += 1;
        }
    }
    // The same entry in a set without the alias is stored exactly as the catalog serves it.
    assert_eq!(render(&[plain("wait")]), vec![plain("wait")]);
    let _ = checked;
}

#[test]
fn an_alias_description_spells_its_own_canonical_as_itself() {
    let mut a = agent();
    a["description"] = json!("Use {{delegate_task}} or {{wait}}; {{nothing}} {{ wait }}.");
    let out = render(&[a]);
    assert_eq!(
        out[0]["function"]["description"],
        json!("Use Agent or wait; nothing {{ wait }}.")
    );
    assert_eq!(
        out[0]["description"],
        json!("Use {{delegate_task}} or {{wait}}; {{nothing}} {{ wait }}.")
    );
}

#[test]
fn a_set_without_aliases_is_stored_as_given() {
    let f = &plain("skill")["function"];
    let flat =
        json!({"name": f["name"], "type": "function", "description": f["description"], "parameters": f["parameters"]});
    let set = vec![func("z"), flat.clone(), json!({"type": "web_search"})];
    assert_eq!(render(&set), set);
}

#[test]
fn plain_entries_in_an_alias_set_are_rerendered_nested_keeping_defer_loading() {
    let f = &plain("wait")["function"];
    let flat = json!({"defer_loading": true, "type": "function", "name": "wait", "description": f["description"], "parameters": f["parameters"]});
    let out = render(&[agent(), flat]);
    let keys: Vec<&str> = out[1].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["type", "function", "defer_loading"]);
    assert_eq!(out[1]["defer_loading"], json!(true));
    // Routed, function and shape-5 entries are untouched.
    let other = vec![agent(), func("x"), json!({"type": "web_search", "name": "ws"})];
    assert_eq!(&render(&other)[1..], &other[1..]);
}

#[test]
fn omit_removes_and_filters_required() {
    let a = json!({"name": "spawn_agent", "canonical": "nexus.conversation.spawn", "omit": ["wait"]});
    let out = render(&[a]);
    assert!(!prop_names(&out[0]).contains(&"wait".to_string()));
    assert_eq!(out[0]["omit"], json!(["wait"]));
    let b = json!({"name": "D", "canonical": "delegate_task", "omit": ["prompt"]});
    let out = render(&[b]);
    assert!(out[0]["function"]["parameters"].get("required").is_none());
}

#[test]
fn mapped_parameters_are_renamed_in_place_and_in_required() {
    let a = json!({"name": "Skill", "canonical": "nexus.skill.load",
        "params": {"skill": {"maps_to": "name", "description": "Name of the skill to load."}}});
    let out = render(&[a]);
    let params = &out[0]["function"]["parameters"];
    assert_eq!(params["required"], json!(["skill"]));
    assert_eq!(
        params["properties"]["skill"]["description"],
        json!("Name of the skill to load.")
    );
    assert_eq!(params["properties"]["skill"]["type"], json!("string"));
    // A non-inverted mapping without a description keeps the kernel's.
    let b = json!({"name": "S2", "canonical": "skill", "params": {"n": {"maps_to": "name"}}});
    let kernel = registry::resolve_wire("skill").unwrap().parameter_schema();
    let out = render(&[b]);
    assert_eq!(
        out[0]["function"]["parameters"]["properties"]["n"],
        kernel["properties"]["name"]
    );
}

#[test]
fn the_spelling_map_prefers_plain_then_the_byte_first_alias() {
    let b = json!({"name": "b_agent", "canonical": "delegate_task"});
    let big = json!({"name": "Zed", "canonical": "delegate_task"});
    let m = crate::declaration::spelling_map_of(&render(&[b.clone(), big.clone()]));
    assert_eq!(m.get("delegate_task").map(String::as_str), Some("Zed"));
    let m = crate::declaration::spelling_map_of(&render(&[b, big, plain("delegate_task")]));
    assert!(m.is_empty());
    let identity = json!({"name": "skill", "canonical": "nexus.skill.load"});
    assert!(crate::declaration::spelling_map_of(&render(&[identity])).is_empty());
}

#[test]
fn blank_facts_are_dropped_and_empty_maps_too() {
    let a =
        json!({"name": "A", "canonical": "ask", "description": " ", "params": {}, "omit": [], "defer_loading": false});
    let out = render(&[a]);
    let keys: Vec<&str> = out[0].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["type", "function", "canonical", "defer_loading"]);
}

#[test]
fn render_is_idempotent_and_rendered_plain_entries_pass_only_with_their_alias() {
    let set = vec![agent(), plain("wait"), plain("skill"), func("x")];
    let once = render(&set);
    let twice = render(&once);
    assert_eq!(bytes(&once), bytes(&twice));
    // The re-rendered `wait` is accepted next to the alias, and refused without it when its
    // bytes differ from the catalog's.
    let wait = once[1].clone();
    if bytes(&wait) != bytes(&plain("wait")) {
        assert_refused(json!([wait]), "kernel_tool_redefined", "/t/0");
    }
    assert!(validate_declaration(&Value::Array(once), "/t").is_ok());
}

#[test]
fn the_cached_render_equals_the_registry_render() {
    let m: HashMap<String, String> = [
        ("delegate_task".to_string(), "Agent".to_string()),
        ("wait".to_string(), "Wait".to_string()),
    ]
    .into();
    for tool in registry::entries() {
        let ours = crate::declaration::render::plain_entry(tool, &m, None);
        assert_eq!(bytes(&ours), bytes(&tool.definition_with(&m)), "{}", tool.wire);
        let empty = HashMap::new();
        assert_eq!(
            bytes(&crate::declaration::render::plain_entry(tool, &empty, None)),
            bytes(tool.definition())
        );
    }
}
