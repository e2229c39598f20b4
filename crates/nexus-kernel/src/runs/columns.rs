//! The typed shapes of the JSON columns the run engine writes on a task, each with one writer
//! and one reader here (the database keeps the text):
//! - `frozen_context` is a [`Frozen`]: a model round's [`FrozenContext`] (written once, at
//!   insert; a continuation copies its round's bytes verbatim), a tool step's model defaults,
//!   an `ask`'s question or a `wait`'s target;
//! - a model task's `request_surface` is a [`RequestSurface`] (the model and instructions; a
//!   retry with `{model}` may replace it);
//! - a model task's `reply` is a [`StoredReply`], its `usage` a `nexus_providers::Usage`,
//!   its `content` the reply text as stored blocks.
//!
//! - a sealed record (`sealed_requests.record`) is a [`SealedRecord`]: `{entries,
//!   request_options}` with `request_options = {provider, model, max_output_tokens,
//!   reasoning_effort, system, tools, url, headers}`; `body_sha256`, `request_bytes`,
//!   `attempts` are columns.

use nexus_providers::{EncodedRequest, Entry, ModelRequest};
use nexus_store::{TaskKind, TaskRow};
use serde::{Deserialize, Serialize};
use serde_json::Value;
#[cfg(debug_assertions)]
use serde_json::json;

/// What a task's `frozen_context` holds, by the kind of row (declarations.md §8, runs.md §4).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Frozen {
    /// A model round: the declaration, environment, skills, memory scope and approval inputs.
    Model(Box<FrozenContext>),
    /// A tool step's `model_defaults`, assembled (`{"model_context": …}`).
    ToolDefaults(Value),
    /// An `ask` await (`{"ask": …}`).
    Ask(AskContext),
    /// A `wait` await (`{"wait": …}`).
    Wait(WaitContext),
}

/// An `ask` await's question (runs.md §4, kernel-tools.md §6).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AskContext {
    #[serde(default)]
    pub prompt: String,
    #[serde(default)]
    pub options: Option<Vec<String>>,
    #[serde(default)]
    pub multi: bool,
}

/// A `wait` await's target (runs.md §4, kernel-tools.md §5).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WaitContext {
    /// The task key it observes.
    pub task: String,
    #[serde(default)]
    pub run_public_id: Option<String>,
    #[serde(default)]
    pub timeout_ms: i64,
    /// A `delegate_task` obligation (stored beside `wait`, as `"delegation": true`).
    #[serde(skip)]
    pub delegation: bool,
}

/// The column as the non-model kinds store it: one member naming the shape.
#[derive(Serialize, Deserialize, Default)]
struct Tagged {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model_context: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ask: Option<AskContext>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    wait: Option<WaitContext>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    delegation: bool,
}

impl Frozen {
    /// The one writer: the column's text.
    pub fn to_text(&self) -> String {
        let tagged = match self {
            Frozen::Model(ctx) => return serde_json::to_string(ctx).expect("a frozen context serializes"),
            Frozen::ToolDefaults(v) => Tagged {
                model_context: Some(v.clone()),
                ..Tagged::default()
            },
            Frozen::Ask(a) => Tagged {
                ask: Some(a.clone()),
                ..Tagged::default()
            },
            Frozen::Wait(w) => Tagged {
                wait: Some(w.clone()),
                delegation: w.delegation,
                ..Tagged::default()
            },
        };
        serde_json::to_string(&tagged).expect("a frozen context serializes")
    }

    /// The one reader: `task`'s column by the row's kind. `None`: no frozen context, or not
    /// readable as the kind's shape.
    pub fn of(task: &TaskRow) -> Option<Frozen> {
        let text = task.frozen_context.as_deref()?;
        if task.kind == TaskKind::Model {
            return serde_json::from_str(text).ok().map(|c| Frozen::Model(Box::new(c)));
        }
        let tagged: Tagged = serde_json::from_str(text).ok()?;
        match tagged {
            Tagged { ask: Some(a), .. } => Some(Frozen::Ask(a)),
            Tagged {
                wait: Some(mut w),
                delegation,
                ..
            } => {
                w.delegation = delegation;
                Some(Frozen::Wait(w))
            }
            Tagged {
                model_context: Some(v), ..
            } => Some(Frozen::ToolDefaults(v)),
            _ => None,
        }
    }

    /// An `ask` await's question, if `task` is one.
    pub fn ask_of(task: &TaskRow) -> Option<AskContext> {
        match Frozen::of(task)? {
            Frozen::Ask(a) => Some(a),
            _ => None,
        }
    }

    /// A `wait` await's target, if `task` is one.
    pub fn wait_of(task: &TaskRow) -> Option<WaitContext> {
        match Frozen::of(task)? {
            Frozen::Wait(w) => Some(w),
            _ => None,
        }
    }

    /// A tool step's assembled model defaults, if `task` has them.
    pub fn model_context_of(task: &TaskRow) -> Option<Value> {
        match Frozen::of(task)? {
            Frozen::ToolDefaults(v) => Some(v),
            _ => None,
        }
    }
}

/// The frozen context of a model task (declarations.md §8), stored in `frozen_context`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct FrozenContext {
    /// The chain root's prompt (the round's prompt entry; continuations copy it).
    pub prompt: String,
    /// Keys the prompt entry reads (`results`), as unpaired `<task_result>` envelopes.
    #[serde(default)]
    pub results: Vec<String>,
    /// Upload ids the prompt entry attaches.
    #[serde(default)]
    pub attachments: Vec<String>,
    /// The rendered, sorted declaration.
    #[serde(default)]
    pub tool_definitions: Vec<Value>,
    /// `{default_runner_executor_public_id, executors, runner_candidates}`.
    #[serde(default)]
    pub environment: Value,
    /// The skill catalog.
    #[serde(default)]
    pub skills: Vec<Value>,
    /// `{workspace_public_id, conversation_public_id, user_public_id}`.
    #[serde(default)]
    pub memory: Value,
    /// The run's approval inputs at acceptance.
    #[serde(default)]
    pub approval_mode: String,
    #[serde(default)]
    pub approval_rules: Value,
    /// The policy of this chain's tool fans.
    #[serde(default = "absorb")]
    pub fan_on_failure: String,
    /// A conversation turn's seed round: the previous turn's final round (internal id), whose
    /// entries and reply the request replays as history (runs.md §12).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<i64>,
}

fn absorb() -> String {
    "absorb".into()
}

impl FrozenContext {
    /// A model round's context ([`Frozen::of`] for a model row; an unreadable or absent
    /// context is an empty one).
    pub fn of(task: &TaskRow) -> FrozenContext {
        match Frozen::of(task) {
            Some(Frozen::Model(ctx)) => *ctx,
            _ => FrozenContext::default(),
        }
    }
}

/// The request surface of a model task (`request_surface`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RequestSurface {
    /// `provider/model`.
    pub model: String,
    #[serde(default)]
    pub reasoning_effort: Option<String>,
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    #[serde(default)]
    pub instructions: Option<String>,
}

impl RequestSurface {
    pub fn of(task: &TaskRow) -> RequestSurface {
        task.request_surface
            .as_deref()
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_default()
    }
}

/// A model task's stored reply (`reply`): the assistant entry plus the stop word.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredReply {
    #[serde(default)]
    pub text: Option<String>,
    /// The calls in call order, ids as stored on the fan rows (long ids replaced).
    #[serde(default)]
    pub tool_calls: Vec<nexus_providers::RawToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native: Option<Value>,
    #[serde(default)]
    pub stop: String,
}

impl StoredReply {
    pub fn of(task: &TaskRow) -> Option<StoredReply> {
        task.reply.as_deref().and_then(|s| serde_json::from_str(s).ok())
    }
}

/// A sealed record as stored (providers.md §4): the neutral entries and the request options
/// the body was encoded from.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct SealedRecord {
    #[serde(default)]
    pub entries: Vec<Entry>,
    #[serde(default)]
    pub request_options: SealedOptions,
}

/// What the kernel reads back of a sealed record's `request_options`: where the body goes
/// (a recovered lease resends the sealed bytes). The other members (`provider`, `model`,
/// `max_output_tokens`, `reasoning_effort`, `system`, `tools`) are served as stored by
/// `GET …/request` and never read back.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct SealedOptions {
    #[serde(default)]
    pub url: String,
    /// `[name, value]` pairs, in order.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
}

/// The reference form's shape (debug builds only: [`SealedRecord::text`]).
#[cfg(debug_assertions)]
#[derive(Serialize)]
struct RecordOut<'a> {
    entries: &'a [Entry],
    request_options: OptionsOut<'a>,
}

#[derive(Serialize)]
struct OptionsOut<'a> {
    provider: &'a str,
    model: &'a str,
    max_output_tokens: Option<u32>,
    reasoning_effort: &'a Option<String>,
    system: &'a [String],
    tools: &'a [Value],
    url: &'a str,
    headers: Vec<[&'a str; 2]>,
}

impl<'a> OptionsOut<'a> {
    fn of(request: &'a ModelRequest, surface: &'a RequestSurface, enc: &'a EncodedRequest) -> OptionsOut<'a> {
        OptionsOut {
            provider: &request.provider,
            model: &request.model,
            max_output_tokens: surface.max_output_tokens,
            reasoning_effort: &surface.reasoning_effort,
            system: &request.system,
            tools: &request.tools,
            url: &enc.url,
            headers: enc.headers.iter().map(|(k, v)| [k.as_str(), v.as_str()]).collect(),
        }
    }
}

impl SealedRecord {
    /// The reference form of the record's text (debug builds check [`Self::text_after`]'s whole
    /// text against it), serialized without building a `Value` tree. Member order is the
    /// record's: the same bytes as the `json!` form (checked too).
    #[cfg(debug_assertions)]
    pub fn text(request: &ModelRequest, surface: &RequestSurface, enc: &EncodedRequest) -> String {
        let record = RecordOut {
            entries: &request.entries,
            request_options: OptionsOut::of(request, surface, enc),
        };
        let text = serde_json::to_string(&record).expect("a record serializes");
        {
            let headers: Vec<Value> = enc.headers.iter().map(|(k, v)| json!([k, v])).collect();
            let tree = json!({
                "entries": request.entries,
                "request_options": {
                    "provider": request.provider,
                    "model": request.model,
                    "max_output_tokens": surface.max_output_tokens,
                    "reasoning_effort": surface.reasoning_effort,
                    "system": request.system,
                    "tools": request.tools,
                    "url": enc.url,
                    "headers": headers,
                },
            });
            assert_eq!(text, tree.to_string(), "the sealed record's bytes changed");
        }
        text
    }

    /// The record's text written against `anchor` (the round the request continues, whose
    /// `entries` first entries it shares): the bytes after the anchor's record prefix, to be
    /// stored as a delta, or the whole text without an anchor. Returns the text and the length
    /// of the whole record up to the end of its last entry (the next round's anchor).
    pub fn text_after(
        request: &ModelRequest,
        surface: &RequestSurface,
        enc: &EncodedRequest,
        anchor: Option<(usize, usize)>,
    ) -> (String, usize) {
        let (mut out, skip, prefix) = match anchor {
            Some((shared, prefix)) if shared > 0 && shared <= request.entries.len() => (String::new(), shared, prefix),
            _ => (String::from("{\"entries\":["), 0, 0),
        };
        let start = out.len();
        for (i, entry) in request.entries[skip..].iter().enumerate() {
            if skip > 0 || i > 0 {
                out.push(',');
            }
            out.push_str(&serde_json::to_string(entry).expect("an entry serializes"));
        }
        let prefix = prefix + out.len() - start + if skip == 0 { start } else { 0 };
        let options = OptionsOut::of(request, surface, enc);
        out.push_str("],\"request_options\":");
        out.push_str(&serde_json::to_string(&options).expect("options serialize"));
        out.push('}');
        #[cfg(debug_assertions)]
        if skip == 0 {
            assert_eq!(out, Self::text(request, surface, enc), "the record writers disagree");
        }
        (out, prefix)
    }

    /// The one reader: a stored record, typed. `None` when it does not read as one.
    pub fn read(text: &str) -> Option<SealedRecord> {
        serde_json::from_str(text).ok()
    }
}
