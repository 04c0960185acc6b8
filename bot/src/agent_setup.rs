//! How every host of this binary (the Telegram host, the console) sets up its agents: the model
//! registry from the config, the process policy, and the session factory.

use crate::config::Config;
use crate::secrets::Secrets;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use volcanic_abstractions::processes::{
    FileBoundary, ProcessSandbox, ProcessSpawnContext, ProcessSpawnError, ProcessSpawnRequest,
};
use volcanic_abstractions::sessions::SessionStore;
use volcanic_core::agent::{AgentSessionFactory, FactoryConfig};
use volcanic_core::compaction::CompactionSettings;
use volcanic_core::models::ModelRegistry;
use volcanic_core::processes::{ProcessEnvironmentOptions, ProcessSpawnPolicy};
use volcanic_sandbox::{KernelSupport, LandlockSandbox, SandboxError, SandboxMode, SandboxSettings};

/// Built-in providers (each with its catalogue of current models and its key variable), then
/// the config's `[providers.*]` sections. A provider crate exposes `registration()`; adding one
/// is one line here.
pub fn model_registry(config: &Config) -> anyhow::Result<ModelRegistry> {
    let mut models = ModelRegistry::new();
    models.register_provider(volcanic_anthropic::registration()?);
    models.register_provider(volcanic_openai::registration()?);
    // No catalogue of its own: the `openai` catalogue's reasoning models use the Responses API.
    models.register_provider(volcanic_openai_responses::registration()?);
    // `claude -p` on the owner's Claude login (opt-in): its own environment, but confined by
    // the same sandbox as every agent process (said at start by `process_policy`).
    if let Some(claude_code) = &config.claude_code {
        let sandbox = seam(landlock_sandbox(config, KernelSupport::probe()));
        models.register_provider(volcanic_claude_code::registration(claude_code.clone(), sandbox));
    }
    for p in &config.providers {
        models
            .add_custom_provider(p)
            .with_context(|| format!("config key `providers.{}`", p.name))?;
    }
    Ok(models)
}

/// Extensions every session gets: the guard that asks before `bash` runs `rm -rf` (buttons on
/// Telegram, a prompt in the console; blocked where there is no UI), and the operations observer
/// while `[metrics]` or `[otel]` is on ([`crate::ops::observer`]).
pub fn default_extensions() -> Vec<volcanic_abstractions::extensions::ExtensionFactory> {
    volcanic_examples::factories()
        .into_iter()
        .filter(|(name, _)| *name == "confirm-dangerous")
        .map(|(_, f)| f)
        .chain(crate::ops::observing().then(crate::ops::observer::factory))
        .collect()
}

/// Extensions a workspace asks for by name in `.volcanic/settings.json`
/// (`{"extensions": ["hello", "ask"]}`), from the compiled-in examples. Unknown names are logged
/// and skipped; a missing or unreadable file means none. (Loading foreign binaries from
/// `.volcanic/extensions/` is not supported in Rust.)
pub fn workspace_extensions(workspace: &std::path::Path) -> Vec<volcanic_abstractions::extensions::ExtensionFactory> {
    let path = workspace.join(".volcanic").join("settings.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Vec::new();
    };
    let names: Vec<String> = match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) => v["extensions"]
            .as_array()
            .map(|a| a.iter().filter_map(|n| n.as_str().map(str::to_owned)).collect())
            .unwrap_or_default(),
        Err(e) => {
            tracing::warn!(file = %path.display(), "ignoring unreadable workspace settings: {e}");
            return Vec::new();
        }
    };
    let available = volcanic_examples::factories();
    let defaults: Vec<&str> = vec!["confirm-dangerous"];
    names
        .iter()
        .filter(|n| !defaults.contains(&n.as_str()))
        .filter_map(|n| match available.iter().find(|(name, _)| name == n) {
            Some((_, f)) => Some(f.clone()),
            None => {
                tracing::warn!(file = %path.display(), extension = %n, "unknown extension name");
                None
            }
        })
        .collect()
}

/// The model `key` names (`provider/id`), checked against the known models and the provider's
/// key. Errors name `source` (the config key or flag) and the model: an unknown one lists the
/// models the config knows, a missing key says which environment variable to set.
pub fn check_model(
    models: &ModelRegistry,
    key: &str,
    source: &str,
) -> anyhow::Result<volcanic_abstractions::model::Model> {
    let Some(model) = models.find(key) else {
        let known: Vec<String> = models.models().iter().map(|m| m.key()).collect();
        // Claude Code is opt-in: its models exist only with its section.
        let hint = if key.split('/').next() == Some(volcanic_claude_code::PROVIDER) {
            "; Claude Code is off: turn it on with a `[providers.claude-code]` section (docs/providers.md, \
             \"Claude Code\")"
        } else {
            ""
        };
        anyhow::bail!(
            "{source}: unknown model `{key}`; known: {} (a custom provider lists its models in \
             `[providers.NAME] models`){hint}",
            known.join(", ")
        );
    };
    if let Err(e) = models.api_key(&model.provider) {
        anyhow::bail!("{source}: `{key}`: {e}");
    }
    Ok(model)
}

/// The config's `fallback_models`, each checked as [`check_model`] does (the first that fails
/// is the error, naming the config key): start-up refuses to run with it, `doctor` shows it.
pub fn check_fallbacks(models: &ModelRegistry, config: &Config) -> anyhow::Result<()> {
    for key in &config.fallback_models {
        check_model(models, key, "config key `fallback_models`")?;
    }
    Ok(())
}

/// The policy every child process of a host starts through (tools, skill hooks, scheduler
/// watchers and scripts, MCP servers), for `config` (reading the process environment for the key
/// variables), confined by the sandbox `[sandbox]` asks for ([`sandbox`]); warns about secrets
/// too short to count as such. A host builds it once, at start, after [`check_sandbox`]: a
/// sandbox that cannot be built here fails every spawn (closed, never silently open).
pub fn process_policy(config: &Config) -> Arc<ProcessSpawnPolicy> {
    let secrets = Secrets::of(config, |name| std::env::var(name).ok());
    for warning in secrets.warnings() {
        tracing::warn!("{warning}");
    }
    let mut options = ProcessEnvironmentOptions::default();
    secrets.apply(&mut options);
    let policy = ProcessSpawnPolicy::new(options);
    let sandbox = sandbox(config, KernelSupport::probe());
    if let Err(e) = &sandbox {
        tracing::error!("{e:#}");
    }
    match seam(sandbox) {
        Some(sandbox) => Arc::new(policy.with_sandbox(sandbox)),
        None => Arc::new(policy),
    }
}

/// The sandbox as the process seam takes it: `None` when off; one that refuses every spawn
/// when it could not be built (closed, never silently open).
fn seam(sandbox: anyhow::Result<Option<LandlockSandbox>>) -> Option<Arc<dyn ProcessSandbox>> {
    match sandbox {
        Ok(Some(sandbox)) => Some(Arc::new(sandbox)),
        Ok(None) => None,
        Err(e) => Some(Arc::new(RefuseAll(format!("{e:#}")))),
    }
}

/// Refuses to start with `[sandbox] mode = "required"` on a kernel that lacks Landlock or
/// seccomp; the error says what is missing and what to change.
pub fn check_sandbox(config: &Config) -> anyhow::Result<()> {
    if config.sandbox.mode == SandboxMode::Required
        && let Some(missing) = KernelSupport::probe().missing()
    {
        return Err(SandboxError::Unsupported { missing }).context("config key `sandbox.mode`");
    }
    Ok(())
}

/// The sandbox of a policy whose sandbox could not be built: every spawn fails with `.0`.
#[derive(Debug)]
struct RefuseAll(String);

impl ProcessSandbox for RefuseAll {
    fn confine(&self, _: &ProcessSpawnRequest, _: &mut ProcessSpawnContext) -> Result<(), ProcessSpawnError> {
        Err(ProcessSpawnError(self.0.clone()))
    }

    fn file_boundary(&self, _: &Path) -> Option<FileBoundary> {
        Some(FileBoundary::default())
    }
}

/// The sandbox for `config` on a kernel offering `support` (`None` with `mode = "off"`), after
/// saying once what it does: a warning when it is off or the kernel lacks something.
/// Closed to agent processes: `state_dir`, the config file's folder (when there is a file),
/// `workspaces_dir` but for each process's own workspace, and the bot user's home; private temp
/// folders live in `<state_dir>/sandbox` when `state_dir` exists (the Telegram host), else in
/// `~/.volcanic/sandbox` (the console, which keeps its state there).
pub fn sandbox(config: &Config, support: KernelSupport) -> anyhow::Result<Option<LandlockSandbox>> {
    let sandbox = landlock_sandbox(config, support)?;
    match (&sandbox, support.missing()) {
        (None, _) => tracing::warn!(
            "[sandbox] mode = \"off\": agent processes run unconfined, with every file and process of the \
             bot's OS user in reach (docs/sandbox.md)"
        ),
        (Some(_), Some(missing)) => tracing::warn!(
            "sandbox: {missing}; agent processes run with what the kernel offers (set [sandbox] mode = \
             \"required\" to refuse this; docs/sandbox.md)"
        ),
        (Some(s), None) => tracing::info!(
            landlock_abi = support.landlock_abi.unwrap_or(0),
            network = ?s.network(),
            "sandbox: every agent process confined (Landlock, seccomp, no capabilities)"
        ),
    }
    Ok(sandbox)
}

/// [`sandbox`] without saying anything (for a second user of the same sandbox: `claude`).
fn landlock_sandbox(config: &Config, support: KernelSupport) -> anyhow::Result<Option<LandlockSandbox>> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut protected = vec![config.state_dir.clone()];
    protected.extend(home.clone());
    if let Some(file) = config.sandbox.config_file.as_deref().filter(|f| f.is_file()) {
        protected.push(
            file.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_owned(),
        );
    }
    let temp_root = match (config.state_dir.is_dir(), &home) {
        (false, Some(home)) => home.join(".volcanic").join("sandbox"),
        _ => config.state_dir.join("sandbox"),
    };
    let settings = SandboxSettings {
        mode: config.sandbox.mode,
        network: config.sandbox.network.clone(),
        read_paths: config.sandbox.read_paths.clone(),
        write_paths: config.sandbox.write_paths.clone(),
        workspaces_root: Some(config.workspaces_dir.clone()),
        protected,
        temp_root,
        chat_networks: Some(volcanic_sandbox::ChatNetworks::under(&config.state_dir)),
    };
    LandlockSandbox::new(settings, support).context("config key `sandbox.mode`")
}

/// The session factory for a host.
pub fn factory(
    config: &Config,
    store: Arc<dyn SessionStore>,
    processes: Arc<ProcessSpawnPolicy>,
    home_dir: Option<PathBuf>,
    context_root: Option<PathBuf>,
) -> anyhow::Result<AgentSessionFactory> {
    let models = model_registry(config)?;
    check_fallbacks(&models, config)?;
    Ok(AgentSessionFactory::new(FactoryConfig {
        models,
        extensions: default_extensions(),
        processes,
        store,
        default_model: Some(config.model.clone()),
        fallback_models: config.fallback_models.clone(),
        default_thinking: config.thinking,
        default_time_zone: Some(config.default_time_zone),
        home_dir,
        skill_hooks: config.skill_hooks,
        context_root,
        sequential_tools: false,
        compaction: CompactionSettings {
            enabled: true,
            reserve_tokens: config.reserve_tokens,
            keep_recent_tokens: config.keep_recent_tokens,
        },
    }))
}

/// Said when the level cannot apply to the current model (its `reasoning` is off).
pub fn no_reasoning_note(session: &volcanic_core::agent::AgentSession) -> String {
    match session.model() {
        Some(m) if !m.reasoning => format!(
            " (`{}` does not reason: the level applies once you switch to a model that does)",
            m.key()
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_claude_code_model_says_how_to_turn_claude_code_on() {
        let models = ModelRegistry::new();
        let e = check_model(&models, "claude-code/sonnet", "config key `model`")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown model `claude-code/sonnet`"), "{e}");
        assert!(e.contains("`[providers.claude-code]` section"), "{e}");
        let e = check_model(&models, "anthropic/nope", "config key `model`")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("Claude Code"), "{e}");
    }
}
