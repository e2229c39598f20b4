//! Whole-set validation and render (declarations.md §2–§4, §6, §9).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::entry::{self, Kind, Parsed, duplicate_name_of};
use super::error::{DeclError, DeclErrorKind};
use super::order;
use super::pointer;
use super::render::{self, alias_function, catalog_bytes, normalized_bytes, spelling_map};

/// Refuses the second entry that reuses a name (`duplicate_tool_name`, §4.1 row 1).
pub(crate) fn check_duplicates(values: &[Value], paths: &dyn Fn(usize) -> String) -> Result<(), DeclError> {
    let mut seen: HashSet<std::borrow::Cow<'_, str>> = HashSet::with_capacity(values.len());
    for (i, value) in values.iter().enumerate() {
        if let Some(name) = duplicate_name_of(value)
            && !seen.insert(name.clone())
        {
            let mut e = DeclError::validation("duplicate_tool_name", paths(i), format!("{name:?} is declared twice"));
            e.detail = Some(name.into_owned());
            return Err(e);
        }
    }
    Ok(())
}

/// Parses every entry. Entries at `import_start..` were made by a runner import.
pub(crate) fn parse_all(
    values: &[Value],
    paths: &dyn Fn(usize) -> String,
    import_start: usize,
) -> Result<Vec<Parsed>, DeclError> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| entry::parse(v, &|| paths(i), i >= import_start))
        .collect()
}

/// The byte checks: §3 for plain kernel entries, §4.1 row 12 for aliases with a full
/// `function` block. `map` is the set's spelling map.
pub(crate) fn check_bytes(
    values: &[Value],
    parsed: &[Parsed],
    map: &HashMap<String, String>,
    paths: &dyn Fn(usize) -> String,
) -> Result<(), DeclError> {
    for (i, (value, p)) in values.iter().zip(parsed).enumerate() {
        match &p.kind {
            Kind::Function {
                kernel: Some(tool),
                callable,
            } => {
                let obj = value.as_object().expect("parsed functions are objects");
                let given = normalized_bytes(obj);
                if given == catalog_bytes(tool) {
                    continue;
                }
                if !map.is_empty() {
                    let own = serde_json::to_string(&render::plain_entry(tool, map, None)).expect("serializes");
                    if given == own {
                        continue;
                    }
                }
                return Err(DeclError::validation(
                    "kernel_tool_redefined",
                    paths(i),
                    format!(
                        "{callable:?} differs from the catalog definition of {}; declare it verbatim or through an alias",
                        tool.canonical
                    ),
                ));
            }
            Kind::Alias(a) => {
                if let Some(block) = &a.function_block {
                    let given = serde_json::to_string(block).expect("serializes");
                    let own = serde_json::to_string(&alias_function(a, map)).expect("serializes");
                    if given != own {
                        return Err(DeclError::validation(
                            "kernel_tool_redefined",
                            pointer::push(&paths(i), "function"),
                            format!(
                                "alias {:?}: its function block differs from the kernel's render of it",
                                a.name
                            ),
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Full grammar (§2, §4.1) of a set, returning the parsed entries.
pub(crate) fn check_set(
    values: &[Value],
    paths: &dyn Fn(usize) -> String,
    import_start: usize,
) -> Result<Vec<Parsed>, DeclError> {
    check_duplicates(values, paths)?;
    let parsed = parse_all(values, paths, import_start)?;
    let map = spelling_map(&parsed);
    check_bytes(values, &parsed, &map, paths)?;
    Ok(parsed)
}

/// Validates a list of entries (§2–§4) and returns its stored render (§4.3), in input order.
/// Refusal paths are `base/<index>/…`.
pub fn validate_and_render(entries: &[Value], base: &str) -> Result<Vec<Value>, DeclError> {
    validate_and_render_owned(entries.to_vec(), base)
}

/// [`validate_and_render`] over an owned list: nothing is cloned but the rendered entries.
pub fn validate_and_render_owned(entries: Vec<Value>, base: &str) -> Result<Vec<Value>, DeclError> {
    let paths = |i: usize| pointer::index(base, i);
    let parsed = check_set(&entries, &paths, entries.len())?;
    Ok(render::render_set(entries, &parsed))
}

/// Validates a declaration array with no import fields (a step's `tools`, a profile's
/// `tool_definitions`): grammar, render, canonical sort and bound. `base` is the array's JSON
/// pointer. `null` reads as `[]`.
pub fn validate_declaration(entries: &Value, base: &str) -> Result<Vec<Value>, DeclError> {
    match entries {
        Value::Null => Ok(Vec::new()),
        Value::Array(a) => validate_declaration_owned(a.clone(), base),
        other => Err(DeclError::validation(
            "invalid",
            base,
            format!("a declaration is an array of tool entries, got {other}"),
        )),
    }
}

/// [`validate_declaration`] over an owned list (the door's parsed body): the entries are
/// validated, rendered in place, sorted by moving and bounded, without a copy.
pub fn validate_declaration_owned(entries: Vec<Value>, base: &str) -> Result<Vec<Value>, DeclError> {
    let mut rendered = validate_and_render_owned(entries, base)?;
    order::sort(&mut rendered);
    order::check_bound(&rendered, base)?;
    Ok(rendered)
}

/// Narrows a stored (validated, rendered) set to `names` (§9), keeping stored order, and
/// re-renders it with the new spelling map. `None` keeps everything. A name that is not a
/// callable of the set is refused `tool_not_declared` (path `/<index in names>`, detail the
/// name). A shape-5 entry is kept when its duplicate-check name is listed.
pub fn narrow(set: &[Value], names: Option<&[String]>) -> Result<Vec<Value>, DeclError> {
    let Some(names) = names else {
        return Ok(set.to_vec());
    };
    let known: HashSet<std::borrow::Cow<'_, str>> = set.iter().filter_map(duplicate_name_of).collect();
    if let Some((i, missing)) = names.iter().enumerate().find(|(_, n)| !known.contains(n.as_str())) {
        return Err(DeclError::of_kind(
            DeclErrorKind::ToolNotDeclared,
            pointer::index("", i),
            format!("{missing:?} is not a tool of this declaration"),
            Some(missing.clone()),
        ));
    }
    let wanted: HashSet<&str> = names.iter().map(String::as_str).collect();
    let kept: Vec<Value> = set
        .iter()
        .filter(|v| duplicate_name_of(v).is_some_and(|n| wanted.contains(n.as_ref())))
        .cloned()
        .collect();
    rerender(kept)
}

/// [`narrow`] over an owned set (no copy of the kept entries).
pub(crate) fn narrow_owned(set: Vec<Value>, names: &[String]) -> Result<Vec<Value>, DeclError> {
    let known: HashSet<std::borrow::Cow<'_, str>> = set.iter().filter_map(duplicate_name_of).collect();
    if let Some((i, missing)) = names.iter().enumerate().find(|(_, n)| !known.contains(n.as_str())) {
        return Err(DeclError::of_kind(
            DeclErrorKind::ToolNotDeclared,
            pointer::index("", i),
            format!("{missing:?} is not a tool of this declaration"),
            Some(missing.clone()),
        ));
    }
    drop(known);
    let wanted: HashSet<&str> = names.iter().map(String::as_str).collect();
    let kept: Vec<Value> = set
        .into_iter()
        .filter(|v| duplicate_name_of(v).is_some_and(|n| wanted.contains(n.as_ref())))
        .collect();
    rerender(kept)
}

/// Re-renders an already-validated set under its own (possibly changed) spelling map.
pub(crate) fn rerender(mut set: Vec<Value>) -> Result<Vec<Value>, DeclError> {
    let paths = |i: usize| pointer::index("", i);
    let parsed = parse_all(&set, &paths, 0)?;
    if parsed.iter().any(|p| matches!(p.kind, Kind::Alias(_))) {
        return Ok(render::render_set(set, &parsed));
    }
    let empty = HashMap::new();
    for (value, p) in set.iter_mut().zip(&parsed) {
        if let Kind::Function { kernel: Some(tool), .. } = &p.kind {
            let obj = value.as_object().expect("parsed functions are objects");
            if normalized_bytes(obj) != catalog_bytes(tool) {
                let defer = obj.get("defer_loading").and_then(Value::as_bool);
                *value = render::plain_entry(tool, &empty, defer);
            }
        }
    }
    Ok(set)
}
