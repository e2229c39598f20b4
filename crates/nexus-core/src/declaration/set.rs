//! Whole-set validation and render (declarations.md §2–§4, §6, §9).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::entry::{self, Kind, Parsed, duplicate_name_of};
use super::error::{DeclError, DeclErrorKind};
use super::order::{self, Named};
use super::pointer;
use super::render::{self, alias_function, normalized_is, same_bytes, spelling_map};

/// Refuses the second entry that reuses a name (`duplicate_tool_name`, §4.1 row 1).
pub(crate) fn check_duplicates(values: &[Value], paths: &dyn Fn(usize) -> String) -> Result<(), DeclError> {
    refuse_duplicates(&order::sorted_names(values), paths)
}

/// [`check_duplicates`] over [`order::sorted_names`]: the refused entry is the first one in
/// input order whose name an earlier entry already has.
fn refuse_duplicates(sorted: &[Named<'_>], paths: &dyn Fn(usize) -> String) -> Result<(), DeclError> {
    match order::first_duplicate(sorted) {
        None => Ok(()),
        Some(k) => {
            let Named { name, index, .. } = &sorted[k];
            let mut e = DeclError::validation(
                "duplicate_tool_name",
                paths(*index),
                format!("{name:?} is declared twice"),
            );
            e.detail = Some(name.clone().into_owned());
            Err(e)
        }
    }
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
                if normalized_is(obj, tool.definition()) {
                    continue;
                }
                if !map.is_empty() && normalized_is(obj, &render::plain_entry(tool, map, None)) {
                    continue;
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
                if let Some(block) = &a.function_block
                    && !same_bytes(block, &alias_function(a, map))
                {
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
    Ok(survey(values, paths, import_start, false)?.parsed)
}

/// What one pass over a set learns: its grammar (§2–§4), its canonical order and, when asked,
/// most of its canonical size (§6).
struct Survey {
    parsed: Vec<Parsed>,
    /// The input indices in canonical order. Rendering never changes a name, and a valid set
    /// names every entry once, so this is the order of the rendered set too. `None` if some
    /// entry has no duplicate-check name (no valid set has one; the set is then sorted anew).
    order: Option<Vec<usize>>,
    /// The canonical length of the entries the render keeps as given (all but aliases and
    /// plain kernel entries), when measured.
    kept_len: usize,
}

/// Whether the render may replace the entry (aliases and plain kernel entries, §4.3).
fn may_rerender(p: &Parsed) -> bool {
    matches!(p.kind, Kind::Alias(_) | Kind::Function { kernel: Some(_), .. })
}

/// [`check_set`] in one pass over the entries: each entry's duplicate-check name, grammar and
/// (with `measure`) canonical length are read together, while the entry is in cache. Refusals
/// keep their order: duplicates (whole set) first, then the first entry whose grammar fails,
/// then the byte checks.
fn survey(
    values: &[Value],
    paths: &dyn Fn(usize) -> String,
    import_start: usize,
    measure: bool,
) -> Result<Survey, DeclError> {
    let mut names = Vec::with_capacity(values.len());
    let mut parsed = Vec::with_capacity(values.len());
    let mut refused = None;
    let mut kept_len = 0;
    for (i, value) in values.iter().enumerate() {
        if let Some(name) = duplicate_name_of(value) {
            names.push(Named::new(name, i));
        }
        if refused.is_some() {
            continue;
        }
        match entry::parse(value, &|| paths(i), i >= import_start) {
            Ok(p) => {
                if measure && !may_rerender(&p) {
                    kept_len += order::canonical_len(value);
                }
                parsed.push(p);
            }
            Err(e) => refused = Some(e),
        }
    }
    order::sort_names(&mut names);
    refuse_duplicates(&names, paths)?;
    if let Some(e) = refused {
        return Err(e);
    }
    let map = spelling_map(&parsed);
    check_bytes(values, &parsed, &map, paths)?;
    let order = (names.len() == values.len()).then(|| names.into_iter().map(|n| n.index).collect());
    Ok(Survey {
        parsed,
        order,
        kept_len,
    })
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
    Ok(render::render_checked_set(entries, &parsed))
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
/// validated, rendered in place, sorted by moving and bounded, without a copy. The sort order
/// comes from the names gathered for the duplicate check, and the size of every entry kept as
/// given is measured in the same pass, so the set is walked once.
pub fn validate_declaration_owned(entries: Vec<Value>, base: &str) -> Result<Vec<Value>, DeclError> {
    let paths = |i: usize| pointer::index(base, i);
    let survey = survey(&entries, &paths, entries.len(), true)?;
    let mut rendered = render::render_checked_set(entries, &survey.parsed);
    let mut len = survey.kept_len;
    for (value, p) in rendered.iter().zip(&survey.parsed) {
        if may_rerender(p) {
            len += order::canonical_len(value);
        }
    }
    match survey.order {
        Some(canonical) => order::permute(&mut rendered, canonical),
        None => order::sort(&mut rendered),
    }
    order::check_set_len(len, rendered.len(), base)?;
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
            if !normalized_is(obj, tool.definition()) {
                let defer = obj.get("defer_loading").and_then(Value::as_bool);
                *value = render::plain_entry(tool, &empty, defer);
            }
        }
    }
    Ok(set)
}
