//! The built-in `bash` tool.
//!
//! The process is prepared through `ctx.prepare_process` (purpose `Bash`) and started with exactly
//! the returned command, cwd and complete environment, stdin `/dev/null`, in its own process group.
//! Stdout and stderr share one pipe, so their output interleaves in arrival order. Timeout and
//! abort kill the whole group (`SIGKILL`); so does dropping the running call. After the shell
//! exits, output still arriving is read for [`DRAIN_GRACE_MS`] at most (background children may
//! hold the pipe open; they are left running).

use super::bash_output::OutputAccumulator;
use super::truncate::{DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, TruncatedBy, Truncation, format_size};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::processes::{ProcessPurpose, ProcessSpawnRequest};
use volcanic_abstractions::tools::{ToolError, ToolInvocation, ToolResult, TypedTool};

/// Timeout when the call gives none (seconds); `timeout: 0` disables it.
pub const DEFAULT_TIMEOUT_SECS: u64 = 180;
/// Minimum interval between progress reports (ms).
pub const PROGRESS_INTERVAL_MS: u64 = 250;
/// How long output is still read after the shell exited (ms).
pub const DRAIN_GRACE_MS: u64 = 200;

/// Arguments of `bash`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = super::model_schema)]
pub struct BashArgs {
    /// The bash command to run
    pub command: String,
    /// Timeout in seconds (default 180; 0 for none)
    #[schemars(range(min = 0))]
    pub timeout: Option<f64>,
}

/// `bash {command, timeout?}`: runs `bash -c command` in the session's working directory.
#[derive(Debug, Default, Clone, Copy)]
pub struct BashTool;

#[async_trait]
impl TypedTool for BashTool {
    type Args = BashArgs;

    fn name(&self) -> &str {
        "bash"
    }

    fn description(&self) -> &str {
        "Run a bash command in the working directory. Returns stdout and stderr together. Output \
         is cut to the last 2000 lines or 50KB (whichever comes first); when cut, the full output \
         is saved to a file whose path is given. The timeout is 180 seconds unless you pass \
         timeout (seconds; 0 means none)."
    }

    fn prompt_snippet(&self) -> Option<String> {
        Some("Run bash commands (ls, grep, find, git, scripts, ...)".to_owned())
    }

    fn prompt_guidelines(&self) -> Vec<String> {
        vec!["Use bash for file operations such as ls, rg and find".to_owned()]
    }

    async fn run(
        &self,
        args: BashArgs,
        invocation: ToolInvocation,
        cancel: CancellationToken,
    ) -> Result<ToolResult, ToolError> {
        let timeout = resolve_timeout(args.timeout)?;
        if cancel.is_cancelled() {
            return Err(ToolError::msg("Command aborted"));
        }
        let ctx = &invocation.ctx;
        let cwd = ctx.cwd();
        if !cwd.is_dir() {
            return Err(ToolError::msg(format!(
                "Working directory does not exist: {}",
                cwd.display()
            )));
        }
        let mut request = ProcessSpawnRequest::new(ProcessPurpose::Bash, "bash", cwd);
        request.args = vec!["-c".to_owned(), args.command];
        request.time_zone = ctx.time_zone();
        request.origin = "bash".to_owned();
        let spawn = ctx
            .prepare_process(request)
            .await
            .map_err(|e| ToolError::msg(e.to_string()))?;

        let start_error = |e: std::io::Error| ToolError::msg(format!("Could not start bash: {e}"));
        let crate::processes::GroupChild {
            mut child,
            output: mut receiver,
            group,
        } = crate::processes::spawn_in_group(&spawn).map_err(start_error)?;

        let mut output = OutputAccumulator::new(DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
        let mut buf = vec![0u8; 64 * 1024];
        let mut status: Option<std::io::Result<ExitStatus>> = None;
        let mut eof = false;
        let mut ending: Option<Ending> = None;
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut drain_deadline: Option<Instant> = None;
        let mut dirty = false;
        let mut ticker = tokio::time::interval(Duration::from_millis(PROGRESS_INTERVAL_MS));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while !(eof && status.is_some()) {
            let running = status.is_none() && ending.is_none();
            tokio::select! {
                read = receiver.read(&mut buf), if !eof => match read {
                    Ok(0) => eof = true,
                    Ok(n) => {
                        output.push(&buf[..n]).await;
                        dirty = true;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(error) => {
                        tracing::warn!(%error, "reading bash output failed");
                        eof = true;
                    }
                },
                waited = child.wait(), if status.is_none() => {
                    status = Some(waited);
                    drain_deadline = Some(Instant::now() + Duration::from_millis(DRAIN_GRACE_MS));
                },
                () = sleep_until(deadline), if running && deadline.is_some() => {
                    group.kill();
                    ending = Some(Ending::TimedOut);
                },
                () = cancel.cancelled(), if running => {
                    group.kill();
                    ending = Some(Ending::Aborted);
                },
                () = sleep_until(drain_deadline), if drain_deadline.is_some() && !eof => break,
                _ = ticker.tick(), if dirty => {
                    dirty = false;
                    invocation.report(ToolResult::text(output.snapshot().content));
                },
            }
        }
        group.disarm();
        if dirty {
            invocation.report(ToolResult::text(output.snapshot().content));
        }
        let (truncation, full_path) = output.finish().await;
        let (text, details) = render_output(&truncation, full_path);
        let fail = |status_line: String| {
            let text = if text.is_empty() {
                status_line
            } else {
                format!("{text}\n\n{status_line}")
            };
            let mut result = ToolResult::text(text);
            result.details = details.clone();
            ToolError::WithResult(result)
        };
        match ending {
            Some(Ending::TimedOut) => {
                let secs = args.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS as f64);
                return Err(fail(format!("Command timed out after {secs} seconds")));
            }
            Some(Ending::Aborted) => return Err(fail("Command aborted".to_owned())),
            None => {}
        }
        let status = match status {
            Some(Ok(status)) => status,
            Some(Err(e)) => return Err(fail(format!("Could not wait for bash: {e}"))),
            None => return Err(fail("bash did not exit".to_owned())),
        };
        match (status.code(), status.signal()) {
            (Some(0), _) => {
                let text = if text.is_empty() {
                    "(no output)".to_owned()
                } else {
                    text
                };
                let mut result = ToolResult::text(text);
                result.details = details;
                Ok(result)
            }
            (Some(code), _) => Err(fail(format!("Command exited with code {code}"))),
            (None, Some(signal)) => Err(fail(format!("Command was killed by signal {signal}"))),
            (None, None) => Err(fail("Command ended without an exit code".to_owned())),
        }
    }
}

/// Why the command was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    TimedOut,
    Aborted,
}

fn resolve_timeout(timeout: Option<f64>) -> Result<Option<Duration>, ToolError> {
    match timeout {
        None => Ok(Some(Duration::from_secs(DEFAULT_TIMEOUT_SECS))),
        Some(0.0) => Ok(None),
        Some(secs) => Duration::try_from_secs_f64(secs).map(Some).map_err(|_| {
            ToolError::msg(format!(
                "Invalid timeout {secs}: give a finite number of seconds, or 0 for no timeout"
            ))
        }),
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The visible output and, when truncated, the details `{truncation, fullOutputPath}`.
fn render_output(truncation: &Truncation, full_path: Option<PathBuf>) -> (String, Option<Value>) {
    let mut text = truncation.content.clone();
    if !truncation.truncated {
        return (text, None);
    }
    let path = full_path.as_ref().map(|p| p.display().to_string());
    let full = match &path {
        Some(p) => format!("Full output: {p}"),
        None => "Full output could not be saved".to_owned(),
    };
    let notice = if truncation.last_line_partial {
        format!(
            "[Showing the last {} of line {}. {full}]",
            format_size(truncation.output_bytes),
            truncation.total_lines
        )
    } else {
        let limit = match truncation.truncated_by {
            Some(TruncatedBy::Bytes) => format!(" ({} limit)", format_size(truncation.max_bytes)),
            Some(TruncatedBy::Lines) | None => String::new(),
        };
        format!(
            "[Showing last {} lines of {}{limit}. {full}]",
            truncation.output_lines, truncation.total_lines
        )
    };
    text = if text.is_empty() {
        notice
    } else {
        format!("{text}\n\n{notice}")
    };
    let details = json!({ "truncation": truncation.to_details(), "fullOutputPath": path });
    (text, Some(details))
}
