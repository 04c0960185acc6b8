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
//!
//! **The sandbox seam.** After the hooks, a [`ProcessSandbox`] (when the host has one) confines
//! the prepared process: it may rewrite it (environment such as `TMPDIR`; a container or remote
//! backend would wrap the command) and attach a [`ChildConfinement`] that
//! [`ProcessSpawnContext::to_std_command`] runs in the child between `fork` and `exec`. Every
//! spawner builds its command with `to_std_command` / `to_group_command`, so every agent process
//! (bash, skill hooks, watchers, MCP servers) is confined without knowing it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
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
    /// A provider's own program that runs the model (`claude` for the Claude Code provider):
    /// it gets the environment its provider builds, not the filtered host environment.
    ModelProcess,
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
    /// The workspace the process works for (the sandbox gives it read-write access), when the
    /// caller knows it and it differs from `cwd` (a skill hook runs in its skill's folder);
    /// `None`: the sandbox derives it from `cwd`.
    pub workspace: Option<PathBuf>,
    /// Extra paths this process may read and execute beyond the system and its workspace (its
    /// own program when installed elsewhere), set by host code, never from agent input.
    pub read_paths: Vec<PathBuf>,
    /// Extra paths this process may read and write (its program's own state, e.g. `~/.claude`
    /// for `claude`), set by host code, never from agent input; missing paths are skipped.
    pub write_paths: Vec<PathBuf>,
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
            workspace: None,
            read_paths: Vec::new(),
            write_paths: Vec::new(),
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
    /// What the child does to itself before `exec` (set by the host's [`ProcessSandbox`]);
    /// `None`: the child runs unconfined.
    pub confinement: Option<Confinement>,
}

impl ProcessSpawnContext {
    /// Applies command, args, cwd and the complete environment to a `std` command (clearing the
    /// inherited environment first), and the [`confinement`](Self::confinement), which runs in
    /// the child after its cwd, stdio and process group are set and before `exec`; a failing
    /// confinement fails the spawn (`exec` never runs).
    pub fn to_std_command(&self) -> std::process::Command {
        let mut c = std::process::Command::new(&self.command);
        c.args(&self.args).current_dir(&self.cwd).env_clear().envs(&self.env);
        if let Some(confinement) = &self.confinement {
            confinement.attach(&mut c);
        }
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

/// Confinement a child applies to itself between `fork` and `exec` (Landlock, seccomp, dropping
/// capabilities, ...). Runs in the forked child of a multi-threaded host: only
/// async-signal-safe work (system calls; no allocation, no locks, no logging).
pub trait ChildConfinement: Send + Sync + std::fmt::Debug {
    /// Confines the calling (child) process for good. An `Err` fails the spawn with that error.
    fn confine_child(&self) -> std::io::Result<()>;
}

/// A shared [`ChildConfinement`], carried by a [`ProcessSpawnContext`]. Two are equal when they
/// are the same object.
#[derive(Debug, Clone)]
pub struct Confinement(pub Arc<dyn ChildConfinement>);

impl Confinement {
    /// Registers the confinement as a `pre_exec` step of `command`.
    pub fn attach(&self, command: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let confinement = Arc::clone(&self.0);
        // `pre_exec` is unsafe because the closure runs in the forked child, where only
        // async-signal-safe calls are sound: `ChildConfinement` promises exactly that.
        #[allow(unsafe_code)]
        // SAFETY: `confine_child` makes system calls only (its contract above); the `Arc` was
        // cloned in the parent and is only read in the child.
        unsafe {
            command.pre_exec(move || confinement.confine_child());
        }
    }
}

impl PartialEq for Confinement {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Which paths the built-in file tools (`read`, `write`, `edit`, `send`, running in the host
/// process) may reach for one workspace: the same boundary the sandbox gives the workspace's
/// processes. Paths are absolute and resolved (no symbolic links, `.` or `..`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileBoundary {
    /// Folders (and files) readable with everything beneath them.
    pub read: Vec<PathBuf>,
    /// Folders (and files) writable with everything beneath them (also readable).
    pub write: Vec<PathBuf>,
    /// Paths never readable through a `read` entry (the sandbox opens the system around them);
    /// a `write` entry beneath one (a workspace under `workspaces_dir`) stays writable.
    pub closed: Vec<PathBuf>,
}

impl FileBoundary {
    /// Whether the resolved path `path` may be read (`write = false`) or written.
    pub fn allows(&self, path: &Path, write: bool) -> bool {
        if self.write.iter().any(|w| path.starts_with(w)) {
            return true;
        }
        !write && self.read.iter().any(|r| path.starts_with(r)) && !self.closed.iter().any(|c| path.starts_with(c))
    }
}

/// A sandbox backend: confines every process the [`ProcessSpawnPolicy`] prepares. The Landlock +
/// seccomp backend attaches a [`ChildConfinement`]; a container or remote backend would rewrite
/// `command` and `args` to run the process elsewhere (docs/sandbox.md).
pub trait ProcessSandbox: Send + Sync + std::fmt::Debug {
    /// Confines `context`, prepared for `request` (its environment is complete: this may add to
    /// it, e.g. `TMPDIR`). An `Err` fails the spawn with a message saying what to change.
    fn confine(
        &self,
        request: &ProcessSpawnRequest,
        context: &mut ProcessSpawnContext,
    ) -> Result<(), ProcessSpawnError>;

    /// What the built-in file tools may reach for a session whose working directory is `cwd`;
    /// `None`: no boundary (the sandbox is off).
    fn file_boundary(&self, cwd: &Path) -> Option<FileBoundary>;
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
    /// What the built-in file tools may reach for a session whose working directory is `cwd`
    /// (the sandbox's [`ProcessSandbox::file_boundary`]); `None` (the default): no boundary.
    fn file_boundary(&self, cwd: &Path) -> Option<FileBoundary> {
        let _ = cwd;
        None
    }
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
