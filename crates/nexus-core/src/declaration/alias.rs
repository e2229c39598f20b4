//! Alias entries (declarations.md §4.1): the agent's own spelling of a live kernel tool.
//!
//! Checks run in the order of the §4.1 table, first failure wins. Row 1 (duplicates) is a set
//! check and row 12 (a riding `function` block) needs the set's spelling map; both live in
//! `set.rs`.

use serde_json::{Map, Value};

use super::entry::{check_callable, check_defer};
use super::error::DeclError;
use super::pointer;
use crate::registry::{self, KernelTool};

/// One alias parameter: `params.<name> = {maps_to, invert?, description?}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AliasParam {
    /// The name the model sees.
    pub name: String,
    /// The kernel parameter it stands for.
    pub maps_to: String,
    /// Whether a boolean value is negated on the way in.
    pub invert: bool,
    /// The presented description (blank counts as absent).
    pub description: Option<String>,
}

/// The resolution facts of a valid alias.
#[derive(Debug, Clone)]
pub struct AliasFacts {
    /// The alias callable.
    pub name: String,
    /// The canonical tool.
    pub tool: &'static KernelTool,
    /// `canonical` exactly as given (either spelling).
    pub canonical: String,
    /// The parameter map, in given order.
    pub params: Vec<AliasParam>,
    /// The omitted kernel parameters.
    pub omit: Vec<String>,
    /// The alias description (blank counts as absent).
    pub description: Option<String>,
    /// The top-level `defer_loading`.
    pub defer_loading: Option<bool>,
    /// `params` as given, when it is a non-empty object (kept on the rendered entry).
    pub raw_params: Option<Value>,
    /// `omit` as given, when it is a non-empty array (kept on the rendered entry).
    pub raw_omit: Option<Value>,
    /// A full `function` block riding with the alias (anything beyond `{name}`), for row 12.
    pub function_block: Option<Value>,
}

const ALIAS_KEYS: [&str; 8] = [
    "type",
    "function",
    "name",
    "canonical",
    "params",
    "omit",
    "description",
    "defer_loading",
];

const PARAM_KEYS: [&str; 3] = ["maps_to", "invert", "description"];

fn non_blank(s: &str) -> Option<String> {
    (!s.trim().is_empty()).then(|| s.to_string())
}

/// Parses an alias object (rows 2–11 of §4.1).
pub(crate) fn parse(obj: &Map<String, Value>, path: &str) -> Result<AliasFacts, DeclError> {
    if obj.contains_key("route") {
        return Err(DeclError::validation(
            "invalid_tool_route",
            pointer::push(path, "route"),
            "an alias cannot carry a route; calls go where its canonical goes",
        ));
    }
    if let Some(key) = obj.keys().find(|k| !ALIAS_KEYS.contains(&k.as_str())) {
        return Err(DeclError::validation(
            "invalid",
            pointer::push(path, key),
            format!("{key:?} is not an alias key"),
        ));
    }
    // Row 2.
    let defer_loading = check_defer(obj, path)?;
    // Row 3.
    let function = match obj.get("function") {
        None => None,
        Some(Value::Object(f)) => Some(f),
        Some(other) => {
            return Err(DeclError::validation(
                "invalid",
                pointer::push(path, "function"),
                format!("function must be an object, got {other}"),
            ));
        }
    };
    let (name, name_path) = match function {
        Some(f) => {
            let p = pointer::push(&pointer::push(path, "function"), "name");
            let name = check_callable(f.get("name"), &p)?;
            if let Some(top) = obj.get("name")
                && top.as_str() != Some(name.as_str())
            {
                return Err(DeclError::validation(
                    "invalid",
                    pointer::push(path, "name"),
                    format!("name {top} differs from function.name {name:?}"),
                ));
            }
            (name, p)
        }
        None => {
            let p = pointer::push(path, "name");
            (check_callable(obj.get("name"), &p)?, p)
        }
    };
    // Row 4.
    let canonical_path = pointer::push(path, "canonical");
    let (canonical, tool) = match obj.get("canonical") {
        Some(Value::String(c)) => match registry::resolve(c) {
            Some(tool) => (c.clone(), tool),
            None => {
                return Err(DeclError::validation(
                    "alias_canonical_unknown",
                    canonical_path,
                    format!("alias {name:?}: canonical {c:?} is not a live kernel tool"),
                ));
            }
        },
        other => {
            return Err(DeclError::validation(
                "alias_canonical_unknown",
                canonical_path,
                format!(
                    "alias {name:?}: canonical must name a live kernel tool, got {}",
                    other.map_or("nothing".into(), Value::to_string)
                ),
            ));
        }
    };
    // Row 5.
    if let Some(named) = registry::resolve(&name)
        && named.canonical != tool.canonical
    {
        return Err(DeclError::validation(
            "alias_name_reserved",
            name_path,
            format!(
                "alias name {name:?} is the kernel tool {}; it cannot be re-pointed at {}",
                named.canonical, tool.canonical
            ),
        ));
    }
    // Row 6.
    let description = match obj.get("description") {
        None => None,
        Some(Value::String(d)) => non_blank(d),
        Some(other) => {
            return Err(DeclError::validation(
                "invalid",
                pointer::push(path, "description"),
                format!("alias {name:?}: description must be a string, got {other}"),
            ));
        }
    };
    let schema = super::render::schema_of(tool);
    let props = schema.get("properties").and_then(Value::as_object);
    let kernel_param = |p: &str| props.and_then(|m| m.get(p));
    // Row 7.
    let omit_path = pointer::push(path, "omit");
    let mut omit = Vec::new();
    if let Some(value) = obj.get("omit") {
        let Some(items) = value.as_array() else {
            return Err(DeclError::validation(
                "invalid",
                omit_path,
                format!("alias {name:?}: omit must be an array of strings, got {value}"),
            ));
        };
        for (i, item) in items.iter().enumerate() {
            let p = pointer::index(&omit_path, i);
            let Some(s) = item.as_str() else {
                return Err(DeclError::validation(
                    "invalid",
                    p,
                    format!("alias {name:?}: omit entries are strings, got {item}"),
                ));
            };
            if kernel_param(s).is_none() {
                return Err(DeclError::validation(
                    "alias_param_unknown",
                    p,
                    format!("alias {name:?}: {s:?} is not a parameter of {}", tool.canonical),
                ));
            }
            omit.push(s.to_string());
        }
    }
    // Row 8.
    let params_path = pointer::push(path, "params");
    let unknown = |p: String, m: String| DeclError::validation("alias_param_unknown", p, m);
    let mut specs: Vec<(&String, &Map<String, Value>, String)> = Vec::new();
    if let Some(value) = obj.get("params") {
        let Some(params) = value.as_object() else {
            return Err(unknown(
                params_path,
                format!("alias {name:?}: params must be an object of parameter maps, got {value}"),
            ));
        };
        for (pname, spec) in params {
            let p = pointer::push(&params_path, pname);
            let Some(spec) = spec.as_object() else {
                return Err(unknown(
                    p,
                    format!("alias {name:?}: params.{pname} must be an object, got {spec}"),
                ));
            };
            if let Some(key) = spec.keys().find(|k| !PARAM_KEYS.contains(&k.as_str())) {
                return Err(unknown(
                    pointer::push(&p, key),
                    format!("alias {name:?}: params.{pname}.{key} is not a parameter-map key"),
                ));
            }
            let target_path = pointer::push(&p, "maps_to");
            let target = match spec.get("maps_to") {
                Some(Value::String(t)) if kernel_param(t).is_some() => t.clone(),
                other => {
                    return Err(unknown(
                        target_path,
                        format!(
                            "alias {name:?}: params.{pname}.maps_to {} is not a parameter of {}",
                            other.map_or("(missing)".into(), Value::to_string),
                            tool.canonical
                        ),
                    ));
                }
            };
            if specs.iter().any(|(_, _, t)| *t == target) {
                return Err(unknown(
                    target_path,
                    format!("alias {name:?}: {target:?} is the target of two alias parameters"),
                ));
            }
            if omit.contains(&target) {
                return Err(unknown(
                    target_path,
                    format!("alias {name:?}: {target:?} is both mapped and omitted"),
                ));
            }
            specs.push((pname, spec, target));
        }
        for (pname, _, _) in &specs {
            let shadows =
                kernel_param(pname).is_some() && !specs.iter().any(|(_, _, t)| t == *pname) && !omit.contains(pname);
            if shadows {
                return Err(unknown(
                    pointer::push(&params_path, pname),
                    format!("alias {name:?}: params.{pname} shadows the unmapped kernel parameter {pname:?}"),
                ));
            }
        }
    }
    // Row 9.
    let mut params = Vec::with_capacity(specs.len());
    for (pname, spec, target) in &specs {
        let p = pointer::push(&params_path, pname);
        let invert = match spec.get("invert") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(DeclError::validation(
                    "invalid",
                    pointer::push(&p, "invert"),
                    format!("alias {name:?}: params.{pname}.invert must be a boolean, got {other}"),
                ));
            }
        };
        let description = match spec.get("description") {
            None => None,
            Some(Value::String(d)) => non_blank(d),
            Some(other) => {
                return Err(DeclError::validation(
                    "invalid",
                    pointer::push(&p, "description"),
                    format!("alias {name:?}: params.{pname}.description must be a string, got {other}"),
                ));
            }
        };
        params.push(AliasParam {
            name: (*pname).clone(),
            maps_to: target.clone(),
            invert,
            description,
        });
    }
    // Row 10.
    for param in params.iter().filter(|p| p.invert) {
        let boolean = kernel_param(&param.maps_to)
            .and_then(|s| s.get("type"))
            .and_then(Value::as_str)
            == Some("boolean");
        if !boolean {
            return Err(DeclError::validation(
                "alias_invert_needs_boolean",
                pointer::push(&pointer::push(&params_path, &param.name), "invert"),
                format!(
                    "alias {name:?}: params.{} inverts {:?}, which is not a boolean parameter",
                    param.name, param.maps_to
                ),
            ));
        }
    }
    // Row 11.
    for param in params.iter().filter(|p| p.invert) {
        if param.description.is_none() {
            return Err(DeclError::validation(
                "alias_param_description_required",
                pointer::push(&pointer::push(&params_path, &param.name), "description"),
                format!(
                    "alias {name:?}: the inverted params.{} needs its own description",
                    param.name
                ),
            ));
        }
    }
    let raw_params = obj
        .get("params")
        .filter(|v| v.as_object().is_some_and(|m| !m.is_empty()))
        .cloned();
    let raw_omit = obj
        .get("omit")
        .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
        .cloned();
    let function_block = function
        .filter(|f| f.keys().any(|k| k != "name"))
        .map(|f| Value::Object(f.clone()));
    Ok(AliasFacts {
        name,
        tool,
        canonical,
        params,
        omit,
        description,
        defer_loading,
        raw_params,
        raw_omit,
        function_block,
    })
}
