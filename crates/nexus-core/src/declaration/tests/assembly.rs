use serde_json::{Value, json};
use uuid::Uuid;

use super::{agent, bytes, func, plain};
use crate::codes::Code;
use crate::declaration::{AssemblyInput, DeclErrorKind, RunnerFacts, assemble, callable_of};

fn id(n: u8) -> Uuid {
    Uuid::parse_str(&format!("0190a000-0000-7000-8000-0000000000{n:02x}")).unwrap()
}

fn announcement(name: &str) -> Value {
    json!({"name": name, "effect_profile": {}, "description": format!("{name} things"),
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}})
}

fn runner(n: u8, tools: &[&str]) -> RunnerFacts {
    RunnerFacts {
        public_id: id(n),
        display_name: format!("runner-{n}"),
        eligible: true,
        served_tools: Value::Array(tools.iter().map(|t| announcement(t)).collect()),
        environment: json!({"os": format!("os{n}")}),
        documents: json!([{"name": "release-notes", "description": "Drafts release notes."}]),
    }
}

fn importing(n: u8, tools: &[&str]) -> AssemblyInput {
    AssemblyInput {
        runner_executor_public_ids: json!([id(n).to_string()]),
        default_runner_executor_public_id: Some(id(n)),
        runners: vec![runner(n, tools)],
        ..AssemblyInput::default()
    }
}

fn callables(a: &crate::declaration::Assembly) -> Vec<&str> {
    a.tool_definitions.iter().filter_map(callable_of).collect()
}

#[test]
fn imports_every_model_describable_tool_routed_and_deferred() {
    let mut input = importing(1, &["read", "grep"]);
    let mut op = announcement("restart");
    op.as_object_mut().unwrap().shift_remove("input_schema");
    input.runners[0].served_tools.as_array_mut().unwrap().push(op);
    let a = assemble(&input).unwrap();
    assert_eq!(callables(&a), ["grep", "read"]);
    let read = &a.tool_definitions[1];
    assert_eq!(
        read["route"],
        json!({"kind": "runner", "runner_executor_public_id": id(1).to_string(), "tool_name": "read"})
    );
    assert_eq!(read["defer_loading"], json!(true));
    assert_eq!(read["function"]["parameters"], announcement("read")["input_schema"]);
    let keys: Vec<&str> = read.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["type", "function", "route", "defer_loading"]);
    assert_eq!(
        a.environment,
        json!({"default_runner_executor_public_id": id(1).to_string(),
            "executors": [{"runner_executor_public_id": id(1).to_string(), "display_name": "runner-1", "environment": {"os": "os1"}}],
            "runner_candidates": [{"runner_executor_public_id": id(1).to_string(), "display_name": "runner-1", "environment": {"os": "os1"}}]})
    );
    let body = a.to_response_json();
    let keys: Vec<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["tool_definitions", "environment", "skills"]);
}

#[test]
fn the_allowlist_filters_and_empty_imports_none() {
    let mut input = importing(1, &["read", "grep"]);
    input.runner_tool_names = json!(["read", "missing"]);
    assert_eq!(callables(&assemble(&input).unwrap()), ["read"]);
    input.runner_tool_names = json!([]);
    assert!(assemble(&input).unwrap().tool_definitions.is_empty());
    // No selected runner: candidates contribute no tools.
    let mut input = importing(1, &["read"]);
    input.default_runner_executor_public_id = None;
    let a = assemble(&input).unwrap();
    assert!(a.tool_definitions.is_empty());
    assert_eq!(a.environment["default_runner_executor_public_id"], Value::Null);
    assert_eq!(a.environment["runner_candidates"].as_array().unwrap().len(), 1);
}

#[test]
fn collisions_are_renamed_and_memory_names_may_be_imported() {
    let mut input = importing(1, &["read", "memory_read", "skill"]);
    input.entries = json!([func("read")]);
    let a = assemble(&input).unwrap();
    let names = callables(&a);
    assert!(names.contains(&"read"));
    assert!(
        names.iter().any(|n| n.starts_with("read__") && n.len() == 18),
        "{names:?}"
    );
    let mem = a
        .tool_definitions
        .iter()
        .find(|e| callable_of(e).unwrap().starts_with("memory_read__"))
        .unwrap();
    assert_eq!(mem["route"]["tool_name"], json!("memory_read"));
    // An explicit entry routing to a memory name is still refused.
    let mut explicit = func("m");
    explicit["route"] =
        json!({"kind": "runner", "runner_executor_public_id": id(1).to_string(), "tool_name": "memory_read"});
    let mut input = importing(1, &["memory_read"]);
    input.entries = json!([explicit]);
    let e = assemble(&input).unwrap_err();
    assert_eq!(
        (e.reason, e.path.as_str()),
        (
            "invalid_tool_route",
            "/configuration/tool_definitions/0/route/tool_name"
        )
    );
}

#[test]
fn kernel_tools_add_catalog_definitions_unless_explicit() {
    let input = AssemblyInput {
        entries: json!([agent()]),
        kernel_tools: json!(["nexus.graph.wait", "nexus.graph.delegate_task"]),
        ..AssemblyInput::default()
    };
    let a = assemble(&input).unwrap();
    assert_eq!(callables(&a), ["Agent", "delegate_task", "wait"]);
    // `wait` is explicit: kernel_tools adds no second one.
    let input = AssemblyInput {
        entries: json!([plain("wait")]),
        kernel_tools: json!(["nexus.graph.wait"]),
        ..AssemblyInput::default()
    };
    assert_eq!(callables(&assemble(&input).unwrap()), ["wait"]);
    let bad = AssemblyInput {
        kernel_tools: json!(["wait"]),
        ..AssemblyInput::default()
    };
    let e = assemble(&bad).unwrap_err();
    assert_eq!(
        (e.reason, e.path.as_str()),
        ("invalid", "/configuration/kernel_tools/0")
    );
}

#[test]
fn a_stored_rendered_profile_assembles_again() {
    let input = AssemblyInput {
        entries: json!([agent(), plain("wait")]),
        ..AssemblyInput::default()
    };
    let first = assemble(&input).unwrap();
    let again = AssemblyInput {
        entries: Value::Array(first.tool_definitions.clone()),
        kernel_tools: json!(["nexus.skill.load"]),
        ..AssemblyInput::default()
    };
    let second = assemble(&again).unwrap();
    assert_eq!(callables(&second), ["Agent", "skill", "wait"]);
    assert_eq!(bytes(&second.tool_definitions[0]), bytes(&first.tool_definitions[0]));
}

#[test]
fn step_2_runner_not_declared_and_not_eligible() {
    let mut input = importing(1, &["read"]);
    input.default_runner_executor_public_id = Some(id(2));
    input.runners.push(runner(2, &[]));
    let e = assemble(&input).unwrap_err();
    assert_eq!(
        (e.kind, e.code()),
        (DeclErrorKind::RunnerNotDeclared, Code::RunnerNotDeclared)
    );
    // Not importing ([] allowlist): S need not be a candidate.
    input.runner_tool_names = json!([]);
    assert!(assemble(&input).is_ok());
    input.runners[1].eligible = false;
    let e = assemble(&input).unwrap_err();
    assert_eq!(
        (e.kind, e.reason),
        (DeclErrorKind::RunnerNotEligible, "runner_not_eligible")
    );
    // A runner with no facts is not eligible.
    let input = AssemblyInput {
        default_runner_executor_public_id: Some(id(9)),
        ..AssemblyInput::default()
    };
    assert_eq!(assemble(&input).unwrap_err().kind, DeclErrorKind::RunnerNotEligible);
}

#[test]
fn step_8_routes_need_eligible_serving_runners() {
    let mut routed = func("build");
    routed["route"] = json!({"kind": "runner", "runner_executor_public_id": id(3).to_string(), "tool_name": "make"});
    let mut input = AssemblyInput {
        entries: json!([routed]),
        runners: vec![runner(3, &["make"])],
        ..AssemblyInput::default()
    };
    let a = assemble(&input).unwrap();
    assert_eq!(
        a.environment["executors"][0]["runner_executor_public_id"],
        json!(id(3).to_string())
    );
    input.runners[0].served_tools = json!([]);
    let e = assemble(&input).unwrap_err();
    assert_eq!(
        (e.kind, e.code(), e.detail.as_deref()),
        (DeclErrorKind::ToolNotServed, Code::ToolNotServed, Some("make"))
    );
    input.runners[0].eligible = false;
    assert_eq!(assemble(&input).unwrap_err().kind, DeclErrorKind::RunnerNotEligible);
    input.runners.clear();
    assert_eq!(assemble(&input).unwrap_err().kind, DeclErrorKind::RunnerNotEligible);
}

#[test]
fn executors_list_the_selected_runner_then_routed_runners() {
    let mut routed = func("build");
    routed["route"] = json!({"kind": "runner", "runner_executor_public_id": id(3).to_string(), "tool_name": "make"});
    let mut input = importing(1, &["read"]);
    input.entries = json!([routed]);
    input.runners.push(runner(3, &["make"]));
    let mut ineligible = runner(4, &[]);
    ineligible.eligible = false;
    input.runners.push(ineligible);
    input.runner_executor_public_ids = json!([id(1).to_string(), id(4).to_string(), id(3).to_string()]);
    let a = assemble(&input).unwrap();
    let ids = |k: &str| -> Vec<String> {
        a.environment[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["runner_executor_public_id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids("executors"), [id(1).to_string(), id(3).to_string()]);
    assert_eq!(ids("runner_candidates"), [id(1).to_string(), id(3).to_string()]);
}

#[test]
fn step_6_narrowing() {
    let input = AssemblyInput {
        entries: json!([agent(), plain("wait"), func("x")]),
        tool_names: Some(vec!["wait".into(), "x".into()]),
        ..AssemblyInput::default()
    };
    let a = assemble(&input).unwrap();
    assert_eq!(callables(&a), ["wait", "x"]);
    // Without the alias, `wait` is the catalog definition again.
    assert_eq!(bytes(&a.tool_definitions[0]), bytes(&plain("wait")));
    let missing = AssemblyInput {
        tool_names: Some(vec!["x".into(), "nope".into()]),
        ..input.clone()
    };
    let e = assemble(&missing).unwrap_err();
    assert_eq!(
        (e.kind, e.code()),
        (DeclErrorKind::ToolNotDeclared, Code::ToolNotDeclared)
    );
    assert_eq!((e.detail.as_deref(), e.path.as_str()), (Some("nope"), "/tool_names/1"));
    let none = AssemblyInput {
        tool_names: Some(vec![]),
        ..input
    };
    assert!(assemble(&none).unwrap().tool_definitions.is_empty());
}

#[test]
fn the_skill_catalog_follows_source_precedence() {
    let mut mac = func("mac_skill");
    mac["route"] = json!({"kind": "runner", "runner_executor_public_id": id(1).to_string(), "tool_name": "skill"});
    let input = AssemblyInput {
        entries: json!([mac, plain("skill")]),
        runners: vec![runner(1, &["skill"])],
        agent_application_executor_public_id: Some(id(7)),
        agent_application_documents: vec![("style-guide".into(), "House rules.".into())],
        workspace_skills: vec![
            ("style-guide".into(), "Shadowed.".into()),
            ("deploy".into(), "Ships it.".into()),
        ],
        user_skills: vec![("deploy".into(), "Shadowed.".into()), ("notes".into(), "Mine.".into())],
        ..AssemblyInput::default()
    };
    let a = assemble(&input).unwrap();
    assert_eq!(
        Value::Array(a.skills.clone()),
        json!([
            {"callable": "mac_skill", "name": "release-notes", "description": "Drafts release notes.", "source": "runner", "executor_public_id": id(1).to_string()},
            {"callable": "skill", "name": "style-guide", "description": "House rules.", "source": "agent_application", "executor_public_id": id(7).to_string()},
            {"callable": "skill", "name": "deploy", "description": "Ships it.", "source": "workspace"},
            {"callable": "skill", "name": "notes", "description": "Mine.", "source": "user"}
        ])
    );
}

#[test]
fn grammar_refusals_point_into_the_configuration() {
    let input = AssemblyInput {
        entries: json!([agent(), agent()]),
        ..AssemblyInput::default()
    };
    let e = assemble(&input).unwrap_err();
    assert_eq!(
        (e.reason, e.path.as_str()),
        ("duplicate_tool_name", "/configuration/tool_definitions/1")
    );
    let input = AssemblyInput {
        runner_executor_public_ids: json!(["x"]),
        ..AssemblyInput::default()
    };
    assert_eq!(
        assemble(&input).unwrap_err().path,
        "/configuration/runner_executor_public_ids/0"
    );
    let input = AssemblyInput {
        runner_tool_names: json!([""]),
        ..AssemblyInput::default()
    };
    assert_eq!(assemble(&input).unwrap_err().path, "/configuration/runner_tool_names/0");
    let input = AssemblyInput {
        entries: json!({}),
        ..AssemblyInput::default()
    };
    assert_eq!(assemble(&input).unwrap_err().path, "/configuration/tool_definitions");
}

#[test]
fn the_contract_fixture_shows_the_imported_read() {
    let pack: Value = serde_json::from_str(&crate::contracts::tools_pack()).unwrap();
    let fixture = &pack["valid_assembly_fixture"];
    let read = &fixture["tool_definitions"][0];
    assert_eq!(read["function"]["name"], json!("read"));
    assert_eq!(read["route"]["tool_name"], json!("read"));
    assert_eq!(read["defer_loading"], json!(true));
    assert_eq!(
        fixture["environment"]["executors"][0]["environment"],
        json!({"os": "macos"})
    );
    assert_eq!(
        fixture["environment"]["executors"][0]["display_name"],
        json!("build-mac")
    );
}

#[test]
fn kernel_tools_can_change_the_spelling_of_stored_entries() {
    // Stored under {delegate_task → Agent}; kernel_tools then declares delegate_task plainly,
    // so every other text reads delegate_task again.
    let stored = super::render(&[agent(), plain("wait")]);
    let input = AssemblyInput {
        entries: Value::Array(stored),
        kernel_tools: json!(["nexus.graph.delegate_task"]),
        ..AssemblyInput::default()
    };
    let a = assemble(&input).unwrap();
    let wait = a
        .tool_definitions
        .iter()
        .find(|e| callable_of(e) == Some("wait"))
        .unwrap();
    assert_eq!(bytes(wait), bytes(&plain("wait")));
}
