//! Test support: an in-process faux provider playing scripted turns, and a session builder.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use futures::StreamExt;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::extensions::ExtensionFactory;
use volcanic_abstractions::messages::{AssistantContent, AssistantMessage, StopReason, TextContent, ToolCall, Usage};
use volcanic_abstractions::model::{Api, InputKind, Model, ModelCost};
use volcanic_abstractions::provider::{
    AssistantMessageEvent, Provider, ProviderContext, ProviderRegistration, ProviderStream, StreamOptions,
};
use volcanic_core::agent::{AgentSession, AgentSessionFactory, AgentSessionOptions, FactoryConfig, SessionSelect};
use volcanic_core::models::ModelRegistry;
use volcanic_core::processes::{ProcessEnvironmentOptions, ProcessSpawnPolicy};
use volcanic_core::sessions::FileSessionStore;

/// One scripted model answer.
#[derive(Clone)]
pub enum FauxTurn {
    /// Content blocks and a stop reason.
    Reply(Vec<AssistantContent>, StopReason),
    /// An error with this message.
    Error(String),
    /// Streams "partial" text and then waits for the abort signal (or the gate).
    Hang(Arc<Notify>),
}

impl FauxTurn {
    pub fn text(t: &str) -> Self {
        FauxTurn::Reply(vec![text(t)], StopReason::Stop)
    }
    pub fn calls(calls: Vec<(&str, &str, Value)>) -> Self {
        FauxTurn::Reply(
            calls.into_iter().map(|(id, n, a)| call(id, n, a)).collect(),
            StopReason::ToolUse,
        )
    }
}

pub fn text(t: &str) -> AssistantContent {
    AssistantContent::Text(TextContent {
        text: t.into(),
        text_signature: None,
    })
}

pub fn call(id: &str, name: &str, args: Value) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
        thought_signature: None,
    })
}

/// A provider answering from a queue of scripted turns, recording every call. Compaction's
/// summary requests (no tools, the summariser's system prompt) are answered apart, without
/// using a turn: "## Goal\nsummary N", or `summary_error` when set. Usage reports the context's
/// estimated size (characters / 4) as input, so thresholds behave as with a real provider.
#[derive(Default)]
pub struct Faux {
    turns: Mutex<VecDeque<FauxTurn>>,
    pub contexts: Mutex<Vec<ProviderContext>>,
    pub payloads: Arc<Mutex<Vec<Value>>>,
    pub summaries: Mutex<Vec<ProviderContext>>,
    pub summary_error: Mutex<Option<String>>,
    /// When set, the next summary request hangs until it is notified.
    pub summary_gate: Mutex<Option<Arc<Notify>>>,
    /// Each call's `StreamOptions::cwd` and `time_zone` (the session's place).
    pub places: Mutex<Vec<(Option<std::path::PathBuf>, Option<String>)>>,
}

/// Whether a request is compaction's summary request.
pub fn is_summary_request(c: &ProviderContext) -> bool {
    c.tools.is_empty() && c.system_prompt.starts_with("You summarise conversations")
}

impl Faux {
    pub fn new(turns: Vec<FauxTurn>) -> Arc<Self> {
        Arc::new(Faux {
            turns: Mutex::new(turns.into()),
            ..Default::default()
        })
    }
    pub fn push(&self, t: FauxTurn) {
        self.turns.lock().unwrap().push_back(t);
    }
    pub fn calls(&self) -> usize {
        self.contexts.lock().unwrap().len()
    }
    pub fn context(&self, i: usize) -> ProviderContext {
        self.contexts.lock().unwrap()[i].clone()
    }
}

pub fn faux_model() -> Model {
    Model {
        id: "m1".into(),
        name: "Faux".into(),
        provider: "faux".into(),
        api: Api::Other("faux".into()),
        base_url: String::new(),
        reasoning: false,
        input: vec![InputKind::Text, InputKind::Image],
        cost: ModelCost {
            input: 1.0,
            output: 2.0,
            cache_read: 0.0,
            cache_write: 0.0,
        },
        context_window: 100_000,
        max_tokens: 4096,
    }
}

impl Provider for Faux {
    fn api(&self) -> Api {
        Api::Other("faux".into())
    }

    fn stream(&self, model: &Model, context: ProviderContext, options: StreamOptions) -> ProviderStream {
        let size = (context.system_prompt.len() + context.messages.iter().map(Message::estimated_chars).sum::<usize>())
            as u64
            / 4;
        let turn = if is_summary_request(&context) {
            let n = {
                let mut s = self.summaries.lock().unwrap();
                s.push(context.clone());
                s.len()
            };
            Some(
                match (
                    self.summary_error.lock().unwrap().clone(),
                    self.summary_gate.lock().unwrap().take(),
                ) {
                    (Some(e), _) => FauxTurn::Error(e),
                    (None, Some(gate)) => FauxTurn::Hang(gate),
                    (None, None) => FauxTurn::text(&format!("## Goal\nsummary {n}")),
                },
            )
        } else {
            self.contexts.lock().unwrap().push(context.clone());
            self.turns.lock().unwrap().pop_front()
        };
        self.places
            .lock()
            .unwrap()
            .push((options.cwd.clone(), options.time_zone.clone()));
        let payload = json!({"system": context.system_prompt, "messages": context.messages.len()});
        let model = model.clone();
        let (tx, rx) = futures::channel::mpsc::unbounded();
        let recorded = self.payloads.clone();
        tokio::spawn(async move {
            let payload = match &options.on_payload {
                Some(h) => h(payload).await,
                None => payload,
            };
            recorded.lock().unwrap().push(payload);
            let mut m = AssistantMessage::empty("faux", "faux", &model.id, 0);
            let _ = tx.unbounded_send(AssistantMessageEvent::Start { partial: m.clone() });
            let fail = |m: &mut AssistantMessage, reason: StopReason, msg: &str| {
                m.stop_reason = reason;
                m.error_message = Some(msg.into());
                AssistantMessageEvent::Error {
                    reason,
                    error: m.clone(),
                }
            };
            match turn {
                None => {
                    let _ = tx.unbounded_send(fail(&mut m, StopReason::Error, "faux: no scripted turn left"));
                }
                Some(FauxTurn::Error(msg)) => {
                    let _ = tx.unbounded_send(fail(&mut m, StopReason::Error, &msg));
                }
                Some(FauxTurn::Hang(gate)) => {
                    let _ = tx.unbounded_send(AssistantMessageEvent::TextStart { content_index: 0 });
                    let _ = tx.unbounded_send(AssistantMessageEvent::TextDelta {
                        content_index: 0,
                        delta: "partial".into(),
                    });
                    m.content.push(text("partial"));
                    tokio::select! {
                        () = options.cancel.cancelled() => {
                            let _ = tx.unbounded_send(fail(&mut m, StopReason::Aborted, "aborted"));
                        }
                        () = gate.notified() => {
                            let _ = tx.unbounded_send(AssistantMessageEvent::TextEnd { content_index: 0, content: "partial".into() });
                            let _ = tx.unbounded_send(AssistantMessageEvent::Done { reason: StopReason::Stop, message: m.clone() });
                        }
                    }
                }
                Some(FauxTurn::Reply(blocks, stop)) => {
                    for (i, b) in blocks.iter().enumerate() {
                        match b {
                            AssistantContent::Text(t) => {
                                let _ = tx.unbounded_send(AssistantMessageEvent::TextStart { content_index: i });
                                let _ = tx.unbounded_send(AssistantMessageEvent::TextDelta {
                                    content_index: i,
                                    delta: t.text.clone(),
                                });
                                let _ = tx.unbounded_send(AssistantMessageEvent::TextEnd {
                                    content_index: i,
                                    content: t.text.clone(),
                                });
                            }
                            AssistantContent::Thinking(t) => {
                                let _ = tx.unbounded_send(AssistantMessageEvent::ThinkingStart { content_index: i });
                                let _ = tx.unbounded_send(AssistantMessageEvent::ThinkingEnd {
                                    content_index: i,
                                    content: t.thinking.clone(),
                                    signature: None,
                                });
                            }
                            AssistantContent::ToolCall(c) => {
                                let _ = tx.unbounded_send(AssistantMessageEvent::ToolCallStart {
                                    content_index: i,
                                    id: c.id.clone(),
                                    name: c.name.clone(),
                                });
                                let _ = tx.unbounded_send(AssistantMessageEvent::ToolCallDelta {
                                    content_index: i,
                                    delta: c.arguments.to_string(),
                                });
                                let _ = tx.unbounded_send(AssistantMessageEvent::ToolCallEnd {
                                    content_index: i,
                                    tool_call: c.clone(),
                                });
                            }
                            // Ran "inside the provider": the call, then its result.
                            AssistantContent::ProviderToolCall(c) => {
                                let mut call = c.clone();
                                let result = call.result.take();
                                let _ = tx.unbounded_send(AssistantMessageEvent::ProviderToolCall {
                                    content_index: i,
                                    tool_call: call,
                                });
                                if let Some(result) = result {
                                    let _ = tx.unbounded_send(AssistantMessageEvent::ProviderToolResult {
                                        content_index: i,
                                        result,
                                    });
                                }
                            }
                        }
                    }
                    m.content = blocks;
                    m.stop_reason = stop;
                    m.usage = Usage {
                        input: size,
                        output: 10,
                        total_tokens: size + 10,
                        ..Default::default()
                    };
                    let _ = tx.unbounded_send(AssistantMessageEvent::Done {
                        reason: stop,
                        message: m,
                    });
                }
            }
        });
        rx.boxed()
    }
}

/// A secret every test session knows (redaction tests).
pub const TEST_SECRET: &str = "sk-test-ABCDEFGH12345678";

pub struct Harness {
    pub session: AgentSession,
    pub faux: Arc<Faux>,
    pub dir: tempfile::TempDir,
    pub events: Arc<Mutex<Vec<AgentSessionEvent>>>,
    pub factory: AgentSessionFactory,
}

impl Harness {
    pub fn event_names(&self) -> Vec<&'static str> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .map(|e| e.name())
            .filter(|n| *n != "message_update" && *n != "tool_execution_update")
            .collect()
    }
    /// What `f` picks from the events so far, in order.
    pub fn pick<T>(&self, f: impl Fn(&AgentSessionEvent) -> Option<T>) -> Vec<T> {
        self.events.lock().unwrap().iter().filter_map(f).collect()
    }
    pub fn workspace(&self) -> std::path::PathBuf {
        self.dir.path().join("ws")
    }
}

pub fn factory(faux: Arc<Faux>, extensions: Vec<ExtensionFactory>, dir: &Path) -> AgentSessionFactory {
    AgentSessionFactory::new(factory_config(faux, extensions, dir))
}

/// The config [`factory`] builds its factory from (tests change fields before building).
pub fn factory_config(faux: Arc<Faux>, extensions: Vec<ExtensionFactory>, dir: &Path) -> FactoryConfig {
    let mut models = ModelRegistry::new().with_env(|_| None);
    models.register_provider(ProviderRegistration {
        name: "faux".into(),
        provider: faux,
        models: vec![faux_model()],
        api_key: None,
        api_key_env: None,
    });
    FactoryConfig {
        models,
        extensions,
        processes: Arc::new(ProcessSpawnPolicy::new(ProcessEnvironmentOptions {
            secret_values: vec![TEST_SECRET.into()],
            ..Default::default()
        })),
        store: Arc::new(FileSessionStore::new(dir.join("sessions"))),
        default_model: Some("faux/m1".into()),
        fallback_models: Vec::new(),
        default_thinking: Default::default(),
        default_time_zone: None,
        home_dir: None,
        skill_hooks: true,
        context_root: Some(dir.to_path_buf()),
        sequential_tools: false,
        compaction: Default::default(),
    }
}

pub async fn harness(turns: Vec<FauxTurn>, extensions: Vec<ExtensionFactory>) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let faux = Faux::new(turns);
    let config = factory_config(faux.clone(), extensions, dir.path());
    harness_on(config, faux, dir).await
}

/// A [`Harness`] on `config` ([`factory_config`] of `faux` and `dir`, as the test changed it): a
/// new session in `dir/ws`, its events recorded.
pub async fn harness_on(config: FactoryConfig, faux: Arc<Faux>, dir: tempfile::TempDir) -> Harness {
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let factory = AgentSessionFactory::new(config);
    let session = factory
        .create(AgentSessionOptions {
            cwd: dir.path().join("ws"),
            session: SessionSelect::New,
            ..Default::default()
        })
        .await
        .unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    session.subscribe(move |e| ev.lock().unwrap().push(e.clone()));
    Harness {
        session,
        faux,
        dir,
        events,
        factory,
    }
}

/// Waits (bounded) until `f` holds.
pub async fn eventually(mut f: impl FnMut() -> bool) {
    for _ in 0..200 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not met within 2 s");
}

// ---- Test extensions (events_tests, dispatch_tests) ----

use volcanic_abstractions::extensions::events::ExtensionEvent;
use volcanic_abstractions::extensions::{
    BoxError, Extension, ExtensionApi, ExtensionApiExt, ExtensionContext, Subscription,
};
use volcanic_abstractions::messages::{CustomMessage, Message, UserBody, join_text};

/// What a [`TestExt`] does in `activate`.
pub type Activate = Arc<dyn Fn(Arc<dyn ExtensionApi>) -> Result<(), BoxError> + Send + Sync>;

/// An extension whose activation is a closure.
pub struct TestExt {
    name: String,
    activate: Activate,
}

#[async_trait::async_trait]
impl Extension for TestExt {
    fn name(&self) -> &str {
        &self.name
    }
    async fn activate(&self, api: Arc<dyn ExtensionApi>) -> Result<(), BoxError> {
        (self.activate)(api)
    }
}

/// A factory of [`TestExt`] named `name` (one instance per session).
pub fn ext(
    name: &str,
    activate: impl Fn(Arc<dyn ExtensionApi>) -> Result<(), BoxError> + Send + Sync + 'static,
) -> ExtensionFactory {
    let name = name.to_owned();
    let activate: Activate = Arc::new(activate);
    Arc::new(move || {
        Box::new(TestExt {
            name: name.clone(),
            activate: activate.clone(),
        }) as Box<dyn Extension>
    })
}

/// Subscribes a handler that does its work synchronously (a panic in it happens while the
/// runtime calls the handler, before any future exists).
pub fn on_sync<E: ExtensionEvent>(
    api: &dyn ExtensionApi,
    f: impl Fn(&mut E, &Arc<dyn ExtensionContext>) -> Result<(), BoxError> + Send + Sync + 'static,
) -> Subscription {
    api.on::<E, _>(move |e, ctx, _cancel| {
        let r = f(e, &ctx);
        Box::pin(async move { r })
    })
}

/// A shared list handlers record into.
pub type Log = Arc<Mutex<Vec<String>>>;

pub fn new_log() -> Log {
    Arc::default()
}

pub fn logged(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

pub fn push(log: &Log, s: impl Into<String>) {
    log.lock().unwrap().push(s.into());
}

/// A custom message with text content.
pub fn custom(custom_type: &str, text: &str) -> CustomMessage {
    CustomMessage {
        custom_type: custom_type.into(),
        content: UserBody::Text(text.into()),
        display: false,
        details: None,
        timestamp: 0,
    }
}

/// `(role, text)` of each message; tool results as `toolResult` with their text.
pub fn transcript(msgs: &[Message]) -> Vec<(&'static str, String)> {
    msgs.iter()
        .map(|m| {
            let text = match m {
                Message::User(u) => u.content.text(),
                Message::Custom(c) => c.content.text(),
                Message::Assistant(a) => a.text(),
                Message::ToolResult(r) => join_text(&r.content),
                other => format!("{other:?}"),
            };
            (m.role(), text)
        })
        .collect()
}

/// `(call id, is_error, text)` of each tool result.
pub fn tool_results_of(msgs: &[Message]) -> Vec<(String, bool, String)> {
    msgs.iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((r.tool_call_id.clone(), r.is_error, join_text(&r.content))),
            _ => None,
        })
        .collect()
}

/// Opens the harness's session file again in a new session (same factory and extensions).
pub async fn reopen(h: &Harness) -> AgentSession {
    let file = h.session.session_file().unwrap();
    h.factory
        .create(AgentSessionOptions {
            cwd: h.workspace(),
            session: SessionSelect::Open(file),
            ..Default::default()
        })
        .await
        .unwrap()
}

/// Records `s` and succeeds (the body of most recording handlers).
pub fn note(log: &Log, s: impl Into<String>) -> Result<(), BoxError> {
    push(log, s);
    Ok(())
}

/// Texts of the user messages the model saw in call `i`.
pub fn user_texts(h: &Harness, i: usize) -> Vec<String> {
    h.faux
        .context(i)
        .messages
        .iter()
        .filter_map(|m| match m {
            volcanic_abstractions::messages::Message::User(u) => Some(u.content.text()),
            _ => None,
        })
        .collect()
}
