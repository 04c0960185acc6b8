//! Tools: what the model can call.
//!
//! Failure has one channel, `Err`: a plain [`ToolError::Failed`] becomes an error result with its
//! message; [`ToolError::WithResult`] carries full content and details (the spec's
//! `ToolExecutionException(result)`). `ToolResult.is_error` is set by the runtime from that, never
//! by a tool returning `Ok`.

use crate::extensions::ExtensionContext;
use crate::messages::{TextContent, UserContent};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Whether a batch containing this tool may run its calls in parallel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExecutionMode {
    /// May run alongside other calls of the batch.
    #[default]
    Parallel,
    /// Forces the whole batch to run one call at a time (the built-in `edit`/`write` do).
    Sequential,
}

/// The outcome of a tool call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolResult {
    /// What the model sees.
    pub content: Vec<UserContent>,
    /// Structured data for hosts and extensions; never sent to the model.
    pub details: Option<Value>,
    /// Set by the runtime: true when the tool returned `Err`.
    pub is_error: bool,
    /// When every result of a batch sets it, the run ends without another model call.
    pub terminate: bool,
}

impl ToolResult {
    /// A text result.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult {
            content: vec![UserContent::Text(TextContent {
                text: text.into(),
                text_signature: None,
            })],
            ..ToolResult::default()
        }
    }

    /// Adds details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// All text content joined with newlines.
    pub fn text_content(&self) -> String {
        crate::messages::join_text(&self.content)
    }
}

/// A tool failure.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The message becomes the error result's text.
    #[error("{0}")]
    Failed(String),
    /// A full result (content + details) marked as an error.
    #[error("{}", .0.text_content())]
    WithResult(ToolResult),
    /// The call was aborted.
    #[error("aborted")]
    Aborted,
}

impl ToolError {
    /// A failure with a message.
    pub fn msg(m: impl Into<String>) -> Self {
        ToolError::Failed(m.into())
    }
}

/// Receives partial results while a tool runs (`tool_execution_update`).
pub type ProgressFn = Arc<dyn Fn(ToolResult) + Send + Sync>;

/// The call being executed and the session it runs in.
#[derive(Clone)]
pub struct ToolInvocation {
    /// The model's call id.
    pub tool_call_id: String,
    /// The session context: cwd, time zone, UI, channel, process preparation.
    pub ctx: Arc<dyn ExtensionContext>,
    /// Progress sink.
    pub progress: Option<ProgressFn>,
}

impl ToolInvocation {
    /// Reports a partial result (shown to hosts as `tool_execution_update`).
    pub fn report(&self, partial: ToolResult) {
        if let Some(p) = &self.progress {
            p(partial);
        }
    }
}

impl std::fmt::Debug for ToolInvocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolInvocation")
            .field("tool_call_id", &self.tool_call_id)
            .finish_non_exhaustive()
    }
}

/// A tool. Implement directly, or implement [`TypedTool`] and wrap it with [`typed`].
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name the model calls it by.
    fn name(&self) -> &str;
    /// Description for the model.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments (an object schema). Asked for with every model request:
    /// return a value built once (a `static`, or a field), not a new one each time.
    fn parameters(&self) -> Arc<Value>;
    /// One line for the system prompt's tools section.
    fn prompt_snippet(&self) -> Option<String> {
        None
    }
    /// Bullets for the system prompt's guidelines.
    fn prompt_guidelines(&self) -> Vec<String> {
        Vec::new()
    }
    /// Parallel or sequential.
    fn execution_mode(&self) -> ExecutionMode {
        ExecutionMode::Parallel
    }
    /// Runs the tool. `args` were validated against [`Tool::parameters`].
    async fn execute(
        &self,
        args: Value,
        invocation: ToolInvocation,
        cancel: CancellationToken,
    ) -> Result<ToolResult, ToolError>;
}

/// A tool whose arguments are a typed struct; its schema comes from `schemars`.
#[async_trait]
pub trait TypedTool: Send + Sync + 'static {
    /// Argument struct; doc comments on its fields become schema descriptions.
    type Args: DeserializeOwned + JsonSchema + Send;
    /// Name.
    fn name(&self) -> &str;
    /// Description.
    fn description(&self) -> &str;
    /// Prompt snippet.
    fn prompt_snippet(&self) -> Option<String> {
        None
    }
    /// Guidelines.
    fn prompt_guidelines(&self) -> Vec<String> {
        Vec::new()
    }
    /// Execution mode.
    fn execution_mode(&self) -> ExecutionMode {
        ExecutionMode::Parallel
    }
    /// Runs the tool with parsed arguments.
    async fn run(
        &self,
        args: Self::Args,
        invocation: ToolInvocation,
        cancel: CancellationToken,
    ) -> Result<ToolResult, ToolError>;
}

/// Wraps a [`TypedTool`] as a [`Tool`]. Its schema is generated once per argument type in the
/// process (it is sent with every model request; every session has its own tool instances).
pub fn typed<T: TypedTool>(tool: T) -> Arc<dyn Tool> {
    Arc::new(Typed(tool))
}

/// The schema of `T`, generated once per type and shared.
fn cached_schema<T: JsonSchema + 'static>() -> Arc<Value> {
    type Cache = std::sync::Mutex<std::collections::HashMap<std::any::TypeId, Arc<Value>>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
    map.entry(std::any::TypeId::of::<T>())
        .or_insert_with(|| Arc::new(schema_for::<T>()))
        .clone()
}

/// The JSON Schema of `T` as a tool-parameters object (no `$schema`, `title` kept out).
pub fn schema_for<T: JsonSchema>() -> Value {
    let settings = schemars::generate::SchemaSettings::draft07().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut v = schema.to_value();
    if let Some(o) = v.as_object_mut() {
        o.remove("title");
        o.remove("$schema");
    }
    v
}

struct Typed<T>(T);

#[async_trait]
impl<T: TypedTool> Tool for Typed<T> {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn description(&self) -> &str {
        self.0.description()
    }
    fn parameters(&self) -> Arc<Value> {
        cached_schema::<T::Args>()
    }
    fn prompt_snippet(&self) -> Option<String> {
        self.0.prompt_snippet()
    }
    fn prompt_guidelines(&self) -> Vec<String> {
        self.0.prompt_guidelines()
    }
    fn execution_mode(&self) -> ExecutionMode {
        self.0.execution_mode()
    }
    async fn execute(
        &self,
        args: Value,
        invocation: ToolInvocation,
        cancel: CancellationToken,
    ) -> Result<ToolResult, ToolError> {
        let parsed: T::Args = serde_json::from_value(args)
            .map_err(|e| ToolError::msg(format!("invalid arguments for {}: {e}", self.0.name())))?;
        self.0.run(parsed, invocation, cancel).await
    }
}
