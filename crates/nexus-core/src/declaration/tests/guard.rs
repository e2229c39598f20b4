//! Byte-for-byte guards over the whole validate → render → sort → bound pipeline: fixed sets
//! whose stored bytes and refusals were recorded before the pipeline was optimized, so any
//! change of output (bytes, order, refusal word, path, detail or message) shows here.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{agent, func, plain, render};
use crate::declaration::{validate_and_render_owned, validate_declaration, validate_declaration_owned};

use crate::fixtures::{RUNNER, declaration_1000 as bench_set};

/// Flat form of a nested function entry.
fn flat(entry: &Value) -> Value {
    let mut out = serde_json::Map::new();
    out.insert("type".into(), entry["type"].clone());
    for (k, v) in entry["function"].as_object().unwrap() {
        out.insert(k.clone(), v.clone());
    }
    if let Some(d) = entry.get("defer_loading") {
        out.insert("defer_loading".into(), d.clone());
    }
    Value::Object(out)
}

/// A set mixing every shape and form: flat and nested functions, routed entries, plain kernel
/// entries (flat, deferred, and as this set's own render), aliases with params, omit, a riding
/// function block and identity aliases, provider tools with and without a name, names with
/// escapes and non-ASCII bytes, and numbers of every form.
fn mixed_set() -> Vec<Value> {
    let aliases = vec![
        agent(),
        json!({"name": "Skill", "canonical": "nexus.skill.load", "defer_loading": false,
            "params": {"skill": {"maps_to": "name", "description": "Name of the skill to load."}}}),
        json!({"name": "spawn_agent", "canonical": "nexus.conversation.spawn", "omit": ["wait"],
            "description": "Spawn; see {{send}} and {{delegate_task}}."}),
        json!({"function": {"name": "send_message"}, "canonical": "send", "defer_loading": true,
            "params": {"target": {"maps_to": "to", "description": "Child label or conversation id."}}}),
        json!({"name": "ask", "canonical": "nexus.human.ask"}),
        json!({"name": "AAA", "canonical": "nexus.graph.delegate_task", "description": "   "}),
    ];
    // The set's own render of `wait`.
    let rendered = render(&[aliases.clone(), vec![plain("wait")]].concat());
    let own_wait = rendered
        .iter()
        .find(|e| e["function"]["name"] == "wait")
        .unwrap()
        .clone();
    let mut skill_plain = plain("skill");
    skill_plain["defer_loading"] = json!(true);
    let mut out = aliases;
    out.extend([
        own_wait,
        flat(&plain("tool_search")),
        skill_plain,
        plain("status"),
        func("alpha"),
        flat(&func("Beta")),
        json!({"type": "function", "name": "naïve/é~x", "description": "d", "parameters": {"type": "object",
            "properties": {"n": {"type": "number", "minimum": -1.5, "maximum": 1e300, "default": 0.0,
                "multipleOf": 0.1}, "i": {"type": "integer", "minimum": -9007199254740993i64,
                "maximum": 18446744073709551615u64}}}, "strict": true, "defer_loading": false}),
        json!({"type": "function", "function": {"name": "tab\tq\"b\\s\u{1}", "description": "\u{2028}😀\u{7f}",
            "parameters": {"type": "object", "properties": {}}}}),
        json!({"type": "function", "function": {"name": "routed_mem", "description": "m",
            "parameters": {"type": "object"}}, "route": {"kind": "runner",
            "runner_executor_public_id": "0190A000-0000-7000-8000-00000000000F", "tool_name": "skill"},
            "defer_loading": true}),
        json!({"type": "function", "function": {"name": "tool_0001", "description": "", "parameters": {}},
            "route": {"tool_name": "served", "kind": "runner", "runner_executor_public_id": RUNNER, "x": [1, 2]}}),
        json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 5}),
        json!({"type": "code_execution"}),
        json!({"type": 7, "z": null}),
        json!({"type": "bash_20250124", "name": "Bash"}),
        json!({"type": "text_editor", "name": "", "cache_control": {"type": "ephemeral"}}),
    ]);
    // `Agent` with its full function block riding: the set's own render of it.
    let riding = render(&out)
        .into_iter()
        .find(|e| e["function"]["name"] == "Agent")
        .unwrap();
    assert!(riding.get("canonical").is_some());
    out[0] = riding;
    let n = out.len();
    (0..n).map(|k| out[(k * 13) % n].clone()).collect()
}

fn digest(v: &[Value]) -> String {
    hex::encode(Sha256::digest(serde_json::to_vec(v).unwrap()))
}

#[test]
fn bench_set_stores_the_recorded_bytes() {
    let set = bench_set();
    let sorted = validate_declaration_owned(set.clone(), "/tools").unwrap();
    assert_eq!(serde_json::to_vec(&sorted).unwrap().len(), 313_276);
    assert_eq!(
        digest(&sorted),
        "59823eb9dcb0b4981db7628817d2f6fac27bdff37eef931a28658f97b773248a"
    );
    let unsorted = validate_and_render_owned(set, "/tools").unwrap();
    assert_eq!(
        digest(&unsorted),
        "ddda3c30294a617caa9fbe8c45ea23b769efd14ba880a7676e1727acdee73ed0"
    );
}

#[test]
fn mixed_set_stores_the_recorded_bytes() {
    let set = mixed_set();
    let sorted = validate_declaration_owned(set.clone(), "/t").unwrap();
    let unsorted = validate_and_render_owned(set.clone(), "/t").unwrap();
    // The stored set is its own render and its own order.
    let again = validate_declaration(&Value::Array(sorted.clone()), "/t").unwrap();
    assert_eq!(digest(&again), digest(&sorted));
    assert_eq!(
        (digest(&sorted), digest(&unsorted)),
        (
            "ffd0c69dfe6bd252538a7ec1c5c233d2de890479dad9187de2a2b82a264529da".to_string(),
            "f76703867d6fc4363c1fa45698c265959d6a3f88b4c85087b7752dbdef8d051b".to_string()
        ),
        "{}",
        serde_json::to_string_pretty(&sorted).unwrap()
    );
}

/// Sets with one or more faults; the recorded first refusal of each.
fn refusals() -> Vec<Value> {
    let mut changed_wait = plain("wait");
    changed_wait["function"]["description"] = json!("changed");
    let mut big = func("big");
    big["function"]["description"] = json!("x".repeat(1_048_500));
    let mut riding = agent();
    riding["function"] = json!({"name": "Agent", "description": "x", "parameters": {}});
    vec![
        json!({"not": "an array"}),
        json!([1]),
        json!([func("a"), "s"]),
        json!([{"type": "function"}, func("a"), func("a")]),
        json!([func("a"), func("b"), func("b"), func("a")]),
        json!([func("a"), func("b"), func("a"), func("b")]),
        json!([{"type": "x"}, {"type": "x"}]),
        json!([{"type": "x", "name": "f"}, func("f")]),
        json!([{"type": 1}, {"type": 1}]),
        json!([{"type": "x", "name": 3}, {"type": "x"}]),
        json!([changed_wait.clone(), {"type": "function"}]),
        json!([changed_wait.clone(), agent()]),
        json!([changed_wait]),
        json!([{"type": "function", "function": {"name": "nexus.graph.wait", "parameters": {}}}]),
        json!([{"type": "function", "name": "", "description": "d"}]),
        json!([{"type": "function", "function": {"name": "x".repeat(129)}}]),
        json!([{"type": "function", "function": {"name": "é".repeat(128)}}, {"type": "function", "function": {"name": "é".repeat(129)}}]),
        json!([{"type": "function", "function": {"name": "a\u{0}b"}}]),
        json!([{"type": "function", "function": "nope"}]),
        json!([{"type": "function", "name": 5}]),
        json!([{"name": "x"}]),
        json!([{"type": "function", "name": "x", "defer_loading": "yes"}]),
        json!([{"type": "function", "name": "wait", "route": {"kind": "runner"}}]),
        json!([{"type": "function", "name": "x", "route": "r"}]),
        json!([{"type": "function", "name": "x", "route": {"kind": "local"}}]),
        json!([{"type": "function", "name": "x", "route": {"kind": "runner"}}]),
        json!([{"type": "function", "name": "x", "route": {"kind": "runner", "runner_executor_public_id": null}}]),
        json!([{"type": "function", "name": "x", "route": {"kind": "runner", "runner_executor_public_id": "nope"}}]),
        json!([{"type": "function", "name": "x", "route": {"kind": "runner", "runner_executor_public_id": 5}}]),
        json!([{"type": "function", "name": "x", "route": {"kind": "runner", "runner_executor_public_id": RUNNER}}]),
        json!([{"type": "function", "name": "x", "route": {"kind": "runner", "runner_executor_public_id": RUNNER, "tool_name": "wait"}}]),
        json!([{"type": "function", "name": "x", "route": {"kind": "runner", "runner_executor_public_id": RUNNER, "tool_name": "memory_read"}}]),
        json!([{"name": "A", "canonical": "wait", "route": {}}]),
        json!([{"name": "A", "canonical": "wait", "bogus": 1}]),
        json!([{"name": "A", "canonical": "wait", "defer_loading": 1}]),
        json!([{"name": "", "canonical": "wait"}]),
        json!([{"function": {"name": "A"}, "name": "B", "canonical": "wait"}]),
        json!([{"function": 3, "canonical": "wait"}]),
        json!([{"name": "A", "canonical": "nope"}]),
        json!([{"name": "A", "canonical": 5}]),
        json!([{"name": "A"}, {"name": "B", "canonical": null}]),
        json!([{"name": "spawn", "canonical": "wait"}]),
        json!([{"name": "A", "canonical": "wait", "description": 5}]),
        json!([{"name": "A", "canonical": "spawn", "omit": "wait"}]),
        json!([{"name": "A", "canonical": "spawn", "omit": [1]}]),
        json!([{"name": "A", "canonical": "spawn", "omit": ["nope"]}]),
        json!([{"name": "A", "canonical": "delegate_task", "params": []}]),
        json!([{"name": "A", "canonical": "delegate_task", "params": {"x": 1}}]),
        json!([{"name": "A", "canonical": "delegate_task", "params": {"x": {"maps_to": "wait", "y": 1}}}]),
        json!([{"name": "A", "canonical": "delegate_task", "params": {"x": {"maps_to": "nope"}}}]),
        json!([{"name": "A", "canonical": "delegate_task", "params": {"x": {"maps_to": "wait"}, "y": {"maps_to": "wait"}}}]),
        json!([{"name": "A", "canonical": "spawn", "omit": ["wait"], "params": {"x": {"maps_to": "wait"}}}]),
        json!([{"name": "A", "canonical": "delegate_task", "params": {"wait": {"maps_to": "prompt"}}}]),
        json!([{"name": "A", "canonical": "delegate_task", "params": {"x": {"maps_to": "wait", "invert": 1}}}]),
        json!([{"name": "A", "canonical": "delegate_task", "params": {"x": {"maps_to": "wait", "description": 1}}}]),
        json!([{"name": "A", "canonical": "delegate_task", "params": {"x": {"maps_to": "prompt", "invert": true, "description": "d"}}}]),
        json!([{"name": "A", "canonical": "delegate_task", "params": {"x": {"maps_to": "wait", "invert": true}}}]),
        json!([riding]),
        json!([big.clone()]),
        json!([big.clone(), func("big")]),
        json!([big, {"type": "function"}]),
    ]
}

const RECORDED_REFUSALS: &str = "4d8aae96d5ce3410aaccc53ea405b27e1c34472057197cfbfb8f9cfaa9c604e0";

#[test]
fn refusals_are_the_recorded_ones() {
    let mut lines = String::new();
    for (i, set) in refusals().into_iter().enumerate() {
        let owned = match &set {
            Value::Array(a) => validate_declaration_owned(a.clone(), "/t"),
            _ => validate_declaration(&set, "/t"),
        };
        let Err(e) = owned else { panic!("set {i} was accepted") };
        assert_eq!(Err(e.clone()), validate_declaration(&set, "/t"));
        lines.push_str(&format!(
            "{i}|{:?}|{}|{}|{:?}|{}\n",
            e.kind, e.reason, e.path, e.detail, e.message
        ));
    }
    assert_eq!(
        hex::encode(Sha256::digest(lines.as_bytes())),
        RECORDED_REFUSALS,
        "{lines}"
    );
}

fn assembly_input(tool_names: Option<Vec<String>>) -> crate::declaration::AssemblyInput {
    use crate::declaration::{AssemblyInput, RunnerFacts};
    let runner = uuid::Uuid::parse_str(RUNNER).unwrap();
    let mut served: Vec<Value> = (0..1000)
        .filter(|i| i % 4 == 0)
        .map(|i| json!({"name": format!("served_{i}"), "effect_profile": {}}))
        .collect();
    served.extend([
        json!({"name": "tool_0002", "description": "collides", "input_schema": {"type": "object"}}),
        json!({"name": "memory_read", "description": "an overridable memory tool", "input_schema": {}}),
        json!({"name": "skill", "description": "runner skills", "input_schema": {"type": "object"}}),
        json!({"name": "fresh", "description": "d", "input_schema": {"type": "object", "properties": {"a": {"type": "string"}}}}),
        json!({"name": "operator_only", "description": "no schema"}),
    ]);
    AssemblyInput {
        entries: Value::Array(bench_set()),
        kernel_tools: json!(["nexus.graph.wait", "nexus.tools.search", "nexus.memory.read"]),
        runner_executor_public_ids: json!([RUNNER]),
        runner_tool_names: Value::Null,
        default_runner_executor_public_id: Some(runner),
        tool_names,
        runners: vec![RunnerFacts {
            public_id: runner,
            display_name: "bench".into(),
            eligible: true,
            served_tools: Value::Array(served),
            environment: json!({"os": "linux"}),
            documents: json!([]),
        }],
        ..AssemblyInput::default()
    }
}

#[test]
fn assembly_stores_the_recorded_bytes() {
    use crate::declaration::{assemble, assemble_owned};
    let full = assemble_owned(assembly_input(None)).unwrap();
    assert_eq!(full, assemble(&assembly_input(None)).unwrap());
    let names: Vec<String> = [
        "Alias03",
        "tool_0004",
        "wait",
        "fresh",
        "memory_read",
        "Alias00",
        "Alias01",
    ]
    .map(String::from)
    .into();
    let narrowed = assemble_owned(assembly_input(Some(names))).unwrap();
    let digests = [full, narrowed].map(|a| hex::encode(Sha256::digest(a.to_response_json().to_string())));
    assert_eq!(
        digests,
        [
            "fcf8d6bd8cea6e3badc341aae2b703fffcd4e017a1b11ba89aec02f5a01ff611",
            "b3d877e838d19850f54d18c82fdc33c3ea5f3b0409428bdd097fc75cd53b2472"
        ]
    );
}

/// The §3 normalization of a function entry, built as a value.
fn normalized(entry: &serde_json::Map<String, Value>) -> Value {
    let rest = |skip: &[&str]| -> Value {
        Value::Object(
            entry
                .iter()
                .filter(|(k, _)| !skip.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )
    };
    if entry.contains_key("function") {
        rest(&["defer_loading"])
    } else {
        json!({"type": entry.get("type").cloned().unwrap_or(Value::Null), "function": rest(&["type", "defer_loading"])})
    }
}

fn tricky() -> Vec<Value> {
    vec![
        json!(0.0),
        json!(-0.0),
        json!(0),
        json!(1),
        json!(1.0),
        json!(-1),
        json!(1e300),
        json!(u64::MAX),
        json!(i64::MIN),
        json!("a"),
        json!("a\"\u{1}"),
        json!(null),
        json!(true),
        json!(false),
        json!([]),
        json!({}),
        json!([1, 2]),
        json!([2, 1]),
        json!({"a": 1, "b": 2}),
        json!({"b": 2, "a": 1}),
        json!({"a": 1}),
        json!({"a": 1.0}),
        json!({"type": "function", "function": {"name": "f"}}),
        json!({"function": {"name": "f"}, "type": "function"}),
        json!({"type": "function", "function": {"name": "f"}, "defer_loading": true}),
        json!({"type": "function", "name": "f"}),
        json!({"type": "function", "name": "f", "defer_loading": false}),
        json!({"name": "f"}),
        json!({"type": null, "function": {"name": "f"}}),
        json!({"type": "function", "function": {"name": "f"}, "x": 1}),
        plain("wait"),
        serde_json::from_str(&serde_json::to_string(&plain("wait")).unwrap()).unwrap(),
    ]
}

#[test]
fn byte_comparisons_agree_with_serialization() {
    use crate::declaration::render::{normalized_is, same_bytes};
    let mut pool = tricky();
    let mut flat_wait = flat(&plain("wait"));
    pool.push(flat_wait.clone());
    flat_wait["defer_loading"] = json!(true);
    pool.push(flat_wait);
    for a in &pool {
        for b in &pool {
            let same = serde_json::to_string(a).unwrap() == serde_json::to_string(b).unwrap();
            assert_eq!(same_bytes(a, b), same, "{a} vs {b}");
            if let Value::Object(entry) = a {
                let same = serde_json::to_string(&normalized(entry)).unwrap() == serde_json::to_string(b).unwrap();
                assert_eq!(normalized_is(entry, b), same, "normalized {a} vs {b}");
            }
        }
    }
}

fn small_json() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(json!(null)),
        Just(json!(true)),
        Just(json!(0)),
        Just(json!(0.0)),
        Just(json!(-0.0)),
        Just(json!(1)),
        Just(json!(1.0)),
        Just(json!("a")),
        Just(json!("b")),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::vec((prop_oneof![Just("a"), Just("b"), Just("type")], inner), 0..3)
                .prop_map(|kv| { Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()) }),
        ]
    })
}

proptest::proptest! {
    #[test]
    fn same_bytes_is_serialization_equality(a in small_json(), b in small_json()) {
        use crate::declaration::render::same_bytes;
        let bytes = |v: &Value| serde_json::to_string(v).unwrap();
        proptest::prop_assert_eq!(same_bytes(&a, &b), bytes(&a) == bytes(&b));
        proptest::prop_assert!(same_bytes(&a, &a.clone()));
    }
}
