use serde_json::{Value, json};

use super::*;

const UUID: &str = "0190a8f2-1c2d-7000-8000-00000000abcd";

fn ctx_with<'a>(revision: u64, existing: &'a dyn Fn(&str) -> bool) -> StepsContext<'a> {
    StepsContext {
        revision,
        existing_keys: existing,
    }
}

fn parse(steps: Value) -> Result<Vec<Step>, StepsError> {
    let existing = |k: &str| k == "old" || k == "r1";
    parse_steps(&steps, &ctx_with(3, &existing))
}

fn ok(steps: Value) -> Vec<Step> {
    parse(steps).unwrap_or_else(|e| panic!("expected acceptance, got {e:?}"))
}

/// The faults as `(code, path)` pairs.
fn faults(steps: Value) -> Vec<(&'static str, String)> {
    parse(steps)
        .expect_err("expected refusal")
        .steps
        .into_iter()
        .map(|s| (s.code, s.path))
        .collect()
}

fn one(steps: Value, code: &'static str, path: &str) {
    assert_eq!(faults(steps), vec![(code, path.to_owned())]);
}

// ---- envelope-level words ----

#[test]
fn steps_required_for_absent_and_empty() {
    one(Value::Null, code::STEPS_REQUIRED, "steps");
    one(json!([]), code::STEPS_REQUIRED, "steps");
}

#[test]
fn steps_must_be_an_array() {
    one(json!({"model": {"prompt": "x"}}), code::STEPS_MUST_BE_AN_ARRAY, "steps");
    one(json!("x"), code::STEPS_MUST_BE_AN_ARRAY, "steps");
}

#[test]
fn too_many_steps() {
    let step = json!({"ask": {"prompt": "?"}});
    assert_eq!(ok(Value::Array(vec![step.clone(); 64])).len(), 64);
    one(Value::Array(vec![step; 65]), code::TOO_MANY_STEPS, "steps");
}

#[test]
fn unsupported_steps() {
    one(json!([{"parallel": []}]), code::UNSUPPORTED_STEP, "steps[0].parallel");
    one(json!([{"script": {}}]), code::UNSUPPORTED_STEP, "steps[0].script");
    one(json!([{"search": {}}]), code::UNSUPPORTED_STEP, "steps[0]");
    one(json!([{}]), code::UNSUPPORTED_STEP, "steps[0]");
    one(json!(["model"]), code::UNSUPPORTED_STEP, "steps[0]");
    one(
        json!([{"model": {"prompt": "x"}, "ask": {"prompt": "y"}}]),
        code::UNSUPPORTED_STEP,
        "steps[0]",
    );
    one(
        json!([{"tool": {}, "parallel": []}]),
        code::UNSUPPORTED_STEP,
        "steps[0]",
    );
    one(json!([{"tool": "read"}]), code::UNSUPPORTED_STEP, "steps[0].tool");
}

#[test]
fn unknown_step_options() {
    for opt in ["retry", "detached", "lifetime", "wake", "bogus", "depends_on"] {
        one(
            json!([{"ask": {"prompt": "?"}, opt: true}]),
            code::UNKNOWN_STEP_OPTION,
            &format!("steps[0].{opt}"),
        );
    }
    one(
        json!([{"ask": {"prompt": "?", "colour": 1}}]),
        code::UNKNOWN_STEP_OPTION,
        "steps[0].ask.colour",
    );
    one(
        json!([{"tool": {"name": "read", "retry": 2}}]),
        code::UNKNOWN_STEP_OPTION,
        "steps[0].tool.retry",
    );
    one(
        json!([{"model": {"prompt": "x", "timeout_ms": 5}}]),
        code::UNKNOWN_STEP_OPTION,
        "steps[0].model.timeout_ms",
    );
    one(
        json!([{"wait": {"task": "old", "on_failure": "halt"}}]),
        code::UNKNOWN_STEP_OPTION,
        "steps[0].wait.on_failure",
    );
}

// ---- keys ----

#[test]
fn authored_key_grammar() {
    for good in ["a", "A1", "build_2", "x-y", "r", "r1x", "rt1", "r1t", &"k".repeat(64)] {
        assert!(is_authored_key(good), "{good}");
        let steps = ok(json!([{"key": good, "ask": {"prompt": "?"}}]));
        assert_eq!(steps[0].key, good);
        assert!(steps[0].authored_key);
    }
    for bad in [
        "",
        "_a",
        "-a",
        "a b",
        "a.b",
        "é",
        &"k".repeat(65),
        "r1",
        "r12t0",
        "r0t15",
    ] {
        assert!(!is_authored_key(bad), "{bad}");
        one(
            json!([{"key": bad, "ask": {"prompt": "?"}}]),
            code::INVALID_TASK_KEY,
            "steps[0].key",
        );
    }
    one(
        json!([{"key": 7, "ask": {"prompt": "?"}}]),
        code::INVALID_TASK_KEY,
        "steps[0].key",
    );
    one(
        json!([{"key": null, "ask": {"prompt": "?"}}]),
        code::INVALID_TASK_KEY,
        "steps[0].key",
    );
}

#[test]
fn round_pattern() {
    for k in ["r1", "r0", "r12t0", "r1t99"] {
        assert!(is_round_key(k), "{k}");
    }
    for k in ["r", "rt", "r1t", "rt1", "r1t1t1", "x1", "r-1", "R1"] {
        assert!(!is_round_key(k), "{k}");
    }
}

#[test]
fn minted_keys_count_each_verb_from_one() {
    let steps = ok(json!([
        {"model": {"prompt": "a"}},
        {"tool": {"name": "read"}},
        {"key": "mine", "model": {"prompt": "b"}},
        {"model": {"prompt": "c"}},
        {"tool": {"name": "grep"}},
        {"ask": {"prompt": "?"}},
        {"wait": {"task": "old"}},
    ]));
    let keys: Vec<&str> = steps.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "s3-model-1",
            "s3-tool-1",
            "mine",
            "s3-model-3",
            "s3-tool-2",
            "s3-ask-1",
            "s3-wait-1"
        ]
    );
    assert_eq!(
        steps.iter().map(|s| s.authored_key).collect::<Vec<_>>(),
        [false, false, true, false, false, false, false]
    );
    assert_eq!(steps.iter().map(|s| s.index).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(minted_key(12, "wait", 4), "s12-wait-4");
}

// ---- after / results ----

#[test]
fn after_names_run_keys_or_earlier_envelope_keys() {
    let steps = ok(json!([
        {"key": "a", "ask": {"prompt": "?"}},
        {"tool": {"name": "read"}, "after": ["a", "old", "r1"]},
        {"ask": {"prompt": "?"}, "after": ["s3-tool-1"]},
    ]));
    assert_eq!(steps[1].after, ["a", "old", "r1"]);
    assert_eq!(steps[2].after, ["s3-tool-1"]);
    assert!(steps[0].after.is_empty());
}

#[test]
fn unknown_task_keys_in_after() {
    one(
        json!([{"ask": {"prompt": "?"}, "after": ["nope"]}]),
        code::UNKNOWN_TASK_KEY,
        "steps[0].after[0]",
    );
    // Its own key and later keys are not earlier rows.
    assert_eq!(
        faults(json!([
            {"key": "a", "ask": {"prompt": "?"}, "after": ["a", "b"]},
            {"key": "b", "ask": {"prompt": "?"}},
        ])),
        vec![
            (code::UNKNOWN_TASK_KEY, "steps[0].after[0]".to_owned()),
            (code::UNKNOWN_TASK_KEY, "steps[0].after[1]".to_owned()),
        ]
    );
    one(
        json!([{"ask": {"prompt": "?"}, "after": "old"}]),
        code::INVALID_TASK_KEY,
        "steps[0].after",
    );
    one(
        json!([{"ask": {"prompt": "?"}, "after": [3]}]),
        code::INVALID_TASK_KEY,
        "steps[0].after[0]",
    );
}

#[test]
fn too_many_dependencies_and_reads() {
    let keys32 = vec![json!("old"); 32];
    let keys33 = vec![json!("old"); 33];
    ok(json!([{"ask": {"prompt": "?"}, "after": keys32}]));
    one(
        json!([{"ask": {"prompt": "?"}, "after": keys33}]),
        code::TOO_MANY_DEPENDENCIES,
        "steps[0].after",
    );
    let steps = ok(json!([{"model": {"prompt": "x", "results": keys32}}]));
    let StepVerb::Model { results, .. } = &steps[0].verb else {
        panic!()
    };
    assert_eq!(results.len(), 32);
    one(
        json!([{"model": {"prompt": "x", "results": keys33}}]),
        code::TOO_MANY_READS,
        "steps[0].model.results",
    );
}

#[test]
fn results_name_earlier_rows() {
    let steps = ok(json!([
        {"tool": {"name": "read"}},
        {"model": {"prompt": "x", "results": ["s3-tool-1", "old"]}},
    ]));
    let StepVerb::Model { results, .. } = &steps[1].verb else {
        panic!()
    };
    assert_eq!(results, &["s3-tool-1", "old"]);
    one(
        json!([{"model": {"prompt": "x", "results": ["later"]}}, {"key": "later", "ask": {"prompt": "?"}}]),
        code::UNKNOWN_TASK_KEY,
        "steps[0].model.results[0]",
    );
}

// ---- defaults, on_failure, visibility ----

#[test]
fn defaults_per_verb() {
    let steps = ok(json!([
        {"model": {"prompt": "x"}},
        {"tool": {"name": "read"}},
        {"ask": {"prompt": "?"}},
        {"wait": {"task": "old"}},
    ]));
    let got: Vec<(&str, &str)> = steps
        .iter()
        .map(|s| (s.visibility.as_str(), s.on_failure.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("visible", "halt"),
            ("collapsed", "propagate"),
            ("hidden", "propagate"),
            ("hidden", "absorb")
        ]
    );
    let StepVerb::Model { fan_on_failure, .. } = &steps[0].verb else {
        panic!()
    };
    assert_eq!(*fan_on_failure, OnFailure::Absorb);
}

#[test]
fn explicit_policies_override_defaults() {
    let steps = ok(json!([
        {"on_failure": "absorb", "visibility": "hidden", "model": {"prompt": "x", "fan_on_failure": "halt"}},
        {"on_failure": "halt", "visibility": "visible", "tool": {"name": "read"}},
    ]));
    assert_eq!(
        (steps[0].on_failure, steps[0].visibility),
        (OnFailure::Absorb, Visibility::Hidden)
    );
    assert_eq!(
        (steps[1].on_failure, steps[1].visibility),
        (OnFailure::Halt, Visibility::Visible)
    );
    let StepVerb::Model { fan_on_failure, .. } = &steps[0].verb else {
        panic!()
    };
    assert_eq!(*fan_on_failure, OnFailure::Halt);
}

#[test]
fn invalid_policies() {
    one(
        json!([{"on_failure": "retry", "ask": {"prompt": "?"}}]),
        code::INVALID_ON_FAILURE,
        "steps[0].on_failure",
    );
    one(
        json!([{"on_failure": null, "ask": {"prompt": "?"}}]),
        code::INVALID_ON_FAILURE,
        "steps[0].on_failure",
    );
    one(
        json!([{"visibility": "shown", "ask": {"prompt": "?"}}]),
        code::INVALID_VISIBILITY,
        "steps[0].visibility",
    );
    one(
        json!([{"visibility": 1, "ask": {"prompt": "?"}}]),
        code::INVALID_VISIBILITY,
        "steps[0].visibility",
    );
    one(
        json!([{"model": {"prompt": "x", "fan_on_failure": "skip"}}]),
        code::INVALID_ON_FAILURE,
        "steps[0].model.fan_on_failure",
    );
}

#[test]
fn policy_words_round_trip() {
    for f in [OnFailure::Propagate, OnFailure::Absorb, OnFailure::Halt] {
        assert_eq!(OnFailure::from_word(f.as_str()), Some(f));
    }
    for v in [Visibility::Visible, Visibility::Collapsed, Visibility::Hidden] {
        assert_eq!(Visibility::from_word(v.as_str()), Some(v));
    }
}

// ---- timeout_ms ----

#[test]
fn timeout_ms_bounds() {
    for verb in ["tool", "ask", "wait"] {
        let body = |ms: Value| match verb {
            "tool" => json!({"name": "read", "timeout_ms": ms}),
            "ask" => json!({"prompt": "?", "timeout_ms": ms}),
            _ => json!({"task": "old", "timeout_ms": ms}),
        };
        for good in [json!(1), json!(604_800_000u64)] {
            ok(json!([{verb: body(good)}]));
        }
        for bad in [
            json!(0),
            json!(604_800_001u64),
            json!(-5),
            json!(1.5),
            json!("100"),
            Value::Null,
        ] {
            one(
                json!([{verb: body(bad)}]),
                code::INVALID_TIMEOUT_MS,
                &format!("steps[0].{verb}.timeout_ms"),
            );
        }
    }
    let steps = ok(json!([{"tool": {"name": "read", "timeout_ms": 1500}}]));
    let StepVerb::Tool { timeout_ms, .. } = &steps[0].verb else {
        panic!()
    };
    assert_eq!(*timeout_ms, Some(1500));
}

// ---- tool steps ----

#[test]
fn tool_step_fields() {
    let steps = ok(json!([{"tool": {
        "name": "read",
        "input": {"z": 1, "a": [1, {"b": "c"}]},
        "route": {"kind": "runner", "runner_executor_public_id": UUID},
        "model_defaults": {"model": "scripted/echo", "kernel_tools": ["nexus.graph.wait"]},
    }}]));
    let StepVerb::Tool {
        name,
        input,
        route,
        timeout_ms,
        model_defaults,
    } = &steps[0].verb
    else {
        panic!()
    };
    assert_eq!(name, "read");
    assert_eq!(input.to_string(), r#"{"z":1,"a":[1,{"b":"c"}]}"#, "member order kept");
    assert_eq!(*route, Some(ToolRoute::Runner(uuid::Uuid::parse_str(UUID).unwrap())));
    assert_eq!(*timeout_ms, None);
    assert_eq!(
        model_defaults.as_ref().unwrap(),
        &json!({"model": "scripted/echo", "kernel_tools": ["nexus.graph.wait"]})
    );
    assert_eq!(steps[0].verb.word(), "tool");
}

#[test]
fn tool_input_defaults_to_an_empty_object() {
    let steps = ok(json!([{"tool": {"name": "read"}}]));
    let StepVerb::Tool { input, route, .. } = &steps[0].verb else {
        panic!()
    };
    assert_eq!(input, &json!({}));
    assert_eq!(*route, None);
}

#[test]
fn invalid_tool_names() {
    for bad in [
        json!(""),
        json!("a\u{0}b"),
        json!("n".repeat(129)),
        json!(5),
        Value::Null,
    ] {
        one(
            json!([{"tool": {"name": bad}}]),
            code::INVALID_TOOL_NAME,
            "steps[0].tool.name",
        );
    }
    one(json!([{"tool": {}}]), code::INVALID_TOOL_NAME, "steps[0].tool.name");
    ok(json!([{"tool": {"name": "é".repeat(128)}}]));
}

#[test]
fn reserved_tool_names_in_either_spelling() {
    for name in [
        "delegate_task",
        "nexus.graph.delegate_task",
        "skill",
        "nexus.skill.load",
        "memory_ls",
    ] {
        assert!(crate::registry::resolve(name).is_some(), "{name} is a kernel name");
        one(
            json!([{"tool": {"name": name}}]),
            code::RESERVED_TOOL_NAME,
            "steps[0].tool.name",
        );
        one(
            json!([{"tool": {"name": name, "route": {"kind": "runner"}}}]),
            code::RESERVED_TOOL_NAME,
            "steps[0].tool.name",
        );
    }
}

#[test]
fn invalid_tool_inputs() {
    for bad in [json!([]), json!("x"), json!(1), Value::Null] {
        one(
            json!([{"tool": {"name": "read", "input": bad}}]),
            code::INVALID_TOOL_INPUT,
            "steps[0].tool.input",
        );
    }
    for nul in [
        json!({"a": "x\u{0}"}),
        json!({"a": [{"b": ["\u{0}"]}]}),
        json!({"k\u{0}": 1}),
    ] {
        one(
            json!([{"tool": {"name": "read", "input": nul}}]),
            code::INVALID_TOOL_INPUT,
            "steps[0].tool.input",
        );
    }
}

#[test]
fn tool_input_bound_is_canonical_json() {
    // {"a":"…"} is 8 bytes of framing.
    let fits = json!({"a": "x".repeat(crate::bounds::TOOL_INPUT - 8)});
    assert_eq!(crate::jcs::len(&fits), crate::bounds::TOOL_INPUT);
    ok(json!([{"tool": {"name": "read", "input": fits}}]));
    let over = json!({"a": "x".repeat(crate::bounds::TOOL_INPUT - 7)});
    one(
        json!([{"tool": {"name": "read", "input": over}}]),
        code::TOOL_INPUT_TOO_LARGE,
        "steps[0].tool.input",
    );
}

#[test]
fn tool_routes() {
    let route_of = |route: Value| {
        let steps = ok(json!([{"tool": {"name": "read", "route": route}}]));
        let StepVerb::Tool { route, .. } = &steps[0].verb else {
            panic!()
        };
        *route
    };
    assert_eq!(route_of(json!({"kind": "runner"})), Some(ToolRoute::RunDefault));
    assert_eq!(
        route_of(json!({"kind": "runner", "runner_executor_public_id": UUID.to_uppercase()})),
        Some(ToolRoute::Runner(uuid::Uuid::parse_str(UUID).unwrap()))
    );
    for bad in [
        Value::Null,
        json!("runner"),
        json!({}),
        json!({"kind": "provider"}),
        json!({"kind": "runner", "runner_executor_public_id": null}),
        json!({"kind": "runner", "runner_executor_public_id": "not-a-uuid"}),
        json!({"kind": "runner", "runner_executor_public_id": UUID.replace('-', "")}),
        json!({"kind": "runner", "runner_executor_public_id": format!("{{{UUID}}}")}),
        json!({"kind": "runner", "tool_name": "read"}),
    ] {
        one(
            json!([{"tool": {"name": "read", "route": bad}}]),
            code::INVALID_TOOL_ROUTE,
            "steps[0].tool.route",
        );
    }
}

#[test]
fn tool_call_id_and_alias_are_refused() {
    one(
        json!([{"tool": {"name": "read", "tool_call_id": "c1"}}]),
        code::INVALID_TOOL_CALL_ID,
        "steps[0].tool.tool_call_id",
    );
    one(
        json!([{"tool": {"name": "read", "alias": "Read"}}]),
        code::INVALID_TOOL_ALIAS,
        "steps[0].tool.alias",
    );
}

#[test]
fn model_defaults_grammar() {
    one(
        json!([{"tool": {"name": "read", "model_defaults": []}}]),
        code::INVALID,
        "steps[0].tool.model_defaults",
    );
    one(
        json!([{"tool": {"name": "read", "model_defaults": {"prompt": "x"}}}]),
        code::UNKNOWN_STEP_OPTION,
        "steps[0].tool.model_defaults.prompt",
    );
    one(
        json!([{"tool": {"name": "read", "model_defaults": {"tools": []}}}]),
        code::INVALID_TOOLS,
        "steps[0].tool.model_defaults.tools",
    );
    one(
        json!([{"tool": {"name": "read", "model_defaults": {"model": 3}}}]),
        code::INVALID,
        "steps[0].tool.model_defaults.model",
    );
}

// ---- model steps ----

#[test]
fn model_step_fields() {
    let steps = ok(json!([{"model": {
        "prompt": "hello",
        "model": {"model": "scripted/echo", "reasoning_effort": "low", "max_output_tokens": 500},
        "instructions": "be brief",
        "tools": [{"type": "function", "function": {"name": "f"}}],
        "kernel_tools": ["nexus.graph.wait"],
        "runner_executor_public_ids": [UUID],
        "runner_tool_names": null,
        "attachments": [UUID],
    }}]));
    let StepVerb::Model {
        prompt,
        model,
        instructions,
        tools,
        kernel_tools,
        runner_executor_public_ids,
        runner_tool_names,
        attachments,
        results,
        fan_on_failure,
    } = &steps[0].verb
    else {
        panic!()
    };
    assert_eq!(prompt, "hello");
    assert_eq!(
        model,
        &Some(ModelSpec {
            model: "scripted/echo".into(),
            reasoning_effort: Some("low".into()),
            max_output_tokens: Some(500),
        })
    );
    assert_eq!(instructions.as_deref(), Some("be brief"));
    assert_eq!(tools, &Some(json!([{"type": "function", "function": {"name": "f"}}])));
    assert_eq!(kernel_tools, &json!(["nexus.graph.wait"]));
    assert_eq!(runner_executor_public_ids, &json!([UUID]));
    assert_eq!(runner_tool_names, &Value::Null);
    assert_eq!(attachments, &[UUID]);
    assert!(results.is_empty());
    assert_eq!(*fan_on_failure, OnFailure::Absorb);
}

#[test]
fn model_absent_fields_default() {
    let steps = ok(json!([{"model": {"prompt": "", "model": "a/b"}}]));
    let StepVerb::Model {
        model,
        tools,
        kernel_tools,
        attachments,
        instructions,
        ..
    } = &steps[0].verb
    else {
        panic!()
    };
    assert_eq!(model.as_ref().unwrap().model, "a/b");
    assert_eq!(model.as_ref().unwrap().reasoning_effort, None);
    assert_eq!((tools, kernel_tools, instructions), (&None, &Value::Null, &None));
    assert!(attachments.is_empty());
}

#[test]
fn model_prompt_is_required() {
    one(json!([{"model": {}}]), code::INVALID, "steps[0].model.prompt");
    one(
        json!([{"model": {"prompt": 3}}]),
        code::INVALID,
        "steps[0].model.prompt",
    );
    one(
        json!([{"model": {"prompt": "x", "instructions": 3}}]),
        code::INVALID,
        "steps[0].model.instructions",
    );
}

#[test]
fn model_spec_shapes() {
    for (bad, path) in [
        (json!(3), "steps[0].model.model"),
        (Value::Null, "steps[0].model.model"),
        (json!({}), "steps[0].model.model.model"),
        (json!({"model": 1}), "steps[0].model.model.model"),
        (
            json!({"model": "a/b", "reasoning_effort": 1}),
            "steps[0].model.model.reasoning_effort",
        ),
        (
            json!({"model": "a/b", "max_output_tokens": 0}),
            "steps[0].model.model.max_output_tokens",
        ),
        (
            json!({"model": "a/b", "max_output_tokens": 5_000_000_000u64}),
            "steps[0].model.model.max_output_tokens",
        ),
    ] {
        one(json!([{"model": {"prompt": "x", "model": bad}}]), code::INVALID, path);
    }
    one(
        json!([{"model": {"prompt": "x", "model": {"model": "a/b", "temperature": 1}}}]),
        code::UNKNOWN_STEP_OPTION,
        "steps[0].model.model.temperature",
    );
}

#[test]
fn invalid_tools() {
    one(
        json!([{"model": {"prompt": "x", "tools": []}}]),
        code::INVALID_TOOLS,
        "steps[0].model.tools",
    );
    one(
        json!([{"model": {"prompt": "x", "tools": {}}}]),
        code::INVALID_TOOLS,
        "steps[0].model.tools",
    );
    one(
        json!([{"model": {"prompt": "x", "tools": [{"type": "function"}, "read"]}}]),
        code::INVALID_TOOLS,
        "steps[0].model.tools[1]",
    );
    let steps = ok(json!([{"model": {"prompt": "x", "tools": null}}]));
    let StepVerb::Model { tools, .. } = &steps[0].verb else {
        panic!()
    };
    assert_eq!(tools, &None);
}

#[test]
fn invalid_attachments() {
    one(
        json!([{"model": {"prompt": "x", "attachments": UUID}}]),
        code::INVALID_ATTACHMENTS,
        "steps[0].model.attachments",
    );
    assert_eq!(
        faults(json!([{"model": {"prompt": "x", "attachments": [UUID, "nope", 3]}}])),
        vec![
            (code::INVALID_ATTACHMENTS, "steps[0].model.attachments[1]".to_owned()),
            (code::INVALID_ATTACHMENTS, "steps[0].model.attachments[2]".to_owned()),
        ]
    );
}

// ---- ask steps ----

#[test]
fn ask_step_fields() {
    let steps = ok(json!([{"ask": {"prompt": "pick", "options": ["a", "b"], "multi": true, "timeout_ms": 10}}]));
    assert_eq!(
        steps[0].verb,
        StepVerb::Ask {
            prompt: "pick".into(),
            options: Some(vec!["a".into(), "b".into()]),
            multi: true,
            timeout_ms: Some(10),
        }
    );
    let steps = ok(json!([{"ask": {"prompt": "?"}}]));
    assert_eq!(
        steps[0].verb,
        StepVerb::Ask {
            prompt: "?".into(),
            options: None,
            multi: false,
            timeout_ms: None,
        }
    );
}

#[test]
fn invalid_ask_options() {
    ok(json!([{"ask": {"prompt": "?", "options": vec!["o"; 32]}}]));
    ok(json!([{"ask": {"prompt": "?", "options": ["é".repeat(256)]}}]));
    ok(json!([{"ask": {"prompt": "?", "options": []}}]));
    for bad in [
        json!(vec!["o"; 33]),
        json!([""]),
        json!(["x".repeat(257)]),
        json!([1]),
        json!("a"),
        Value::Null,
    ] {
        one(
            json!([{"ask": {"prompt": "?", "options": bad}}]),
            code::INVALID_ASK_OPTIONS,
            "steps[0].ask.options",
        );
    }
}

#[test]
fn invalid_ask_multi() {
    for bad in [json!("true"), json!(1), Value::Null] {
        one(
            json!([{"ask": {"prompt": "?", "multi": bad}}]),
            code::INVALID_ASK_MULTI,
            "steps[0].ask.multi",
        );
    }
}

#[test]
fn ask_prompt_is_required() {
    one(json!([{"ask": {}}]), code::INVALID, "steps[0].ask.prompt");
    one(
        json!([{"ask": {"prompt": ["x"]}}]),
        code::INVALID,
        "steps[0].ask.prompt",
    );
}

// ---- wait steps ----

#[test]
fn wait_step_fields() {
    let steps = ok(json!([{"wait": {"task": "r7t2", "run_public_id": UUID, "timeout_ms": 99}}]));
    assert_eq!(
        steps[0].verb,
        StepVerb::Wait {
            task: "r7t2".into(),
            run_public_id: Some(UUID.into()),
            timeout_ms: Some(99),
        }
    );
}

#[test]
fn wait_task_is_a_required_key_string() {
    one(json!([{"wait": {}}]), code::INVALID_TASK_KEY, "steps[0].wait.task");
    one(
        json!([{"wait": {"task": ""}}]),
        code::INVALID_TASK_KEY,
        "steps[0].wait.task",
    );
    one(
        json!([{"wait": {"task": 4}}]),
        code::INVALID_TASK_KEY,
        "steps[0].wait.task",
    );
}

#[test]
fn wait_run_public_id_is_a_uuid() {
    for bad in [json!("nope"), json!(1), Value::Null, json!(UUID.replace('-', ""))] {
        one(
            json!([{"wait": {"task": "old", "run_public_id": bad}}]),
            code::WAIT_TARGET_NOT_FOUND,
            "steps[0].wait.run_public_id",
        );
    }
}

// ---- collection ----

#[test]
fn every_fault_is_collected_in_request_order() {
    let got = faults(json!([
        {"key": "r1", "tool": {"name": "", "input": [], "alias": "x"}, "visibility": "loud"},
        {"ask": {"prompt": "?"}},
        {"parallel": []},
        {"wait": {"task": "old", "timeout_ms": 0}, "after": ["ghost"]},
    ]));
    let want: Vec<(&str, String)> = vec![
        (code::INVALID_TASK_KEY, "steps[0].key".into()),
        (code::INVALID_TOOL_NAME, "steps[0].tool.name".into()),
        (code::INVALID_TOOL_INPUT, "steps[0].tool.input".into()),
        (code::INVALID_TOOL_ALIAS, "steps[0].tool.alias".into()),
        (code::INVALID_VISIBILITY, "steps[0].visibility".into()),
        (code::UNSUPPORTED_STEP, "steps[2].parallel".into()),
        (code::INVALID_TIMEOUT_MS, "steps[3].wait.timeout_ms".into()),
        (code::UNKNOWN_TASK_KEY, "steps[3].after[0]".into()),
    ];
    assert_eq!(got, want);
}

#[test]
fn a_good_key_on_a_faulty_step_is_still_visible_later() {
    // The first step fails, but later steps naming its key report nothing extra.
    assert_eq!(
        faults(json!([
            {"key": "a", "tool": {"name": "delegate_task"}},
            {"ask": {"prompt": "?"}, "after": ["a"]},
        ])),
        vec![(code::RESERVED_TOOL_NAME, "steps[0].tool.name".to_owned())]
    );
}

#[test]
fn errors_render_and_prefix() {
    let err = parse(json!([{"ask": {}}])).unwrap_err().prefixed("run.");
    assert_eq!(
        err.to_json(),
        json!([{"code": "invalid", "path": "run.steps[0].ask.prompt"}])
    );
    assert!(err.to_string().contains("invalid"));
}

#[test]
fn every_grammar_word_is_a_documented_invalid_steps_word() {
    // errors-and-auth.md §3 lists these words inside invalid_steps.
    let listed = [
        "steps_required",
        "steps_must_be_an_array",
        "too_many_steps",
        "unsupported_step",
        "unknown_step_option",
        "invalid_task_key",
        "unknown_task_key",
        "too_many_dependencies",
        "too_many_reads",
        "invalid_on_failure",
        "invalid_visibility",
        "invalid_timeout_ms",
        "invalid_tool_name",
        "invalid_tool_input",
        "tool_input_too_large",
        "reserved_tool_name",
        "invalid_tool_route",
        "invalid_tool_call_id",
        "invalid_tool_alias",
        "invalid_tools",
        "invalid_attachments",
        "invalid_ask_options",
        "invalid_ask_multi",
        "wait_target_not_found",
        "invalid",
    ];
    let ours = [
        code::STEPS_REQUIRED,
        code::STEPS_MUST_BE_AN_ARRAY,
        code::TOO_MANY_STEPS,
        code::UNSUPPORTED_STEP,
        code::UNKNOWN_STEP_OPTION,
        code::INVALID_TASK_KEY,
        code::UNKNOWN_TASK_KEY,
        code::TOO_MANY_DEPENDENCIES,
        code::TOO_MANY_READS,
        code::INVALID_ON_FAILURE,
        code::INVALID_VISIBILITY,
        code::INVALID_TIMEOUT_MS,
        code::INVALID_TOOL_NAME,
        code::INVALID_TOOL_INPUT,
        code::TOOL_INPUT_TOO_LARGE,
        code::RESERVED_TOOL_NAME,
        code::INVALID_TOOL_ROUTE,
        code::INVALID_TOOL_CALL_ID,
        code::INVALID_TOOL_ALIAS,
        code::INVALID_TOOLS,
        code::INVALID_ATTACHMENTS,
        code::INVALID_ASK_OPTIONS,
        code::INVALID_ASK_MULTI,
        code::WAIT_TARGET_NOT_FOUND,
        code::INVALID,
    ];
    assert_eq!(ours, listed);
}

// ---- edge authoring ----

#[test]
fn edge_authoring_on_the_run_shell() {
    for field in [
        "tasks",
        "depends_on",
        "input_from",
        "nodes",
        "edges",
        "deliverable",
        "tools",
    ] {
        let shell = json!({"approval_mode": "bypass", field: [], "steps": []});
        assert_eq!(check_edge_authoring(&shell), Err(format!("run.{field}")));
    }
    assert_eq!(
        check_edge_authoring(&json!({"approval_mode": "bypass", "steps": [{"model": {"prompt": "x"}}]})),
        Ok(())
    );
}

#[test]
fn edge_authoring_on_steps() {
    for field in RAW_GRAPH_FIELDS {
        let shell = json!({"steps": [{"ask": {"prompt": "?"}}, {"ask": {"prompt": "?"}, field: ["x"]}]});
        assert_eq!(check_edge_authoring(&shell), Err(format!("run.steps[1].{field}")));
        let inside = json!({"steps": [{"tool": {"name": "read", field: []}}]});
        assert_eq!(check_edge_authoring(&inside), Err(format!("run.steps[0].tool.{field}")));
    }
    // `tools` is a model field, refused only on the shell.
    assert_eq!(
        check_edge_authoring(&json!({"steps": [{"model": {"prompt": "x", "tools": [{}]}}]})),
        Ok(())
    );
    // Shell fields are reported before step fields.
    assert_eq!(
        check_edge_authoring(&json!({"steps": [{"edges": []}], "nodes": []})),
        Err("run.nodes".to_owned())
    );
}

#[test]
fn edge_authoring_on_the_append_body() {
    assert_eq!(
        check_append_edge_authoring(&json!({"steps": [{"ask": {"prompt": "?"}, "depends_on": ["a"]}]})),
        Err("steps[0].depends_on".to_owned())
    );
    assert_eq!(
        check_append_edge_authoring(&json!({"edges": [], "steps": []})),
        Err("edges".to_owned())
    );
    assert_eq!(
        check_append_edge_authoring(&json!({"steps": [{"ask": {"prompt": "?"}}], "expected_revision": 2})),
        Ok(())
    );
}
