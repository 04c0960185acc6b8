//! What every host of this binary shares: the model registry from the config, the process policy,
//! and the session factory.

use crate::config::Config;
use anyhow::Context;
use std::path::PathBuf;
use std::sync::Arc;
use volcanic_abstractions::sessions::SessionStore;
use volcanic_core::agent::{AgentSessionFactory, FactoryConfig};
use volcanic_core::models::ModelRegistry;
use volcanic_core::processes::{ProcessEnvironmentOptions, ProcessSpawnPolicy};

/// Built-in providers (each with its catalogue of current models and its key variable), then
/// the config's `[providers.*]` sections.
pub fn model_registry(config: &Config) -> anyhow::Result<ModelRegistry> {
    let mut models = ModelRegistry::new();
    models.register_provider(volcanic_anthropic::registration()?);
    models.register_provider(volcanic_openai::registration()?);
    for p in &config.providers {
        models
            .add_custom_provider(p)
            .with_context(|| format!("config key `providers.{}`", p.name))?;
    }
    Ok(models)
}

/// Extensions every session gets: the guard that asks before `bash` runs `rm -rf` (buttons on
/// Telegram, a prompt in the console; blocked where there is no UI).
pub fn default_extensions() -> Vec<volcanic_abstractions::extensions::ExtensionFactory> {
    volcanic_examples::factories()
        .into_iter()
        .filter(|(name, _)| *name == "confirm-dangerous")
        .map(|(_, f)| f)
        .collect()
}

/// The session factory for a host.
pub fn factory(
    config: &Config,
    store: Arc<dyn SessionStore>,
    home_dir: Option<PathBuf>,
    context_root: Option<PathBuf>,
) -> anyhow::Result<AgentSessionFactory> {
    let processes = Arc::new(ProcessSpawnPolicy::new(ProcessEnvironmentOptions::default()));
    Ok(AgentSessionFactory::new(FactoryConfig {
        models: model_registry(config)?,
        extensions: default_extensions(),
        processes,
        store,
        default_model: Some(config.model.clone()),
        default_thinking: config.thinking,
        default_time_zone: Some(config.default_time_zone),
        home_dir,
        context_root,
        sequential_tools: false,
    }))
}
