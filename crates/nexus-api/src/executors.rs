//! Executors on the wire: the calling executor's own record (executor.md §2), its
//! announcement (§4), and runner discovery on the member plane (§3).

use nexus_core::registry::effect::EffectProfile;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::common::open_words;

open_words! {
    /// What an executor address is (executor.md §1).
    pub enum ExecutorKind {
        /// A runner: serves tools to the runs that select it.
        Runner = "runner",
        /// An agent's own application address.
        AgentApplication = "agent_application",
    }
}

/// The calling executor as `GET X` reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ExecutorRecord {
    /// The executor's id.
    #[schema(schema_with = crate::ids::uuid)]
    pub public_id: String,
    /// `runner` or `agent_application`.
    pub kind: ExecutorKind,
    /// `active` or `revoked`.
    pub status: String,
    /// Its display name (a runner's registration name).
    pub display_name: String,
    /// The credential epoch the bearer proves.
    pub credential_epoch: i64,
    /// Members this crate does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// `GET /agent_api/v1/executor`, and the answer of `PUT X/announcement`:
/// `{executor, measured_at}` (executor.md §2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ExecutorDescription {
    /// The calling executor.
    pub executor: ExecutorRecord,
    /// RFC 3339 time of the read.
    pub measured_at: String,
}

/// One announced tool entry (executor.md §4): `name`, `effect_profile`, `timeout_ms?`,
/// `description?`, `input_schema?`; the kernel drops other keys. An entry without a description
/// or a schema is operator-only: authored steps may call it, a model never sees it. Discovery
/// serves the stored entries (`served_tools`) in the same shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AnnouncedTool {
    /// The served name, `^[a-zA-Z0-9_-]{1,64}$`, unique in the announcement, not in a reserved
    /// namespace.
    pub name: String,
    /// The five-key effect profile the kernel freezes on each call.
    pub effect_profile: EffectProfile,
    /// The announced budget per call, in milliseconds (the kernel's default is 600,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 1)]
    pub timeout_ms: Option<u64>,
    /// What the model reads about the tool (non-blank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub description: Option<String>,
    /// A JSON Schema object with `"type": "object"`, kept verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>, nullable = false)]
    pub input_schema: Option<Value>,
}

impl AnnouncedTool {
    /// An operator-only entry; add [`AnnouncedTool::description`] and
    /// [`AnnouncedTool::input_schema`] so a model can call it.
    pub fn new(name: impl Into<String>, effect_profile: EffectProfile) -> AnnouncedTool {
        AnnouncedTool {
            name: name.into(),
            effect_profile,
            timeout_ms: None,
            description: None,
            input_schema: None,
        }
    }

    /// Sets the description.
    pub fn description(mut self, text: impl Into<String>) -> AnnouncedTool {
        self.description = Some(text.into());
        self
    }

    /// Sets the input schema.
    pub fn input_schema(mut self, schema: Value) -> AnnouncedTool {
        self.input_schema = Some(schema);
        self
    }

    /// Sets the announced timeout.
    pub fn timeout_ms(mut self, ms: u64) -> AnnouncedTool {
        self.timeout_ms = Some(ms);
        self
    }
}

/// A skill document an executor announces (`documents[]`): `{name, description}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AnnouncedDocument {
    /// The skill name (kernel-tools.md §9 grammar), unique in the announcement.
    pub name: String,
    /// One non-blank paragraph, at most 1,024 bytes.
    pub description: String,
}

/// The body of `PUT /agent_api/v1/executor/announcement` (executor.md §4): replaces the tools,
/// the environment and the documents at once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Announcement {
    /// The served tools (`[]` clears them).
    pub tools: Vec<AnnouncedTool>,
    /// Free-form facts about where the executor runs (`{os, arch, hostname, …}`), at most
    /// 65,536 bytes of canonical JSON; absent means `{}`.
    #[serde(default)]
    pub environment: Map<String, Value>,
    /// Skill documents (announce `skill` too, or loads fail `tool_not_served`); absent means
    /// `[]`.
    #[serde(default)]
    pub documents: Vec<AnnouncedDocument>,
}

/// A runner eligible for the caller, as `GET /agent_api/v1/executors` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ExecutorInfo {
    /// The executor's id (a step's `runner_executor_public_id`).
    #[schema(schema_with = crate::ids::uuid)]
    pub public_id: String,
    /// `runner`.
    pub kind: String,
    /// Its display name.
    #[serde(default)]
    pub display_name: String,
    /// Its lifecycle status.
    #[serde(default)]
    pub status: String,
    /// Who may use it.
    #[serde(default)]
    pub assignment_scope: String,
    /// The tool entries of its last announcement, sorted by name.
    #[serde(default)]
    pub served_tools: Vec<AnnouncedTool>,
    /// The environment of its last announcement.
    #[serde(default)]
    pub environment: Map<String, Value>,
    /// The documents of its last announcement, sorted by name.
    #[serde(default)]
    pub served_documents: Vec<AnnouncedDocument>,
    /// `online`, `offline` or `not_yet_seen` (display only).
    #[serde(default)]
    pub presence: String,
    /// RFC 3339 time it was last seen.
    #[serde(default)]
    pub last_seen_at: Option<String>,
    /// Members this SDK does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl ExecutorInfo {
    /// The names of the tools it serves.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.served_tools.iter().map(|t| t.name.as_str())
    }
}

/// `GET /agent_api/v1/executors`: the runners eligible for the caller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ExecutorList {
    /// The runners.
    pub executors: Vec<ExecutorInfo>,
}

/// `GET /agent_api/v1/executors/{id}`: one runner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ExecutorEnvelope {
    /// The runner.
    pub executor: ExecutorInfo,
}
