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
