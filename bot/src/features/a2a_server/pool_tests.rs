//! The pool's eviction window: a context taken for a request is never evicted under it, by the
//! idle sweep or by a new context's `make_room` (issue 25).

use super::*;
use crate::features::port::{Delivered, LinePrompt, PortError, PressButton, UrlButton};
use volcanic_core::agent::{AgentSessionFactory, AgentSessionOptions, FactoryConfig, SessionSelect};
use volcanic_core::models::ModelRegistry;
use volcanic_core::processes::ProcessSpawnPolicy;
use volcanic_core::sessions::InMemorySessionStore;

/// Makes in-memory sessions without a model (no request is made); the rest is not called.
struct Sessions(AgentSessionFactory);

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sessions")
    }
}

impl Sessions {
    fn new() -> Arc<Self> {
        Arc::new(Sessions(AgentSessionFactory::new(FactoryConfig {
            models: ModelRegistry::new(),
            extensions: Vec::new(),
            processes: Arc::new(ProcessSpawnPolicy::new(Default::default())),
            store: Arc::new(InMemorySessionStore::new()),
            default_model: None,
            fallback_models: Vec::new(),
            default_thinking: Default::default(),
            default_time_zone: None,
            home_dir: None,
            skill_hooks: false,
            context_root: None,
            sequential_tools: false,
            compaction: Default::default(),
        })))
    }
}

#[async_trait]
impl ChatPort for Sessions {
    async fn send(&self, _: Target, _: &str, _: &[UrlButton]) -> Result<(), PortError> {
        Err(PortError::ShuttingDown)
    }
    async fn offer(&self, _: Target, _: &str, _: &[Vec<PressButton>]) -> Result<i64, PortError> {
        Err(PortError::ShuttingDown)
    }
    async fn edit(&self, _: Target, _: i64, _: &str, _: &[Vec<PressButton>]) -> Result<(), PortError> {
        Err(PortError::ShuttingDown)
    }
    async fn delete(&self, _: Target, _: i64) -> Result<(), PortError> {
        Err(PortError::ShuttingDown)
    }
    async fn notice(&self, _: Target, _: String) -> Result<(), PortError> {
        Err(PortError::ShuttingDown)
    }
    async fn deliver(&self, _: LinePrompt) -> Result<Delivered, PortError> {
        Err(PortError::ShuttingDown)
    }
    async fn own_session(&self, spec: OwnSession) -> anyhow::Result<AgentSession> {
        Ok(self
            .0
            .create(AgentSessionOptions {
                cwd: spec.cwd,
                session: SessionSelect::InMemory,
                ..Default::default()
            })
            .await?)
    }
}

/// A pool for the caller `carol` (one context at most, evicted as soon as unused: `idle` 0).
fn pool(dir: &std::path::Path) -> Arc<A2ASessionPool> {
    let policy = CallerPolicy {
        tools: ToolPolicy::Only(vec!["read".into()]),
        acts_for: None,
        model: None,
    };
    A2ASessionPool::new(
        Sessions::new(),
        [("carol".to_owned(), policy)].into(),
        dir.to_path_buf(),
        Bounds {
            idle: Duration::ZERO,
            max_contexts: 1,
        },
        CancellationToken::new(),
    )
}

#[tokio::test]
async fn a_context_taken_for_a_request_is_not_evicted_under_it() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let pool = pool(dir.path());
    // Taken for a task, which is not set in it yet: the window the old rule left open.
    let first = pool.context("carol", "c1").await.unwrap_or_else(|e| panic!("{e}"));
    pool.evict_idle().await;
    assert!(!first.session.is_closed(), "the idle sweep closed a context in use");
    // At the bound, with the one context in use: a new one is refused, saying why.
    let refused = pool.context("carol", "c2").await.err().map(|e| e.to_string());
    assert!(
        refused
            .as_deref()
            .is_some_and(|e| e.contains("max_contexts_per_caller")),
        "{refused:?}"
    );
    assert!(!first.session.is_closed(), "make_room closed a context in use");
    let again = pool.context("carol", "c1").await.unwrap_or_else(|e| panic!("{e}"));
    assert!(Arc::ptr_eq(&*again, &*first), "the context in use was replaced");
    drop((first, again));
    // Unused now: evicted, its session closed.
    let session = pool.contexts.lock().await[&("carol".to_owned(), "c1".to_owned())]
        .session
        .clone();
    pool.evict_idle().await;
    assert!(session.is_closed());
    assert!(pool.contexts.lock().await.is_empty());
}
