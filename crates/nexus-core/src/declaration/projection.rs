//! Provider (wire) projection (declarations.md §10).

use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::entry::{self, Kind, Parsed};
use super::render::{alias_function, spelling_map};

/// What projection needs to know of one stored entry.
pub(crate) struct Facts {
    pub parsed: Option<Parsed>,
    pub deferred: bool,
}

impl Facts {
    fn resolves_to(&self, canonical: &str) -> bool {
        self.parsed
            .as_ref()
            .and_then(Parsed::kernel_tool)
            .is_some_and(|t| t.canonical == canonical)
    }

    /// A skill callable: resolves to `nexus.skill.load`, or routes to a served `skill`.
    pub fn is_skill_callable(&self) -> bool {
        self.resolves_to("nexus.skill.load")
            || matches!(&self.parsed, Some(Parsed { kind: Kind::Routed { route, .. } }) if route.tool_name == "skill")
    }
}

pub(crate) fn facts(declaration: &[Value]) -> Vec<Facts> {
    declaration
        .iter()
        .map(|v| Facts {
            parsed: entry::parse(v, &String::new, true).ok(),
            deferred: v.get("defer_loading") == Some(&Value::Bool(true)),
        })
        .collect()
}

/// The indices of the entries that are projected, in stored order (deferred and skill
/// omission applied).
pub(crate) fn projected(facts: &[Facts], skills: &[Value]) -> Vec<usize> {
    let eager = |c: &str| facts.iter().any(|f| !f.deferred && f.resolves_to(c));
    let omit_deferred = eager("nexus.tools.search") && eager("nexus.tools.call");
    let catalogued: HashSet<&str> = skills
        .iter()
        .filter_map(|s| s.get("callable").and_then(Value::as_str))
        .collect();
    facts
        .iter()
        .enumerate()
        .filter(|(_, f)| !(omit_deferred && f.deferred))
        .filter(|(_, f)| {
            !f.is_skill_callable()
                || f.parsed
                    .as_ref()
                    .and_then(Parsed::callable)
                    .is_some_and(|c| catalogued.contains(c))
        })
        .map(|(i, _)| i)
        .collect()
}

/// The provider projection of a stored declaration, in stored order: alias facts, routes and
/// `defer_loading` stripped; every function in nested form with `"strict": false` appended last
/// in `function` when neither level carries `strict`; deferred entries omitted when an eager
/// `tool_search` and an eager `tool_call` are both declared; skill callables with an empty
/// frozen catalog (`skills`, §11 entries) omitted. Shape-5 entries pass untouched.
pub fn project(declaration: &[Value], skills: &[Value]) -> Vec<Value> {
    let facts = facts(declaration);
    let map = OnceCell::new();
    projected(&facts, skills)
        .into_iter()
        .map(|i| {
            project_entry(&declaration[i], facts[i].parsed.as_ref(), || {
                map.get_or_init(|| {
                    let parsed: Vec<Parsed> = facts.iter().filter_map(|f| f.parsed.clone()).collect();
                    spelling_map(&parsed)
                })
            })
        })
        .collect()
}

/// The entries [`project`] omits because they are deferred (declarations.md §10: an eager
/// `tool_search` and an eager `tool_call` are both declared), in their wire form without
/// `defer_loading`, in stored order: what a provider with server-side tool search sends marked
/// for deferred loading instead (providers.md §5.3). Empty when nothing is omitted.
pub fn project_deferred(declaration: &[Value], skills: &[Value]) -> Vec<Value> {
    let facts = facts(declaration);
    let kept = projected(&facts, skills);
    let map = OnceCell::new();
    facts
        .iter()
        .enumerate()
        .filter(|(i, f)| f.deferred && !kept.contains(i))
        .filter(|(_, f)| !f.is_skill_callable())
        .map(|(i, f)| {
            let mut out = project_entry(&declaration[i], f.parsed.as_ref(), || {
                map.get_or_init(|| {
                    let parsed: Vec<Parsed> = facts.iter().filter_map(|f| f.parsed.clone()).collect();
                    spelling_map(&parsed)
                })
            });
            if let Value::Object(m) = &mut out {
                m.shift_remove("defer_loading");
            }
            out
        })
        .collect()
}

/// The wire form of one stored entry, as [`project`] gives it when the entry is projected.
/// `map` supplies the declaration's alias spelling map; it is called only for an alias without
/// its own `function` block.
pub(crate) fn project_entry<'m>(
    value: &Value,
    parsed: Option<&Parsed>,
    map: impl FnOnce() -> &'m HashMap<String, String>,
) -> Value {
    match parsed.map(|p| &p.kind) {
        Some(Kind::Alias(a)) => {
            let function = match &a.function_block {
                Some(Value::Object(f)) => {
                    let mut out = Map::new();
                    for key in ["name", "description", "parameters"] {
                        if let Some(v) = f.get(key) {
                            out.insert(key.into(), v.clone());
                        }
                    }
                    out
                }
                _ => match alias_function(a, map()) {
                    Value::Object(f) => f,
                    _ => unreachable!("alias_function builds an object"),
                },
            };
            wrap(Map::new(), function, None)
        }
        Some(Kind::Function { .. } | Kind::Routed { .. }) => nested(value),
        _ => value.clone(),
    }
}

/// The wire form of one stored entry with deferral and skill omission disabled (every callable
/// has its definition), `defer_loading` stripped. `map` as for [`project_entry`].
pub(crate) fn project_one<'m>(value: &Value, map: impl FnOnce() -> &'m HashMap<String, String>) -> Value {
    let parsed = entry::parse(value, &String::new, true).ok();
    let mut out = project_entry(value, parsed.as_ref(), map);
    if let Value::Object(m) = &mut out {
        m.shift_remove("defer_loading");
    }
    out
}

fn wrap(mut top: Map<String, Value>, mut function: Map<String, Value>, strict: Option<&Value>) -> Value {
    if !function.contains_key("strict") {
        function.insert("strict".into(), strict.cloned().unwrap_or(Value::Bool(false)));
    }
    let mut out = Map::new();
    out.insert("type".into(), Value::String("function".into()));
    out.insert("function".into(), Value::Object(function));
    out.append(&mut top);
    Value::Object(out)
}

fn nested(value: &Value) -> Value {
    let Some(obj) = value.as_object() else {
        return value.clone();
    };
    let strict = obj.get("strict");
    let mut top = Map::new();
    if let Some(Value::Object(f)) = obj.get("function") {
        for (k, v) in obj {
            if !matches!(k.as_str(), "type" | "function" | "route" | "defer_loading" | "strict") {
                top.insert(k.clone(), v.clone());
            }
        }
        return wrap(top, f.clone(), strict);
    }
    let mut function = Map::new();
    for (k, v) in obj {
        if !matches!(k.as_str(), "type" | "route" | "defer_loading") {
            function.insert(k.clone(), v.clone());
        }
    }
    wrap(top, function, None)
}
