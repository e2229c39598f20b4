//! The spelling map (declarations.md §4.2) and the render (§4.3).

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::alias::AliasFacts;
use super::entry::{Kind, Parsed};
use crate::registry::{self, KernelTool, Spelling, render::render_text};

/// A kernel tool's unrendered parameter schema, parsed once per process.
pub(crate) fn schema_of(tool: &KernelTool) -> &'static Value {
    static SCHEMAS: OnceLock<HashMap<&'static str, Value>> = OnceLock::new();
    SCHEMAS
        .get_or_init(|| {
            registry::entries()
                .iter()
                .map(|t| (t.wire, t.parameter_schema()))
                .collect()
        })
        .get(tool.wire)
        .expect("every registry entry has a schema")
}

/// The parameter schema with its descriptions rendered with `spelling` (as
/// [`KernelTool::rendered_parameters`], from the cached parse).
fn rendered_schema(tool: &KernelTool, spelling: &dyn Spelling) -> Value {
    let mut schema = schema_of(tool).clone();
    registry::render::render_schema_descriptions(&mut schema, spelling);
    schema
}

/// `{type:"function", function:{name, description, parameters}}` under `spelling` (as
/// [`KernelTool::definition_with`], from the cached parse).
fn definition_with(tool: &KernelTool, spelling: &dyn Spelling) -> Value {
    let mut function = Map::new();
    function.insert("name".into(), Value::String(tool.wire.to_string()));
    function.insert("description".into(), Value::String(tool.description(spelling)));
    function.insert("parameters".into(), rendered_schema(tool, spelling));
    let mut def = Map::new();
    def.insert("type".into(), Value::String("function".into()));
    def.insert("function".into(), Value::Object(function));
    Value::Object(def)
}

/// The spelling map M of a parsed set, holding only the wire names that are not spelled as
/// themselves.
pub(crate) fn spelling_map(parsed: &[Parsed]) -> HashMap<String, String> {
    let mut map: HashMap<String, String> = HashMap::new();
    let plain: Vec<&str> = parsed
        .iter()
        .filter_map(|p| match &p.kind {
            Kind::Function { kernel: Some(t), .. } => Some(t.wire),
            _ => None,
        })
        .collect();
    for p in parsed {
        let Kind::Alias(a) = &p.kind else { continue };
        let wire = a.tool.wire;
        if plain.contains(&wire) {
            continue;
        }
        match map.get(wire) {
            Some(current) if current.as_bytes() <= a.name.as_bytes() => {}
            _ => {
                map.insert(wire.to_string(), a.name.clone());
            }
        }
    }
    // An alias spelled exactly as its own wire name (an identity alias) needs no entry.
    map.retain(|wire, name| wire != name);
    map
}

/// M, except that the alias's own canonical spells as the alias's own name.
struct AliasSpelling<'a> {
    map: &'a HashMap<String, String>,
    wire: &'a str,
    name: &'a str,
}

impl Spelling for AliasSpelling<'_> {
    fn spell(&self, wire: &str) -> Option<&str> {
        if wire == self.wire {
            Some(self.name)
        } else {
            self.map.get(wire).map(String::as_str)
        }
    }
}

/// The `function` block of a rendered alias: `{name, description, parameters}`.
pub(crate) fn alias_function(facts: &AliasFacts, map: &HashMap<String, String>) -> Value {
    let spelling = AliasSpelling {
        map,
        wire: facts.tool.wire,
        name: &facts.name,
    };
    let description = match &facts.description {
        Some(d) => render_text(d, &spelling),
        None => facts.tool.description(&spelling),
    };
    let mut schema = rendered_schema(facts.tool, &spelling);
    // With nothing mapped or omitted the properties stay as the kernel's.
    let reshaped = !facts.params.is_empty() || !facts.omit.is_empty();
    if reshaped && let Some(Value::Object(props)) = schema.get_mut("properties") {
        let old = std::mem::take(props);
        for (key, mut prop) in old {
            if facts.omit.contains(&key) {
                continue;
            }
            match facts.params.iter().find(|p| p.maps_to == key) {
                Some(param) => {
                    if let Value::Object(obj) = &mut prop {
                        if param.invert
                            && let Some(Value::Bool(b)) = obj.get_mut("default")
                        {
                            *b = !*b;
                        }
                        if let Some(d) = &param.description {
                            obj.insert("description".into(), Value::String(render_text(d, &spelling)));
                        }
                    }
                    props.insert(param.name.clone(), prop);
                }
                None => {
                    props.insert(key, prop);
                }
            }
        }
    }
    if let Some(obj) = schema.as_object_mut()
        && let Some(Value::Array(required)) = obj.get_mut("required")
    {
        let renamed: Vec<Value> = required
            .iter()
            .filter_map(|r| {
                let r = r.as_str()?;
                if facts.omit.iter().any(|o| o == r) {
                    return None;
                }
                Some(Value::String(
                    facts
                        .params
                        .iter()
                        .find(|p| p.maps_to == r)
                        .map_or(r, |p| p.name.as_str())
                        .to_string(),
                ))
            })
            .collect();
        if renamed.is_empty() {
            obj.shift_remove("required");
        } else {
            *required = renamed;
        }
    }
    let mut function = Map::new();
    function.insert("name".into(), Value::String(facts.name.clone()));
    function.insert("description".into(), Value::String(description));
    function.insert("parameters".into(), schema);
    Value::Object(function)
}

/// A rendered alias entry:
/// `{type:"function", function:{name, description, parameters}, canonical, params?, omit?,
/// description?, defer_loading?}`.
pub(crate) fn alias_entry(facts: &AliasFacts, map: &HashMap<String, String>) -> Value {
    let mut entry = Map::new();
    entry.insert("type".into(), Value::String("function".into()));
    entry.insert("function".into(), alias_function(facts, map));
    entry.insert("canonical".into(), Value::String(facts.canonical.clone()));
    if let Some(p) = &facts.raw_params {
        entry.insert("params".into(), p.clone());
    }
    if let Some(o) = &facts.raw_omit {
        entry.insert("omit".into(), o.clone());
    }
    if let Some(d) = &facts.description {
        entry.insert("description".into(), Value::String(d.clone()));
    }
    if let Some(d) = facts.defer_loading {
        entry.insert("defer_loading".into(), Value::Bool(d));
    }
    Value::Object(entry)
}

/// A plain kernel entry re-rendered from its template with M, keeping its `defer_loading`.
pub(crate) fn plain_entry(tool: &KernelTool, map: &HashMap<String, String>, defer: Option<bool>) -> Value {
    let mut def = if map.is_empty() {
        tool.definition().clone()
    } else {
        definition_with(tool, map)
    };
    if let (Some(d), Value::Object(obj)) = (defer, &mut def) {
        obj.insert("defer_loading".into(), Value::Bool(d));
    }
    def
}

/// Whether two values have the same compact serialization, member order included, compared
/// without serializing either. Strings, keys, booleans and null serialize injectively; a
/// number's bytes are its value and form (integer or float, and for a float its exact bits,
/// so `0.0` and `-0.0` differ as their bytes do).
pub(crate) fn same_bytes(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => {
            x == y && (!x.is_f64() || x.as_f64().map(f64::to_bits) == y.as_f64().map(f64::to_bits))
        }
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_bytes(x, y)),
        (Value::Object(x), Value::Object(y)) => same_members(x.iter(), y),
        _ => false,
    }
}

/// Whether `members`, in order, are exactly the members of `object`, in order (by
/// [`same_bytes`]).
fn same_members<'a>(mut members: impl Iterator<Item = (&'a String, &'a Value)>, object: &Map<String, Value>) -> bool {
    let mut want = object.iter();
    loop {
        match (members.next(), want.next()) {
            (None, None) => return true,
            (Some((k, v)), Some((wk, wv))) if k == wk && same_bytes(v, wv) => {}
            _ => return false,
        }
    }
}

/// Whether a function entry's §3 normalization (nested form, top-level `defer_loading`
/// removed) has exactly the compact bytes of `target`. The normalization is read in place:
/// the nested form is the entry without `defer_loading`; the flat form is
/// `{"type": <type or null>, "function": {<the other members but defer_loading>}}`.
pub(crate) fn normalized_is(entry: &Map<String, Value>, target: &Value) -> bool {
    let Value::Object(target) = target else {
        return false;
    };
    if entry.contains_key("function") {
        return same_members(entry.iter().filter(|(k, _)| k.as_str() != "defer_loading"), target);
    }
    let mut want = target.iter();
    let (Some((type_key, ty)), Some((function_key, Value::Object(function))), None) =
        (want.next(), want.next(), want.next())
    else {
        return false;
    };
    type_key == "type"
        && function_key == "function"
        && same_bytes(entry.get("type").unwrap_or(&Value::Null), ty)
        && same_members(
            entry
                .iter()
                .filter(|(k, _)| k.as_str() != "type" && k.as_str() != "defer_loading"),
            function,
        )
}

/// Whether a plain kernel entry is already in rendered form: `{type, function}` with an optional
/// trailing `defer_loading`.
fn is_rendered_form(entry: &Value) -> bool {
    let Some(obj) = entry.as_object() else { return false };
    let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    matches!(
        keys.as_slice(),
        ["type", "function"] | ["type", "function", "defer_loading"]
    )
}

/// The stored render of a parsed set (§4.3), in place: alias and plain kernel entries are
/// replaced, every other entry is moved through untouched.
pub(crate) fn render_set(values: Vec<Value>, parsed: &[Parsed]) -> Vec<Value> {
    render(values, parsed, false)
}

/// [`render_set`] of a set whose byte checks (§3) just ran under this same spelling map: every
/// plain kernel entry's normalized bytes are then known to be the catalog's when the map is
/// empty, and are not compared again.
pub(crate) fn render_checked_set(values: Vec<Value>, parsed: &[Parsed]) -> Vec<Value> {
    render(values, parsed, true)
}

fn render(mut values: Vec<Value>, parsed: &[Parsed], checked: bool) -> Vec<Value> {
    if !parsed.iter().any(|p| matches!(p.kind, Kind::Alias(_))) {
        return values;
    }
    let map = spelling_map(parsed);
    for (value, p) in values.iter_mut().zip(parsed) {
        match &p.kind {
            Kind::Alias(a) => *value = alias_entry(a, &map),
            Kind::Function { kernel: Some(tool), .. } => {
                // Under an empty map an entry in rendered form holding the catalog bytes is
                // already its own render.
                if map.is_empty()
                    && is_rendered_form(value)
                    && (checked || value.as_object().is_some_and(|o| normalized_is(o, tool.definition())))
                {
                    continue;
                }
                let defer = value.get("defer_loading").and_then(Value::as_bool);
                *value = plain_entry(tool, &map, defer);
            }
            _ => {}
        }
    }
    values
}

/// The spelling map M (§4.2) of a stored declaration: kernel wire name → callable, holding only
/// the names not spelled as themselves. Entries that do not parse are ignored.
pub fn spelling_map_of(set: &[Value]) -> HashMap<String, String> {
    let parsed: Vec<Parsed> = set
        .iter()
        .filter_map(|v| super::entry::parse(v, &String::new, true).ok())
        .collect();
    spelling_map(&parsed)
}
