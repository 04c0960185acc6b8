//! The process contract: every process started on the agent's behalf gets its command, cwd and
//! environment from one [`ProcessSpawnPolicy`] (spec: architecture.md, "Processes and secrets"):
//!
//! ```text
//! inherit the host environment → filter (deny-list, allow-list, secret values)
//!   → explicit request environment (never filtered) → TZ from the session zone
//!   → host hooks → ProcessSpawnEvent to extensions (in a session only)
//! ```
//!
//! The result is the child's complete environment: spawners clear the child's environment and
//! apply exactly [`ProcessSpawnContext::env`]. A failing hook fails the spawn; nothing falls back to
//! the inherited environment.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Why a process is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProcessPurpose {
    /// The built-in `bash` tool.
    Bash,
    /// `ExtensionApi::exec`.
    ExtensionExec,
    /// A skill hook (`session-start`, `turn-end`).
    SkillHook,
    /// An MCP server process.
    McpServer,
    /// A scheduler watcher script.
    Watcher,
    /// Anything else.
    Other,
}

/// What a caller asks to start.
#[derive(Debug, Clone)]
pub struct ProcessSpawnRequest {
    /// Why.
    pub purpose: ProcessPurpose,
    /// Program.
    pub command: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Variables set on top of the filtered environment, never filtered; `None` removes one.
    pub env: BTreeMap<String, Option<String>>,
    /// IANA zone for `TZ`; `None` keeps the host's `TZ`.
    pub time_zone: Option<String>,
    /// Who asks (extension name, `bash`, ...), for logs.
    pub origin: String,
    /// Session scope, filled by the session.
    pub scope: Option<String>,
    /// Session id, filled by the session.
    pub session_id: Option<String>,
}

impl ProcessSpawnRequest {
    /// A request with empty environment overrides.
    pub fn new(purpose: ProcessPurpose, command: impl Into<String>, cwd: impl Into<PathBuf>) -> Self {
        ProcessSpawnRequest {
            purpose,
            command: command.into(),
            args: Vec::new(),
            cwd: cwd.into(),
            env: BTreeMap::new(),
            time_zone: None,
            origin: String::new(),
            scope: None,
            session_id: None,
        }
    }
}

/// The prepared process: apply exactly this.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessSpawnContext {
    /// Program.
    pub command: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// The complete environment of the child.
    pub env: BTreeMap<String, String>,
}

impl ProcessSpawnContext {
    /// Applies command, args, cwd and the complete environment to a `std` command (clearing the
    /// inherited environment first).
    pub fn to_std_command(&self) -> std::process::Command {
        let mut c = std::process::Command::new(&self.command);
        c.args(&self.args).current_dir(&self.cwd).env_clear().envs(&self.env);
        c
    }

    /// [`to_std_command`](Self::to_std_command) in a process group of its own (the child's pid is
    /// the group id), so [`ProcessSpawnPolicy::process_group`] can kill it together with every
    /// process it started.
    pub fn to_group_command(&self) -> std::process::Command {
        use std::os::unix::process::CommandExt;
        let mut c = self.to_std_command();
        c.process_group(0);
        c
    }
}

/// The process group of a child started with [`ProcessSpawnContext::to_group_command`]: killed
/// with `SIGKILL` on [`kill`](Self::kill), or when dropped unless [`disarm`](Self::disarm)ed (the
/// task running the child was dropped mid-run). A group already gone is fine.
pub trait ProcessGroup: Send + Sync + std::fmt::Debug {
    /// Kills the whole group now.
    fn kill(&self);
    /// The child ended by itself and nothing of its group needs killing: dropping no longer
    /// kills.
    fn disarm(self: Box<Self>);
}

/// A spawn that could not be prepared (a hook or handler failed).
#[derive(Debug, Clone, thiserror::Error)]
#[error("process environment hook failed: {0}")]
pub struct ProcessSpawnError(pub String);

/// A host hook: a synchronous, pure rewrite of the prepared process. An `Err` fails the spawn.
pub type ProcessSpawnHook =
    Arc<dyn Fn(&ProcessSpawnRequest, &mut ProcessSpawnContext) -> Result<(), String> + Send + Sync>;

/// Builds the command, cwd and environment of an agent-requested process (host hooks only; the
/// session adds the `ProcessSpawnEvent` for extensions).
pub trait ProcessSpawnPolicy: Send + Sync {
    /// Prepares `request`.
    fn prepare(&self, request: &ProcessSpawnRequest) -> Result<ProcessSpawnContext, ProcessSpawnError>;
    /// The redactor that knows this policy's secret values.
    fn redactor(&self) -> Arc<dyn SecretRedactor>;
    /// The group of the child `pid`, started with [`ProcessSpawnContext::to_group_command`]: how
    /// a spawner kills it with everything it started (at a timeout, or when abandoned).
    fn process_group(&self, pid: u32) -> Box<dyn ProcessGroup>;
}

/// Replaces known secret values with `[REDACTED]`. The set can grow at run time (e.g. an OAuth token).
pub trait SecretRedactor: Send + Sync {
    /// Text with every known secret replaced by `[REDACTED]`.
    fn redact(&self, text: &str) -> String;
    /// Adds a secret value (values shorter than 6 bytes are ignored: too many false hits).
    fn add_secret(&self, value: &str);
    /// Stops redacting a secret that was replaced (e.g. an OAuth access token after its refresh),
    /// so the set does not grow for ever. The default keeps it: redacting too much is safe.
    fn remove_secret(&self, value: &str) {
        let _ = value;
    }
}

/// The replacement text for a secret.
pub const REDACTED: &str = "[REDACTED]";
