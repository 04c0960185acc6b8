//! `ExtensionRunner`: activation and dispatch.

use super::api::{Binding, ExtensionApiImpl, SessionActions, Staged};
use super::bus::Bus;
use super::handlers::HandlerTable;
use crate::commands::CommandRegistry;
use crate::models::ModelRegistry;
use crate::tools::{ToolRegistry, ToolSource};
use futures::FutureExt;
use std::any::TypeId;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, Weak};
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::events::ExtensionEvent;
use volcanic_abstractions::extensions::{Extension, ExtensionContext, Handler};
use volcanic_abstractions::processes::ProcessSpawnPolicy;

/// A handler that failed (error or panic).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandlerFailure {
    /// Extension name.
    pub extension: String,
    /// Event name (`tool_call`, ...).
    pub event: &'static str,
    /// Error text.
    pub error: String,
}

/// An extension whose activation failed; its registrations were discarded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivationFailure {
    /// Extension name.
    pub extension: String,
    /// Error text.
    pub error: String,
}

/// The registries activation commits into.
pub struct Registries<'a> {
    /// Tools.
    pub tools: &'a mut ToolRegistry,
    /// Commands.
    pub commands: &'a mut CommandRegistry,
    /// Models.
    pub models: &'a mut ModelRegistry,
}

type FailureSink = Arc<dyn Fn(&HandlerFailure) + Send + Sync>;

/// Activates a session's extensions and dispatches events to them.
pub struct ExtensionRunner {
    apis: Vec<Arc<ExtensionApiImpl>>,
    // Kept alive for the session: handlers and state live in the instances.
    instances: Vec<Box<dyn Extension>>,
    handlers: Arc<HandlerTable>,
    binding: Arc<Binding>,
    bus: Arc<Bus>,
    processes: Arc<dyn ProcessSpawnPolicy>,
    failures: Mutex<Vec<ActivationFailure>>,
    sink: Mutex<Option<FailureSink>>,
}

impl std::fmt::Debug for ExtensionRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtensionRunner")
            .field(
                "extensions",
                &self.apis.iter().map(|a| a.name.clone()).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl ExtensionRunner {
    /// A runner with no extensions.
    pub fn new(processes: Arc<dyn ProcessSpawnPolicy>) -> Self {
        ExtensionRunner {
            apis: Vec::new(),
            instances: Vec::new(),
            handlers: Arc::new(HandlerTable::default()),
            binding: Arc::new(Binding::new()),
            bus: Arc::new(Bus::default()),
            processes,
            failures: Mutex::new(Vec::new()),
            sink: Mutex::new(None),
        }
    }

    /// Activates `extensions` in order. Each gets its own API; its registrations commit into
    /// `registries` only if its activation succeeds, otherwise they are discarded and the failure
    /// is recorded ([`activation_failures`](Self::activation_failures)); the others still load.
    pub async fn activate(&mut self, extensions: Vec<Box<dyn Extension>>, registries: Registries<'_>) {
        let Registries {
            tools,
            commands,
            models,
        } = registries;
        for ext in extensions {
            let index = self.apis.len();
            let name = ext.name().to_owned();
            let api = Arc::new(ExtensionApiImpl {
                name: name.clone(),
                index,
                staged: Mutex::new(Some(Staged::default())),
                handlers: self.handlers.clone(),
                binding: self.binding.clone(),
                bus: self.bus.clone(),
                processes: self.processes.clone(),
            });
            let result = AssertUnwindSafe(ext.activate(api.clone())).catch_unwind().await;
            let staged = api
                .staged
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .unwrap_or_default();
            let error = match result {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(p) => Some(panic_text(&p)),
            };
            if let Some(error) = error {
                tracing::warn!(extension = %name, "activation failed: {error}");
                self.handlers.settle(index, false);
                self.failures
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(ActivationFailure { extension: name, error });
                continue;
            }
            for p in staged.unregister {
                models.unregister_provider(&p);
            }
            for p in staged.providers {
                models.register_provider(p);
            }
            for t in staged.tools {
                let tool_name = t.name().to_owned();
                if let Err(e) = tools.register(t, ToolSource::Extension(name.clone())) {
                    tracing::warn!(extension = %name, tool = %tool_name, "{e}");
                }
            }
            for (cmd, def) in staged.commands {
                if let Err(e) = commands.register(&cmd, def, Some(name.clone())) {
                    tracing::warn!(extension = %name, "{e}");
                }
            }
            self.handlers.settle(index, true);
            self.apis.push(api);
            self.instances.push(ext);
        }
    }

    /// Extensions whose activation failed.
    pub fn activation_failures(&self) -> Vec<ActivationFailure> {
        self.failures.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Names of the active extensions in load order.
    pub fn extension_names(&self) -> Vec<String> {
        self.apis.iter().map(|a| a.name.clone()).collect()
    }

    /// Binds actions to the session (step 4 of session creation).
    pub fn bind(&self, actions: Weak<dyn SessionActions>) {
        self.binding.bind(actions);
    }

    /// Marks every API and context of this runner stale (session replaced or reloaded) and drops
    /// the handlers.
    pub fn invalidate(&self) {
        self.binding.invalidate();
        self.handlers.clear();
    }

    /// The binding, for contexts that must turn stale with the runner.
    pub fn binding(&self) -> Arc<Binding> {
        self.binding.clone()
    }

    /// Where handler failures are reported (the session turns them into `extension_error`).
    pub fn set_failure_sink(&self, sink: impl Fn(&HandlerFailure) + Send + Sync + 'static) {
        *self.sink.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(sink));
    }

    /// Whether any handler listens to `E` (lets callers skip building costly events).
    pub fn has_handlers<E: ExtensionEvent>(&self) -> bool {
        self.handlers.has(TypeId::of::<E>())
    }

    /// Dispatches `event` to its handlers in load, then registration order. A failing handler is
    /// reported and dispatch goes on; `event.stopped()` (cancel, block, mark_handled) ends it.
    /// Returns the failures.
    pub async fn emit<E: ExtensionEvent>(
        &self,
        event: &mut E,
        ctx: &Arc<dyn ExtensionContext>,
        cancel: &CancellationToken,
    ) -> Vec<HandlerFailure> {
        let mut failures = Vec::new();
        if event.stopped() {
            return failures;
        }
        for entry in self.handlers.snapshot(TypeId::of::<E>()) {
            let Some(handler) = entry.handler.downcast_ref::<Handler<E>>() else {
                continue;
            };
            // The call goes inside the guarded future: a handler may panic before returning one.
            let outcome = AssertUnwindSafe(async { handler(&mut *event, ctx.clone(), cancel.clone()).await })
                .catch_unwind()
                .await;
            let error = match outcome {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(p) => Some(panic_text(&p)),
            };
            if let Some(error) = error {
                tracing::warn!(extension = %entry.extension, event = E::NAME, "handler failed: {error}");
                event.on_handler_error(&entry.extension, &error);
                let failure = HandlerFailure {
                    extension: entry.extension.clone(),
                    event: E::NAME,
                    error,
                };
                let sink = self.sink.lock().unwrap_or_else(|e| e.into_inner()).clone();
                if let Some(sink) = sink {
                    sink(&failure);
                }
                failures.push(failure);
            }
            if event.stopped() {
                break;
            }
        }
        failures
    }
}

impl Drop for ExtensionRunner {
    /// Handlers usually hold their extension's API, which holds the handler table: clearing the
    /// table and the bus here breaks that cycle so a dropped session frees its extensions.
    fn drop(&mut self) {
        self.handlers.clear();
        self.bus.clear();
    }
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    let msg = p
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    format!("panicked: {msg}")
}

#[cfg(test)]
#[path = "runner_tests.rs"]
mod tests;
