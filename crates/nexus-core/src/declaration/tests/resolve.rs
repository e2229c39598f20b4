use serde_json::json;
use uuid::Uuid;

use super::{agent, func, plain, render};
use crate::declaration::{Resolver, Route, express_through_alias, resolve_call};

const RUNNER: &str = "0190a000-0000-7000-8000-000000000001";

fn declaration() -> Vec<serde_json::Value> {
    let mut routed = func("my_read");
    routed["route"] = json!({"kind": "runner", "runner_executor_public_id": RUNNER, "tool_name": "read"});
    let mut same = func("grep");
    same["route"] = json!({"kind": "runner", "runner_executor_public_id": RUNNER, "tool_name": "grep"});
    let spawn = json!({"name": "spawn_agent", "canonical": "nexus.conversation.spawn", "omit": ["wait"]});
    let identity = json!({"name": "skill", "canonical": "nexus.skill.load"});
    render(&[agent(), plain("wait"), routed, same, spawn, identity, func("f")])
}

#[test]
fn the_agent_example() {
    let d = declaration();
    let args = json!({"prompt": "x", "run_in_background": false});
    let before = args.clone();
    let r = resolve_call(&d, "Agent", &args);
    assert_eq!(args, before, "the caller's arguments are never mutated");
    assert_eq!(r.tool_name, "delegate_task");
    assert_eq!(r.tool_input, json!({"prompt": "x", "wait": true}));
    assert_eq!(r.tool_alias.as_deref(), Some("Agent"));
    assert_eq!(r.entry, Some(0));
    assert!(r.route.is_none());
    // Absent stays absent.
    let r = resolve_call(&d, "Agent", &json!({"prompt": "x"}));
    assert_eq!(r.tool_input, json!({"prompt": "x"}));
    // A non-boolean moves unchanged.
    let r = resolve_call(&d, "Agent", &json!({"prompt": "x", "run_in_background": "no"}));
    assert_eq!(r.tool_input, json!({"prompt": "x", "wait": "no"}));
}

#[test]
fn omitted_keys_are_dropped_and_others_pass() {
    let d = declaration();
    let r = resolve_call(&d, "spawn_agent", &json!({"prompt": "p", "wait": true, "extra": 1}));
    assert_eq!(r.tool_name, "spawn");
    assert_eq!(r.tool_input, json!({"prompt": "p", "extra": 1}));
    assert_eq!(r.tool_alias.as_deref(), Some("spawn_agent"));
}

#[test]
fn identity_aliases_record_tool_alias() {
    let r = resolve_call(&declaration(), "skill", &json!({"name": "s"}));
    assert_eq!(
        (r.tool_name.as_str(), r.tool_alias.as_deref()),
        ("skill", Some("skill"))
    );
}

#[test]
fn plain_routed_and_undeclared() {
    let d = declaration();
    let r = resolve_call(&d, "wait", &json!({"task": "t"}));
    assert_eq!(
        (r.tool_name.as_str(), r.tool_alias.clone(), r.entry),
        ("wait", None, Some(1))
    );
    let r = resolve_call(&d, "my_read", &json!({"path": "a"}));
    assert_eq!(r.tool_name, "read");
    assert_eq!(r.tool_alias.as_deref(), Some("my_read"));
    assert_eq!(
        r.route,
        Some(Route {
            runner_executor_public_id: Uuid::parse_str(RUNNER).unwrap(),
            tool_name: "read".into()
        })
    );
    let r = resolve_call(&d, "grep", &json!({}));
    assert_eq!((r.tool_name.as_str(), r.tool_alias.clone()), ("grep", None));
    let r = resolve_call(&d, "delegate_task", &json!({"prompt": "x"}));
    assert_eq!(
        (r.tool_name.as_str(), r.entry, r.tool_alias.clone()),
        ("delegate_task", None, None)
    );
    assert_eq!(r.tool_input, json!({"prompt": "x"}));
    let r = resolve_call(&d, "f", &json!({"a": 1}));
    assert_eq!((r.tool_name.as_str(), r.entry), ("f", Some(6)));
}

#[test]
fn the_resolver_agrees_with_resolve_call() {
    let d = declaration();
    let resolver = Resolver::new(&d);
    for (name, args) in [
        ("Agent", json!({"prompt": "x", "run_in_background": true})),
        ("my_read", json!({"path": "p"})),
        ("nope", json!({})),
        ("spawn_agent", json!({"wait": false})),
        ("Agent", json!("not an object")),
    ] {
        assert_eq!(resolver.resolve(name, &args), resolve_call(&d, name, &args), "{name}");
    }
}

#[test]
fn express_inverts_the_mapping() {
    let d = declaration();
    let back = express_through_alias(&d, "Agent", &json!({"prompt": "x", "wait": true})).unwrap();
    assert_eq!(back, json!({"prompt": "x", "run_in_background": false}));
    assert!(express_through_alias(&d, "wait", &json!({})).is_none());
}
