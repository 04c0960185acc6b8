//! What extensions, commands and tools see of a session: `ExtensionContext`,
//! `ExtensionCommandContext`, `SessionView`, `ModelCatalog`.

use super::inner::Inner;
use super::session::switch_session;
use crate::extensions::Binding;
use crate::models::ModelRegistry;
use async_trait::async_trait;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::events::ProcessSpawnEvent;
use volcanic_abstractions::extensions::{
    ContextUsage, ExtensionCommandContext, ExtensionContext, ExtensionError, ModelCatalog, SessionView,
};
use volcanic_abstractions::messages::AssistantMessage;
use volcanic_abstractions::model::{Model, ThinkingLevel};
use volcanic_abstractions::processes::{ProcessSpawnContext, ProcessSpawnError, ProcessSpawnRequest};
use volcanic_abstractions::provider::{ProviderContext, StreamOptions};
use volcanic_abstractions::sessions::SessionEntry;
use volcanic_abstractions::ui::{ChatChannel, UserInterface};

/// The context object of one session. Holds the session weakly; stale once the session's
/// extensions were invalidated.
pub(crate) struct SessionCtx {
    inner: Weak<Inner>,
    binding: Arc<Binding>,
}

impl SessionCtx {
    pub fn new(inner: Weak<Inner>, binding: Arc<Binding>) -> Self {
        SessionCtx { inner, binding }
    }

    fn live(&self) -> Result<Arc<Inner>, ExtensionError> {
        if self.binding.is_stale() {
            return Err(ExtensionError::Stale);
        }
        self.inner.upgrade().ok_or(ExtensionError::Stale)
    }
}

#[async_trait]
impl ExtensionContext for SessionCtx {
    fn cwd(&self) -> PathBuf {
        self.inner.upgrade().map(|i| i.cwd.clone()).unwrap_or_default()
    }

    fn file_boundary(&self) -> Option<volcanic_abstractions::processes::FileBoundary> {
        // A stale context reaches nothing.
        let Some(inner) = self.inner.upgrade() else {
            return Some(Default::default());
        };
        volcanic_abstractions::processes::ProcessSpawnPolicy::file_boundary(&*inner.config.processes, &inner.cwd)
    }

    fn session_id(&self) -> String {
        self.inner
            .upgrade()
            .map(|i| i.lock_manager().session_id().to_owned())
            .unwrap_or_default()
    }

    fn time_zone(&self) -> Option<String> {
        let i = self.inner.upgrade()?;
        let tz = i.lock_state().time_zone;
        tz.map(|t| t.name().to_owned())
    }

    fn ui(&self) -> Option<Arc<dyn UserInterface>> {
        self.inner.upgrade().and_then(|i| i.ui.clone())
    }

    fn channel(&self) -> Option<Arc<dyn ChatChannel>> {
        self.inner.upgrade().and_then(|i| i.channel.clone())
    }

    fn session(&self) -> Result<Arc<dyn SessionView>, ExtensionError> {
        let inner = self.live()?;
        Ok(Arc::new(View {
            inner: Arc::downgrade(&inner),
        }))
    }

    fn models(&self) -> Arc<dyn ModelCatalog> {
        let Some(inner) = self.inner.upgrade() else {
            return Arc::new(Catalog::default());
        };
        let models = inner.models.read().unwrap_or_else(|e| e.into_inner()).clone();
        let session_id = inner.lock_manager().session_id().to_owned();
        Arc::new(Catalog {
            models,
            gate: inner.spend_gate.clone(),
            session_id,
        })
    }

    fn model(&self) -> Option<Model> {
        self.inner.upgrade().and_then(|i| i.lock_state().model.clone())
    }

    fn thinking_level(&self) -> ThinkingLevel {
        self.inner
            .upgrade()
            .map(|i| i.lock_state().thinking)
            .unwrap_or_default()
    }

    fn signal(&self) -> CancellationToken {
        self.inner
            .upgrade()
            .map(|i| i.lock_state().abort.clone())
            .unwrap_or_default()
    }

    fn is_idle(&self) -> bool {
        self.inner.upgrade().is_none_or(|i| !i.lock_state().running())
    }

    fn abort(&self) -> Result<(), ExtensionError> {
        let inner = self.live()?;
        inner.lock_state().abort.cancel();
        Ok(())
    }

    fn has_pending_messages(&self) -> bool {
        self.inner.upgrade().is_some_and(|i| {
            let st = i.lock_state();
            !st.steering.is_empty() || !st.follow_up.is_empty()
        })
    }

    fn context_usage(&self) -> Option<ContextUsage> {
        let inner = self.inner.upgrade()?;
        let stats = super::AgentSession { inner }.stats();
        if stats.context_window == 0 {
            return None;
        }
        Some(ContextUsage {
            tokens: stats.context_tokens,
            context_window: stats.context_window,
            percent: stats.context_tokens as f64 * 100.0 / stats.context_window as f64,
            estimated: stats.context_estimated,
        })
    }

    fn system_prompt(&self) -> String {
        self.inner
            .upgrade()
            .map(|i| i.lock_state().system_prompt.clone())
            .unwrap_or_default()
    }

    fn compact(&self, instructions: Option<String>) -> Result<(), ExtensionError> {
        let inner = self.live()?;
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|_| ExtensionError::Failed("compact() needs a Tokio runtime".into()))?;
        // Runs once the session is idle (a run in progress ends first); the outcome arrives as
        // `compaction_end` / `session_compact`.
        handle.spawn(async move {
            if let Err(e) = (super::AgentSession { inner }).compact(instructions).await {
                tracing::warn!("compaction requested by an extension failed: {e}");
            }
        });
        Ok(())
    }

    async fn prepare_process(
        &self,
        mut request: ProcessSpawnRequest,
    ) -> Result<ProcessSpawnContext, ProcessSpawnError> {
        let inner = self.live().map_err(|e| ProcessSpawnError(e.to_string()))?;
        request.scope.get_or_insert_with(|| inner.scope.clone());
        request
            .session_id
            .get_or_insert_with(|| inner.lock_manager().session_id().to_owned());
        if request.time_zone.is_none() {
            request.time_zone = inner.lock_state().time_zone.map(|t| t.name().to_owned());
        }
        let context =
            volcanic_abstractions::processes::ProcessSpawnPolicy::prepare(&*inner.config.processes, &request)?;
        let mut ev = ProcessSpawnEvent {
            request,
            context,
            failed: None,
        };
        let ctx: Arc<dyn ExtensionContext> = inner.ctx();
        inner.runner.emit(&mut ev, &ctx, &CancellationToken::new()).await;
        match ev.failed {
            Some(f) => Err(ProcessSpawnError(f)),
            None => Ok(ev.context),
        }
    }
}

#[async_trait]
impl ExtensionCommandContext for SessionCtx {
    async fn wait_for_idle(&self) {
        if let Some(inner) = self.inner.upgrade() {
            let mut rx = inner.idle.subscribe();
            drop(inner);
            let _ = rx.wait_for(|idle| *idle).await;
        }
    }

    async fn new_session(&self) -> Result<bool, ExtensionError> {
        let inner = self.live()?;
        match switch_session(&inner, None).await {
            Ok(()) => Ok(true),
            Err(super::SessionError::Cancelled) => Ok(false),
            Err(e) => Err(ExtensionError::Failed(e.to_string())),
        }
    }

    async fn switch_session(&self, path: PathBuf) -> Result<bool, ExtensionError> {
        let inner = self.live()?;
        match switch_session(&inner, Some(path)).await {
            Ok(()) => Ok(true),
            Err(super::SessionError::Cancelled) => Ok(false),
            Err(e) => Err(ExtensionError::Failed(e.to_string())),
        }
    }
}

struct View {
    inner: Weak<Inner>,
}

impl SessionView for View {
    fn session_id(&self) -> String {
        self.inner
            .upgrade()
            .map(|i| i.lock_manager().session_id().to_owned())
            .unwrap_or_default()
    }
    fn session_file(&self) -> Option<PathBuf> {
        self.inner.upgrade()?.lock_manager().session_file()
    }
    fn leaf_id(&self) -> Option<String> {
        self.inner.upgrade()?.lock_manager().leaf_id().map(str::to_owned)
    }
    fn branch(&self) -> Vec<SessionEntry> {
        self.inner
            .upgrade()
            .map(|i| i.lock_manager().branch_entries())
            .unwrap_or_default()
    }
    fn entry(&self, id: &str) -> Option<SessionEntry> {
        self.inner.upgrade()?.lock_manager().entry(id)
    }
    fn label(&self, id: &str) -> Option<String> {
        self.inner.upgrade()?.lock_manager().label(id).map(str::to_owned)
    }
}

/// The session's models for nested calls; each call passes the session's spend gate.
#[derive(Default)]
struct Catalog {
    models: ModelRegistry,
    gate: Option<Arc<dyn volcanic_abstractions::spend::SpendGate>>,
    session_id: String,
}

#[async_trait]
impl ModelCatalog for Catalog {
    fn models(&self) -> Vec<Model> {
        self.models.available()
    }
    fn find(&self, key: &str) -> Option<Model> {
        self.models.find(key)
    }
    /// A refused call is not made: its message is an error carrying the refusal's sentence.
    async fn complete(&self, model: &Model, context: ProviderContext, options: StreamOptions) -> AssistantMessage {
        let purpose = volcanic_abstractions::spend::SpendPurpose::Extension;
        let reply = super::spend::complete(
            self.gate.as_ref(),
            &self.session_id,
            purpose,
            model,
            context,
            options,
            |c, o| self.models.stream(model, c, o),
        )
        .await;
        reply.unwrap_or_else(|refused| {
            let mut m =
                AssistantMessage::empty(model.api.as_str(), &model.provider, &model.id, crate::models::now_ms());
            m.stop_reason = volcanic_abstractions::messages::StopReason::Error;
            m.error_message = Some(refused.message);
            m
        })
    }
}
