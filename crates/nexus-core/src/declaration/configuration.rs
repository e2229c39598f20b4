//! Agent profile configuration (declarations.md §12.3): the `PUT
//! /agent_api/v1/profile/configuration` grammar and its stored form.

use serde_json::{Value, json};
use uuid::Uuid;

use super::error::DeclError;
use super::imports::{parse_kernel_tools, parse_runner_executor_public_ids, parse_runner_tool_names};
use super::pointer;
use super::set::validate_declaration;
use crate::approval::{self, Rule};
use crate::bounds;

/// The profile's approval mode (approvals.md §1): the run's mode type.
pub use crate::approval::Mode as ApprovalMode;

/// A validated, normalized profile configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Configuration {
    /// The declaration, rendered and sorted (`[]` when unset).
    pub tool_definitions: Vec<Value>,
    /// `kernel_tools` (`None` = null).
    pub kernel_tools: Option<Vec<String>>,
    /// `runner_executor_public_ids` (stored lowercase).
    pub runner_executor_public_ids: Option<Vec<Uuid>>,
    /// `runner_tool_names` (`None` = null = import everything).
    pub runner_tool_names: Option<Vec<String>>,
    /// `approval_mode`.
    pub approval_mode: Option<ApprovalMode>,
    /// `approval_rules`, parsed.
    pub approval_rules: Option<Vec<Rule>>,
    /// `approval_rules` exactly as given (what is stored and read back).
    pub approval_rules_json: Value,
    /// `default_model` (`provider/model`).
    pub default_model: Option<String>,
    /// `instructions`: the system text of the agent's turns.
    pub instructions: Option<String>,
}

impl Configuration {
    /// The whole stored configuration object, every field present (unset → `null`,
    /// `tool_definitions` → `[]`). This is what `GET /agent_api/v1/profile` serves as
    /// `configuration`, and what [`super::AssemblyInput::from_configuration`] reads back.
    pub fn to_stored_json(&self) -> Value {
        json!({
            "tool_definitions": self.tool_definitions,
            "kernel_tools": self.kernel_tools,
            "runner_executor_public_ids": self
                .runner_executor_public_ids
                .as_ref()
                .map(|ids| ids.iter().map(Uuid::to_string).collect::<Vec<_>>()),
            "runner_tool_names": self.runner_tool_names,
            "approval_mode": self.approval_mode.map(ApprovalMode::as_str),
            "approval_rules": self.approval_rules_json,
            "default_model": self.default_model,
            "instructions": self.instructions,
        })
    }
}

const BASE: &str = "/configuration";

/// Validates a `configuration` object (whole replacement: an omitted field is cleared).
/// Declarations are checked without eligibility (routes and runners are checked at
/// acceptance); `default_model` is checked for its grammar only (the kernel checks the provider
/// and model for the account). Unknown keys are ignored. Paths are `/configuration/…`.
pub fn validate_configuration(value: &Value) -> Result<Configuration, DeclError> {
    let Some(obj) = value.as_object() else {
        return Err(DeclError::validation(
            "invalid",
            BASE,
            format!("configuration must be an object, got {value}"),
        ));
    };
    let null = Value::Null;
    let field = |k: &str| obj.get(k).unwrap_or(&null);
    let path = |k: &str| pointer::push(BASE, k);

    let tool_definitions = validate_declaration(field("tool_definitions"), &path("tool_definitions"))?;
    let kernel_tools = parse_kernel_tools(field("kernel_tools"), &path("kernel_tools"))?;
    let runner_executor_public_ids =
        parse_runner_executor_public_ids(field("runner_executor_public_ids"), &path("runner_executor_public_ids"))?;
    let runner_tool_names = parse_runner_tool_names(field("runner_tool_names"), &path("runner_tool_names"))?;

    let approval_mode = match field("approval_mode") {
        Value::Null => None,
        Value::String(s) if ApprovalMode::from_word(s).is_some() => ApprovalMode::from_word(s),
        other => {
            return Err(DeclError::validation(
                "invalid",
                path("approval_mode"),
                format!("approval_mode is bypass, ask, rules or null, got {other}"),
            ));
        }
    };
    let imports_tools = runner_executor_public_ids.as_ref().is_some_and(|c| !c.is_empty())
        && runner_tool_names.as_ref().is_none_or(|a| !a.is_empty());
    let declares =
        !tool_definitions.is_empty() || kernel_tools.as_ref().is_some_and(|k| !k.is_empty()) || imports_tools;
    if declares && approval_mode.is_none() {
        return Err(DeclError::validation(
            "approval_mode_required",
            path("approval_mode"),
            "a profile that declares tools must set approval_mode (bypass, ask or rules)",
        ));
    }

    let approval_rules_json = field("approval_rules").clone();
    let approval_rules = match &approval_rules_json {
        Value::Null => None,
        rules => Some(approval::parse_rules(rules).map_err(|e| {
            DeclError::validation(e.reason, format!("{}{}", path("approval_rules"), e.path), e.to_string())
        })?),
    };

    let default_model = match field("default_model") {
        Value::Null => None,
        Value::String(s) => {
            match s.split_once('/') {
                Some((provider, model)) if !provider.is_empty() && !model.is_empty() => {}
                Some((provider, _)) if !provider.is_empty() => {
                    return Err(DeclError::validation(
                        "unknown_model",
                        path("default_model"),
                        format!("default_model {s:?} names no model after the provider"),
                    ));
                }
                _ => {
                    return Err(DeclError::validation(
                        "unknown_provider",
                        path("default_model"),
                        format!("default_model {s:?} is not provider/model"),
                    ));
                }
            }
            Some(s.clone())
        }
        other => {
            return Err(DeclError::validation(
                "invalid",
                path("default_model"),
                format!("default_model is a provider/model string or null, got {other}"),
            ));
        }
    };

    let instructions = match field("instructions") {
        Value::Null => None,
        Value::String(s) if s.len() <= bounds::INSTRUCTIONS && !s.contains('\0') => Some(s.clone()),
        Value::String(s) => {
            return Err(DeclError::validation(
                "invalid",
                path("instructions"),
                format!(
                    "instructions are at most {} bytes with no NUL ({} bytes given)",
                    bounds::INSTRUCTIONS,
                    s.len()
                ),
            ));
        }
        other => {
            return Err(DeclError::validation(
                "invalid",
                path("instructions"),
                format!("instructions are a string or null, got {other}"),
            ));
        }
    };

    Ok(Configuration {
        tool_definitions,
        kernel_tools,
        runner_executor_public_ids,
        runner_tool_names,
        approval_mode,
        approval_rules,
        approval_rules_json,
        default_model,
        instructions,
    })
}
