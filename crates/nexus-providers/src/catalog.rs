//! The configured provider instances and ref resolution (providers.md §1). Without any
//! configuration a `scripted` instance named `scripted` exists, so tests and demos need no file.

use std::collections::BTreeMap;

use crate::model_ref::ModelRef;

/// One configured instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// `anthropic`, `openai` or `scripted`.
    pub kind: String,
    /// `false` when configured `enabled = false` (`provider_disabled`).
    pub enabled: bool,
    /// The environment variable holding the key; `None` when no key is required.
    pub api_key_env: Option<String>,
    /// When present, the only models this instance serves.
    pub models: Option<Vec<String>>,
}

impl Instance {
    /// The built-in offline instance.
    pub fn scripted() -> Self {
        Self {
            kind: "scripted".into(),
            enabled: true,
            api_key_env: None,
            models: None,
        }
    }
}

/// Why a ref does not resolve. `as_str` is the spec's failure word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// No such instance (or the ref breaks the grammar).
    #[error("unknown_provider")]
    UnknownProvider,
    /// The instance has a `models` table and the model is not in it.
    #[error("unknown_model")]
    UnknownModel,
    /// The instance is configured `enabled = false`.
    #[error("provider_disabled")]
    ProviderDisabled,
    /// The instance's key variable is unset.
    #[error("missing_credential")]
    MissingCredential,
}

impl ResolveError {
    /// The spec's failure word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownProvider => "unknown_provider",
            Self::UnknownModel => "unknown_model",
            Self::ProviderDisabled => "provider_disabled",
            Self::MissingCredential => "missing_credential",
        }
    }
}

/// Instance name → instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderCatalog {
    instances: BTreeMap<String, Instance>,
}

impl Default for ProviderCatalog {
    fn default() -> Self {
        Self {
            instances: BTreeMap::from([("scripted".to_string(), Instance::scripted())]),
        }
    }
}

impl ProviderCatalog {
    /// The default catalog plus `instances` (a configured `scripted` replaces the built-in).
    pub fn with_instances(instances: impl IntoIterator<Item = (String, Instance)>) -> Self {
        let mut catalog = Self::default();
        catalog.instances.extend(instances);
        catalog
    }

    /// Adds or replaces instance `name`.
    pub fn insert(&mut self, name: impl Into<String>, instance: Instance) {
        self.instances.insert(name.into(), instance);
    }

    /// The instance named `name`, if configured.
    pub fn get(&self, name: &str) -> Option<&Instance> {
        self.instances.get(name)
    }

    /// Every instance, by name.
    pub fn instances(&self) -> impl Iterator<Item = (&str, &Instance)> {
        self.instances.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Resolves `model_ref`; `env` answers whether an environment variable is set.
    pub fn resolve(&self, model_ref: &str, env: &dyn Fn(&str) -> bool) -> Result<(), ResolveError> {
        let parsed = ModelRef::parse(model_ref).ok_or(ResolveError::UnknownProvider)?;
        let instance = self
            .instances
            .get(parsed.provider)
            .ok_or(ResolveError::UnknownProvider)?;
        if !instance.enabled {
            return Err(ResolveError::ProviderDisabled);
        }
        if let Some(models) = &instance.models
            && !models.iter().any(|m| m == parsed.model)
        {
            return Err(ResolveError::UnknownModel);
        }
        if let Some(var) = &instance.api_key_env
            && !env(var)
        {
            return Err(ResolveError::MissingCredential);
        }
        Ok(())
    }

    /// Why `model_ref` gave `err`, for a person: the value that failed and what would work
    /// (the configured instances, the instance's models, the variable to set). Not a contract.
    pub fn explain(&self, model_ref: &str, err: ResolveError) -> String {
        let names = self.instances.keys().map(String::as_str).collect::<Vec<_>>().join(", ");
        let parsed = ModelRef::parse(model_ref);
        let instance = parsed.as_ref().and_then(|r| self.instances.get(r.provider));
        match (err, parsed.as_ref(), instance) {
            (ResolveError::UnknownModel, Some(r), Some(i)) => format!(
                "instance {:?} serves only {}",
                r.provider,
                i.models.as_deref().unwrap_or_default().join(", ")
            ),
            (ResolveError::ProviderDisabled, Some(r), Some(_)) => {
                format!("instance {:?} is configured with enabled = false", r.provider)
            }
            (
                ResolveError::MissingCredential,
                Some(r),
                Some(Instance {
                    api_key_env: Some(var), ..
                }),
            ) => {
                format!(
                    "instance {:?} reads its key from {var}, which is not set where the server runs",
                    r.provider
                )
            }
            (_, Some(r), _) => format!(
                "no provider instance is named {:?}; the configured ones are: {names} ([providers.<name>] in nexus.toml)",
                r.provider
            ),
            (_, None, _) => format!(
                "{model_ref:?} is not <instance>/<model>; the configured instances are: {names} (for example scripted/echo)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripted_always_resolves() {
        let c = ProviderCatalog::default();
        assert_eq!(c.resolve("scripted/echo", &|_| false), Ok(()));
        assert_eq!(c.resolve("scripted/anything", &|_| false), Ok(()));
        assert_eq!(
            c.resolve("anthropic/claude", &|_| true),
            Err(ResolveError::UnknownProvider)
        );
        assert_eq!(c.resolve("not a ref", &|_| true), Err(ResolveError::UnknownProvider));
    }

    /// Each explanation names the bad value and what would work.
    #[test]
    fn explanations_name_the_value_and_the_choices() {
        let mut c = ProviderCatalog::default();
        c.insert(
            "claude",
            Instance {
                kind: "anthropic".into(),
                enabled: true,
                api_key_env: Some("ANTHROPIC_API_KEY".into()),
                models: Some(vec!["claude-sonnet-4-5".into(), "claude-opus-4".into()]),
            },
        );
        let mut off = Instance::scripted();
        off.enabled = false;
        c.insert("off", off);
        let explain = |r: &str| c.explain(r, c.resolve(r, &|_| false).unwrap_err());
        assert_eq!(
            explain("gpt4"),
            "\"gpt4\" is not <instance>/<model>; the configured instances are: claude, off, \
             scripted (for example scripted/echo)"
        );
        assert_eq!(
            explain("openai/gpt-4o"),
            "no provider instance is named \"openai\"; the configured ones are: claude, off, \
             scripted ([providers.<name>] in nexus.toml)"
        );
        assert_eq!(
            explain("claude/x"),
            "instance \"claude\" serves only claude-sonnet-4-5, claude-opus-4"
        );
        assert!(explain("claude/claude-opus-4").contains("ANTHROPIC_API_KEY"));
        assert!(explain("off/x").contains("enabled = false"));
    }

    #[test]
    fn each_failure_word() {
        let c = ProviderCatalog::with_instances([
            (
                "off".to_string(),
                Instance {
                    kind: "openai".into(),
                    enabled: false,
                    api_key_env: None,
                    models: None,
                },
            ),
            (
                "anthropic".to_string(),
                Instance {
                    kind: "anthropic".into(),
                    enabled: true,
                    api_key_env: Some("ANTHROPIC_API_KEY".into()),
                    models: Some(vec!["claude-sonnet-4-5".into()]),
                },
            ),
        ]);
        assert_eq!(c.resolve("off/x", &|_| true), Err(ResolveError::ProviderDisabled));
        assert_eq!(c.resolve("anthropic/other", &|_| true), Err(ResolveError::UnknownModel));
        assert_eq!(
            c.resolve("anthropic/claude-sonnet-4-5", &|_| false),
            Err(ResolveError::MissingCredential)
        );
        assert_eq!(
            c.resolve("anthropic/claude-sonnet-4-5", &|v| v == "ANTHROPIC_API_KEY"),
            Ok(())
        );
    }
}
