//! Property tests: render idempotence, order independence, alias round trips, canonical length.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::{agent, bytes, func, plain, render};
use crate::declaration::{canonical_len, express_through_alias, resolve_call, validate_declaration};
use crate::jcs;

fn pool() -> Vec<Value> {
    vec![
        agent(),
        json!({"name": "Skill", "canonical": "nexus.skill.load", "params": {"skill": {"maps_to": "name", "description": "Name of the skill to load."}}}),
        json!({"name": "spawn_agent", "canonical": "nexus.conversation.spawn", "omit": ["wait"], "description": "Spawn; see {{send}} and {{delegate_task}}."}),
        json!({"name": "send_message", "canonical": "nexus.conversation.send", "params": {"target": {"maps_to": "to", "description": "Child label or conversation id."}}}),
        json!({"name": "Agent2", "canonical": "delegate_task"}),
        plain("wait"),
        plain("skill"),
        plain("delegate_task"),
        plain("tool_search"),
        plain("send"),
        func("alpha"),
        func("Beta"),
        json!({"type": "web_search_20250305", "name": "web_search"}),
        json!({"type": "code_execution"}),
    ]
}

fn set_strategy() -> impl Strategy<Value = Vec<Value>> {
    (
        prop::collection::vec(any::<bool>(), 14),
        prop::collection::vec(any::<Option<bool>>(), 14),
    )
        .prop_map(|(pick, defer)| {
            pool()
                .into_iter()
                .zip(pick.into_iter().zip(defer))
                .filter(|(_, (p, _))| *p)
                .map(|(mut e, (_, d))| {
                    if let (Some(d), false) = (d, e["type"].as_str().is_some_and(|t| t != "function")) {
                        e["defer_loading"] = json!(d);
                    }
                    e
                })
                .collect()
        })
}

fn json_strategy() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        any::<u64>().prop_map(|u| json!(u)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

proptest! {
    #[test]
    fn render_is_idempotent(set in set_strategy()) {
        let once = render(&set);
        let twice = render(&once);
        prop_assert_eq!(bytes(&once), bytes(&twice));
    }

    #[test]
    fn canonical_order_is_independent_of_input_order(
        (set, shuffled) in set_strategy().prop_flat_map(|s| (Just(s.clone()), Just(s).prop_shuffle()))
    ) {
        let a = validate_declaration(&Value::Array(set), "/t").unwrap();
        let b = validate_declaration(&Value::Array(shuffled), "/t").unwrap();
        prop_assert_eq!(bytes(&a), bytes(&b));
    }

    #[test]
    fn alias_resolve_then_express_round_trips(
        background in prop::option::of(prop_oneof![any::<bool>().prop_map(Value::Bool), any::<String>().prop_map(Value::String)]),
        skill in prop::option::of(any::<String>()),
        extra in prop::collection::btree_map("x_[a-z]{1,6}", any::<i32>(), 0..4),
    ) {
        let stored = render(&pool()[..4]);
        let mut args = Map::new();
        args.insert("prompt".into(), json!("p"));
        if let Some(b) = background { args.insert("run_in_background".into(), b); }
        for (k, v) in &extra { args.insert(k.clone(), json!(v)); }
        let args = Value::Object(args);
        let r = resolve_call(&stored, "Agent", &args);
        prop_assert_eq!(r.tool_name.as_str(), "delegate_task");
        prop_assert!(r.tool_input.get("run_in_background").is_none());
        prop_assert_eq!(express_through_alias(&stored, "Agent", &r.tool_input).unwrap(), args);

        let mut sargs = Map::new();
        if let Some(s) = skill { sargs.insert("skill".into(), json!(s)); }
        let sargs = Value::Object(sargs);
        let r = resolve_call(&stored, "Skill", &sargs);
        prop_assert_eq!(express_through_alias(&stored, "Skill", &r.tool_input).unwrap(), sargs);
    }

    #[test]
    fn canonical_len_is_the_jcs_length(v in json_strategy()) {
        prop_assert_eq!(canonical_len(&v), jcs::len(&v));
    }
}
