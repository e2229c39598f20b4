//! `[providers.<instance>]` in `nexus.toml` (providers.md §1): what an instance is configured
//! with, its defaults, and the model capabilities it reports.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::Deserialize;

use crate::catalog::Instance;
use crate::provider::ModelCapabilities;

/// The adapter an instance uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The Messages API (providers.md §5).
    Anthropic,
    /// Chat Completions and every compatible server (providers.md §6).
    Openai,
    /// Offline replies from scripts (providers.md §7).
    Scripted,
}

impl Kind {
    /// `anthropic`, `openai` or `scripted`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::Openai => "openai",
            Self::Scripted => "scripted",
        }
    }
}

/// One model's table (`[providers.<i>.models."<model>"]`) or the instance's `[defaults]`.
/// Absent members fall back to the instance defaults, then to the kind's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// The context window in tokens.
    pub context_window: Option<u32>,
    /// The largest output budget in tokens.
    pub max_output_tokens: Option<u32>,
    /// The media types sent inline; others become index lines (runs.md §8).
    pub media: Option<Vec<String>>,
    /// Whether the model supports provider-side tool search (providers.md §5.3).
    pub native_tool_search: Option<bool>,
}

/// `max_tokens_field` of an `openai` instance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    /// `max_completion_tokens` (the default).
    #[default]
    MaxCompletionTokens,
    /// `max_tokens` (older compatible servers).
    MaxTokens,
}

/// `system_role` of an `openai` instance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemRole {
    /// `system` (the default).
    #[default]
    System,
    /// `developer`.
    Developer,
}

/// One `[providers.<instance>]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstanceConfig {
    /// The adapter.
    pub kind: Kind,
    /// Where requests go; each kind has a default (`https://api.anthropic.com`,
    /// `https://api.openai.com/v1`).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the key. Read at send time, never stored.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// `false` refuses every ref to this instance (`provider_disabled`).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Per-model capabilities; when present, the only models the instance serves.
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
    /// Capabilities of a model without a table.
    #[serde(default)]
    pub defaults: ModelConfig,
    /// Anthropic: the `cache_control` breakpoints (providers.md §5.1). Default true.
    #[serde(default = "yes")]
    pub prompt_caching: bool,
    /// Anthropic: provider-side tool search for models that support it (providers.md §5.3).
    #[serde(default)]
    pub server_tool_search: bool,
    /// Anthropic: the `anthropic-beta` header value, if any.
    #[serde(default)]
    pub beta_headers: Option<String>,
    /// OpenAI: which member carries the output budget.
    #[serde(default)]
    pub max_tokens_field: MaxTokensField,
    /// OpenAI: the role of the system message.
    #[serde(default)]
    pub system_role: SystemRole,
    /// OpenAI: `parallel_tool_calls`, sent only when configured.
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    /// Headers added to every request (sealed with it, so never put a secret here).
    #[serde(default)]
    pub extra_headers: BTreeMap<String, String>,
    /// Attempts per round in total (providers.md §8). Default 4.
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// The bound on each attempt, in milliseconds. Default 600,000.
    #[serde(default = "default_request_timeout_ms")]
    pub request_timeout_ms: u64,
    /// Whether replies stream (`stream: true`). Default true for `anthropic` and `openai`.
    #[serde(default)]
    pub stream: Option<bool>,
    /// Scripted: where scripts are read (default `<data-dir>/scripts`).
    #[serde(default)]
    pub scripts_dir: Option<std::path::PathBuf>,
}

fn yes() -> bool {
    true
}

fn default_max_attempts() -> u32 {
    4
}

fn default_request_timeout_ms() -> u64 {
    600_000
}

/// The kind-wide defaults: 200,000-token window, 8,192 output tokens, the media a kind's
/// wire can carry (images and PDF for all three).
fn kind_capabilities() -> ModelCapabilities {
    ModelCapabilities {
        context_window: 200_000,
        max_output_tokens: 8_192,
        media: ["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"]
            .map(String::from)
            .into(),
        tools: true,
        native_tool_search: false,
    }
}

impl InstanceConfig {
    /// A config of `kind` with every default (tests, the built-in `scripted`).
    pub fn of(kind: Kind) -> Self {
        Self {
            kind,
            base_url: None,
            api_key_env: None,
            enabled: true,
            models: BTreeMap::new(),
            defaults: ModelConfig::default(),
            prompt_caching: true,
            server_tool_search: false,
            beta_headers: None,
            max_tokens_field: MaxTokensField::default(),
            system_role: SystemRole::default(),
            parallel_tool_calls: None,
            extra_headers: BTreeMap::new(),
            max_attempts: default_max_attempts(),
            request_timeout_ms: default_request_timeout_ms(),
            stream: None,
            scripts_dir: None,
        }
    }

    /// `base_url` without a trailing `/`, or the kind's default.
    pub fn base_url(&self) -> String {
        let url = match (&self.base_url, self.kind) {
            (Some(url), _) => url.as_str(),
            (None, Kind::Anthropic) => "https://api.anthropic.com",
            (None, Kind::Openai) => "https://api.openai.com/v1",
            (None, Kind::Scripted) => "",
        };
        url.trim_end_matches('/').to_string()
    }

    /// Whether replies stream.
    pub fn streams(&self) -> bool {
        self.stream.unwrap_or(self.kind != Kind::Scripted)
    }

    /// The per-attempt bound.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms.max(1))
    }

    /// What `model` accepts: its table over `[defaults]` over the kind's defaults.
    pub fn capabilities(&self, model: &str) -> ModelCapabilities {
        let mut caps = kind_capabilities();
        let tables = [Some(&self.defaults), self.models.get(model)];
        for table in tables.into_iter().flatten() {
            if let Some(n) = table.context_window {
                caps.context_window = n;
            }
            if let Some(n) = table.max_output_tokens {
                caps.max_output_tokens = n;
            }
            if let Some(media) = &table.media {
                caps.media = media.iter().cloned().collect::<BTreeSet<_>>();
            }
            if let Some(b) = table.native_tool_search {
                caps.native_tool_search = b;
            }
        }
        caps
    }

    /// Refuses a configuration that would seal a secret: an `extra_headers` entry named like a
    /// credential (`authorization`, `x-api-key`, `api-key`, `proxy-authorization`). Extra
    /// headers are part of the sealed request; a key belongs in `api_key_env`.
    pub fn check(&self) -> Result<(), String> {
        const SECRET_HEADERS: [&str; 4] = ["authorization", "x-api-key", "api-key", "proxy-authorization"];
        match self
            .extra_headers
            .keys()
            .find(|k| SECRET_HEADERS.contains(&k.to_ascii_lowercase().as_str()))
        {
            Some(name) => Err(format!(
                "extra_headers.{name} would be sealed with every request: put the key's variable in api_key_env"
            )),
            None => Ok(()),
        }
    }

    /// What the catalog reports for this instance.
    pub fn instance(&self) -> Instance {
        Instance {
            kind: self.kind.as_str().into(),
            enabled: self.enabled,
            api_key_env: self.api_key_env.clone(),
            models: (!self.models.is_empty()).then(|| self.models.keys().cloned().collect()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_example_parses() {
        let text = r#"
[anthropic]
kind = "anthropic"
base_url = "https://api.anthropic.com"
api_key_env = "ANTHROPIC_API_KEY"
prompt_caching = true
server_tool_search = false
[anthropic.models."claude-sonnet-4-5"]
context_window = 200000
max_output_tokens = 64000
media = ["image/png","image/jpeg","image/gif","image/webp","application/pdf"]

[local]
kind = "openai"
base_url = "http://127.0.0.1:8000/v1/"
api_key_env = "LOCAL_KEY"
max_tokens_field = "max_tokens"
system_role = "system"
[local.defaults]
context_window = 32768
media = []

[scripted]
kind = "scripted"
scripts_dir = "./scripts"
"#;
        let all: BTreeMap<String, InstanceConfig> = toml::from_str(text).unwrap();
        let a = &all["anthropic"];
        assert_eq!(a.kind, Kind::Anthropic);
        assert!(a.streams());
        assert_eq!(a.capabilities("claude-sonnet-4-5").max_output_tokens, 64_000);
        assert_eq!(a.instance().models, Some(vec!["claude-sonnet-4-5".to_string()]));
        let local = &all["local"];
        assert_eq!(local.base_url(), "http://127.0.0.1:8000/v1");
        assert_eq!(local.max_tokens_field, MaxTokensField::MaxTokens);
        let caps = local.capabilities("qwen");
        assert_eq!(caps.context_window, 32_768);
        assert!(caps.media.is_empty());
        assert_eq!(local.instance().models, None);
        assert!(!all["scripted"].streams());
        assert_eq!(all["scripted"].max_attempts, 4);
    }

    #[test]
    fn a_secret_header_is_refused() {
        let mut c = InstanceConfig::of(Kind::Openai);
        c.extra_headers.insert("OpenAI-Organization".into(), "org-1".into());
        assert_eq!(c.check(), Ok(()));
        c.extra_headers.insert("Authorization".into(), "Bearer sk-x".into());
        assert!(c.check().unwrap_err().contains("api_key_env"));
    }

    #[test]
    fn unknown_members_are_refused() {
        let err = toml::from_str::<InstanceConfig>("kind = \"openai\"\napi_key = \"sk-oops\"").unwrap_err();
        assert!(err.to_string().contains("api_key"), "{err}");
        assert!(toml::from_str::<InstanceConfig>("kind = \"gemini\"").is_err());
    }
}
