//! `AgentSessionFactory`: the five creation steps of a session (spec: architecture.md, "One
//! conversation = one AgentSession").

use super::inner::{Inner, State};
use super::session::{AgentSession, SessionError};
use crate::commands::CommandRegistry;
use crate::extensions::{ExtensionRunner, Registries, SessionActions};
use crate::models::ModelRegistry;
use crate::processes::ProcessSpawnPolicy;
use crate::sessions::SessionManager;
use crate::system_prompt::SystemPromptBuilder;
use crate::tools::{ToolRegistry, ToolSource, builtin_tools};
use chrono_tz::Tz;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock, Weak};
use tokio::sync::watch;
use volcanic_abstractions::extensions::ExtensionFactory;
use volcanic_abstractions::extensions::events::SessionStartReason;
use volcanic_abstractions::model::ThinkingLevel;
use volcanic_abstractions::sessions::{EntryTag, SessionLocation, SessionStore};
use volcanic_abstractions::ui::{ChatChannel, UserInterface};

/// Host-wide settings shared by every session of a factory.
pub struct FactoryConfig {
    /// Providers and models every session starts with.
    pub models: ModelRegistry,
    /// Extensions added to every session, in load order.
    pub extensions: Vec<ExtensionFactory>,
    /// The process policy (environment filtering, redaction).
    pub processes: Arc<ProcessSpawnPolicy>,
    /// Where session files live.
    pub store: Arc<dyn SessionStore>,
    /// `provider/id` for new sessions.
    pub default_model: Option<String>,
    /// Models (`provider/id`) a failed model call goes on with, in order, in every session
    /// without its own list (docs/providers.md, "Failover"). The host checks them; one the
    /// registry does not know is skipped at call time with a warning.
    pub fallback_models: Vec<String>,
    /// Thinking level for new sessions.
    pub default_thinking: ThinkingLevel,
    /// Zone when a session sets none.
    pub default_time_zone: Option<Tz>,
    /// Volcanic home (global `AGENTS.md`).
    pub home_dir: Option<PathBuf>,
    /// Whether skills' `session-start`/`turn-end` hooks run (skills are listed and their
    /// `protected-paths` guard either way).
    pub skill_hooks: bool,
    /// Where the `AGENTS.md` search upward stops (the workspaces root for the bot).
    pub context_root: Option<PathBuf>,
    /// Run every tool batch sequentially.
    pub sequential_tools: bool,
    /// Compaction thresholds.
    pub compaction: crate::compaction::CompactionSettings,
}

/// Which session file a new `AgentSession` uses.
#[derive(Debug, Clone, Default)]
pub enum SessionSelect {
    /// A new file in the scope.
    New,
    /// The newest file in the scope, or a new one.
    #[default]
    ContinueRecent,
    /// This file.
    Open(PathBuf),
    /// No file: entries kept in memory only.
    InMemory,
}

/// Per-session options.
#[derive(Default)]
pub struct AgentSessionOptions {
    /// Working directory (the chat's workspace).
    pub cwd: PathBuf,
    /// Store scope (a folder under the store root); derived from `cwd` when `None`.
    pub scope: Option<String>,
    /// Which file.
    pub session: SessionSelect,
    /// Extensions for this session only, after the host's.
    pub extra_extensions: Vec<ExtensionFactory>,
    /// Interactive UI.
    pub ui: Option<Arc<dyn UserInterface>>,
    /// Chat channel (enables the `send` tool).
    pub channel: Option<Arc<dyn ChatChannel>>,
    /// The session's zone.
    pub time_zone: Option<Tz>,
    /// Model for a new session (overrides the host default).
    pub model: Option<String>,
    /// Thinking level for a new session.
    pub thinking: Option<ThinkingLevel>,
    /// This session's fallback models (`provider/id`, in order; empty for none); `None`: the
    /// factory's [`FactoryConfig::fallback_models`].
    pub fallback_models: Option<Vec<String>>,
    /// Runs no skill hooks in this session, whatever [`FactoryConfig::skill_hooks`] says (a
    /// session serving someone whose tools do not include running commands: a hook its skills
    /// name would be code it wrote). Skills are still listed and `protected-paths` still guard.
    pub no_skill_hooks: bool,
    /// The host's check before each model request of this session (turns, compaction
    /// summaries, nested calls such as memory curation); `None`: no allowance applies.
    pub spend_gate: Option<Arc<dyn volcanic_abstractions::spend::SpendGate>>,
}

/// Creates sessions.
#[derive(Clone)]
pub struct AgentSessionFactory {
    config: Arc<FactoryConfig>,
}

impl AgentSessionFactory {
    /// A factory with host-wide settings.
    pub fn new(config: FactoryConfig) -> Self {
        AgentSessionFactory {
            config: Arc::new(config),
        }
    }

    /// The host-wide settings.
    pub fn config(&self) -> &FactoryConfig {
        &self.config
    }

    /// Builds a session: (1) open or create its file, (2) create the registries, (3) activate the
    /// extensions (two-phase), (4) bind and restore model and thinking level from the branch,
    /// (5) emit `session_start`, then start the skills' `session-start` hooks in the background.
    pub async fn create(&self, options: AgentSessionOptions) -> Result<AgentSession, SessionError> {
        let cfg = self.config.clone();
        let scope = options
            .scope
            .clone()
            .unwrap_or_else(|| crate::sessions::cwd_scope(&options.cwd));
        // 1.
        let (manager, resumed) = match &options.session {
            SessionSelect::New => (SessionManager::create(cfg.store.clone(), &scope, &options.cwd)?, false),
            SessionSelect::ContinueRecent => {
                let m = SessionManager::continue_recent(cfg.store.clone(), &scope, &options.cwd)?;
                let resumed = m.leaf_id().is_some();
                (m, resumed)
            }
            SessionSelect::Open(p) => (
                SessionManager::open(cfg.store.clone(), &SessionLocation::from(p.clone()))?,
                true,
            ),
            SessionSelect::InMemory => (
                SessionManager::create(
                    Arc::new(crate::sessions::InMemorySessionStore::new()),
                    &scope,
                    &options.cwd,
                )?,
                false,
            ),
        };
        // 2.
        let mut tools = ToolRegistry::new();
        for t in builtin_tools(options.channel.is_some()) {
            let name = t.name().to_owned();
            if let Err(e) = tools.register(t, ToolSource::Builtin) {
                tracing::warn!(tool = %name, "{e}");
            }
        }
        let mut commands = CommandRegistry::new();
        let mut models = cfg.models.clone();
        // 3.
        let mut runner = ExtensionRunner::new(cfg.processes.clone());
        let instances = cfg
            .extensions
            .iter()
            .chain(options.extra_extensions.iter())
            .map(|f| f())
            .collect();
        runner
            .activate(
                instances,
                Registries {
                    tools: &mut tools,
                    commands: &mut commands,
                    models: &mut models,
                },
            )
            .await;
        // 4.
        let ctx = manager.build_context();
        let resolve = |key: &str| models.find(key);
        let model = ctx
            .model
            .as_ref()
            .and_then(|(p, id)| resolve(&format!("{p}/{id}")))
            .or_else(|| options.model.as_deref().and_then(resolve))
            .or_else(|| cfg.default_model.as_deref().and_then(resolve))
            .or_else(|| models.available().into_iter().next());
        // From the index: reading the branch's entries would parse the whole conversation.
        let has_thinking_entry = {
            let index = manager.index();
            manager.leaf_id().and_then(|id| index.position(id)).is_some_and(|leaf| {
                index
                    .path_to(leaf)
                    .into_iter()
                    .any(|p| index.meta(p).is_some_and(|m| m.tag == EntryTag::ThinkingLevelChange))
            })
        };
        let thinking = if has_thinking_entry {
            ctx.thinking_level
        } else {
            options.thinking.unwrap_or(cfg.default_thinking)
        };
        let (idle, _) = watch::channel(true);
        let prompt_builder = SystemPromptBuilder::new(&options.cwd, cfg.context_root.clone(), cfg.home_dir.clone());
        let skill_hooks = crate::skill_hooks::SkillHookRunner::new(crate::skill_hooks::SkillHookConfig {
            workspace: options.cwd.clone(),
            skill_dirs: crate::skill_hooks::SkillHookConfig::skill_dirs(&options.cwd, cfg.home_dir.as_deref()),
            hooks_enabled: cfg.skill_hooks && !options.no_skill_hooks,
            redactor: volcanic_abstractions::processes::ProcessSpawnPolicy::redactor(&*cfg.processes),
        });
        let mut state = State::new(
            model.clone(),
            thinking,
            options.time_zone.or(cfg.default_time_zone),
            ctx.messages,
            super::inner::compacted_totals(ctx.compaction.as_ref()),
            ctx.from_before_compaction,
        );
        state.fallback_models = options
            .fallback_models
            .clone()
            .unwrap_or_else(|| cfg.fallback_models.clone());
        let inner = Arc::new_cyclic(|me: &Weak<Inner>| Inner {
            config: cfg.clone(),
            cwd: options.cwd.clone(),
            scope,
            manager: Mutex::new(manager),
            state: Mutex::new(state),
            tools: RwLock::new(tools),
            commands: RwLock::new(commands),
            models: RwLock::new(models),
            runner,
            subscribers: RwLock::new(Vec::new()),
            next_listener: AtomicU64::new(0),
            ui: options.ui,
            channel: options.channel,
            spend_gate: options.spend_gate,
            skill_hooks,
            prompt_builder,
            compactor: crate::compaction::Compactor::new(cfg.compaction),
            idle,
            me: me.clone(),
        });
        let actions: Weak<dyn SessionActions> = Arc::downgrade(&inner) as Weak<dyn SessionActions>;
        inner.runner.bind(actions);
        {
            let weak = Arc::downgrade(&inner);
            inner.runner.set_failure_sink(move |f| {
                if let Some(i) = weak.upgrade() {
                    i.emit(volcanic_abstractions::events::AgentSessionEvent::ExtensionError {
                        extension: f.extension.clone(),
                        event: f.event.to_owned(),
                        error: f.error.clone(),
                    });
                }
            });
        }
        if !resumed {
            // A new file starts like pi's: the model and level it runs with. Not synced: they are
            // durable with the first synced entry (the first answer), and a session that never
            // got one loses nothing with them.
            let mut mgr = inner.lock_manager();
            if mgr.leaf_id().is_none() {
                mgr.unsynced(|mgr| {
                    if let Some(m) = &model {
                        mgr.append_model_change(&m.provider, &m.id)?;
                    }
                    mgr.append_thinking_level_change(thinking)
                })?;
            }
        }
        // 5.
        let reason = if resumed {
            SessionStartReason::Resume
        } else {
            SessionStartReason::Startup
        };
        inner.session_start(reason).await;
        Ok(AgentSession { inner })
    }
}
