//! [`ClaudeCodeProvider`]: one `claude -p` process per call, its stdout lines mapped to provider
//! events, ending in exactly one `done` or `error`.

use futures::StreamExt;
use futures::channel::mpsc::{UnboundedSender, unbounded};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::process::Stdio;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use volcanic_abstractions::processes::{
    ProcessPurpose, ProcessSandbox, ProcessSpawnContext, ProcessSpawnError, ProcessSpawnRequest,
};
use volcanic_abstractions::{
    Api, AssistantMessage, AssistantMessageEvent as Ev, Model, Provider, ProviderContext, ProviderStream, StopReason,
    StreamOptions,
};

use crate::command::{Invocation, invocation};
use crate::mapper::{Mapper, Outcome};
use crate::{API, ClaudeCodeConfig};

/// What `claude`'s stderr may add to an error message (characters, the end kept).
const STDERR_CHARS: usize = 600;

/// Said after a failure that looks like a missing or expired login.
const LOGIN_HINT: &str = "log in: run `claude` once as the bot's user and use /login, or set \
                          CLAUDE_CODE_OAUTH_TOKEN (from `claude setup-token`) in the bot's environment";

/// Claude Code as a provider (`api = "claude-code"`).
///
/// Each call starts [`ClaudeCodeConfig::command`] with the flags, environment and working
/// directory the crate docs describe, writes the prompt to its stdin and maps its stdout. The
/// stream ends with `done` (stop reason `stop`, `response_id` = Claude's session id, usage and
/// `total_cost_usd` from the `result` line) or `error`: an error result, an exit without a
/// result, a `claude` that cannot be started (with what to do: install it, log in), or an abort
/// (stop reason `aborted`; the process group is killed).
#[derive(Debug, Clone)]
pub struct ClaudeCodeProvider {
    config: ClaudeCodeConfig,
    sandbox: Option<Arc<dyn ProcessSandbox>>,
}

impl ClaudeCodeProvider {
    /// A provider starting `claude` as `config` says, unconfined.
    pub fn new(config: ClaudeCodeConfig) -> Self {
        ClaudeCodeProvider { config, sandbox: None }
    }

    /// The same, with every `claude` confined by `sandbox` (the host's, as for the agent's own
    /// processes): its workspace is the session's working directory; it also gets its
    /// executable (read) and its login and settings (read-write; docs/sandbox.md).
    pub fn with_sandbox(mut self, sandbox: Arc<dyn ProcessSandbox>) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// The settings in use.
    pub fn config(&self) -> &ClaudeCodeConfig {
        &self.config
    }
}

impl Provider for ClaudeCodeProvider {
    fn api(&self) -> Api {
        Api::Other(API.into())
    }

    fn stream(&self, model: &Model, context: ProviderContext, options: StreamOptions) -> ProviderStream {
        let run = invocation(&self.config, &model.id, &context, &options, |k| std::env::var(k).ok());
        let (tx, rx) = unbounded();
        let mapper = Mapper::new(model, now_ms());
        let _ = tx.unbounded_send(mapper.start());
        let command = self.config.command.clone();
        let sandbox = self.sandbox.clone();
        tokio::spawn(async move {
            let last = call(&command, sandbox.as_deref(), run, mapper, &options, &tx).await;
            let _ = tx.unbounded_send(last);
        });
        rx.boxed()
    }
}

/// Runs one call, sending its events to `tx`; returns the terminal event.
async fn call(
    command: &str,
    sandbox: Option<&dyn ProcessSandbox>,
    run: Invocation,
    mut mapper: Mapper,
    options: &StreamOptions,
    tx: &UnboundedSender<Ev>,
) -> Ev {
    let mut cmd = match prepared(command, sandbox, &run) {
        Ok(context) => Command::from(context.to_group_command()),
        Err(e) => {
            return failed(
                mapper,
                tx,
                StopReason::Error,
                format!("Claude Code: the sandbox refused to start `{command}`: {e}"),
            );
        }
    };
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    tracing::debug!(
        resume = run.resume.is_some(),
        confined = sandbox.is_some(),
        "claude-code: starting claude"
    );
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied && sandbox.is_some() => {
            return failed(
                mapper,
                tx,
                StopReason::Error,
                format!(
                    "Claude Code: `{command}` cannot run inside the sandbox ({e}): add the folder it is \
                     installed in to [sandbox] read_paths (docs/sandbox.md, \"Claude Code\")"
                ),
            );
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let what = match &run.cwd {
                Some(dir) if !dir.is_dir() => format!("the working directory {} does not exist", dir.display()),
                _ => format!(
                    "`{command}` was not found: install Claude Code (npm install -g @anthropic-ai/claude-code) \
                     and {LOGIN_HINT}, or set `command` in [providers.claude-code] to its path"
                ),
            };
            return failed(mapper, tx, StopReason::Error, format!("Claude Code: {what}"));
        }
        Err(e) => {
            return failed(
                mapper,
                tx,
                StopReason::Error,
                format!("Claude Code: cannot start `{command}`: {e}"),
            );
        }
    };
    let group = child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw);
    let kill = || {
        if let Some(pgid) = group {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    };
    let (Some(mut stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        kill();
        return failed(
            mapper,
            tx,
            StopReason::Error,
            "Claude Code: no pipes to `claude`".into(),
        );
    };
    let prompt = run.stdin;
    // Written concurrently with reading: a long prompt must not block on a full pipe.
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(prompt.as_bytes()).await;
        let _ = stdin.shutdown().await;
    });
    let err_reader = tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = (&mut stderr).take(1 << 20).read_to_end(&mut buf).await;
        String::from_utf8_lossy(&buf).into_owned()
    });
    let mut lines = BufReader::new(stdout).lines();
    let mut out = Vec::new();
    let read = async {
        loop {
            match lines.next_line().await {
                Ok(Some(line)) => {
                    mapper.on_line(&line, &mut out);
                    for e in out.drain(..) {
                        let _ = tx.unbounded_send(e);
                    }
                }
                Ok(None) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    };
    let read_result = tokio::select! {
        r = read => Some(r),
        () = options.cancel.cancelled() => None,
    };
    writer.abort();
    let Some(read_result) = read_result else {
        kill();
        let _ = child.wait().await;
        return failed(mapper, tx, StopReason::Aborted, "Request was aborted".into());
    };
    let status = wait(&mut child, options).await;
    if status.is_none() {
        kill();
        let _ = child.wait().await;
    }
    // Bounded: a leftover grandchild may hold stderr open. (No group kill after a normal exit:
    // the reaped pid may already lead another group.)
    let stderr = tokio::time::timeout(std::time::Duration::from_secs(2), err_reader)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    match (mapper.outcome().cloned(), status, read_result) {
        (_, None, _) => failed(mapper, tx, StopReason::Aborted, "Request was aborted".into()),
        (Some(Outcome::Success), _, _) => {
            let mut out = Vec::new();
            let message = mapper.finish(&mut out);
            for e in out {
                let _ = tx.unbounded_send(e);
            }
            Ev::Done {
                reason: StopReason::Stop,
                message,
            }
        }
        (Some(Outcome::Failed(said)), _, _) => {
            let hint = if looks_like_login(&said) || looks_like_login(&stderr) {
                format!(" ({LOGIN_HINT})")
            } else {
                String::new()
            };
            failed(
                mapper,
                tx,
                StopReason::Error,
                format!("Claude Code failed: {said}{hint}"),
            )
        }
        (None, Some(status), read) => {
            let detail = tail(&stderr);
            let how = match read {
                Err(e) => format!("its output broke off ({e})"),
                Ok(()) => format!("it exited ({status}) without a result"),
            };
            let hint = if looks_like_login(&stderr) {
                LOGIN_HINT.to_owned()
            } else {
                format!("check that `claude -p` works as the bot's user, or {LOGIN_HINT}")
            };
            let detail = if detail.is_empty() {
                String::new()
            } else {
                format!(": {detail}")
            };
            failed(
                mapper,
                tx,
                StopReason::Error,
                format!("Claude Code: {how}{detail}; {hint}"),
            )
        }
    }
}

/// The process for `run`: `command` with exactly the invocation's environment, in the
/// session's working directory (the bot's own when the session has none), confined by `sandbox`
/// when there is one. `claude` keeps the bot user's `HOME` (its login lives there) and gets the
/// sandbox's private `TMPDIR`.
fn prepared(
    command: &str,
    sandbox: Option<&dyn ProcessSandbox>,
    run: &Invocation,
) -> Result<ProcessSpawnContext, ProcessSpawnError> {
    let cwd = run
        .cwd
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| ".".into());
    let mut context = ProcessSpawnContext {
        command: command.to_owned(),
        args: run.args.clone(),
        cwd: cwd.clone(),
        env: run.env.clone(),
        confinement: None,
    };
    let Some(sandbox) = sandbox else {
        return Ok(context);
    };
    let mut request = ProcessSpawnRequest::new(ProcessPurpose::ModelProcess, command, cwd);
    request.args = run.args.clone();
    request.origin = crate::PROVIDER.to_owned();
    request.read_paths = run.read_paths.clone();
    request.write_paths = run.write_paths.clone();
    sandbox.confine(&request, &mut context)?;
    match run.env.get("HOME") {
        Some(home) => context.env.insert("HOME".to_owned(), home.clone()),
        None => context.env.remove("HOME"),
    };
    Ok(context)
}

/// The exit status, or `None` when the call was aborted meanwhile (the caller then kills the
/// group, before reaping, while its id is still `claude`'s).
async fn wait(child: &mut Child, options: &StreamOptions) -> Option<std::process::ExitStatus> {
    tokio::select! {
        s = child.wait() => s.ok(),
        () = options.cancel.cancelled() => None,
    }
}

/// The `error` event for `message`, with the blocks streamed so far.
fn failed(mapper: Mapper, tx: &UnboundedSender<Ev>, reason: StopReason, message: String) -> Ev {
    let mut out = Vec::new();
    let mut error: AssistantMessage = mapper.finish(&mut out);
    for e in out {
        let _ = tx.unbounded_send(e);
    }
    error.stop_reason = reason;
    error.error_message = Some(message);
    Ev::Error { reason, error }
}

fn looks_like_login(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    [
        "/login",
        "not logged in",
        "invalid api key",
        "authentication",
        "oauth token",
    ]
    .iter()
    .any(|p| t.contains(p))
}

/// The last [`STDERR_CHARS`] characters of `text`, trimmed.
fn tail(text: &str) -> String {
    let text = text.trim();
    let n = text.chars().count();
    text.chars().skip(n.saturating_sub(STDERR_CHARS)).collect()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
