//! Profile writes and the assembly preview (declarations.md §12): the kernel gathers the facts
//! (stored profile, runner announcements, eligibility) and the pure core decides.

use nexus_core::codes::Code;
use nexus_core::declaration::{self, AssemblyInput, DeclError, RunnerFacts};
use nexus_store::prelude::*;
use nexus_store::{ExecutorKind, MemberKind, MemberRow};
use serde_json::Value;
use uuid::Uuid;

use crate::auth::MemberPrincipal;
use crate::error::{KernelError, KernelResult};
use crate::{Admin, Kernel};

impl From<DeclError> for KernelError {
    fn from(err: DeclError) -> Self {
        let code = err.code();
        let mut out = KernelError::new(code, err.message).with_path(err.path);
        if code == Code::ValidationFailed {
            out = out.with_reason(err.reason);
        }
        if let Some(detail) = err.detail {
            out = out.with_detail(detail);
        }
        out
    }
}

fn require_agent(principal: &MemberPrincipal) -> KernelResult<&MemberRow> {
    match principal.member.kind {
        MemberKind::Agent => Ok(&principal.member),
        MemberKind::Human => Err(KernelError::new(
            Code::NotAgent,
            "only an agent has a profile configuration",
        )),
    }
}

/// Every runner id an assembly input mentions: the selector, the candidates, and the routes of
/// the explicit entries (malformed ids are left to the grammar to refuse).
fn mentioned_runners(input: &AssemblyInput) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> = Vec::new();
    let mut push = |id: Uuid| {
        if !ids.contains(&id) {
            ids.push(id);
        }
    };
    if let Some(id) = input.default_runner_executor_public_id {
        push(id);
    }
    for v in input.runner_executor_public_ids.as_array().into_iter().flatten() {
        if let Some(id) = v.as_str().and_then(|s| Uuid::parse_str(s).ok()) {
            push(id);
        }
    }
    for entry in input.entries.as_array().into_iter().flatten() {
        let id = entry
            .pointer("/route/runner_executor_public_id")
            .and_then(Value::as_str);
        if let Some(id) = id.and_then(|s| Uuid::parse_str(s).ok()) {
            push(id);
        }
    }
    ids
}

/// A `POST /agent_api/v1/tools/assembly` body, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct AssemblyPreview {
    /// `default_runner_executor_public_id` (required; `null` is no runner).
    pub default_runner: Option<Uuid>,
    /// The candidate configuration document (free JSON, checked by the assembly); `None`
    /// previews the stored profile.
    pub configuration: Option<Value>,
    /// `tool_names`, when given.
    pub tool_names: Option<Vec<String>>,
}

impl AssemblyPreview {
    /// The body's grammar, with the codes and messages the door has always answered.
    pub fn parse(body: &Value) -> KernelResult<AssemblyPreview> {
        let Some(selector) = body.get("default_runner_executor_public_id") else {
            return Err(KernelError::new(
                Code::ParameterMissing,
                "default_runner_executor_public_id is required (a runner id, or null for none)",
            ));
        };
        let default_runner = match selector {
            Value::Null => None,
            // The same grammar as every other runner id of a declaration: the hyphenated form
            // (any case), not the simple, braced or URN forms `Uuid::parse_str` also takes.
            Value::String(s) => Some(Uuid::parse_str(s).ok().filter(|_| s.len() == 36).ok_or_else(|| {
                KernelError::new(
                    Code::ParameterInvalid,
                    format!("default_runner_executor_public_id {s:?} is not a UUID"),
                )
            })?),
            other => {
                return Err(KernelError::new(
                    Code::ParameterInvalid,
                    format!("default_runner_executor_public_id must be a UUID string or null, got {other}"),
                ));
            }
        };
        let configuration = match body.get("configuration") {
            None => None,
            Some(c) if c.is_object() => Some(c.clone()),
            Some(_) => {
                return Err(KernelError::new(
                    Code::ParameterMissing,
                    "configuration must be an object",
                ));
            }
        };
        Ok(AssemblyPreview {
            default_runner,
            configuration,
            tool_names: tool_names_of(body)?,
        })
    }
}

/// The preview's `tool_names`: absent or `null`, or an array of strings.
fn tool_names_of(body: &Value) -> KernelResult<Option<Vec<String>>> {
    match body.get("tool_names") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(names)) => names
            .iter()
            .map(|n| n.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or_else(|| KernelError::validation("invalid", "/tool_names", "tool_names must be strings")),
        Some(_) => Err(KernelError::validation(
            "invalid",
            "/tool_names",
            "tool_names must be an array of strings",
        )),
    }
}

/// A `PUT /agent_api/v1/profile/configuration` body, parsed: `{configuration}` validated and
/// normalized (declarations.md §12.3).
#[derive(Debug, Clone, PartialEq)]
pub struct NewConfiguration(pub declaration::Configuration);

impl NewConfiguration {
    /// The body as sent: `configuration` must be an object (400 `parameter_missing`) that
    /// validates (the declaration grammar's refusals).
    pub fn parse(body: &Value) -> KernelResult<NewConfiguration> {
        let Some(configuration) = body.get("configuration").filter(|c| c.is_object()) else {
            return Err(KernelError::new(
                Code::ParameterMissing,
                "the body needs a `configuration` object",
            ));
        };
        Ok(NewConfiguration(declaration::validate_configuration(configuration)?))
    }
}

fn parse_stored(text: &str, fallback: Value) -> Value {
    serde_json::from_str(text).unwrap_or(fallback)
}

impl Admin<'_> {
    /// `PUT /agent_api/v1/profile/configuration`: stores a whole replacement
    /// ([`NewConfiguration::parse`]), refused once the caller is known to be an agent; its
    /// `default_model` must resolve.
    pub async fn put_configuration(
        &self,
        principal: &MemberPrincipal,
        request: KernelResult<NewConfiguration>,
    ) -> KernelResult<crate::profile::ProfileReply> {
        let agent = require_agent(principal)?;
        let NewConfiguration(validated) = request?;
        if let Some(model) = &validated.default_model {
            let catalog = self.providers.catalog();
            catalog
                .resolve(model, &|var| std::env::var_os(var).is_some())
                .map_err(|e| {
                    KernelError::validation(
                        e.as_str(),
                        "/configuration/default_model",
                        format!(
                            "default_model {model:?} does not resolve: {}: {}",
                            e.as_str(),
                            catalog.explain(model, e)
                        ),
                    )
                })?;
        }
        let stored = serde_json::to_string(&validated.to_stored_json()).expect("a configuration serializes");
        self.store
            .set_member_configuration(agent.id, Some(&stored), self.now_ms())
            .await?;
        let member = self
            .store
            .member_by_id(agent.id)
            .await?
            .ok_or_else(KernelError::unauthorized)?;
        self.profile(&MemberPrincipal {
            member,
            credential: principal.credential.clone(),
        })
        .await
    }

    /// `POST /agent_api/v1/tools/assembly`: runs the assembly on a candidate configuration
    /// (or the stored profile) and a runner choice ([`AssemblyPreview::parse`]). Creates
    /// nothing. A body that does not parse is refused once the caller is known to be an agent.
    pub async fn assembly_preview(
        &self,
        principal: &MemberPrincipal,
        body: KernelResult<AssemblyPreview>,
    ) -> KernelResult<declaration::Assembly> {
        let agent = require_agent(principal)?;
        let preview = body?;
        let mut input = match &preview.configuration {
            None => {
                let stored = crate::profile::configuration_read(agent.configuration.as_deref());
                let mut input = AssemblyInput::from_configuration(&stored);
                input.paths = declaration::AssemblyPaths::under("/profile/configuration", "tool_definitions");
                input
            }
            Some(c) => AssemblyInput::from_configuration(c),
        };
        input.default_runner_executor_public_id = preview.default_runner;
        input.tool_names = preview.tool_names;
        self.gather_facts(agent, &mut input).await?;
        Ok(declaration::assemble(&input)?)
    }
}

impl Kernel {
    /// Fills the runner facts and skill sources an assembly needs, as the store has them now.
    /// The workspace skill source is the default workspace of the principal's account, when the
    /// principal has standing there (the assembly preview names no workspace); acceptance uses
    /// [`Kernel::gather_facts_in`] with the run's workspace.
    pub(crate) async fn gather_facts(&self, principal: &MemberRow, input: &mut AssemblyInput) -> KernelResult<()> {
        let workspace = match self
            .store
            .workspace_by_handle(principal.account_id, crate::admin::DEFAULT_WORKSPACE)
            .await?
        {
            Some(ws) if self.store.standing(ws.id, principal.id).await?.is_some() => Some(ws),
            _ => None,
        };
        self.gather_facts_in(principal, workspace.as_ref(), input).await
    }

    /// [`Kernel::gather_facts`] with the workspace whose `workspace/skills/<name>` documents are
    /// the workspace skill source (`None`: no workspace source). The user source is the
    /// `user/skills/<name>` documents of the principal's controlling human (declarations.md §8,
    /// §11).
    pub(crate) async fn gather_facts_in(
        &self,
        principal: &MemberRow,
        workspace: Option<&nexus_store::WorkspaceRow>,
        input: &mut AssemblyInput,
    ) -> KernelResult<()> {
        for id in mentioned_runners(input) {
            let Some(runner) = self.store.executor_by_public_id(id).await? else {
                continue;
            };
            if runner.kind != ExecutorKind::Runner || runner.account_id != principal.account_id {
                continue;
            }
            input.runners.push(RunnerFacts {
                public_id: runner.public_id,
                display_name: runner.display_name.clone(),
                eligible: self.runner_eligible_for(&runner, principal).await?,
                served_tools: parse_stored(&runner.served_tools, Value::Array(vec![])),
                environment: parse_stored(&runner.environment, Value::Object(Default::default())),
                documents: parse_stored(&runner.served_documents, Value::Array(vec![])),
            });
        }
        if principal.kind == MemberKind::Agent
            && let Some(app) = self.store.agent_application_of(principal.id).await?
        {
            input.agent_application_executor_public_id = Some(app.public_id);
            let docs = parse_stored(&app.served_documents, Value::Array(vec![]));
            input.agent_application_documents = docs
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|d| {
                    Some((
                        d.get("name")?.as_str()?.to_string(),
                        d.get("description")?.as_str()?.to_string(),
                    ))
                })
                .collect();
        }
        // Memory skill documents: `workspace/skills/<name>` of the workspace, then
        // `user/skills/<name>` of the controlling human (the core applies the precedence).
        use nexus_store::MemoryScope;
        if let Some(ws) = workspace {
            let docs = self
                .store
                .memory_documents(MemoryScope::Workspace, ws.id, false)
                .await?;
            input.workspace_skills = crate::memory::skill_documents(&docs);
        }
        let human = crate::memory::controlling_human_id(principal);
        let docs = self.store.memory_documents(MemoryScope::User, human, false).await?;
        input.user_skills = crate::memory::skill_documents(&docs);
        Ok(())
    }
}
