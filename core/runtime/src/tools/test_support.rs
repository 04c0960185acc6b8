//! Test doubles for the tools: an `ExtensionContext` whose `prepare_process` runs a real
//! [`ProcessSpawnPolicy`](crate::processes::ProcessSpawnPolicy), and a recording chat channel.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::processes::{EnvSource, ProcessEnvironmentOptions, ProcessSpawnPolicy};
use async_trait::async_trait;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::{ContextUsage, ExtensionContext, ExtensionError, ModelCatalog, SessionView};
use volcanic_abstractions::messages::{AssistantMessage, StopReason};
use volcanic_abstractions::model::{Model, ThinkingLevel};
use volcanic_abstractions::processes::{
    ProcessSpawnContext, ProcessSpawnError, ProcessSpawnPolicy as _, ProcessSpawnRequest,
};
use volcanic_abstractions::provider::{ProviderContext, StreamOptions};
use volcanic_abstractions::tools::{Tool, ToolError, ToolInvocation, ToolResult};
use volcanic_abstractions::ui::{ChannelError, ChatChannel, UserInterface};

/// What the recording channel received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sent {
    Text(String),
    File {
        name: String,
        content: Vec<u8>,
        caption: Option<String>,
        as_photo: bool,
    },
}

/// A chat channel that records what it is asked to send.
#[derive(Debug, Default)]
pub(crate) struct RecordingChannel {
    pub(crate) sent: Mutex<Vec<Sent>>,
    /// `(from, to)`: renamed over the sent path after the tool opened it, before the channel
    /// reads (a swap racing the send).
    pub(crate) swap: Option<(PathBuf, PathBuf)>,
}

#[async_trait]
impl ChatChannel for RecordingChannel {
    async fn send_text(&self, text: &str) -> Result<(), ChannelError> {
        self.sent.lock().unwrap().push(Sent::Text(text.to_owned()));
        Ok(())
    }

    async fn send_file(
        &self,
        mut file: std::fs::File,
        name: &str,
        caption: Option<&str>,
        as_photo: bool,
    ) -> Result<(), ChannelError> {
        if let Some((from, to)) = &self.swap {
            std::fs::rename(from, to).unwrap();
        }
        let mut content = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut content).map_err(|e| ChannelError(e.to_string()))?;
        self.sent.lock().unwrap().push(Sent::File {
            name: name.to_owned(),
            content,
            caption: caption.map(str::to_owned),
            as_photo,
        });
        Ok(())
    }
}

struct NoModels;

#[async_trait]
impl ModelCatalog for NoModels {
    fn models(&self) -> Vec<Model> {
        Vec::new()
    }
    fn find(&self, _key: &str) -> Option<Model> {
        None
    }
    async fn complete(&self, model: &Model, _c: ProviderContext, _o: StreamOptions) -> AssistantMessage {
        let mut message = AssistantMessage::empty("test", &model.provider, &model.id, 0);
        message.stop_reason = StopReason::Error;
        message.error_message = Some("no models in tests".to_owned());
        message
    }
}

/// A session context for tool tests.
pub(crate) struct TestContext {
    pub(crate) cwd: PathBuf,
    pub(crate) time_zone: Option<String>,
    pub(crate) channel: Option<Arc<RecordingChannel>>,
    pub(crate) policy: ProcessSpawnPolicy,
}

impl TestContext {
    /// A context in `cwd` over the real host environment with default options.
    pub(crate) fn new(cwd: &Path) -> Self {
        TestContext::with_policy(cwd, ProcessSpawnPolicy::new(ProcessEnvironmentOptions::default()))
    }

    /// A context in `cwd` with the given policy.
    pub(crate) fn with_policy(cwd: &Path, policy: ProcessSpawnPolicy) -> Self {
        TestContext {
            cwd: cwd.to_owned(),
            time_zone: None,
            channel: None,
            policy,
        }
    }

    /// A policy over the host's `PATH` and `HOME` plus `extra` variables.
    pub(crate) fn policy_with_env(options: ProcessEnvironmentOptions, extra: &[(&str, &str)]) -> ProcessSpawnPolicy {
        let mut vars: Vec<(String, String)> = std::env::vars().filter(|(n, _)| n == "PATH" || n == "HOME").collect();
        vars.extend(extra.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())));
        let source: EnvSource = Arc::new(move || vars.clone());
        ProcessSpawnPolicy::with_env_source(options, source)
    }
}

#[async_trait]
impl ExtensionContext for TestContext {
    fn cwd(&self) -> PathBuf {
        self.cwd.clone()
    }
    fn session_id(&self) -> String {
        "test-session".to_owned()
    }
    fn time_zone(&self) -> Option<String> {
        self.time_zone.clone()
    }
    fn ui(&self) -> Option<Arc<dyn UserInterface>> {
        None
    }
    fn channel(&self) -> Option<Arc<dyn ChatChannel>> {
        self.channel.clone().map(|c| c as Arc<dyn ChatChannel>)
    }
    fn session(&self) -> Result<Arc<dyn SessionView>, ExtensionError> {
        Err(ExtensionError::Failed("no session in tool tests".to_owned()))
    }
    fn models(&self) -> Arc<dyn ModelCatalog> {
        Arc::new(NoModels)
    }
    fn model(&self) -> Option<Model> {
        None
    }
    fn thinking_level(&self) -> ThinkingLevel {
        ThinkingLevel::default()
    }
    fn signal(&self) -> CancellationToken {
        CancellationToken::new()
    }
    fn is_idle(&self) -> bool {
        false
    }
    fn abort(&self) -> Result<(), ExtensionError> {
        Ok(())
    }
    fn has_pending_messages(&self) -> bool {
        false
    }
    fn context_usage(&self) -> Option<ContextUsage> {
        None
    }
    fn system_prompt(&self) -> String {
        String::new()
    }
    fn compact(&self, _instructions: Option<String>) -> Result<(), ExtensionError> {
        Ok(())
    }
    async fn prepare_process(
        &self,
        mut request: ProcessSpawnRequest,
    ) -> Result<ProcessSpawnContext, ProcessSpawnError> {
        // As the session does: fill the zone and ids, then run the policy.
        if request.time_zone.is_none() {
            request.time_zone = self.time_zone.clone();
        }
        request.session_id = Some(self.session_id());
        self.policy.prepare(&request)
    }
}

/// Progress updates a call reported.
pub(crate) type Updates = Arc<Mutex<Vec<ToolResult>>>;

/// An invocation in `ctx` recording its progress updates.
pub(crate) fn invocation(ctx: TestContext) -> (ToolInvocation, Updates) {
    let updates: Updates = Arc::default();
    let sink = updates.clone();
    let invocation = ToolInvocation {
        tool_call_id: "call-1".to_owned(),
        ctx: Arc::new(ctx),
        progress: Some(Arc::new(move |r| sink.lock().unwrap().push(r))),
    };
    (invocation, updates)
}

/// Runs `tool` with `args` in `ctx` (no cancellation).
pub(crate) async fn run(tool: &dyn Tool, ctx: TestContext, args: Value) -> Result<ToolResult, ToolError> {
    let (invocation, _) = invocation(ctx);
    tool.execute(args, invocation, CancellationToken::new()).await
}

/// The text of an `Ok` or `Err` outcome.
pub(crate) fn text_of(outcome: &Result<ToolResult, ToolError>) -> String {
    match outcome {
        Ok(result) => result.text_content(),
        Err(ToolError::WithResult(result)) => result.text_content(),
        Err(other) => other.to_string(),
    }
}

/// The details of an `Ok` or `Err::WithResult` outcome.
pub(crate) fn details_of(outcome: &Result<ToolResult, ToolError>) -> Option<Value> {
    match outcome {
        Ok(result) | Err(ToolError::WithResult(result)) => result.details.clone(),
        Err(_) => None,
    }
}
