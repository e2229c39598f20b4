//! Registry invariants (registry.md §9), the §5 catalog table, and template hygiene.

use std::collections::{BTreeSet, HashMap};

use proptest::prelude::*;
use serde_json::{Value, json};

use super::effect::EFFECT_KEYS;
use super::render::{macros, render_text};
use super::*;

/// registry.md §5: (canonical, wire), in registry order.
const EXPECTED: [(&str, &str); 19] = [
    ("nexus.graph.wait", "wait"),
    ("nexus.graph.delegate_task", "delegate_task"),
    ("nexus.human.ask", "ask"),
    ("nexus.conversation.spawn", "spawn"),
    ("nexus.conversation.send", "send"),
    ("nexus.conversation.status", "status"),
    ("nexus.conversation.cancel", "cancel"),
    ("nexus.memory.read", "memory_read"),
    ("nexus.memory.write", "memory_write"),
    ("nexus.memory.edit", "memory_edit"),
    ("nexus.memory.ls", "memory_ls"),
    ("nexus.memory.grep", "memory_grep"),
    ("nexus.memory.delete", "memory_delete"),
    ("nexus.skill.load", "skill"),
    ("nexus.conversation.search", "session_search"),
    ("nexus.conversation.read", "session_read"),
    ("nexus.tools.search", "tool_search"),
    ("nexus.tools.call", "tool_call"),
    ("nexus.runners.list", "runners_list"),
];

/// registry.md §5: the effect profile of each wire name.
const EXPECTED_EFFECTS: [(&str, EffectProfile); 19] = [
    ("wait", EffectProfile::GRAPH_WRITE),
    ("delegate_task", EffectProfile::GRAPH_WRITE),
    ("ask", EffectProfile::GRAPH_WRITE),
    ("spawn", EffectProfile::GRAPH_WRITE),
    ("send", EffectProfile::GRAPH_WRITE),
    ("status", EffectProfile::READ),
    ("cancel", EffectProfile::GRAPH_WRITE),
    ("memory_read", EffectProfile::READ),
    ("memory_write", EffectProfile::MEMORY_WRITE),
    ("memory_edit", EffectProfile::MEMORY_EDIT),
    ("memory_ls", EffectProfile::READ),
    ("memory_grep", EffectProfile::READ),
    ("memory_delete", EffectProfile::MEMORY_WRITE),
    ("skill", EffectProfile::READ),
    ("session_search", EffectProfile::READ),
    ("session_read", EffectProfile::READ),
    ("tool_search", EffectProfile::READ),
    ("tool_call", EffectProfile::GRAPH_WRITE),
    ("runners_list", EffectProfile::READ),
];

/// One parameter: (name, type, required). A type written `a|b` is the JSON array `["a","b"]`.
type Param = (&'static str, &'static str, bool);

/// registry.md §5: each tool's parameters, in order.
const EXPECTED_PARAMS: [(&str, &[Param]); 19] = [
    (
        "wait",
        &[
            ("task", "string", true),
            ("run_public_id", "string", false),
            ("timeout_ms", "integer", false),
        ],
    ),
    (
        "delegate_task",
        &[
            ("prompt", "string", true),
            ("model", "string", false),
            ("lifetime", "string", false),
            ("wake", "string", false),
            ("wait", "boolean", false),
            ("tools", "array", false),
        ],
    ),
    (
        "ask",
        &[
            ("prompt", "string", true),
            ("options", "array", false),
            ("multi", "boolean", false),
        ],
    ),
    (
        "spawn",
        &[
            ("prompt", "string", true),
            ("agent", "string", false),
            ("label", "string", false),
            ("lifetime", "string", false),
            ("wake", "string", false),
            ("wait", "boolean", false),
            ("default_runner_executor_public_id", "string|null", false),
            ("model", "string", false),
        ],
    ),
    (
        "send",
        &[
            ("to", "string", true),
            ("agent", "string", false),
            ("message", "string", true),
            ("steer", "boolean", false),
            ("deliver_in", "string", false),
            ("deliver_at", "string", false),
            ("wake", "string", false),
            ("model", "string", false),
        ],
    ),
    ("status", &[("to", "string", true)]),
    ("cancel", &[("to", "string", true)]),
    (
        "memory_read",
        &[
            ("path", "string", true),
            ("offset", "integer", false),
            ("limit", "integer", false),
        ],
    ),
    ("memory_write", &[("path", "string", true), ("content", "string", true)]),
    (
        "memory_edit",
        &[
            ("path", "string", true),
            ("old_text", "string", true),
            ("new_text", "string", true),
        ],
    ),
    ("memory_ls", &[("path", "string", false)]),
    (
        "memory_grep",
        &[
            ("pattern", "string", true),
            ("path", "string", false),
            ("ignore_case", "boolean", false),
            ("limit", "integer", false),
        ],
    ),
    ("memory_delete", &[("path", "string", true)]),
    ("skill", &[("name", "string", true)]),
    (
        "session_search",
        &[
            ("query", "string", true),
            ("archived", "string", false),
            ("include_auxiliary", "boolean", false),
            ("limit", "integer", false),
            ("after", "string", false),
        ],
    ),
    (
        "session_read",
        &[
            ("session_id", "string", true),
            ("around_turn_id", "string", false),
            ("after_position", "integer", false),
            ("before_position", "integer", false),
            ("limit", "integer", false),
        ],
    ),
    ("tool_search", &[("query", "string", true), ("limit", "integer", false)]),
    ("tool_call", &[("name", "string", true), ("input", "object", true)]),
    ("runners_list", &[]),
];

/// registry.md §5, "Extra schema": the tools whose schema carries `additionalProperties: false`.
const CLOSED_SCHEMAS: [&str; 9] = [
    "delegate_task",
    "ask",
    "spawn",
    "send",
    "status",
    "cancel",
    "session_search",
    "session_read",
    "runners_list",
];

/// kernel-tools.md §0, "Template requirements": macros each template must use.
const REQUIRED_MACROS: [(&str, &[&str]); 13] = [
    ("wait", &["delegate_task", "spawn"]),
    ("delegate_task", &["wait"]),
    ("spawn", &["send", "status", "cancel"]),
    ("send", &["spawn"]),
    ("status", &["spawn"]),
    ("cancel", &["spawn"]),
    ("skill", &["tool_search"]),
    ("session_search", &["session_read"]),
    ("session_read", &["session_search"]),
    ("tool_search", &["tool_call"]),
    ("tool_call", &["tool_search"]),
    ("runners_list", &["spawn"]),
    ("ask", &[]),
];

/// kernel-tools.md §2: the contract-pinned plain definition of `delegate_task`, compact.
const DELEGATE_TASK_DEFINITION: &str = concat!(
    r#"{"type":"function","function":{"name":"delegate_task","description":"#,
    r#""Start a branch: a fresh copy of yourself that works on one bounded task with your tools and environment, then reports its final message.\n\n"#,
    r#"The branch sees only the prompt you give it, so make the prompt complete: the goal, the inputs, the constraints and what to report.\n\n"#,
    r#"By default the branch runs in the background. This call returns a task reference at once, and the branch's final message is delivered to you when it is ready; call wait with the reference if you need to block on it.\n\n"#,
    r#"Set `wait: true` to run the branch in the foreground: this call returns only when the branch finishes, and its final message is the result of this call.\n\n"#,
    r#"Use `tools` to give the branch fewer tools than you have; it can never receive more.","#,
    r#""parameters":{"type":"object","properties":{"#,
    r#""prompt":{"type":"string","description":"The complete brief for the branch."},"#,
    r#""model":{"type":"string","description":"Optional provider/model for the branch. Omit to use your own model."},"#,
    r#""lifetime":{"type":"string","enum":["turn","conversation"],"description":"turn (default): your reply waits for the branch. conversation: the branch may report after your reply."},"#,
    r#""wake":{"type":"string","enum":["auto","passive"],"description":"auto (default): a late result starts a new turn. passive: it waits for the next turn."},"#,
    r#""wait":{"type":"boolean","default":false,"description":"true: block until the branch finishes and return its final message."},"#,
    r#""tools":{"type":"array","items":{"type":"string"},"description":"Optional subset of your tool names for the branch. Omit to give it all of them."}},"#,
    r#""required":["prompt"],"additionalProperties":false}}}"#,
);

/// kernel-tools.md §4: the spawn wait sentence, verbatim.
const SPAWN_WAIT_SENTENCE: &str =
    "Set `wait: true` to block until the child's first reply arrives; that reply is then the result of this call.";

fn tool(wire: &str) -> &'static KernelTool {
    resolve_wire(wire).unwrap_or_else(|| panic!("{wire} is registered"))
}

fn is_wire_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn is_segment(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

fn props(schema: &Value) -> &serde_json::Map<String, Value> {
    schema["properties"].as_object().expect("properties is an object")
}

/// Every `properties.*.description` of a schema, recursively (items included).
fn param_descriptions(schema: &Value, out: &mut Vec<String>) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for prop in props.values() {
        if let Some(d) = prop.get("description").and_then(Value::as_str) {
            out.push(d.to_owned());
        }
        param_descriptions(prop, out);
        if let Some(items) = prop.get("items") {
            param_descriptions(items, out);
        }
    }
}

/// The template and every parameter description of a tool, unrendered.
fn texts(t: &KernelTool) -> Vec<String> {
    let mut out = vec![t.template.to_owned()];
    param_descriptions(&t.parameter_schema(), &mut out);
    out
}

/// `text` with every kernel macro replaced by `@`.
fn strip_macros(text: &str) -> String {
    let blank: HashMap<String, String> = entries().iter().map(|t| (t.wire.into(), "@".into())).collect();
    render_text(text, &blank)
}

/// Whether `word` occurs in `hay` delimited by non-identifier characters.
fn contains_word(hay: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    hay.match_indices(word).any(|(i, _)| {
        !hay[..i].chars().next_back().is_some_and(ident) && !hay[i + word.len()..].chars().next().is_some_and(ident)
    })
}

// ---- Invariant 1: the table ----

#[test]
fn exactly_nineteen_entries_in_registry_order() {
    let actual: Vec<(&str, &str)> = entries().iter().map(|t| (t.canonical, t.wire)).collect();
    assert_eq!(actual, EXPECTED);
}

#[test]
fn canonical_names_have_three_nexus_segments() {
    let mut seen = BTreeSet::new();
    for t in entries() {
        let segments: Vec<&str> = t.canonical.split('.').collect();
        assert_eq!(segments.len(), 3, "{}", t.canonical);
        assert!(segments.iter().all(|s| is_segment(s)), "{}", t.canonical);
        assert_eq!(segments[0], "nexus", "{}", t.canonical);
        assert_eq!(t.family(), format!("{}.{}", segments[0], segments[1]));
        assert!(seen.insert(t.canonical), "duplicate canonical {}", t.canonical);
    }
}

// ---- Invariant 2: wire names and resolution ----

#[test]
fn wire_names_are_unique_and_well_formed() {
    let mut seen = BTreeSet::new();
    for t in entries() {
        assert!(is_wire_name(t.wire), "{}", t.wire);
        assert!(seen.insert(t.wire), "duplicate wire {}", t.wire);
        assert!(resolve_canonical(t.wire).is_none(), "{} is also a canonical", t.wire);
    }
    assert!(!is_wire_name("Wait") && !is_wire_name("1a") && !is_wire_name("a-b") && !is_wire_name(""));
}

#[test]
fn resolve_accepts_both_spellings() {
    for t in entries() {
        assert!(std::ptr::eq(resolve(t.canonical).unwrap(), *t), "{}", t.canonical);
        assert!(std::ptr::eq(resolve(t.wire).unwrap(), *t), "{}", t.wire);
        assert!(std::ptr::eq(resolve_wire(t.wire).unwrap(), *t));
        assert!(std::ptr::eq(resolve_canonical(t.canonical).unwrap(), *t));
        assert!(resolve_wire(t.canonical).is_none(), "{}", t.canonical);
        assert!(resolve_canonical(t.wire).is_none(), "{}", t.wire);
    }
}

#[test]
fn resolve_refuses_unregistered_names() {
    for name in [
        "read_file",
        "memory_list",
        "conversation_send",
        "nexus.memory",
        "read",
        "",
        "grep",
        "start_process",
        "Wait",
        " wait",
        "nexus.graph",
        "nexus.graph.wait.x",
        "rho.fs.read",
        "nexus.memory.list",
    ] {
        assert!(resolve(name).is_none(), "{name:?} resolved");
        assert!(reserved_family_of(name).is_none(), "{name:?} is reserved");
    }
}

// ---- Invariant 3: classes ----

#[test]
fn each_entry_has_exactly_one_class() {
    for t in entries() {
        let family = t.family();
        let memberships = [
            RESERVED_FAMILIES.contains(&family),
            OVERRIDABLE_FAMILIES.contains(&family),
            SOURCE_ROUTED_FAMILIES.contains(&family),
        ];
        assert_eq!(memberships.iter().filter(|m| **m).count(), 1, "{family}");
        let expected = if family == "nexus.memory" {
            ToolClass::Overridable
        } else if family == "nexus.skill" {
            ToolClass::SourceRouted
        } else {
            ToolClass::Reserved
        };
        assert_eq!(t.class(), expected, "{}", t.canonical);
    }
    assert_eq!(tool("skill").class(), ToolClass::SourceRouted);
    let memory: Vec<&str> = entries()
        .iter()
        .filter(|t| t.class() == ToolClass::Overridable)
        .map(|t| t.wire)
        .collect();
    assert_eq!(
        memory,
        [
            "memory_read",
            "memory_write",
            "memory_edit",
            "memory_ls",
            "memory_grep",
            "memory_delete"
        ]
    );
}

#[test]
fn reserved_family_set_is_exactly_the_five() {
    let expected: BTreeSet<&str> = [
        "nexus.graph",
        "nexus.human",
        "nexus.conversation",
        "nexus.tools",
        "nexus.runners",
    ]
    .into();
    assert_eq!(RESERVED_FAMILIES.iter().copied().collect::<BTreeSet<_>>(), expected);
    let of_entries: BTreeSet<&str> = entries()
        .iter()
        .filter(|t| t.class() == ToolClass::Reserved)
        .map(|t| t.family())
        .collect();
    assert_eq!(of_entries, expected);
    assert_eq!(OVERRIDABLE_FAMILIES, ["nexus.memory"]);
    assert_eq!(SOURCE_ROUTED_FAMILIES, ["nexus.skill"]);
}

#[test]
fn reserved_family_of_answers_in_both_spellings() {
    for t in entries() {
        let expected = (t.class() == ToolClass::Reserved).then(|| t.family());
        assert_eq!(reserved_family_of(t.wire), expected, "{}", t.wire);
        assert_eq!(reserved_family_of(t.canonical), expected, "{}", t.canonical);
    }
    assert_eq!(reserved_family_of("spawn"), Some("nexus.conversation"));
    assert_eq!(reserved_family_of("nexus.tools.call"), Some("nexus.tools"));
    assert_eq!(reserved_family_of("memory_write"), None);
    assert_eq!(reserved_family_of("skill"), None);
}

// ---- Invariant 4: effect profiles ----

#[test]
fn effect_profiles_have_the_five_keys_and_vocabulary_values() {
    let vocabulary: [(&str, &[Value]); 5] = [
        ("kind", &[json!("pure"), json!("read_only"), json!("write")]),
        ("destructive", &[json!(true), json!(false)]),
        ("effect_scope", &[json!("closed"), json!("open")]),
        ("idempotency", &[json!("intrinsic"), json!("keyed"), json!("none")]),
        ("reconciliation", &[json!("none"), json!("lookup")]),
    ];
    for t in entries() {
        let v = t.effect.to_json();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, EFFECT_KEYS, "{}", t.wire);
        assert_eq!(
            keys,
            ["kind", "destructive", "effect_scope", "idempotency", "reconciliation"]
        );
        for (key, allowed) in vocabulary {
            assert!(allowed.contains(&v[key]), "{}: {key} = {}", t.wire, v[key]);
        }
        if v["kind"] == "read_only" || v["kind"] == "pure" {
            assert_eq!(v["destructive"], false, "{} is a destructive read", t.wire);
        }
        assert_eq!(EffectProfile::parse(&v), Ok(t.effect), "{}", t.wire);
    }
}

#[test]
fn effect_profiles_match_the_catalog_table() {
    let actual: Vec<(&str, EffectProfile)> = entries().iter().map(|t| (t.wire, t.effect)).collect();
    assert_eq!(actual, EXPECTED_EFFECTS);
    assert_eq!(
        serde_json::to_string(&tool("memory_edit").effect.to_json()).unwrap(),
        r#"{"kind":"write","destructive":true,"effect_scope":"closed","idempotency":"none","reconciliation":"lookup"}"#
    );
    assert_eq!(
        serde_json::to_string(&tool("status").effect.to_json()).unwrap(),
        r#"{"kind":"read_only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}"#
    );
}

// ---- Parameter schemas (registry.md §5) ----

#[test]
fn parameter_schemas_are_well_formed_objects() {
    for t in entries() {
        let schema = t.parameter_schema();
        let obj = schema.as_object().expect("schema is an object");
        assert_eq!(schema["type"], "object", "{}", t.wire);
        for key in obj.keys() {
            assert!(
                ["type", "properties", "required", "additionalProperties"].contains(&key.as_str()),
                "{}: unexpected schema key {key}",
                t.wire
            );
        }
        let props = props(&schema);
        let required: Vec<&str> = match schema.get("required") {
            Some(r) => r.as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect(),
            None => Vec::new(),
        };
        assert_eq!(
            schema.get("required").is_some(),
            !required.is_empty(),
            "{}: empty required",
            t.wire
        );
        for name in &required {
            assert!(
                props.contains_key(*name),
                "{}: required {name} is not a property",
                t.wire
            );
        }
        assert_eq!(
            required.iter().collect::<BTreeSet<_>>().len(),
            required.len(),
            "{}",
            t.wire
        );
        for (name, prop) in props {
            assert!(prop.get("type").is_some(), "{}.{name} has no type", t.wire);
            let d = prop["description"]
                .as_str()
                .unwrap_or_else(|| panic!("{}.{name} has no description", t.wire));
            assert!(!d.trim().is_empty() && d.ends_with('.'), "{}.{name}: {d:?}", t.wire);
            if prop["type"] == "array" {
                assert_eq!(prop["items"], json!({"type": "string"}), "{}.{name}", t.wire);
            }
        }
    }
}

#[test]
fn parameters_match_the_catalog_table() {
    assert_eq!(EXPECTED_PARAMS.map(|(w, _)| w), EXPECTED.map(|(_, w)| w));
    for (wire, params) in EXPECTED_PARAMS {
        let t = tool(wire);
        let schema = t.parameter_schema();
        let names: Vec<&str> = params.iter().map(|p| p.0).collect();
        assert_eq!(t.parameter_names(), names, "{wire}");
        for (name, ty, _) in params {
            let expected_type = if ty.contains('|') {
                json!(ty.split('|').collect::<Vec<_>>())
            } else {
                json!(ty)
            };
            assert_eq!(props(&schema)[*name]["type"], expected_type, "{wire}.{name}");
        }
        let required: Vec<&str> = params.iter().filter(|p| p.2).map(|p| p.0).collect();
        match schema.get("required") {
            Some(r) => assert_eq!(*r, json!(required), "{wire}"),
            None => assert!(required.is_empty(), "{wire} lacks required"),
        }
        let closed = CLOSED_SCHEMAS.contains(&wire);
        assert_eq!(
            schema.get("additionalProperties"),
            closed.then_some(&Value::Bool(false)),
            "{wire} additionalProperties"
        );
    }
}

/// Every `(wire.param, key, value)` for the given schema key across the registry.
fn keyed(key: &str) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for t in entries() {
        for (name, prop) in props(&t.parameter_schema()) {
            if let Some(v) = prop.get(key) {
                out.insert((format!("{}.{name}", t.wire), v.to_string()));
            }
        }
    }
    out
}

fn set(rows: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    rows.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[test]
fn defaults_bounds_and_enums_match_the_catalog_table() {
    assert_eq!(
        keyed("default"),
        set(&[
            ("delegate_task.wait", "false"),
            ("spawn.wait", "false"),
            ("send.steer", "false"),
            ("tool_search.limit", "5"),
        ])
    );
    assert_eq!(
        keyed("minimum"),
        set(&[
            ("wait.timeout_ms", "1"),
            ("memory_read.offset", "1"),
            ("memory_read.limit", "1"),
            ("memory_grep.limit", "1"),
            ("session_search.limit", "1"),
            ("session_read.after_position", "0"),
            ("session_read.before_position", "0"),
            ("session_read.limit", "1"),
            ("tool_search.limit", "1"),
        ])
    );
    assert_eq!(
        keyed("maximum"),
        set(&[
            ("session_search.limit", "50"),
            ("session_read.limit", "50"),
            ("tool_search.limit", "20")
        ])
    );
    assert_eq!(
        keyed("enum"),
        set(&[
            ("delegate_task.lifetime", r#"["turn","conversation"]"#),
            ("delegate_task.wake", r#"["auto","passive"]"#),
            ("spawn.lifetime", r#"["turn","conversation"]"#),
            ("spawn.wake", r#"["auto","passive"]"#),
            ("send.wake", r#"["auto","passive"]"#),
            ("session_search.archived", r#"["exclude","include","only"]"#),
        ])
    );
}

#[test]
fn pinned_schema_fragments() {
    assert_eq!(
        tool("runners_list").parameter_schema(),
        json!({"type":"object","properties":{},"additionalProperties":false})
    );
    assert_eq!(
        serde_json::to_string(&tool("runners_list").parameter_schema()).unwrap(),
        r#"{"type":"object","properties":{},"additionalProperties":false}"#
    );
    let mut limit = props(&tool("tool_search").parameter_schema())["limit"].clone();
    limit.as_object_mut().unwrap().shift_remove("description");
    assert_eq!(
        serde_json::to_string(&limit).unwrap(),
        r#"{"type":"integer","minimum":1,"maximum":20,"default":5}"#
    );
    let spawn = tool("spawn").parameter_schema();
    assert_eq!(
        props(&spawn)["default_runner_executor_public_id"]["type"],
        json!(["string", "null"])
    );
    assert!(tool("memory_ls").parameter_schema().get("required").is_none());
}

// ---- Invariant 6: templates, macros and the plain render ----

#[test]
fn every_macro_names_a_registered_wire_name() {
    for t in entries() {
        for text in texts(t) {
            for word in macros(&text) {
                assert!(
                    resolve_wire(word).is_some(),
                    "{}: {{{{{word}}}}} is not a kernel wire name",
                    t.wire
                );
            }
        }
    }
}

#[test]
fn templates_use_their_required_macros() {
    for (wire, required) in REQUIRED_MACROS {
        let used: BTreeSet<&str> = macros(tool(wire).template).collect();
        for m in required {
            assert!(used.contains(m), "{wire} template lacks {{{{{m}}}}}");
        }
    }
    assert!(macros(tool("ask").template).next().is_none(), "ask names no other tool");
    for t in entries().iter().filter(|t| t.family() == "nexus.memory") {
        let siblings = macros(t.template)
            .filter(|w| w.starts_with("memory_") && *w != t.wire)
            .count();
        assert!(siblings >= 1, "{} template names no sibling memory tool", t.wire);
    }
}

#[test]
fn no_text_names_its_own_tool_through_a_macro() {
    for t in entries() {
        for text in texts(t) {
            assert!(macros(&text).all(|w| w != t.wire), "{}: self macro", t.wire);
        }
    }
}

#[test]
fn no_bare_kernel_names_outside_macros() {
    for t in entries() {
        for text in texts(t) {
            let stripped = strip_macros(&text);
            for other in entries() {
                // Multi-word wire names are never English: a bare one is a naming mistake.
                if other.wire.contains('_') {
                    assert!(!contains_word(&stripped, other.wire), "{}: bare {}", t.wire, other.wire);
                }
                // A backticked kernel name is a tool name, so it must be a macro.
                let ticked = format!("`{}`", other.wire);
                assert!(!stripped.contains(&ticked), "{}: {ticked}", t.wire);
                assert!(!stripped.contains(other.canonical), "{}: {}", t.wire, other.canonical);
            }
        }
    }
}

#[test]
fn runner_tool_names_are_literal_and_never_backticked() {
    for t in entries() {
        for text in texts(t) {
            let rendered = render_text(&text, &Identity);
            for runner in ["read", "grep", "start_process"] {
                assert!(!rendered.contains(&format!("`{runner}`")), "{}: `{runner}`", t.wire);
                assert!(
                    !text.contains(&format!("{{{{{runner}}}}}")),
                    "{}: {runner} macro",
                    t.wire
                );
            }
            for wire in entries().iter().map(|e| e.wire) {
                assert!(
                    !rendered.contains(&format!("`{wire}`")),
                    "{}: `{wire}` rendered in backticks",
                    t.wire
                );
            }
        }
    }
}

#[test]
fn templates_are_tight_paragraphs() {
    for t in entries() {
        let tpl = t.template;
        assert!(!tpl.contains("TODO"), "{} is a stub", t.wire);
        let paragraphs: Vec<&str> = tpl.split("\n\n").collect();
        assert!(
            (1..=5).contains(&paragraphs.len()),
            "{}: {} paragraphs",
            t.wire,
            paragraphs.len()
        );
        for p in paragraphs {
            assert!(
                !p.is_empty() && p.trim() == p && !p.contains('\n'),
                "{}: paragraph {p:?}",
                t.wire
            );
            assert!(p.ends_with('.'), "{}: paragraph does not end a sentence: {p:?}", t.wire);
        }
        assert!(tpl.len() < 1600, "{}: template is {} bytes", t.wire, tpl.len());
    }
}

#[test]
fn definition_is_the_plain_render() {
    for t in entries() {
        let def = t.definition();
        assert_eq!(*def, t.definition_with(&Identity), "{}", t.wire);
        assert!(
            !serde_json::to_string(def).unwrap().contains("{{"),
            "{}: unrendered macro",
            t.wire
        );
        let function = &def["function"];
        assert_eq!(function["name"], t.wire);
        assert_eq!(function["description"], render_text(t.template, &Identity));
        assert_eq!(function["parameters"], t.rendered_parameters(&Identity));
        let mut descriptions = Vec::new();
        param_descriptions(&function["parameters"], &mut descriptions);
        let mut sources = Vec::new();
        param_descriptions(&t.parameter_schema(), &mut sources);
        let rendered: Vec<String> = sources.iter().map(|s| render_text(s, &Identity)).collect();
        assert_eq!(descriptions, rendered, "{}", t.wire);
    }
}

#[test]
fn definition_has_exactly_the_wire_keys() {
    for t in entries() {
        let def = t.definition();
        let keys: Vec<&str> = def.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["type", "function"], "{}", t.wire);
        assert_eq!(def["type"], "function");
        let fkeys: Vec<&str> = def["function"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(fkeys, ["name", "description", "parameters"], "{}", t.wire);
    }
}

#[test]
fn delegate_task_definition_is_contract_pinned() {
    let def = tool("delegate_task").definition();
    assert_eq!(serde_json::to_string(def).unwrap(), DELEGATE_TASK_DEFINITION);
    assert_eq!(macros(tool("delegate_task").template).collect::<Vec<_>>(), ["wait"]);
}

#[test]
fn spawn_template_contains_the_pinned_wait_sentence() {
    let tpl = tool("spawn").template;
    assert_eq!(tpl.matches(SPAWN_WAIT_SENTENCE).count(), 1);
    assert!(
        tpl.split("\n\n").any(|p| p == SPAWN_WAIT_SENTENCE),
        "the wait sentence stands as its own paragraph"
    );
    assert!(tool("spawn").description(&Identity).contains(SPAWN_WAIT_SENTENCE));
}

#[test]
fn an_alias_spelling_respells_only_kernel_macros() {
    let m: HashMap<String, String> = [("wait".into(), "Await".into()), ("spawn".into(), "spawn_agent".into())].into();
    let d = tool("delegate_task").description(&m);
    assert!(d.contains("call Await with the reference"), "{d}");
    assert!(d.contains("Set `wait: true`"), "a parameter name is not a macro");
    let w = tool("wait").description(&m);
    assert!(w.contains("spawn_agent") && w.contains("delegate_task"), "{w}");
    let p = tool("status").rendered_parameters(&m);
    assert!(props(&p)["to"]["description"].as_str().unwrap().contains("spawn_agent"));
}

#[test]
fn catalog_lists_nineteen_entries_with_the_route_keys() {
    let catalog = catalog();
    let top: Vec<&str> = catalog.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(top, ["tools"]);
    let tools = catalog["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 19);
    for (entry, t) in tools.iter().zip(entries()) {
        let keys: Vec<&str> = entry.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["canonical_name", "name", "effect_profile", "definition", "template"]
        );
        assert_eq!(entry["canonical_name"], t.canonical);
        assert_eq!(entry["name"], t.wire);
        assert_eq!(entry["effect_profile"], t.effect.to_json());
        assert_eq!(entry["definition"], *t.definition());
        assert_eq!(entry["template"], t.template);
    }
}

// ---- Rendering ----

#[test]
fn an_unknown_macro_renders_as_the_bare_word() {
    assert_eq!(render_text("use {{frobnicate}} now", &Identity), "use frobnicate now");
    let m: HashMap<String, String> = [("read".into(), "Read".into()), ("wait".into(), "Await".into())].into();
    assert_eq!(render_text("{{read}} then {{wait}}", &m), "read then Await");
}

#[test]
fn rendering_is_a_single_pass() {
    // Brace text around a macro stays literal, so nested braces lose one level per pass.
    assert_eq!(render_text("{{{{wait}}}}", &Identity), "{{wait}}");
    assert_eq!(render_text("{{ wait }} {{wait}}", &Identity), "{{ wait }} wait");
}

/// Text with no braces, or a well-formed macro of a kernel or arbitrary word.
fn token() -> impl Strategy<Value = (String, String)> {
    let wires: Vec<&'static str> = EXPECTED.iter().map(|(_, w)| *w).collect();
    prop_oneof![
        "[^{}]{0,12}".prop_map(|s| (s.clone(), s)),
        proptest::sample::select(wires).prop_map(|w| (format!("{{{{{w}}}}}"), w.to_owned())),
        "[a-z][a-z0-9_]{0,8}".prop_map(|w| (format!("{{{{{w}}}}}"), w)),
    ]
}

proptest! {
    #[test]
    fn identity_render_never_panics_and_never_grows(s in any::<String>()) {
        let once = render_text(&s, &Identity);
        prop_assert!(once.len() <= s.len());
    }

    #[test]
    fn identity_render_never_panics_on_brace_soup(s in "[{}a-z_ 0-9é]{0,48}") {
        let once = render_text(&s, &Identity);
        prop_assert!(once.len() <= s.len());
        let identity: HashMap<String, String> = EXPECTED.iter().map(|(_, w)| (w.to_string(), w.to_string())).collect();
        prop_assert_eq!(render_text(&s, &identity), once.clone());
        if macros(&s).next().is_none() {
            prop_assert_eq!(once, s);
        }
    }

    #[test]
    fn identity_render_is_idempotent(tokens in proptest::collection::vec(token(), 0..12)) {
        let source: String = tokens.iter().map(|t| t.0.as_str()).collect();
        let expected: String = tokens.iter().map(|t| t.1.as_str()).collect();
        let once = render_text(&source, &Identity);
        prop_assert_eq!(&once, &expected);
        prop_assert_eq!(render_text(&once, &Identity), once);
    }
}
