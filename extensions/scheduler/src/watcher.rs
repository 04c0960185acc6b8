//! Watcher scripts: `sh <script>` in the workspace through the host's process policy, with the
//! job's `TZ`, in its own process group, killed at the timeout.

use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use volcanic_abstractions::processes::{ProcessPurpose, ProcessSpawnPolicy, ProcessSpawnRequest};
use volcanic_abstractions::shortage::{plain, plain_text};

/// Output kept from a watcher's stdout (bytes); more is cut and said so.
pub const MAX_OUTPUT_BYTES: usize = 16 * 1024;

/// Stderr kept for the run record (bytes).
pub const MAX_STDERR_BYTES: usize = 4 * 1024;

/// What a watcher did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchResult {
    /// Exit 0 with this stdout (maybe empty: nothing to report).
    Output(String),
    /// Non-zero exit, a timeout, or no start: the message says which, with stderr.
    Failed(String),
}

/// Resolves a job's `script` inside `workspace`; refuses absolute paths and `..` that leave it.
pub fn script_path(workspace: &Path, script: &str) -> Result<PathBuf, String> {
    let rel = Path::new(script.trim());
    if script.trim().is_empty() {
        return Err("`script` is empty: give a path inside the workspace, e.g. `scripts/check.sh`".into());
    }
    let rel = if rel.is_absolute() {
        rel.strip_prefix(workspace)
            .map_err(|_| format!("`{script}` is outside the workspace; give a path inside it"))?
    } else {
        rel
    };
    if rel.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(format!(
            "`{script}` must not contain `..`; give a path inside the workspace"
        ));
    }
    Ok(workspace.join(rel))
}

/// Runs the watcher `script` (relative to `workspace`) for at most `timeout`.
pub async fn run(
    processes: &dyn ProcessSpawnPolicy,
    workspace: &Path,
    script: &str,
    time_zone: Option<String>,
    timeout: Duration,
) -> WatchResult {
    let path = match script_path(workspace, script) {
        Ok(p) => p,
        Err(e) => return WatchResult::Failed(e),
    };
    if !path.is_file() {
        return WatchResult::Failed(format!("the script `{script}` does not exist in the workspace"));
    }
    let mut request = ProcessSpawnRequest::new(ProcessPurpose::Watcher, "sh", workspace);
    request.args = vec![path.to_string_lossy().into_owned()];
    request.time_zone = time_zone;
    request.origin = "scheduler".into();
    let prepared = match processes.prepare(&request) {
        Ok(p) => p,
        Err(e) => return WatchResult::Failed(plain_text(e.to_string())),
    };
    let mut command = tokio::process::Command::from(prepared.to_group_command());
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => return io_failed(&format!("cannot start `sh {script}`"), &e),
    };
    // Killed when this future is dropped mid-run too.
    let group = child.id().map(|pid| processes.process_group(pid));
    let stdout = tokio::spawn(read_capped(child.stdout.take(), MAX_OUTPUT_BYTES));
    let stderr = tokio::spawn(read_capped(child.stderr.take(), MAX_STDERR_BYTES));
    let status = tokio::time::timeout(timeout, child.wait()).await;
    // The script ended (or timed out): whatever it left running goes too, which also closes the
    // pipes a background child held open.
    if let Some(group) = group {
        group.kill();
        group.disarm();
    }
    let drain = std::time::Duration::from_secs(1);
    let out = tokio::time::timeout(drain, stdout)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let err = tokio::time::timeout(drain, stderr)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let redact = processes.redactor();
    let err = redact.redact(err.trim());
    match status {
        Err(_) => WatchResult::Failed(format!(
            "timed out after {} s and was killed{}",
            timeout.as_secs(),
            if err.is_empty() {
                String::new()
            } else {
                format!("; stderr: {err}")
            }
        )),
        Ok(Ok(s)) if s.success() => WatchResult::Output(redact.redact(&out)),
        Ok(Ok(s)) => WatchResult::Failed(format!(
            "exited with {}{}",
            s.code().map_or_else(|| "a signal".to_owned(), |c| format!("code {c}")),
            if err.is_empty() {
                String::new()
            } else {
                format!("; stderr: {err}")
            }
        )),
        Ok(Err(e)) => io_failed("waiting for the script failed", &e),
    }
}

/// `what` failed with `e`, as the run's record and the chat's failure note show it: a shortage
/// of descriptors, memory or disk in plain words ([`plain`]), not the OS error's text.
fn io_failed(what: &str, e: &std::io::Error) -> WatchResult {
    WatchResult::Failed(format!("{what}: {}", plain(e)))
}

/// Reads up to `cap` bytes as text, then drains the rest (so the child never blocks on a full
/// pipe); says when output was cut.
async fn read_capped(pipe: Option<impl tokio::io::AsyncRead + Unpin + Send>, cap: usize) -> String {
    let Some(mut pipe) = pipe else { return String::new() };
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    let mut total = 0usize;
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        total += n;
        if kept.len() < cap {
            let take = n.min(cap - kept.len());
            kept.extend_from_slice(&buf[..take]);
        }
    }
    let mut text = String::from_utf8_lossy(&kept).into_owned();
    if total > cap {
        text.push_str(&format!("\n[… {} more bytes cut]", total - cap));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watcher_that_meets_a_shortage_says_so_plainly() {
        let emfile = std::io::Error::from_raw_os_error(24);
        assert!(emfile.to_string().contains("(os error 24)"), "{emfile}");
        assert_eq!(
            io_failed("cannot start `sh w.sh`", &emfile),
            WatchResult::Failed("cannot start `sh w.sh`: the bot's machine is short of open files".into())
        );
        let refused = std::io::Error::from_raw_os_error(13);
        assert_eq!(
            io_failed("cannot start `sh w.sh`", &refused),
            WatchResult::Failed(format!("cannot start `sh w.sh`: {refused}"))
        );
    }
}
