//! What activation leaves open: no tracing span outlives it (the subscriber's registry keeps every
//! slot it grew to, so spans held per loaded session grew a long-running bot's memory).

use super::*;
use crate::processes::{ProcessEnvironmentOptions, ProcessSpawnPolicy};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};
use volcanic_abstractions::extensions::{BoxError, ExtensionApi};

/// A subscriber that only counts the spans open now (created or cloned, not yet closed).
#[derive(Default)]
struct OpenSpans {
    next: AtomicU64,
    refs: Mutex<HashMap<u64, usize>>,
}

impl OpenSpans {
    fn refs(&self) -> std::sync::MutexGuard<'_, HashMap<u64, usize>> {
        self.refs.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn open(&self) -> usize {
        self.refs().len()
    }
}

/// The subscriber installed: it shares its count with the test.
struct Counting(Arc<OpenSpans>);

impl Subscriber for Counting {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        let id = self.0.next.fetch_add(1, Ordering::SeqCst) + 1;
        self.0.refs().insert(id, 1);
        Id::from_u64(id)
    }
    fn clone_span(&self, id: &Id) -> Id {
        *self.0.refs().entry(id.into_u64()).or_default() += 1;
        id.clone()
    }
    fn try_close(&self, id: Id) -> bool {
        let mut refs = self.0.refs();
        let Some(n) = refs.get_mut(&id.into_u64()) else {
            return false;
        };
        *n -= 1;
        let closed = *n == 0;
        if closed {
            refs.remove(&id.into_u64());
        }
        closed
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// An extension that keeps its API (as real ones do, in handlers) and registers nothing.
struct Keeps(&'static str, Mutex<Option<Arc<dyn ExtensionApi>>>);

#[async_trait]
impl Extension for Keeps {
    fn name(&self) -> &str {
        self.0
    }
    async fn activate(&self, api: Arc<dyn ExtensionApi>) -> Result<(), BoxError> {
        *self.1.lock().unwrap_or_else(|e| e.into_inner()) = Some(api);
        Ok(())
    }
}

#[tokio::test]
async fn activated_extensions_hold_no_span_and_their_logger_closes_when_dropped() {
    let spans = Arc::new(OpenSpans::default());
    let _default = tracing::subscriber::set_default(Counting(spans.clone()));
    let mut runner = ExtensionRunner::new(Arc::new(ProcessSpawnPolicy::new(ProcessEnvironmentOptions::default())));
    let extensions: Vec<Box<dyn Extension>> = ["one", "two", "three"]
        .into_iter()
        .map(|n| Box::new(Keeps(n, Mutex::new(None))) as Box<dyn Extension>)
        .collect();
    let (mut tools, mut commands, mut models) = (ToolRegistry::new(), CommandRegistry::new(), ModelRegistry::new());
    runner
        .activate(
            extensions,
            Registries {
                tools: &mut tools,
                commands: &mut commands,
                models: &mut models,
            },
        )
        .await;
    assert_eq!(runner.extension_names(), ["one", "two", "three"]);
    assert_eq!(spans.open(), 0, "a loaded session's extensions keep no span open");

    let api = runner.apis[1].clone();
    let logger = api.logger();
    assert_eq!(logger.metadata().map(Metadata::name), Some("extension"));
    assert_eq!(spans.open(), 1);
    drop(logger);
    assert_eq!(spans.open(), 0);
}
