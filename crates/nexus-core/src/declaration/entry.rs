//! Entry shapes and their per-entry grammar (declarations.md §2).

use std::borrow::Cow;
use std::sync::OnceLock;

use serde_json::{Map, Value};
use uuid::Uuid;

use super::alias::{self, AliasFacts};
use super::error::DeclError;
use super::pointer;
use crate::bounds;
use crate::registry::{self, KernelTool, ToolClass};

/// A runner route (shape 2): `{kind:"runner", runner_executor_public_id, tool_name}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Route {
    /// The runner the calls go to.
    pub runner_executor_public_id: Uuid,
    /// The name the runner serves the tool under.
    pub tool_name: String,
}

impl Route {
    /// The stored route object, with the runner id as a lowercase hyphenated UUID.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "kind": "runner",
            "runner_executor_public_id": self.runner_executor_public_id.to_string(),
            "tool_name": self.tool_name,
        })
    }
}

/// What an entry is, once its grammar has passed.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    /// Shape 1, or shape 3 when `kernel` is set (the callable is that tool's wire name).
    Function {
        callable: String,
        kernel: Option<&'static KernelTool>,
    },
    /// Shape 2.
    Routed { callable: String, route: Route },
    /// Shape 4.
    Alias(Box<AliasFacts>),
    /// Shape 5, named for duplicate checks by its `name` or `type`.
    Provider { name: String },
}

/// One parsed entry.
#[derive(Debug, Clone)]
pub(crate) struct Parsed {
    pub kind: Kind,
}

impl Parsed {
    /// The callable, or the shape-5 duplicate name.
    pub fn name(&self) -> &str {
        match &self.kind {
            Kind::Function { callable, .. } | Kind::Routed { callable, .. } => callable,
            Kind::Alias(a) => &a.name,
            Kind::Provider { name } => name,
        }
    }

    /// The callable (shape 5 has none).
    pub fn callable(&self) -> Option<&str> {
        match &self.kind {
            Kind::Provider { .. } => None,
            _ => Some(self.name()),
        }
    }

    /// The kernel tool a call to this entry reaches, if any (plain kernel or alias).
    pub fn kernel_tool(&self) -> Option<&'static KernelTool> {
        match &self.kind {
            Kind::Function { kernel, .. } => *kernel,
            Kind::Alias(a) => Some(a.tool),
            _ => None,
        }
    }
}

/// A member of a small object, found by a linear scan (cheaper than hashing for the handful of
/// keys a tool entry has).
#[inline]
pub(crate) fn field<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if obj.len() <= 8 {
        obj.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    } else {
        obj.get(key)
    }
}

/// An entry's `type`, `function` and `name` members, found in one scan of its keys.
struct Heads<'a> {
    ty: Option<&'a Value>,
    function: Option<&'a Value>,
    name: Option<&'a Value>,
}

impl<'a> Heads<'a> {
    fn of(obj: &'a Map<String, Value>) -> Self {
        let mut heads = Heads {
            ty: None,
            function: None,
            name: None,
        };
        for (k, v) in obj {
            match k.as_str() {
                "type" => heads.ty = Some(v),
                "function" => heads.function = Some(v),
                "name" => heads.name = Some(v),
                _ => {}
            }
        }
        heads
    }

    /// Shape 5: `type` is present and not `"function"`.
    fn is_provider(&self) -> bool {
        self.ty.is_some_and(|t| t.as_str() != Some("function"))
    }

    /// `function.name`, else `name`, when a string (shapes 1–4).
    fn callable(&self) -> Option<&'a str> {
        if let Some(Value::Object(f)) = self.function
            && let Some(Value::String(n)) = field(f, "name")
        {
            return Some(n);
        }
        self.name.and_then(Value::as_str)
    }
}

/// The callable of an entry: `function.name` or `name` (shapes 1–4). `None` for shape 5 or an
/// entry without a string name.
pub fn callable_of(entry: &Value) -> Option<&str> {
    let heads = Heads::of(entry.as_object()?);
    if heads.is_provider() {
        return None;
    }
    heads.callable()
}

/// The name an entry is known by for duplicate checks and sorting: its callable, or for shape 5
/// its `name`, else its `type` (§2, §6).
pub fn duplicate_name_of(entry: &Value) -> Option<Cow<'_, str>> {
    let heads = Heads::of(entry.as_object()?);
    if heads.is_provider() {
        if let Some(Value::String(n)) = heads.name {
            return Some(Cow::Borrowed(n));
        }
        return match heads.ty {
            Some(Value::String(t)) => Some(Cow::Borrowed(t)),
            Some(t) => Some(Cow::Owned(t.to_string())),
            None => None,
        };
    }
    heads.callable().map(Cow::Borrowed)
}

/// A callable or served name: a non-empty string of at most 128 characters with no NUL.
pub(crate) fn is_name(s: &str) -> bool {
    // A string of at most NAME_CHARS bytes has at most that many characters.
    !s.is_empty() && !s.contains('\0') && (s.len() <= bounds::NAME_CHARS || s.chars().count() <= bounds::NAME_CHARS)
}

/// Checks a callable name (`invalid`).
pub(crate) fn check_callable(value: Option<&Value>, path: &str) -> Result<String, DeclError> {
    match value {
        Some(Value::String(s)) if is_name(s) => Ok(s.clone()),
        Some(Value::String(s)) => Err(DeclError::validation(
            "invalid",
            path,
            format!("callable name {s:?} must be non-empty, at most 128 characters, with no NUL"),
        )),
        Some(other) => Err(DeclError::validation(
            "invalid",
            path,
            format!("callable name must be a string, got {other}"),
        )),
        None => Err(DeclError::validation("invalid", path, "the entry has no callable name")),
    }
}

/// Checks a top-level `defer_loading` (absent or boolean).
pub(crate) fn check_defer(obj: &Map<String, Value>, path: &str) -> Result<Option<bool>, DeclError> {
    match field(obj, "defer_loading") {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(DeclError::validation(
            "invalid",
            pointer::push(path, "defer_loading"),
            format!("defer_loading must be true or false, got {other}"),
        )),
    }
}

/// [`registry::resolve`], rejecting at once a name whose byte length no kernel name (wire or
/// canonical) has, which is most names.
pub(crate) fn resolve_kernel(name: &str) -> Option<&'static KernelTool> {
    static LENGTHS: OnceLock<u128> = OnceLock::new();
    let lengths = *LENGTHS.get_or_init(|| {
        registry::entries()
            .iter()
            .flat_map(|t| [t.wire.len(), t.canonical.len()])
            .fold(0, |mask, n| if n < 128 { mask | 1 << n } else { mask })
    });
    if name.len() < 128 && lengths & (1 << name.len()) == 0 {
        return None;
    }
    registry::resolve(name)
}

/// Parses a hyphenated UUID (any case).
pub(crate) fn parse_uuid(s: &str) -> Option<Uuid> {
    if s.len() != 36 {
        return None;
    }
    Uuid::parse_str(s).ok()
}

/// Parses one entry's grammar. `imported` marks an entry made by a runner import (§7.2 step 4),
/// which may route to an overridable memory wire name. `path` builds the entry's pointer; it is
/// only called on refusal.
pub(crate) fn parse(value: &Value, path: &dyn Fn() -> String, imported: bool) -> Result<Parsed, DeclError> {
    let Some(obj) = value.as_object() else {
        return Err(DeclError::validation(
            "invalid",
            path(),
            format!("a tool entry must be an object, got {value}"),
        ));
    };
    let (mut ty, mut canonical, mut function, mut name, mut route) = (None, false, None, None, None);
    for (k, v) in obj {
        match k.as_str() {
            "type" => ty = Some(v),
            "canonical" => canonical = true,
            "function" => function = Some(v),
            "name" => name = Some(v),
            "route" => route = Some(v),
            _ => {}
        }
    }
    if ty.is_some_and(|t| t.as_str() != Some("function")) {
        let name = duplicate_name_of(value).map(Cow::into_owned).unwrap_or_default();
        return Ok(Parsed {
            kind: Kind::Provider { name },
        });
    }
    if canonical {
        let facts = alias::parse(obj, &path())?;
        return Ok(Parsed {
            kind: Kind::Alias(Box::new(facts)),
        });
    }
    if ty.is_none() {
        return Err(DeclError::validation(
            "invalid",
            path(),
            "a tool entry needs \"type\" (\"function\" or a provider tool type) or \"canonical\"",
        ));
    }
    if let Some(d) = field(obj, "defer_loading")
        && !d.is_boolean()
    {
        check_defer(obj, &path())?;
    }
    let nested = function.is_some();
    let name_value = match function {
        Some(Value::Object(f)) => field(f, "name"),
        Some(other) => {
            return Err(DeclError::validation(
                "invalid",
                pointer::push(&path(), "function"),
                format!("function must be an object, got {other}"),
            ));
        }
        None => name,
    };
    let name_path = || {
        if nested {
            pointer::push(&pointer::push(&path(), "function"), "name")
        } else {
            pointer::push(&path(), "name")
        }
    };
    let callable = match name_value {
        Some(Value::String(s)) if is_name(s) => s.clone(),
        other => return Err(check_callable(other, &name_path()).expect_err("not a valid name")),
    };
    let kernel = resolve_kernel(&callable);
    if let Some(route) = route {
        let route_path = || pointer::push(&path(), "route");
        if kernel.is_some() {
            return Err(DeclError::validation(
                "invalid_tool_route",
                route_path(),
                format!("{callable:?} is a kernel tool and cannot carry a route"),
            ));
        }
        let route = parse_route(route, &route_path, imported)?;
        return Ok(Parsed {
            kind: Kind::Routed { callable, route },
        });
    }
    match kernel {
        Some(tool) if tool.wire == callable => Ok(Parsed {
            kind: Kind::Function {
                callable,
                kernel: Some(tool),
            },
        }),
        Some(tool) => Err(DeclError::validation(
            "kernel_tool_redefined",
            name_path(),
            format!(
                "{callable:?} is the kernel tool {}; declare it by its catalog definition (name {:?}) or through an alias",
                tool.canonical, tool.wire
            ),
        )),
        None => Ok(Parsed {
            kind: Kind::Function { callable, kernel: None },
        }),
    }
}

/// Parses a `route` object (§2 shape 2 rules). `path` builds the route's pointer on refusal.
pub(crate) fn parse_route(value: &Value, path: &dyn Fn() -> String, imported: bool) -> Result<Route, DeclError> {
    let bad = |p: String, m: String| DeclError::validation("invalid_tool_route", p, m);
    let Some(obj) = value.as_object() else {
        return Err(bad(path(), format!("route must be an object, got {value}")));
    };
    let (mut kind, mut id, mut tool) = (None, None, None);
    for (k, v) in obj {
        match k.as_str() {
            "kind" => kind = Some(v),
            "runner_executor_public_id" => id = Some(v),
            "tool_name" => tool = Some(v),
            _ => {}
        }
    }
    if kind.and_then(Value::as_str) != Some("runner") {
        return Err(bad(
            pointer::push(&path(), "kind"),
            "route.kind must be \"runner\"".into(),
        ));
    }
    let id_path = || pointer::push(&path(), "runner_executor_public_id");
    let runner = match id {
        None | Some(Value::Null) => {
            return Err(DeclError::validation(
                "runner_target_required",
                id_path(),
                "a runner route names its runner_executor_public_id",
            ));
        }
        Some(Value::String(s)) => {
            parse_uuid(s).ok_or_else(|| bad(id_path(), format!("runner_executor_public_id {s:?} is not a UUID")))?
        }
        Some(other) => {
            return Err(bad(
                id_path(),
                format!("runner_executor_public_id must be a UUID string, got {other}"),
            ));
        }
    };
    let name_path = || pointer::push(&path(), "tool_name");
    let tool_name = match tool {
        Some(Value::String(s)) if is_name(s) => s.clone(),
        other => {
            return Err(bad(
                name_path(),
                format!(
                    "route.tool_name must be a non-empty string of at most 128 characters with no NUL, got {}",
                    other.map_or("nothing".to_string(), Value::to_string)
                ),
            ));
        }
    };
    if let Some(tool) = resolve_kernel(&tool_name) {
        let skill = tool_name == "skill";
        let memory_import = imported && tool.class() == ToolClass::Overridable && tool.wire == tool_name;
        if !skill && !memory_import {
            return Err(bad(
                name_path(),
                format!("route.tool_name {tool_name:?} is a kernel tool name"),
            ));
        }
    }
    Ok(Route {
        runner_executor_public_id: runner,
        tool_name,
    })
}
