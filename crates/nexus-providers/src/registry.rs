//! `Providers`: instance name → adapter, plus the catalog that describes the same instances,
//! so profile validation (catalog) and acceptance (registry) always agree.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::anthropic::Anthropic;
use crate::catalog::{Instance, ProviderCatalog, ResolveError};
use crate::config::{InstanceConfig, Kind};
use crate::model_ref::ModelRef;
use crate::openai::OpenAi;
use crate::provider::Provider;
use crate::scripted::Scripted;

/// The live provider instances. Always holds `scripted` (over `<data-dir>/scripts`).
#[derive(Clone)]
pub struct Providers {
    instances: BTreeMap<String, Arc<dyn Provider>>,
    catalog: ProviderCatalog,
}

impl std::fmt::Debug for Providers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Providers")
            .field("instances", &self.instances.keys().collect::<Vec<_>>())
            .field("catalog", &self.catalog)
            .finish()
    }
}

impl Providers {
    /// The built-in set: `scripted` → [`Scripted`] over `scripts_dir`.
    pub fn new(scripts_dir: PathBuf) -> Self {
        let mut providers = Self {
            instances: BTreeMap::new(),
            catalog: ProviderCatalog::default(),
        };
        providers.insert("scripted", Arc::new(Scripted::new(scripts_dir)), Instance::scripted());
        providers
    }

    /// The built-in set plus every `[providers.<name>]` table (a configured `scripted`
    /// replaces the built-in one; its `scripts_dir` defaults to `scripts_dir`).
    pub fn from_config(scripts_dir: PathBuf, configs: &BTreeMap<String, InstanceConfig>) -> Self {
        let mut providers = Self::new(scripts_dir.clone());
        for (name, config) in configs {
            let provider: Arc<dyn Provider> = match config.kind {
                Kind::Anthropic => Arc::new(Anthropic::new(config.clone())),
                Kind::Openai => Arc::new(OpenAi::new(config.clone())),
                Kind::Scripted => {
                    let dir = config.scripts_dir.clone().unwrap_or_else(|| scripts_dir.clone());
                    let caps = config.capabilities("");
                    Arc::new(Scripted::new(dir).with_capabilities(caps))
                }
            };
            providers.insert(name.clone(), provider, config.instance());
        }
        providers
    }

    /// Adds or replaces instance `name` (configured instances, test doubles). `instance` is what
    /// the catalog reports for it.
    pub fn insert(&mut self, name: impl Into<String>, provider: Arc<dyn Provider>, instance: Instance) {
        let name = name.into();
        self.catalog.insert(name.clone(), instance);
        self.instances.insert(name, provider);
    }

    /// Resolves `model_ref` to its adapter and model. Applies the catalog's rules
    /// (`unknown_provider`, `provider_disabled`, `unknown_model`) but not the credential check,
    /// which needs the environment: use [`ProviderCatalog::resolve`] for that.
    pub fn resolve(&self, model_ref: &str) -> Result<(Arc<dyn Provider>, String), ResolveError> {
        self.catalog.resolve(model_ref, &|_| true)?;
        let parsed = ModelRef::parse(model_ref).ok_or(ResolveError::UnknownProvider)?;
        let provider = self
            .instances
            .get(parsed.provider)
            .ok_or(ResolveError::UnknownProvider)?;
        Ok((Arc::clone(provider), parsed.model.to_string()))
    }

    /// The catalog describing exactly these instances.
    pub fn catalog(&self) -> &ProviderCatalog {
        &self.catalog
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripted_is_always_there() {
        let p = Providers::new(PathBuf::from("/nonexistent"));
        let (provider, model) = p.resolve("scripted/echo").unwrap();
        assert_eq!(provider.kind(), "scripted");
        assert_eq!(model, "echo");
        assert_eq!(p.resolve("scripted/a/b").unwrap().1, "a/b");
        assert_eq!(p.resolve("anthropic/x").err(), Some(ResolveError::UnknownProvider));
        assert_eq!(p.resolve("nope").err(), Some(ResolveError::UnknownProvider));
        assert_eq!(p.catalog(), &ProviderCatalog::default());
    }

    #[test]
    fn inserted_instances_agree_with_the_catalog() {
        let mut p = Providers::new(PathBuf::from("/nonexistent"));
        let mut off = Instance::scripted();
        off.enabled = false;
        p.insert("off", Arc::new(Scripted::new("/x")), off);
        assert_eq!(p.resolve("off/echo").err(), Some(ResolveError::ProviderDisabled));
        assert_eq!(
            p.catalog().resolve("off/echo", &|_| true),
            Err(ResolveError::ProviderDisabled)
        );
        let mut only = Instance::scripted();
        only.models = Some(vec!["echo".into()]);
        p.insert("demo", Arc::new(Scripted::new("/x")), only);
        assert!(p.resolve("demo/echo").is_ok());
        assert_eq!(p.resolve("demo/other").err(), Some(ResolveError::UnknownModel));
    }
}
