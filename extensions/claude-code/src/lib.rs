//! Volcanic provider for Claude Code (`api = "claude-code"`, provider `claude-code`): each model
//! call runs `claude -p --output-format stream-json --verbose --include-partial-messages`, so a
//! person can run their chats on a Claude subscription.
//!
//! - **Process.** `claude` runs in the session's working directory and time zone (the provider
//!   contract's `StreamOptions::cwd` and `time_zone`), in its own process group (an abort kills the group), with
//!   an allow-listed environment: `PATH`, `HOME`, Claude's own login variables
//!   ([`PASSED_ENV`]) when set, and `TZ`; nothing of the bot's (it does not take the process
//!   policy's filtered environment). With the host's sandbox ([`registration`]) it runs confined
//!   like every agent process: its workspace is the session's working directory, plus its
//!   executable and its own login and settings (`CLAUDE_CONFIG_DIR`, else `~/.claude` and
//!   `~/.claude.json`); it keeps the real `HOME` and gets the sandbox's private `TMPDIR`.
//! - **Prompt.** The new user text goes on stdin (`claude -p` reads its prompt there when none is
//!   given as an argument).
//! - **Conversation.** `claude` keeps the conversation itself. Its session id (the `system`/`init`
//!   line's `session_id`) is stored as the assistant message's `response_id` on the session's
//!   branch; the next call passes `--resume <id>` when the latest `claude-code` answer carries one
//!   and is newer than the latest compaction. After `/new` (an empty transcript) or a compaction
//!   it starts fresh, sending what the transcript holds as text.
//! - **Stream.** Text and thinking deltas come from `stream_event` partial messages (or whole
//!   `assistant` blocks when no partials came). Claude's own tool calls and results (already run
//!   inside `claude`) become `providerToolCall` blocks, each call paired with its result: shown
//!   as progress (the `tool_execution_*` events our own tools show), kept in the transcript,
//!   never executed by the runtime, not re-sent on `--resume` (`claude` has them), and turned
//!   into text for any other provider the session switches to. The `result` line gives
//!   usage and `total_cost_usd`; an error result, a non-zero exit or a missing `claude` binary
//!   ends the stream with an `error` event that says what to do. Unknown line types are skipped.
#![warn(missing_docs, unreachable_pub)]

mod command;
mod mapper;
mod provider;

pub use command::{PASSED_ENV, PermissionMode};
pub use provider::ClaudeCodeProvider;

use std::sync::Arc;
use volcanic_abstractions::processes::ProcessSandbox;
use volcanic_abstractions::provider::ProviderRegistration;
use volcanic_abstractions::{Api, InputKind, Model, ModelCost};

/// The wire API name (`api = "claude-code"`).
pub const API: &str = "claude-code";

/// The provider name (`claude-code/sonnet`).
pub const PROVIDER: &str = "claude-code";

/// Errors of this crate's configuration.
#[derive(Debug, thiserror::Error)]
pub enum ClaudeCodeError {
    /// A `permission_mode` Claude Code does not know.
    #[error("`{0}`: use default, acceptEdits, plan or bypassPermissions")]
    PermissionMode(String),
    /// An empty `command`.
    #[error("empty: the path of the `claude` executable, e.g. /usr/local/bin/claude")]
    EmptyCommand,
    /// An allowed-tool rule that is empty or holds a comma (Claude Code's list separator).
    #[error("`{0}`: one tool rule per entry, e.g. \"Read\" or \"Bash(git diff:*)\"")]
    AllowedTool(String),
}

/// How `claude` is started (`[providers.claude-code]` in the bot's config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeCodeConfig {
    /// The executable: a path, or a name looked up on `PATH` (default `claude`).
    pub command: String,
    /// `--permission-mode` (default [`PermissionMode::Default`]: in `-p` mode a tool that needs
    /// permission is denied, so `claude` can read but not edit files or run commands).
    pub permission_mode: PermissionMode,
    /// `--allowedTools` rules (default none), e.g. `["Read", "Bash(git log:*)"]`.
    pub allowed_tools: Vec<String>,
}

impl Default for ClaudeCodeConfig {
    fn default() -> Self {
        ClaudeCodeConfig {
            command: "claude".into(),
            permission_mode: PermissionMode::Default,
            allowed_tools: Vec::new(),
        }
    }
}

impl ClaudeCodeConfig {
    /// A config from the values as written; `None` keeps the default.
    ///
    /// # Errors
    /// [`ClaudeCodeError`] naming the value that is wrong.
    pub fn new(
        command: Option<String>,
        permission_mode: Option<&str>,
        allowed_tools: Option<Vec<String>>,
    ) -> Result<Self, ClaudeCodeError> {
        let mut c = ClaudeCodeConfig::default();
        if let Some(command) = command {
            if command.trim().is_empty() {
                return Err(ClaudeCodeError::EmptyCommand);
            }
            c.command = command;
        }
        if let Some(mode) = permission_mode {
            c.permission_mode = mode.parse()?;
        }
        if let Some(tools) = allowed_tools {
            if let Some(bad) = tools.iter().find(|t| t.trim().is_empty() || t.contains(',')) {
                return Err(ClaudeCodeError::AllowedTool(bad.clone()));
            }
            c.allowed_tools = tools;
        }
        Ok(c)
    }
}

/// The models offered: Claude Code's aliases (`sonnet`, `opus`, `haiku`), which it resolves to
/// the current model of each family. Prices are zero here: the cost shown is `claude`'s own
/// `total_cost_usd`.
pub fn models() -> Vec<Model> {
    [
        ("sonnet", "Claude Sonnet (Claude Code)"),
        ("opus", "Claude Opus (Claude Code)"),
        ("haiku", "Claude Haiku (Claude Code)"),
    ]
    .into_iter()
    .map(|(id, name)| Model {
        id: id.into(),
        name: name.into(),
        provider: PROVIDER.into(),
        api: Api::Other(API.into()),
        base_url: String::new(),
        reasoning: false,
        input: vec![InputKind::Text],
        cost: ModelCost::default(),
        context_window: 200_000,
        max_tokens: 32_000,
    })
    .collect()
}

/// The `claude-code` provider with its models, for the model registry, each `claude` confined
/// by `sandbox` when given (the host's, as for every agent process). No API key: `claude` uses
/// its own login.
pub fn registration(config: ClaudeCodeConfig, sandbox: Option<Arc<dyn ProcessSandbox>>) -> ProviderRegistration {
    let provider = ClaudeCodeProvider::new(config);
    let provider = match sandbox {
        Some(sandbox) => provider.with_sandbox(sandbox),
        None => provider,
    };
    ProviderRegistration {
        name: PROVIDER.into(),
        provider: Arc::new(provider),
        models: models(),
        api_key: None,
        api_key_env: None,
    }
}
