//! Adaptation packs: the shipped data and the "Applying a style" algorithm.

use nexus_sdk::adaptations::{self, AdaptationError, AliasParam, AliasSpec, Presets, Recut, Row};
use nexus_sdk::{Catalog, tools};
use serde_json::{Value, json};

const AGENT_ANCHOR: &str = "Set `wait: true` to run the branch in the foreground: this call returns only when the branch finishes, and its final message is the result of this call.";
const AGENT_REPLACEMENT: &str = "Set `run_in_background: false` to run the branch in the foreground: this call returns only when the branch finishes, and its final message is the result of this call.";
const SPAWN_ANCHOR: &str =
    "Set `wait: true` to block until the child's first reply arrives; that reply is then the result of this call.";

fn catalog() -> Catalog {
    serde_json::from_value(nexus_core::registry::catalog()).expect("the catalog deserializes")
}

fn names(out: &[Value]) -> Vec<String> {
    out.iter()
        .map(|v| {
            v.get("name")
                .or_else(|| v["function"].get("name"))
                .and_then(Value::as_str)
                .expect("every entry is named")
                .to_owned()
        })
        .collect()
}

fn alias<'a>(out: &'a [Value], name: &str) -> &'a Value {
    out.iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(name))
        .unwrap_or_else(|| panic!("{name} is emitted"))
}

fn plain_names(catalog: &Catalog) -> Vec<String> {
    catalog.tools.iter().map(|e| e.name.clone()).collect()
}

// --- shipped data ----------------------------------------------------------------------------

#[test]
fn presets_load_and_validate() {
    let presets = Presets::shipped();
    assert_eq!(presets.format, 1);
    assert_eq!(presets.words, ["nexus", "claude", "codex"]);
    assert!(presets.preset("nexus").is_none());
    assert_eq!(
        presets.preset("claude").unwrap().supersedes,
        [tools::DELEGATE_TASK, tools::ASK, tools::SKILL]
    );
    assert_eq!(presets.preset("codex").unwrap().supersedes, [tools::SPAWN, tools::SEND]);
    let names: Vec<_> = presets.aliases().map(|a| a.name.as_str()).collect();
    assert_eq!(
        names,
        ["Agent", "AskUserQuestion", "Skill", "spawn_agent", "send_message"]
    );
    presets.validate().unwrap();
}

#[test]
fn plain_names_match_the_registry() {
    let presets = Presets::shipped();
    for (canonical, wire) in &presets.plain {
        let entry = nexus_core::registry::resolve_canonical(canonical).expect(canonical);
        assert_eq!(entry.wire, wire);
    }
    for preset in presets.presets.values() {
        for canonical in &preset.supersedes {
            assert!(presets.plain_name(canonical).is_some(), "{canonical}");
        }
    }
}

#[test]
fn preset_aliases_name_live_tools_and_their_parameters() {
    for alias in Presets::shipped().aliases() {
        let tool = nexus_core::registry::resolve_canonical(&alias.canonical)
            .unwrap_or_else(|| panic!("{} names a live canonical", alias.name));
        let kernel_params = tool.parameter_names();
        for p in &alias.params {
            assert!(kernel_params.contains(&p.maps_to), "{}.{}", alias.name, p.maps_to);
            if p.invert == Some(true) {
                assert!(p.description.is_some(), "an inverted param needs a description");
            }
        }
        for o in &alias.omit {
            assert!(kernel_params.contains(o), "{} omits {o}", alias.name);
        }
        assert!(nexus_core::registry::resolve(&alias.name).is_none(), "{}", alias.name);
    }
}

#[test]
fn the_preset_tables_are_exact() {
    let agent = Presets::shipped().aliases().find(|a| a.name == "Agent").unwrap();
    assert_eq!(
        agent.params,
        [AliasParam {
            name: "run_in_background".into(),
            maps_to: "wait".into(),
            invert: Some(true),
            description: Some("false: block until the branch finishes and return its final message.".into()),
        }]
    );
    assert_eq!(
        agent.recut,
        Some(Recut {
            anchor: AGENT_ANCHOR.into(),
            replacement: AGENT_REPLACEMENT.into()
        })
    );
    let spawn = Presets::shipped().aliases().find(|a| a.name == "spawn_agent").unwrap();
    assert_eq!(spawn.omit, ["wait"]);
    assert_eq!(spawn.recut.as_ref().unwrap().anchor, SPAWN_ANCHOR);
}

#[test]
fn shipped_rows_and_model_globs() {
    let default = Row::shipped("default").unwrap();
    assert_eq!(default.tool_style, ["nexus"]);
    assert!(default.models.is_empty());
    assert_eq!(Row::shipped("claude").unwrap().models, ["claude-*"]);
    assert_eq!(Row::shipped("codex").unwrap().models, ["gpt-*", "codex-*"]);
    assert!(Row::shipped("gemini").is_none());

    assert_eq!(Row::for_model("claude-sonnet-4").row, "claude");
    assert_eq!(Row::for_model("gpt-5").row, "codex");
    assert_eq!(Row::for_model("codex-mini-latest").row, "codex");
    assert_eq!(Row::for_model("llama-3").row, "default");
    assert_eq!(Row::for_model("claude").row, "default");
    assert_eq!(Row::for_ref("anthropic/claude-opus-4").row, "claude");
    assert_eq!(Row::for_ref("scripted/echo").row, "default");

    for row in Row::all_shipped() {
        for style in &row.tool_style {
            assert!(Presets::shipped().words.contains(style), "{style}");
        }
    }
}

#[test]
fn pack_grammar_refusals() {
    let both = r#"{"format":1,"row":"x","models":["m"],"tool_style":["nexus"],
        "tool_descriptions":[{"name":"A","canonical":"nexus.human.ask","description":"d",
        "recut":{"anchor":"a","replacement":"b"}}]}"#;
    assert_eq!(
        Row::parse(both),
        Err(AdaptationError::DescriptionAndRecut { name: "A".into() })
    );
    assert!(matches!(
        Row::parse(r#"{"format":2,"row":"x","tool_style":["nexus"]}"#),
        Err(AdaptationError::Parse(_))
    ));
    assert!(matches!(
        Row::parse(r#"{"format":1,"row":"default","models":["x"],"tool_style":["nexus"]}"#),
        Err(AdaptationError::Parse(_))
    ));
    assert!(matches!(
        Presets::parse(r#"{"format":1,"words":["nexus"],"presets":{"gemini":{}}}"#),
        Err(AdaptationError::UnknownStyle(w)) if w == "gemini"
    ));
    assert!(matches!(
        Presets::parse(r#"{"format":1,"words":["claude"]}"#),
        Err(AdaptationError::Parse(_))
    ));
}

#[test]
fn alias_specs_round_trip_with_param_order() {
    let text = r#"{"name":"X","canonical":"nexus.conversation.send","params":{"zeta":{"maps_to":"to"},"alpha":{"maps_to":"message","description":"m"}},"omit":["steer"]}"#;
    let spec: AliasSpec = serde_json::from_str(text).unwrap();
    assert_eq!(spec.params[0].name, "zeta");
    assert_eq!(serde_json::to_string(&spec).unwrap(), text);
}

// --- applying a style ------------------------------------------------------------------------

#[test]
fn nexus_keeps_all_nineteen_plain_definitions() {
    let catalog = catalog();
    let out = adaptations::apply(&catalog, &["nexus"], &[]).unwrap();
    assert_eq!(out.len(), 19);
    for (got, entry) in out.iter().zip(&catalog.tools) {
        assert_eq!(got, &entry.definition);
    }
    assert_eq!(Row::for_model("llama").apply(&catalog).unwrap(), out);
}

#[test]
fn claude_supersedes_delegate_task_ask_and_skill() {
    let catalog = catalog();
    let out = adaptations::apply(&catalog, &["claude"], &[]).unwrap();
    let mut expected: Vec<String> = plain_names(&catalog)
        .into_iter()
        .filter(|n| !["delegate_task", "ask", "skill"].contains(&n.as_str()))
        .collect();
    expected.extend(["Agent", "AskUserQuestion", "Skill"].map(String::from));
    assert_eq!(names(&out), expected);

    let template = catalog.template_for(tools::DELEGATE_TASK).unwrap();
    let agent = alias(&out, "Agent");
    let expected_agent = json!({
        "name": "Agent",
        "canonical": "nexus.graph.delegate_task",
        "params": {"run_in_background": {"maps_to": "wait", "invert": true,
            "description": "false: block until the branch finishes and return its final message."}},
        "description": template.replacen(AGENT_ANCHOR, AGENT_REPLACEMENT, 1),
    });
    assert_eq!(
        serde_json::to_string(agent).unwrap(),
        serde_json::to_string(&expected_agent).unwrap()
    );
    let description = agent["description"].as_str().unwrap();
    assert!(description.contains(AGENT_REPLACEMENT));
    assert!(!description.contains("`wait: true`"));
    assert!(description.contains("{{wait}}"), "macros stay for the kernel to render");

    assert_eq!(
        serde_json::to_string(alias(&out, "AskUserQuestion")).unwrap(),
        r#"{"name":"AskUserQuestion","canonical":"nexus.human.ask"}"#
    );
    assert_eq!(
        serde_json::to_string(alias(&out, "Skill")).unwrap(),
        r#"{"name":"Skill","canonical":"nexus.skill.load","params":{"skill":{"maps_to":"name","description":"Name of the skill to load."}}}"#
    );
    assert_eq!(Row::for_model("claude-opus-4").apply(&catalog).unwrap(), out);
}

#[test]
fn nexus_and_claude_keep_the_plain_ones_too() {
    let catalog = catalog();
    let out = adaptations::apply(&catalog, &["nexus", "claude"], &[]).unwrap();
    let mut expected = plain_names(&catalog);
    expected.extend(["Agent", "AskUserQuestion", "Skill"].map(String::from));
    assert_eq!(names(&out), expected);
    // Style order in the call does not matter; `words` order does.
    let swapped = adaptations::apply(&catalog, &["claude", "nexus"], &[]).unwrap();
    assert_eq!(swapped, out);
}

#[test]
fn presets_apply_in_words_order_then_row_descriptions() {
    let catalog = catalog();
    let row = [AliasSpec {
        description: Some("Read a file of your memory.".into()),
        ..AliasSpec::new("ReadMemory", tools::MEMORY_READ)
    }];
    let out = adaptations::apply(&catalog, &["codex", "claude"], &row).unwrap();
    let tail: Vec<String> = names(&out).split_off(out.len() - 6);
    assert_eq!(
        tail,
        [
            "Agent",
            "AskUserQuestion",
            "Skill",
            "spawn_agent",
            "send_message",
            "ReadMemory"
        ]
    );
    assert_eq!(out.len(), 19 - 5 + 6);
    assert_eq!(
        serde_json::to_string(alias(&out, "ReadMemory")).unwrap(),
        r#"{"name":"ReadMemory","canonical":"nexus.memory.read","description":"Read a file of your memory."}"#
    );
}

#[test]
fn an_alias_whose_canonical_was_not_fetched_is_not_emitted() {
    let mut catalog = catalog();
    catalog
        .tools
        .retain(|e| e.canonical_name != tools::SKILL && e.canonical_name != tools::DELEGATE_TASK);
    let row = [AliasSpec::new("Gone", tools::SKILL)];
    let out = adaptations::apply(&catalog, &["claude"], &row).unwrap();
    let names = names(&out);
    assert!(names.contains(&"AskUserQuestion".to_owned()));
    for absent in ["Agent", "Skill", "Gone", "skill", "delegate_task", "ask"] {
        assert!(!names.contains(&absent.to_owned()), "{absent}");
    }
    assert_eq!(out.len(), 17 - 1 + 1);
}

#[test]
fn a_moved_anchor_fails_loudly() {
    let mut catalog = catalog();
    let entry = catalog
        .tools
        .iter_mut()
        .find(|e| e.canonical_name == tools::DELEGATE_TASK)
        .unwrap();
    entry.template = entry.template.replace("in the foreground", "synchronously");
    let err = adaptations::apply(&catalog, &["claude"], &[]).unwrap_err();
    assert_eq!(
        err,
        AdaptationError::AnchorMoved {
            canonical: tools::DELEGATE_TASK.into(),
            anchor: AGENT_ANCHOR.into()
        }
    );
    // A missing template is the same failure, never a silent fallback.
    let mut catalog = self::catalog();
    for e in &mut catalog.tools {
        e.template.clear();
    }
    assert!(matches!(
        adaptations::apply(&catalog, &["claude"], &[]),
        Err(AdaptationError::AnchorMoved { .. })
    ));
    // The plain style reads no template.
    assert_eq!(adaptations::apply(&catalog, &["nexus"], &[]).unwrap().len(), 19);
}

#[test]
fn a_recut_replaces_only_the_first_occurrence() {
    let recut = Recut {
        anchor: "a".into(),
        replacement: "b".into(),
    };
    assert_eq!(recut.apply("t", "a-a").unwrap(), "b-a");
}

#[test]
fn unknown_styles_and_exclusive_descriptions_are_refused() {
    let catalog = catalog();
    assert_eq!(
        adaptations::apply(&catalog, &["gemini"], &[]),
        Err(AdaptationError::UnknownStyle("gemini".into()))
    );
    let both = AliasSpec {
        description: Some("d".into()),
        recut: Some(Recut {
            anchor: "x".into(),
            replacement: "y".into(),
        }),
        ..AliasSpec::new("Both", tools::ASK)
    };
    assert_eq!(
        adaptations::apply(&catalog, &["nexus"], &[both]),
        Err(AdaptationError::DescriptionAndRecut { name: "Both".into() })
    );
}

#[test]
fn codex_spawn_agent_recuts_the_pinned_wait_sentence() {
    let catalog = catalog();
    let template = catalog.template_for(tools::SPAWN).unwrap();
    assert!(
        template.contains(SPAWN_ANCHOR),
        "the spawn template pins the wait sentence"
    );
    let out = adaptations::apply(&catalog, &["codex"], &[]).unwrap();
    let names = names(&out);
    assert!(!names.contains(&"spawn".to_owned()) && !names.contains(&"send".to_owned()));
    let spawn = alias(&out, "spawn_agent");
    assert_eq!(spawn["omit"], json!(["wait"]));
    let description = spawn["description"].as_str().unwrap();
    assert!(!description.contains(SPAWN_ANCHOR));
    assert!(description.contains("This call returns at once"));
    assert_eq!(
        serde_json::to_string(alias(&out, "send_message")).unwrap(),
        r#"{"name":"send_message","canonical":"nexus.conversation.send","params":{"target":{"maps_to":"to","description":"Child label or conversation id."}}}"#
    );
    assert_eq!(Row::for_model("gpt-5").apply(&catalog).unwrap(), out);
}
