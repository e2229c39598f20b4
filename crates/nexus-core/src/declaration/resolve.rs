//! Call resolution (declarations.md §5): the one place a model call becomes a row.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::alias::AliasFacts;
use super::entry::{self, Kind, Route, callable_of};

/// What a model call becomes on its tool row.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedCall {
    /// The row's `tool_name`: the call name, the route's served name, or the alias's canonical
    /// wire name.
    pub tool_name: String,
    /// The row's `tool_input` (mapped for aliases; otherwise the arguments unchanged).
    pub tool_input: Value,
    /// The row's `tool_alias`: always the call name for aliases, the call name for routed
    /// entries whose served name differs, else `None`.
    pub tool_alias: Option<String>,
    /// The index of the declared entry, or `None` when the name is not declared (the row then
    /// fails with `unknown_tool`).
    pub entry: Option<usize>,
    /// The entry's route, for routed entries.
    pub route: Option<Route>,
}

#[derive(Debug, Clone)]
enum Target {
    Plain,
    Routed(Route),
    Alias(Box<AliasFacts>),
}

fn target_of(value: &Value) -> Target {
    match entry::parse(value, &String::new, true) {
        Ok(p) => match p.kind {
            Kind::Routed { route, .. } => Target::Routed(route),
            Kind::Alias(a) => Target::Alias(a),
            _ => Target::Plain,
        },
        Err(_) => Target::Plain,
    }
}

fn resolve_with(name: &str, args: &Value, found: Option<(usize, &Target)>) -> ResolvedCall {
    let Some((index, target)) = found else {
        return ResolvedCall {
            tool_name: name.to_string(),
            tool_input: args.clone(),
            tool_alias: None,
            entry: None,
            route: None,
        };
    };
    match target {
        Target::Plain => ResolvedCall {
            tool_name: name.to_string(),
            tool_input: args.clone(),
            tool_alias: None,
            entry: Some(index),
            route: None,
        },
        Target::Routed(route) => ResolvedCall {
            tool_name: route.tool_name.clone(),
            tool_input: args.clone(),
            tool_alias: (route.tool_name != name).then(|| name.to_string()),
            entry: Some(index),
            route: Some(route.clone()),
        },
        Target::Alias(facts) => ResolvedCall {
            tool_name: facts.tool.wire.to_string(),
            tool_input: map_input(facts, args),
            tool_alias: Some(name.to_string()),
            entry: Some(index),
            route: None,
        },
    }
}

/// The alias input mapping of §5. The caller's arguments are never mutated.
fn map_input(facts: &AliasFacts, args: &Value) -> Value {
    let Value::Object(a) = args else {
        return args.clone();
    };
    let mut out = Map::with_capacity(a.len());
    for (k, v) in a {
        if facts.params.iter().any(|p| &p.name == k) || facts.omit.iter().any(|o| o == k) {
            continue;
        }
        out.insert(k.clone(), v.clone());
    }
    for p in &facts.params {
        if let Some(v) = a.get(&p.name) {
            let v = match v {
                Value::Bool(b) if p.invert => Value::Bool(!b),
                v => v.clone(),
            };
            out.insert(p.maps_to.clone(), v);
        }
    }
    Value::Object(out)
}

/// Resolves one model call against a stored declaration (§5). Linear in the declaration; use a
/// [`Resolver`] for many calls.
pub fn resolve_call(declaration: &[Value], name: &str, args: &Value) -> ResolvedCall {
    let found = declaration
        .iter()
        .position(|e| callable_of(e) == Some(name))
        .map(|i| (i, target_of(&declaration[i])));
    resolve_with(name, args, found.as_ref().map(|(i, t)| (*i, t)))
}

/// The inverse of alias input mapping: expresses a resolved kernel input through the alias
/// `alias` of `declaration` (targets renamed back, inverted booleans negated back). `None` when
/// `alias` is not an alias entry of the declaration.
pub fn express_through_alias(declaration: &[Value], alias: &str, tool_input: &Value) -> Option<Value> {
    let entry = declaration.iter().find(|e| callable_of(e) == Some(alias))?;
    let Target::Alias(facts) = target_of(entry) else {
        return None;
    };
    let Value::Object(k) = tool_input else {
        return Some(tool_input.clone());
    };
    let mut out = Map::with_capacity(k.len());
    for (key, v) in k {
        if facts.params.iter().any(|p| &p.maps_to == key) {
            continue;
        }
        out.insert(key.clone(), v.clone());
    }
    for p in &facts.params {
        if let Some(v) = k.get(&p.maps_to) {
            let v = match v {
                Value::Bool(b) if p.invert => Value::Bool(!b),
                v => v.clone(),
            };
            out.insert(p.name.clone(), v);
        }
    }
    Some(Value::Object(out))
}

/// A declaration prepared for many calls: a callable index plus each entry's resolution facts.
#[derive(Debug, Clone)]
pub struct Resolver {
    index: HashMap<String, usize>,
    targets: Vec<Option<Target>>,
}

impl Resolver {
    /// Prepares `declaration` (a stored, validated set).
    pub fn new(declaration: &[Value]) -> Self {
        let mut index = HashMap::with_capacity(declaration.len());
        let mut targets = Vec::with_capacity(declaration.len());
        for (i, e) in declaration.iter().enumerate() {
            match callable_of(e) {
                Some(c) => {
                    index.entry(c.to_string()).or_insert(i);
                    targets.push(Some(target_of(e)));
                }
                None => targets.push(None),
            }
        }
        Self { index, targets }
    }

    /// Resolves one call exactly as [`resolve_call`] does.
    pub fn resolve(&self, name: &str, args: &Value) -> ResolvedCall {
        let found = self
            .index
            .get(name)
            .and_then(|&i| self.targets[i].as_ref().map(|t| (i, t)));
        resolve_with(name, args, found)
    }
}
