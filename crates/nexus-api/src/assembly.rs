//! The assembly preview, `POST /agent_api/v1/tools/assembly` (declarations.md §12.1): the body
//! names a runner choice and, optionally, a candidate configuration; the answer is what §7 would
//! freeze (the rendered declaration, the environment snapshot and the skill catalog).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::PartialSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{Object, Schema};

use crate::common::open_words;
use crate::profile::Configuration;

/// The body of `POST /agent_api/v1/tools/assembly`:
/// `{default_runner_executor_public_id, configuration?, tool_names?}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AssemblyRequest {
    /// The selected runner, or `null` for none. Always sent: the key is required.
    #[schema(required = true, schema_with = crate::ids::nullable_uuid)]
    pub default_runner_executor_public_id: Option<String>,
    /// The candidate configuration (only its four declaration fields are read, whatever the
    /// other members hold); absent: the caller's stored profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = previewed_configuration)]
    pub configuration: Option<Configuration>,
    /// Narrow the result to these callables (declarations.md §9); `null`: no narrowing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_names: Option<Vec<String>>,
}

/// The configuration members the preview reads (declarations.md §12.1: "Other configuration
/// keys are ignored").
pub const PREVIEWED_FIELDS: [&str; 4] = [
    "tool_definitions",
    "kernel_tools",
    "runner_executor_public_ids",
    "runner_tool_names",
];

/// The schema of the preview's `configuration`: [`Configuration`]'s, keeping only
/// [`PREVIEWED_FIELDS`], so a member the preview ignores is not documented as one it refuses.
fn previewed_configuration() -> Object {
    let RefOr::T(Schema::Object(mut schema)) = Configuration::schema() else {
        unreachable!("Configuration is a struct: its schema is an object")
    };
    schema
        .properties
        .retain(|name, _| PREVIEWED_FIELDS.contains(&name.as_str()));
    schema.required.retain(|name| PREVIEWED_FIELDS.contains(&name.as_str()));
    schema.description = Some(
        "The candidate configuration: only its four declaration fields are read; other members \
         are ignored, whatever they hold (declarations.md §12.1). Absent: the caller's stored \
         profile."
            .into(),
    );
    schema
}

impl AssemblyRequest {
    /// A preview of the stored profile with `runner` selected (`None`: no runner).
    pub fn new(runner: Option<&str>) -> AssemblyRequest {
        AssemblyRequest {
            default_runner_executor_public_id: runner.map(str::to_owned),
            ..AssemblyRequest::default()
        }
    }

    /// Previews `configuration` instead of the stored profile.
    pub fn configuration(mut self, configuration: Configuration) -> AssemblyRequest {
        self.configuration = Some(configuration);
        self
    }

    /// Narrows the result to `names`.
    pub fn tool_names(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> AssemblyRequest {
        self.tool_names = Some(names.into_iter().map(Into::into).collect());
        self
    }
}

/// The preview's answer: `{tool_definitions, environment, skills}` (declarations.md §7.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AssemblyPreview {
    /// The rendered, sorted declaration: each entry one of the shapes of declarations.md §2–§4,
    /// as stored (routes and `defer_loading` included).
    #[schema(value_type = Vec<Object>)]
    pub tool_definitions: Vec<Map<String, Value>>,
    /// The environment snapshot (§7.2 step 9).
    pub environment: EnvironmentSnapshot,
    /// The skill catalog (§11).
    pub skills: Vec<SkillEntry>,
    /// Members this crate does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// The environment snapshot an assembly freezes (declarations.md §7.2 step 9).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct EnvironmentSnapshot {
    /// The selected runner, or `null`.
    #[schema(required = true, schema_with = crate::ids::nullable_uuid)]
    pub default_runner_executor_public_id: Option<String>,
    /// The selected runner first, then each other runner a routed entry names.
    pub executors: Vec<RunnerSnapshot>,
    /// The eligible import candidates, in declared order.
    pub runner_candidates: Vec<RunnerSnapshot>,
    /// Members this crate does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// One runner in an [`EnvironmentSnapshot`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunnerSnapshot {
    /// The runner's id.
    #[schema(schema_with = crate::ids::uuid)]
    pub runner_executor_public_id: String,
    /// Its display name.
    pub display_name: String,
    /// Its announced environment (free-form facts: `os`, `arch`, …).
    pub environment: Map<String, Value>,
    /// Members this crate does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

open_words! {
    /// Where a skill document comes from (declarations.md §11).
    pub enum SkillSource {
        /// A runner's announced documents.
        Runner = "runner",
        /// The declaring agent's agent_application documents.
        AgentApplication = "agent_application",
        /// `workspace/skills/<name>` memory documents.
        Workspace = "workspace",
        /// `user/skills/<name>` memory documents.
        User = "user",
    }
}

/// One skill catalog entry: `{callable, name, description, source, executor_public_id?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SkillEntry {
    /// The callable that loads it.
    pub callable: String,
    /// The document's name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Where it comes from.
    pub source: SkillSource,
    /// The executor that announces it (`runner` and `agent_application` sources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, schema_with = crate::ids::uuid)]
    pub executor_public_id: Option<String>,
    /// Members this crate does not name.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}
