use serde_json::{Value, json};

use super::{agent, func, plain, render};
use crate::declaration::{project, project_deferred};

fn deferred(mut e: Value) -> Value {
    e["defer_loading"] = json!(true);
    e
}

fn names(p: &[Value]) -> Vec<String> {
    p.iter()
        .map(|e| {
            e["function"]["name"]
                .as_str()
                .or(e["name"].as_str())
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

#[test]
fn entries_project_nested_with_strict_false_last() {
    let flat = json!({"type": "function", "name": "f", "description": "d", "parameters": {}, "defer_loading": false});
    let mut strict = func("s");
    strict["function"]["strict"] = json!(true);
    let mut routed = func("r");
    routed["route"] = json!({"kind": "runner", "runner_executor_public_id": "0190a000-0000-7000-8000-000000000001", "tool_name": "x"});
    let shape5 = json!({"type": "web_search_20250305", "name": "web_search"});
    let out = project(&[flat, strict, routed, shape5.clone()], &[]);
    assert_eq!(
        out[0],
        json!({"type": "function", "function": {"name": "f", "description": "d", "parameters": {}, "strict": false}})
    );
    let keys: Vec<&str> = out[0]["function"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["name", "description", "parameters", "strict"]);
    assert_eq!(out[1]["function"]["strict"], json!(true));
    assert!(out[2].get("route").is_none());
    assert_eq!(out[2]["function"]["strict"], json!(false));
    assert_eq!(out[3], shape5);
}

#[test]
fn aliases_drop_their_resolution_facts() {
    let stored = render(&[deferred(agent())]);
    let out = project(&stored, &[]);
    let keys: Vec<&str> = out[0].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["type", "function"]);
    assert_eq!(out[0]["function"]["name"], json!("Agent"));
    assert_eq!(out[0]["function"]["parameters"], stored[0]["function"]["parameters"]);
    assert_eq!(out[0]["function"]["strict"], json!(false));
}

fn only_search_set(base: &[Value]) -> Vec<Value> {
    let mut set = base.to_vec();
    set.push(plain("tool_search"));
    set
}

#[test]
fn deferred_entries_are_omitted_only_with_eager_search_and_call() {
    let base = vec![deferred(func("hidden")), func("shown")];
    let mut with_both = base.clone();
    with_both.extend([plain("tool_search"), plain("tool_call")]);
    assert_eq!(names(&project(&with_both, &[])), ["shown", "tool_search", "tool_call"]);
    // What was omitted, in wire form without `defer_loading` (server-side tool search).
    let omitted = project_deferred(&with_both, &[]);
    assert_eq!(names(&omitted), ["hidden"]);
    assert!(omitted[0].get("defer_loading").is_none(), "{}", omitted[0]);
    assert_eq!(omitted[0]["function"]["strict"], json!(false));
    assert_eq!(project_deferred(&only_search_set(&base), &[]), Vec::<Value>::new());
    let mut only_search = base.clone();
    only_search.push(plain("tool_search"));
    assert_eq!(names(&project(&only_search, &[])), ["hidden", "shown", "tool_search"]);
    let mut deferred_call = base.clone();
    deferred_call.extend([plain("tool_search"), deferred(plain("tool_call"))]);
    assert_eq!(project(&deferred_call, &[]).len(), 4);
    // Aliases of search and call count.
    let mut aliased = base.clone();
    aliased.extend([
        json!({"name": "ToolSearch", "canonical": "nexus.tools.search"}),
        json!({"name": "ToolCall", "canonical": "tool_call"}),
    ]);
    let stored = render(&aliased);
    assert_eq!(names(&project(&stored, &[])), ["shown", "ToolSearch", "ToolCall"]);
}

#[test]
fn skill_callables_with_empty_catalogs_are_omitted() {
    let mut mac = func("mac_skill");
    mac["route"] = json!({"kind": "runner", "runner_executor_public_id": "0190a000-0000-7000-8000-000000000001", "tool_name": "skill"});
    let set = vec![plain("skill"), mac, func("x")];
    assert_eq!(names(&project(&set, &[])), ["x"]);
    let skills = vec![json!({"callable": "mac_skill", "name": "a", "description": "b", "source": "runner"})];
    assert_eq!(names(&project(&set, &skills)), ["mac_skill", "x"]);
    let skills = vec![json!({"callable": "skill", "name": "a", "description": "b", "source": "user"})];
    assert_eq!(names(&project(&set, &skills)), ["skill", "x"]);
}

#[test]
fn the_stored_declaration_is_never_changed() {
    let set = vec![deferred(func("a"))];
    let before = set.clone();
    let _ = project(&set, &[]);
    assert_eq!(set, before);
}
