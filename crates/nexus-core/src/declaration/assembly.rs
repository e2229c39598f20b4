//! The assembly algorithm (declarations.md §7.2) over facts the kernel gathers from the store.

use std::collections::HashSet;

use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::entry::{self, Parsed, Route, callable_of};
use super::error::{DeclError, DeclErrorKind};
use super::imports::{import_callable, parse_kernel_tools, parse_runner_executor_public_ids, parse_runner_tool_names};
use super::order;
use super::pointer;
use super::render::render_set;
use super::set::{check_duplicates, check_set, narrow_owned, parse_all};
use crate::registry;

/// What the kernel knows of one runner at acceptance.
#[derive(Debug, Clone, Default)]
pub struct RunnerFacts {
    /// The runner's executor public id.
    pub public_id: Uuid,
    /// Its display name.
    pub display_name: String,
    /// Whether it is eligible for the answering principal (executor.md §1).
    pub eligible: bool,
    /// The stored announcement list `[{name, effect_profile, timeout_ms?, description?,
    /// input_schema?}]`, in stored (announced) order.
    pub served_tools: Value,
    /// The announced environment object.
    pub environment: Value,
    /// The announced documents `[{name, description}]`.
    pub documents: Value,
}

impl RunnerFacts {
    fn served_names(&self) -> HashSet<&str> {
        self.served_tools
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t.get("name").and_then(Value::as_str))
            .collect()
    }

    fn snapshot(&self) -> Value {
        let environment = if self.environment.is_object() {
            self.environment.clone()
        } else {
            json!({})
        };
        json!({
            "runner_executor_public_id": self.public_id.to_string(),
            "display_name": self.display_name,
            "environment": environment,
        })
    }
}

/// JSON pointers under which each input field is reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssemblyPaths {
    /// The explicit entries (`tool_definitions` or a step's `tools`).
    pub entries: String,
    /// `kernel_tools`.
    pub kernel_tools: String,
    /// `runner_executor_public_ids`.
    pub candidates: String,
    /// `runner_tool_names`.
    pub allowlist: String,
    /// The narrowing names (`tool_names`).
    pub tool_names: String,
    /// The runner selector (`default_runner_executor_public_id`).
    pub selector: String,
}

impl AssemblyPaths {
    /// Paths of the fields under `prefix`, with the explicit entries named `entries_field`
    /// (`tool_definitions` on profiles, `tools` on model steps).
    pub fn under(prefix: &str, entries_field: &str) -> Self {
        Self {
            entries: pointer::push(prefix, entries_field),
            kernel_tools: pointer::push(prefix, "kernel_tools"),
            candidates: pointer::push(prefix, "runner_executor_public_ids"),
            allowlist: pointer::push(prefix, "runner_tool_names"),
            tool_names: "/tool_names".into(),
            selector: "/default_runner_executor_public_id".into(),
        }
    }
}

impl Default for AssemblyPaths {
    /// The assembly route's body: `/configuration/tool_definitions`, …, `/tool_names`.
    fn default() -> Self {
        Self::under("/configuration", "tool_definitions")
    }
}

/// The inputs of §7.2, with the import fields as raw JSON (their grammar is step 1).
#[derive(Debug, Clone, Default)]
pub struct AssemblyInput {
    /// E: the explicit entries (an array, or `null` for none).
    pub entries: Value,
    /// K: `kernel_tools` (raw).
    pub kernel_tools: Value,
    /// C: `runner_executor_public_ids` (raw).
    pub runner_executor_public_ids: Value,
    /// A: `runner_tool_names` (raw).
    pub runner_tool_names: Value,
    /// S: the selected runner.
    pub default_runner_executor_public_id: Option<Uuid>,
    /// N: the narrowing names.
    pub tool_names: Option<Vec<String>>,
    /// Every runner the inputs mention (S, C, routes). A runner missing here is not eligible.
    pub runners: Vec<RunnerFacts>,
    /// The declaring agent's agent_application executor id.
    pub agent_application_executor_public_id: Option<Uuid>,
    /// The agent_application's announced documents `(name, description)`.
    pub agent_application_documents: Vec<(String, String)>,
    /// `workspace/skills/<name>` documents `(name, description)`.
    pub workspace_skills: Vec<(String, String)>,
    /// `user/skills/<name>` documents `(name, description)`.
    pub user_skills: Vec<(String, String)>,
    /// Where refusals point.
    pub paths: AssemblyPaths,
}

impl AssemblyInput {
    /// An input whose four declaration fields are read from a configuration object (an
    /// assembly body's `configuration`, or a stored profile configuration). Missing fields read
    /// as `null`; other keys are ignored.
    pub fn from_configuration(configuration: &Value) -> Self {
        let field = |k: &str| configuration.get(k).cloned().unwrap_or(Value::Null);
        Self {
            entries: field("tool_definitions"),
            kernel_tools: field("kernel_tools"),
            runner_executor_public_ids: field("runner_executor_public_ids"),
            runner_tool_names: field("runner_tool_names"),
            ..Self::default()
        }
    }

    fn runner(&self, id: Uuid) -> Option<&RunnerFacts> {
        self.runners.iter().find(|r| r.public_id == id)
    }

    fn eligible(&self, id: Uuid) -> bool {
        self.runner(id).is_some_and(|r| r.eligible)
    }
}

/// The frozen context §7.2 produces; it serializes as the preview's 200 body.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Assembly {
    /// The rendered, sorted declaration.
    pub tool_definitions: Vec<Value>,
    /// `{default_runner_executor_public_id, executors, runner_candidates}`.
    pub environment: Value,
    /// The skill catalog `{callable, name, description, source, executor_public_id?}`.
    pub skills: Vec<Value>,
}

impl Assembly {
    /// The `POST /agent_api/v1/tools/assembly` 200 body: `{tool_definitions, environment,
    /// skills}`.
    pub fn to_response_json(&self) -> Value {
        json!({
            "tool_definitions": self.tool_definitions,
            "environment": self.environment,
            "skills": self.skills,
        })
    }
}

fn explicit_entries(input: &AssemblyInput) -> Result<(), DeclError> {
    match &input.entries {
        Value::Null | Value::Array(_) => Ok(()),
        other => Err(DeclError::validation(
            "invalid",
            &input.paths.entries,
            format!("the explicit tools are an array of entries, got {other}"),
        )),
    }
}

/// Runs the assembly of §7.2. The explicit entries are copied once; use [`assemble_owned`]
/// to avoid that copy.
pub fn assemble(input: &AssemblyInput) -> Result<Assembly, DeclError> {
    explicit_entries(input)?;
    let explicit = match &input.entries {
        Value::Array(a) => a.clone(),
        _ => Vec::new(),
    };
    run(input, explicit)
}

/// [`assemble`], consuming the input so the explicit entries move into the result.
pub fn assemble_owned(mut input: AssemblyInput) -> Result<Assembly, DeclError> {
    explicit_entries(&input)?;
    let explicit = match std::mem::take(&mut input.entries) {
        Value::Array(a) => a,
        _ => Vec::new(),
    };
    run(&input, explicit)
}

fn run(input: &AssemblyInput, explicit: Vec<Value>) -> Result<Assembly, DeclError> {
    let paths = &input.paths;
    // Step 1.
    let entry_path = |i: usize| pointer::index(&paths.entries, i);
    let mut parsed = check_set(&explicit, &entry_path, explicit.len())?;
    let kernel_tools = parse_kernel_tools(&input.kernel_tools, &paths.kernel_tools)?.unwrap_or_default();
    let candidates =
        parse_runner_executor_public_ids(&input.runner_executor_public_ids, &paths.candidates)?.unwrap_or_default();
    let allowlist = parse_runner_tool_names(&input.runner_tool_names, &paths.allowlist)?;
    let importing = !candidates.is_empty() && allowlist.as_ref().is_none_or(|a| !a.is_empty());
    // Step 2.
    let selected = input.default_runner_executor_public_id;
    if let Some(s) = selected {
        if importing && !candidates.contains(&s) {
            return Err(DeclError::of_kind(
                DeclErrorKind::RunnerNotDeclared,
                &paths.selector,
                format!("the selected runner {s} is not among runner_executor_public_ids"),
                Some(s.to_string()),
            ));
        }
        if !input.eligible(s) {
            return Err(DeclError::of_kind(
                DeclErrorKind::RunnerNotEligible,
                &paths.selector,
                format!("the selected runner {s} is not eligible for this work"),
                Some(s.to_string()),
            ));
        }
    }
    // Step 3.
    let explicit_len = explicit.len();
    // Where each set member came from: explicit entries first, then (index into K) the
    // kernel_tools definitions, then (None) the imports.
    let mut kernel_origin: Vec<usize> = Vec::new();
    let mut added: Vec<Value> = Vec::new();
    {
        let explicit_callables: HashSet<&str> = explicit.iter().filter_map(callable_of).collect();
        for (j, canonical) in kernel_tools.iter().enumerate() {
            let tool = registry::resolve_canonical(canonical).expect("parse_kernel_tools checked it");
            if !explicit_callables.contains(tool.wire) {
                added.push(tool.definition().clone());
                kernel_origin.push(j);
            }
        }
    }
    let mut set = explicit;
    set.append(&mut added);
    let import_start = set.len();
    // Step 4.
    if let (Some(s), true) = (selected, importing) {
        let runner = input.runner(s).expect("an eligible runner has facts");
        // Every name the duplicate check counts (shape-5 provider tools included), so an import
        // never collides into a refusal: it takes the collision callable instead.
        let mut taken: HashSet<String> = set
            .iter()
            .filter_map(entry::duplicate_name_of)
            .map(|n| n.into_owned())
            .collect();
        for announcement in runner.served_tools.as_array().into_iter().flatten() {
            let Some(served) = announcement.get("name").and_then(Value::as_str) else {
                continue;
            };
            let (Some(description), Some(schema)) = (announcement.get("description"), announcement.get("input_schema"))
            else {
                continue;
            };
            if allowlist.as_ref().is_some_and(|a| !a.iter().any(|n| n == served)) {
                continue;
            }
            let callable = import_callable(served, s, &taken);
            taken.insert(callable.clone());
            let mut function = Map::new();
            function.insert("name".into(), Value::String(callable));
            function.insert("description".into(), description.clone());
            function.insert("parameters".into(), schema.clone());
            let mut entry = Map::new();
            entry.insert("type".into(), Value::String("function".into()));
            entry.insert("function".into(), Value::Object(function));
            entry.insert(
                "route".into(),
                Route {
                    runner_executor_public_id: s,
                    tool_name: served.to_string(),
                }
                .to_json(),
            );
            entry.insert("defer_loading".into(), Value::Bool(true));
            set.push(Value::Object(entry));
        }
    }
    // Step 5.
    let origin_path = |i: usize| {
        if i < explicit_len {
            entry_path(i)
        } else if i < import_start {
            pointer::index(&paths.kernel_tools, kernel_origin[i - explicit_len])
        } else {
            paths.allowlist.clone()
        }
    };
    check_duplicates(&set, &origin_path)?;
    let rest = parse_all(
        &set[explicit_len..],
        &|i| origin_path(explicit_len + i),
        import_start - explicit_len,
    )?;
    parsed.extend(rest);
    let mut rendered = render_set(set, &parsed);
    // Step 6.
    if let Some(names) = &input.tool_names {
        rendered = narrow_owned(rendered, names).map_err(|e| e.under(&paths.tool_names))?;
    }
    // Step 7.
    order::sort(&mut rendered);
    order::check_bound(&rendered, &paths.entries)?;
    // Step 8.
    let finals: Vec<(Option<Parsed>, &Value)> = rendered
        .iter()
        .map(|v| (entry::parse(v, &String::new, true).ok(), v))
        .collect();
    let mut routed_runners: Vec<Uuid> = Vec::new();
    let mut served: std::collections::HashMap<Uuid, HashSet<&str>> = std::collections::HashMap::new();
    for (p, _) in &finals {
        let Some(Parsed {
            kind: entry::Kind::Routed { callable, route },
        }) = p
        else {
            continue;
        };
        let id = route.runner_executor_public_id;
        let Some(runner) = input.runner(id).filter(|r| r.eligible) else {
            return Err(DeclError::of_kind(
                DeclErrorKind::RunnerNotEligible,
                &paths.entries,
                format!("{callable:?} routes to runner {id}, which is not eligible for this work"),
                Some(id.to_string()),
            ));
        };
        let served = served.entry(id).or_insert_with(|| runner.served_names());
        if !served.contains(route.tool_name.as_str()) {
            return Err(DeclError::of_kind(
                DeclErrorKind::ToolNotServed,
                &paths.entries,
                format!(
                    "{callable:?} routes to {:?}, which runner {id} does not serve",
                    route.tool_name
                ),
                Some(route.tool_name.clone()),
            ));
        }
        if !routed_runners.contains(&id) {
            routed_runners.push(id);
        }
    }
    // Step 9.
    let mut executors: Vec<Value> = Vec::new();
    if let Some(s) = selected {
        executors.extend(input.runner(s).map(RunnerFacts::snapshot));
    }
    for id in routed_runners.iter().filter(|id| Some(**id) != selected) {
        executors.extend(input.runner(*id).map(RunnerFacts::snapshot));
    }
    let runner_candidates: Vec<Value> = candidates
        .iter()
        .filter_map(|id| input.runner(*id).filter(|r| r.eligible))
        .map(RunnerFacts::snapshot)
        .collect();
    let environment = json!({
        "default_runner_executor_public_id": selected.map(|s| s.to_string()),
        "executors": executors,
        "runner_candidates": runner_candidates,
    });
    // Step 10.
    let skills = skill_catalog(input, &finals);
    Ok(Assembly {
        tool_definitions: rendered,
        environment,
        skills,
    })
}

/// One kernel skill source: its documents, its `source` word and its executor.
type SkillSource<'a> = (&'a [(String, String)], &'static str, Option<Uuid>);

fn skill_entry(callable: &str, name: &str, description: &str, source: &str, executor: Option<Uuid>) -> Value {
    let mut e = Map::new();
    e.insert("callable".into(), json!(callable));
    e.insert("name".into(), json!(name));
    e.insert("description".into(), json!(description));
    e.insert("source".into(), json!(source));
    if let Some(id) = executor {
        e.insert("executor_public_id".into(), json!(id.to_string()));
    }
    Value::Object(e)
}

/// §11: the catalog of every skill callable, in stored order, each listing its documents.
fn skill_catalog(input: &AssemblyInput, finals: &[(Option<Parsed>, &Value)]) -> Vec<Value> {
    let mut out = Vec::new();
    for (p, _) in finals {
        let Some(p) = p else { continue };
        match &p.kind {
            entry::Kind::Routed { callable, route } if route.tool_name == "skill" => {
                let Some(runner) = input.runner(route.runner_executor_public_id) else {
                    continue;
                };
                for doc in runner.documents.as_array().into_iter().flatten() {
                    let name = doc.get("name").and_then(Value::as_str).unwrap_or_default();
                    let description = doc.get("description").and_then(Value::as_str).unwrap_or_default();
                    out.push(skill_entry(
                        callable,
                        name,
                        description,
                        "runner",
                        Some(runner.public_id),
                    ));
                }
            }
            _ if p.kernel_tool().is_some_and(|t| t.canonical == "nexus.skill.load") => {
                let callable = p.name();
                let mut seen: HashSet<&str> = HashSet::new();
                let sources: [SkillSource<'_>; 3] = [
                    (
                        &input.agent_application_documents,
                        "agent_application",
                        input.agent_application_executor_public_id,
                    ),
                    (&input.workspace_skills, "workspace", None),
                    (&input.user_skills, "user", None),
                ];
                for (docs, source, executor) in sources {
                    for (name, description) in docs {
                        if seen.insert(name) {
                            out.push(skill_entry(callable, name, description, source, executor));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}
