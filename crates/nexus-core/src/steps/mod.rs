//! The step grammar of the run create and append doors (runs.md §4).
//!
//! [`parse_steps`] checks every rule that needs no store and returns either the typed steps, with
//! their keys (authored or minted) and defaults applied, or every fault found, in request order.
//! The kernel then checks what needs facts at acceptance: models, declarations, routes, eligibility,
//! wait targets, attachments' readability and duplicate keys (409 `duplicate_task_key`).
//!
//! The request tree: a step is an object with exactly one verb key (`model`, `tool`, `ask`,
//! `wait`) holding the verb's fields, beside the common fields `key`, `after`, `on_failure` and
//! `visibility`. Paths point into that tree: `steps[2].tool.input`, `steps[0].after[1]`.
//!
//! Word choices the spec leaves open (each documented where it is decided):
//! - a missing or mistyped field that has no word of its own (`prompt`, `instructions`, the
//!   `model` value, `model_defaults`) is refused with the declaration grammar's `invalid`;
//! - a verb value that is not an object is `unsupported_step` at the verb's path;
//! - a `wait` without a non-empty string `task` is `invalid_task_key` at `steps[i].wait.task`;
//!   a malformed `run_public_id` is `wait_target_not_found` (no such run can exist).

mod ask;
mod model;
mod tool;
mod wait;

use serde_json::{Map, Value};

use crate::bounds;

pub use ask::{ASK_OPTION_CHARS, ASK_OPTIONS_MAX};
pub use tool::TOOL_TIMEOUT_MS_MAX;

/// The `invalid_steps` words this grammar reports (errors-and-auth.md §3).
pub mod code {
    /// The `steps` list is empty or absent.
    pub const STEPS_REQUIRED: &str = "steps_required";
    /// `steps` is not an array.
    pub const STEPS_MUST_BE_AN_ARRAY: &str = "steps_must_be_an_array";
    /// More than 64 steps in one request.
    pub const TOO_MANY_STEPS: &str = "too_many_steps";
    /// `parallel`, `script`, an unknown verb, two verb keys, or a verb value that is not an object.
    pub const UNSUPPORTED_STEP: &str = "unsupported_step";
    /// An unknown field, or `retry`, `detached`, `lifetime`, `wake` on an authored step.
    pub const UNKNOWN_STEP_OPTION: &str = "unknown_step_option";
    /// A key outside the authored grammar, or one that matches the round pattern.
    pub const INVALID_TASK_KEY: &str = "invalid_task_key";
    /// An `after` or `results` key that names no earlier row of the run or the envelope.
    pub const UNKNOWN_TASK_KEY: &str = "unknown_task_key";
    /// More than 32 `after` keys.
    pub const TOO_MANY_DEPENDENCIES: &str = "too_many_dependencies";
    /// More than 32 `results` keys.
    pub const TOO_MANY_READS: &str = "too_many_reads";
    /// `on_failure` / `fan_on_failure` outside `propagate | absorb | halt`.
    pub const INVALID_ON_FAILURE: &str = "invalid_on_failure";
    /// `visibility` outside `visible | collapsed | hidden`.
    pub const INVALID_VISIBILITY: &str = "invalid_visibility";
    /// `timeout_ms` is not an integer from 1 to 604,800,000.
    pub const INVALID_TIMEOUT_MS: &str = "invalid_timeout_ms";
    /// A tool `name` that is not a string of 1–128 characters without NUL.
    pub const INVALID_TOOL_NAME: &str = "invalid_tool_name";
    /// A tool `input` that is not an object, or holds a NUL in a string.
    pub const INVALID_TOOL_INPUT: &str = "invalid_tool_input";
    /// A tool `input` whose canonical JSON passes 65,536 bytes.
    pub const TOOL_INPUT_TOO_LARGE: &str = "tool_input_too_large";
    /// A tool `name` that resolves to a kernel tool, in either spelling.
    pub const RESERVED_TOOL_NAME: &str = "reserved_tool_name";
    /// A `route` that is not `{kind:"runner", runner_executor_public_id?: UUID}`.
    pub const INVALID_TOOL_ROUTE: &str = "invalid_tool_route";
    /// `tool_call_id` on an authored tool step.
    pub const INVALID_TOOL_CALL_ID: &str = "invalid_tool_call_id";
    /// `alias` on an authored tool step.
    pub const INVALID_TOOL_ALIAS: &str = "invalid_tool_alias";
    /// `tools: []`, a non-array `tools`, or a non-object entry.
    pub const INVALID_TOOLS: &str = "invalid_tools";
    /// `attachments` that is not an array of upload ids (UUIDs).
    pub const INVALID_ATTACHMENTS: &str = "invalid_attachments";
    /// `options` that is not an array of at most 32 non-empty strings of at most 256 characters.
    pub const INVALID_ASK_OPTIONS: &str = "invalid_ask_options";
    /// `multi` that is not a boolean.
    pub const INVALID_ASK_MULTI: &str = "invalid_ask_multi";
    /// A malformed `wait.run_public_id`: no such run can exist.
    pub const WAIT_TARGET_NOT_FOUND: &str = "wait_target_not_found";
    /// The declaration grammar's word for a malformed field without a word of its own.
    pub const INVALID: &str = "invalid";
}

/// At most this many `after` keys per step (`too_many_dependencies`).
pub const AFTER_MAX: usize = 32;
/// At most this many `results` keys per model step (`too_many_reads`).
pub const RESULTS_MAX: usize = 32;

/// What [`parse_steps`] needs to know about the run.
pub struct StepsContext<'a> {
    /// The revision this envelope will get: minted keys are `s{revision}-{verb}-{n}`.
    pub revision: u64,
    /// Whether a key already names a row of the run (`after` / `results` must name earlier rows).
    pub existing_keys: &'a dyn Fn(&str) -> bool,
}

/// Every grammar fault found in one request, in request order (422 `invalid_steps`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} step fault(s), first {}", steps.len(), steps.first().map_or("none", |s| s.code))]
pub struct StepsError {
    /// The faults, each `{code, path}`.
    pub steps: Vec<StepError>,
}

impl StepsError {
    fn one(code: &'static str, path: &str) -> Self {
        Self {
            steps: vec![StepError {
                code,
                path: path.to_owned(),
            }],
        }
    }

    /// Prefixes every path, e.g. `"run."` at the create door whose steps sit under `run`.
    pub fn prefixed(mut self, prefix: &str) -> Self {
        for s in &mut self.steps {
            s.path = format!("{prefix}{}", s.path);
        }
        self
    }

    /// The `steps` member of the `invalid_steps` envelope: `[{code, path}, …]`.
    pub fn to_json(&self) -> Value {
        Value::Array(
            self.steps
                .iter()
                .map(|s| serde_json::json!({"code": s.code, "path": s.path}))
                .collect(),
        )
    }
}

/// One grammar fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepError {
    /// The `invalid_steps` word (see [`code`]).
    pub code: &'static str,
    /// Where in the request tree, e.g. `steps[0].tool.name`.
    pub path: String,
}

/// One accepted step, defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The authored key, or the minted `s{revision}-{verb}-{n}`.
    pub key: String,
    /// Whether `key` was authored.
    pub authored_key: bool,
    /// Extra dependency keys, as written (the written-order edge is the kernel's).
    pub after: Vec<String>,
    /// The step's failure policy (default per verb).
    pub on_failure: OnFailure,
    /// The step's transcript visibility (default per verb).
    pub visibility: Visibility,
    /// The verb and its fields.
    pub verb: StepVerb,
    /// The step's position in the request's `steps` array.
    pub index: usize,
}

/// A failure policy (runs.md §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OnFailure {
    /// Not-yet-started descendants are skipped.
    Propagate,
    /// The failure satisfies dependents, which read it.
    Absorb,
    /// Like propagate, and the run is marked for attention.
    Halt,
}

impl OnFailure {
    /// The wire word.
    pub const fn as_str(self) -> &'static str {
        match self {
            OnFailure::Propagate => "propagate",
            OnFailure::Absorb => "absorb",
            OnFailure::Halt => "halt",
        }
    }

    /// Parses the wire word.
    pub fn from_word(word: &str) -> Option<Self> {
        match word {
            "propagate" => Some(OnFailure::Propagate),
            "absorb" => Some(OnFailure::Absorb),
            "halt" => Some(OnFailure::Halt),
            _ => None,
        }
    }
}

/// A transcript visibility (runs.md §10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Visibility {
    /// Shown in full.
    Visible,
    /// Shown by its title.
    Collapsed,
    /// Left out unless requested.
    Hidden,
}

impl Visibility {
    /// The wire word.
    pub const fn as_str(self) -> &'static str {
        match self {
            Visibility::Visible => "visible",
            Visibility::Collapsed => "collapsed",
            Visibility::Hidden => "hidden",
        }
    }

    /// Parses the wire word.
    pub fn from_word(word: &str) -> Option<Self> {
        match word {
            "visible" => Some(Visibility::Visible),
            "collapsed" => Some(Visibility::Collapsed),
            "hidden" => Some(Visibility::Hidden),
            _ => None,
        }
    }
}

/// A step's verb and its fields.
// A parse result held once per step (at most 64): boxing `Model` would only complicate matching.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum StepVerb {
    /// A model round.
    Model {
        /// The user text.
        prompt: String,
        /// The model, when given (otherwise the profile's `default_model`, checked by the kernel).
        model: Option<ModelSpec>,
        /// The system text, when given.
        instructions: Option<String>,
        /// Explicit declaration entries, verbatim (a non-empty array of objects); checked by
        /// `declaration::assemble`.
        tools: Option<Value>,
        /// Import field, verbatim (`Null` when absent).
        kernel_tools: Value,
        /// Import field, verbatim (`Null` when absent).
        runner_executor_public_ids: Value,
        /// Import field, verbatim (`Null` when absent).
        runner_tool_names: Value,
        /// Upload ids (UUID strings as written).
        attachments: Vec<String>,
        /// Task keys to read.
        results: Vec<String>,
        /// The policy of this round's tool fan (default `absorb`).
        fan_on_failure: OnFailure,
    },
    /// One tool call.
    Tool {
        /// The tool name as written.
        name: String,
        /// The input object (default `{}`), member order kept.
        input: Value,
        /// The authored route, if any.
        route: Option<ToolRoute>,
        /// The park budget, if given.
        timeout_ms: Option<u64>,
        /// The model context for the tool's children, verbatim (an object), if given.
        model_defaults: Option<Value>,
    },
    /// A tokened question.
    Ask {
        /// The question.
        prompt: String,
        /// The choices, if given.
        options: Option<Vec<String>>,
        /// Whether several choices may be picked.
        multi: bool,
        /// The park budget, if given.
        timeout_ms: Option<u64>,
    },
    /// An observation of an existing task.
    Wait {
        /// The observed key.
        task: String,
        /// The observed run, if not this one.
        run_public_id: Option<String>,
        /// The park budget, if given (the kernel defaults and clamps it).
        timeout_ms: Option<u64>,
    },
}

impl StepVerb {
    /// The verb word (`model`, `tool`, `ask`, `wait`).
    pub fn word(&self) -> &'static str {
        match self {
            StepVerb::Model { .. } => "model",
            StepVerb::Tool { .. } => "tool",
            StepVerb::Ask { .. } => "ask",
            StepVerb::Wait { .. } => "wait",
        }
    }
}

/// A model selection: `"provider/model"` or `{model, reasoning_effort?, max_output_tokens?}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    /// The model ref, verbatim (resolved by the kernel).
    pub model: String,
    /// The reasoning effort, if given.
    pub reasoning_effort: Option<String>,
    /// The output budget, if given (a positive integer).
    pub max_output_tokens: Option<u32>,
}

/// An authored tool route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolRoute {
    /// `{kind:"runner"}` with the UUID omitted: the run's default runner (or
    /// `runner_target_required`, checked by the kernel).
    RunDefault,
    /// `{kind:"runner", runner_executor_public_id}`.
    Runner(uuid::Uuid),
}

const VERBS: [&str; 4] = ["model", "tool", "ask", "wait"];
const UNSUPPORTED_VERBS: [&str; 2] = ["parallel", "script"];
const REFUSED_OPTIONS: [&str; 4] = ["retry", "detached", "lifetime", "wake"];
/// Raw graph fields, refused by name (`edge_authoring_refused`) on the run shell and on steps.
pub const RAW_GRAPH_FIELDS: [&str; 5] = ["tasks", "depends_on", "input_from", "nodes", "edges"];
/// Fields refused by name on the run shell only.
pub const RUN_SHELL_REFUSED_FIELDS: [&str; 2] = ["deliverable", "tools"];

/// Whether `s` matches the authored key grammar `[A-Za-z0-9][A-Za-z0-9_-]{0,63}` and not the
/// round pattern.
pub fn is_authored_key(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= bounds::KEY_CHARS
        && b[0].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
        && !is_round_key(s)
}

/// Whether `s` matches the round pattern `^r[0-9]+(t[0-9]+)?$` (kernel keys `r{n}`, `r{n}t{i}`).
pub fn is_round_key(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('r') else {
        return false;
    };
    let (round, call) = match rest.split_once('t') {
        Some((r, c)) => (r, Some(c)),
        None => (rest, None),
    };
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit());
    digits(round) && call.is_none_or(digits)
}

/// The minted key of an unkeyed step: `s{revision}-{verb}-{n}`.
pub fn minted_key(revision: u64, verb: &str, n: usize) -> String {
    format!("s{revision}-{verb}-{n}")
}

/// The collector of faults, in the order they are found.
#[derive(Default)]
pub(crate) struct Faults(Vec<StepError>);

impl Faults {
    pub(crate) fn push(&mut self, code: &'static str, path: impl Into<String>) {
        self.0.push(StepError {
            code,
            path: path.into(),
        });
    }
}

/// Key references (`after`, `results`) resolve against the run and the earlier envelope keys.
pub(crate) struct KeyScope<'a> {
    existing: &'a dyn Fn(&str) -> bool,
    earlier: &'a [String],
}

impl KeyScope<'_> {
    fn knows(&self, key: &str) -> bool {
        self.earlier.iter().any(|k| k == key) || (self.existing)(key)
    }

    /// Parses a key list: an array of strings, at most `max` (`too_many`), each known
    /// (`unknown_task_key`). A non-array or a non-string entry is `invalid_task_key`.
    pub(crate) fn key_list(
        &self,
        value: &Value,
        path: &str,
        max: usize,
        too_many: &'static str,
        faults: &mut Faults,
    ) -> Vec<String> {
        let Value::Array(items) = value else {
            faults.push(code::INVALID_TASK_KEY, path);
            return Vec::new();
        };
        if items.len() > max {
            faults.push(too_many, path);
            return Vec::new();
        }
        let mut keys = Vec::with_capacity(items.len());
        for (j, item) in items.iter().enumerate() {
            let p = format!("{path}[{j}]");
            match item.as_str() {
                None => faults.push(code::INVALID_TASK_KEY, p),
                Some(k) if !self.knows(k) => faults.push(code::UNKNOWN_TASK_KEY, p),
                Some(k) => keys.push(k.to_owned()),
            }
        }
        keys
    }
}

/// Parses `timeout_ms`: an integer from 1 to 604,800,000 (`invalid_timeout_ms`).
pub(crate) fn timeout_ms(value: &Value, path: &str, faults: &mut Faults) -> Option<u64> {
    match value.as_u64() {
        Some(ms) if (1..=TOOL_TIMEOUT_MS_MAX).contains(&ms) => Some(ms),
        _ => {
            faults.push(code::INVALID_TIMEOUT_MS, path);
            None
        }
    }
}

/// Whether a value is a canonical hyphenated UUID string (either case).
pub(crate) fn parse_uuid(value: &Value) -> Option<uuid::Uuid> {
    let s = value.as_str()?;
    parse_hyphenated_uuid(s)
}

/// Parses only the 36-character hyphenated form (no braces, URN or simple form).
pub(crate) fn parse_hyphenated_uuid(s: &str) -> Option<uuid::Uuid> {
    if s.len() != 36 {
        return None;
    }
    uuid::Uuid::try_parse(s).ok()
}

/// Parses a step envelope's `steps` value (runs.md §4). `Null` (absent) and `[]` are
/// `steps_required`.
///
/// Collects every fault, in request order; within one step, in member order (missing required
/// fields after the members of their object). A step whose verb is unusable still has its
/// common fields checked; an authored key that passes the grammar becomes visible to later
/// steps' `after` / `results` even when its step has other faults.
pub fn parse_steps(steps: &Value, ctx: &StepsContext) -> Result<Vec<Step>, StepsError> {
    let items = match steps {
        Value::Null => return Err(StepsError::one(code::STEPS_REQUIRED, "steps")),
        Value::Array(items) if items.is_empty() => return Err(StepsError::one(code::STEPS_REQUIRED, "steps")),
        Value::Array(items) => items,
        _ => return Err(StepsError::one(code::STEPS_MUST_BE_AN_ARRAY, "steps")),
    };
    if items.len() > bounds::STEPS_PER_REQUEST {
        return Err(StepsError::one(code::TOO_MANY_STEPS, "steps"));
    }

    let mut faults = Faults::default();
    let mut out = Vec::with_capacity(items.len());
    let mut earlier: Vec<String> = Vec::with_capacity(items.len());
    let mut verb_counts = [0usize; VERBS.len()];

    for (i, item) in items.iter().enumerate() {
        let path = format!("steps[{i}]");
        let Value::Object(step) = item else {
            faults.push(code::UNSUPPORTED_STEP, path);
            continue;
        };

        // Identify the verb before anything else: it decides defaults and the minted key.
        let verbs: Vec<&str> = step
            .keys()
            .map(String::as_str)
            .filter(|k| VERBS.contains(k) || UNSUPPORTED_VERBS.contains(k))
            .collect();
        let verb = match verbs.as_slice() {
            [v] if VERBS.contains(v) => Some(*v),
            [v] => {
                faults.push(code::UNSUPPORTED_STEP, format!("{path}.{v}"));
                None
            }
            _ => {
                // No verb at all (an unknown verb) or two verb keys.
                faults.push(code::UNSUPPORTED_STEP, path.clone());
                None
            }
        };
        let known_verb = !verbs.is_empty();

        let scope = KeyScope {
            existing: ctx.existing_keys,
            earlier: &earlier,
        };
        let mut key: Option<String> = None;
        let mut after = Vec::new();
        let mut on_failure = None;
        let mut visibility = None;
        let mut parsed_verb = None;

        for (name, value) in step {
            let p = format!("{path}.{name}");
            match name.as_str() {
                "key" => match value.as_str() {
                    Some(k) if is_authored_key(k) => key = Some(k.to_owned()),
                    _ => faults.push(code::INVALID_TASK_KEY, p),
                },
                "after" => after = scope.key_list(value, &p, AFTER_MAX, code::TOO_MANY_DEPENDENCIES, &mut faults),
                "on_failure" => match value.as_str().and_then(OnFailure::from_word) {
                    Some(f) => on_failure = Some(f),
                    None => faults.push(code::INVALID_ON_FAILURE, p),
                },
                "visibility" => match value.as_str().and_then(Visibility::from_word) {
                    Some(v) => visibility = Some(v),
                    None => faults.push(code::INVALID_VISIBILITY, p),
                },
                n if Some(n) == verb => {
                    parsed_verb = match n {
                        "model" => model::parse(value, &p, &scope, &mut faults),
                        "tool" => tool::parse(value, &p, &mut faults),
                        "ask" => ask::parse(value, &p, &mut faults),
                        _ => wait::parse(value, &p, &mut faults),
                    }
                }
                n if VERBS.contains(&n) || UNSUPPORTED_VERBS.contains(&n) => {} // reported above
                // Background and retry options are the kernel's own (v1), never authored.
                n if known_verb && REFUSED_OPTIONS.contains(&n) => faults.push(code::UNKNOWN_STEP_OPTION, p),
                _ if known_verb => faults.push(code::UNKNOWN_STEP_OPTION, p),
                _ => {} // no verb: the step is unsupported as a whole
            }
        }

        let authored = key.is_some();
        if let Some(k) = &key {
            earlier.push(k.clone());
        }
        let Some(verb_word) = verb else { continue };
        let slot = VERBS.iter().position(|v| *v == verb_word).expect("a known verb");
        verb_counts[slot] += 1;
        let key = key.unwrap_or_else(|| {
            let k = minted_key(ctx.revision, verb_word, verb_counts[slot]);
            earlier.push(k.clone());
            k
        });
        let Some(parsed_verb) = parsed_verb else { continue };
        let (default_visibility, default_on_failure) = defaults(verb_word);
        out.push(Step {
            key,
            authored_key: authored,
            after,
            on_failure: on_failure.unwrap_or(default_on_failure),
            visibility: visibility.unwrap_or(default_visibility),
            verb: parsed_verb,
            index: i,
        });
    }

    if faults.0.is_empty() {
        Ok(out)
    } else {
        Err(StepsError { steps: faults.0 })
    }
}

/// The default `visibility` and `on_failure` of a verb (runs.md §4).
pub fn defaults(verb: &str) -> (Visibility, OnFailure) {
    match verb {
        "model" => (Visibility::Visible, OnFailure::Halt),
        "tool" => (Visibility::Collapsed, OnFailure::Propagate),
        "ask" => (Visibility::Hidden, OnFailure::Propagate),
        _ => (Visibility::Hidden, OnFailure::Absorb),
    }
}

/// The members of a verb object, or `unsupported_step` at the verb's path.
pub(crate) fn verb_object<'v>(value: &'v Value, path: &str, faults: &mut Faults) -> Option<&'v Map<String, Value>> {
    match value {
        Value::Object(m) => Some(m),
        _ => {
            faults.push(code::UNSUPPORTED_STEP, path);
            None
        }
    }
}

/// Checks the create door's run shell for raw graph fields (runs.md §2): `tasks`, `depends_on`,
/// `input_from`, `nodes`, `edges` on the shell, on a step or inside a step's verb object, and
/// `deliverable` or `tools` on the shell. Returns the first offending path, shell members
/// first, e.g. `"run.tools"` or `"run.steps[1].depends_on"` (422 `edge_authoring_refused`).
pub fn check_edge_authoring(run_shell: &Value) -> Result<(), String> {
    check_shell(run_shell, "run.", true)
}

/// The append door's counterpart of [`check_edge_authoring`]: raw graph fields on the body or
/// on a step, with paths into the body (`"steps[1].depends_on"`, `"edges"`).
pub fn check_append_edge_authoring(body: &Value) -> Result<(), String> {
    check_shell(body, "", false)
}

fn check_shell(shell: &Value, prefix: &str, run_shell: bool) -> Result<(), String> {
    let Value::Object(shell) = shell else { return Ok(()) };
    for name in shell.keys() {
        if RAW_GRAPH_FIELDS.contains(&name.as_str()) || (run_shell && RUN_SHELL_REFUSED_FIELDS.contains(&name.as_str()))
        {
            return Err(format!("{prefix}{name}"));
        }
    }
    let Some(Value::Array(steps)) = shell.get("steps") else {
        return Ok(());
    };
    for (i, step) in steps.iter().enumerate() {
        let Value::Object(step) = step else { continue };
        for (name, value) in step {
            if RAW_GRAPH_FIELDS.contains(&name.as_str()) {
                return Err(format!("{prefix}steps[{i}].{name}"));
            }
            if VERBS.contains(&name.as_str())
                && let Value::Object(body) = value
                && let Some(field) = body.keys().find(|k| RAW_GRAPH_FIELDS.contains(&k.as_str()))
            {
                return Err(format!("{prefix}steps[{i}].{name}.{field}"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
