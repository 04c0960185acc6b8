//! Running one hook: prepared through the session (`ProcessPurpose::SkillHook`), started with
//! exactly the prepared command, cwd and environment, stdin `/dev/null`, stdout and stderr on one
//! pipe, in its own process group, killed (the whole group) at its deadline. It runs in its
//! skill's folder; its sandbox workspace is the session's working directory, and it may read
//! (not write) its skill's folder.

use std::os::unix::process::ExitStatusExt;

use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::time::Instant;
use volcanic_abstractions::extensions::ExtensionContext;
use volcanic_abstractions::processes::{ProcessPurpose, ProcessSpawnRequest, SecretRedactor};
use volcanic_abstractions::skills::{HookCommand, Skill, SkillHookKind};

/// Most output kept from one hook (bytes); more is cut and the text says so.
pub const MAX_HOOK_OUTPUT_BYTES: usize = 16 * 1024;
/// Output read before redaction (bytes): a margin so a secret straddling the cut is still whole
/// when redacted.
const CAPTURE_BYTES: usize = 4 * MAX_HOOK_OUTPUT_BYTES;
/// How long output is still read after the shell exited (ms): background children may hold the
/// pipe open.
const DRAIN_GRACE_MS: u64 = 200;
/// Variable naming the session's working directory.
pub const ENV_WORKSPACE: &str = "VOLCANIC_WORKSPACE";
/// Variable naming the skill's folder.
pub const ENV_SKILL_DIR: &str = "VOLCANIC_SKILL_DIR";

/// How a hook ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HookStatus {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal (not by us).
    Signaled(i32),
    /// Killed at its deadline.
    TimedOut(Duration),
    /// Could not be prepared or started.
    Failed(String),
}

/// What a hook printed and how it ended; the output is redacted and cut to
/// [`MAX_HOOK_OUTPUT_BYTES`].
#[derive(Debug, Clone)]
pub(crate) struct HookReport {
    pub output: String,
    pub truncated: bool,
    pub status: HookStatus,
}

impl HookReport {
    /// The text the model sees: the output, then a status line unless it exited with 0. `None`
    /// for a successful hook that printed nothing.
    pub fn text(&self, kind: SkillHookKind) -> Option<String> {
        let status = match &self.status {
            HookStatus::Exited(0) => None,
            HookStatus::Exited(code) => Some(format!("[{kind} hook exited with code {code}]")),
            HookStatus::Signaled(sig) => Some(format!("[{kind} hook was killed by signal {sig}]")),
            HookStatus::TimedOut(t) => Some(format!(
                "[{kind} hook timed out after {} s and was stopped]",
                t.as_secs_f64()
            )),
            HookStatus::Failed(e) => Some(format!("[{kind} hook could not run: {e}]")),
        };
        let mut parts: Vec<String> = Vec::new();
        if !self.output.is_empty() {
            parts.push(self.output.clone());
        }
        if self.truncated {
            parts.push(format!("[output cut at {} KB]", MAX_HOOK_OUTPUT_BYTES / 1024));
        }
        parts.extend(status);
        (!parts.is_empty()).then(|| parts.join("\n"))
    }
}

/// Runs `hook` of `skill` until it exits or `deadline` passes.
pub(crate) async fn run_hook(
    ctx: &Arc<dyn ExtensionContext>,
    skill: &Skill,
    kind: SkillHookKind,
    hook: &HookCommand,
    deadline: Instant,
    redactor: &dyn SecretRedactor,
) -> HookReport {
    let failed = |e: String| HookReport {
        output: String::new(),
        truncated: false,
        status: HookStatus::Failed(redactor.redact(&e)),
    };
    let mut request = ProcessSpawnRequest::new(ProcessPurpose::SkillHook, "sh", &skill.dir);
    request.args = vec!["-c".to_owned(), hook.command.clone()];
    // The sandbox gives the session's workspace, not the skill's folder (which may lie in the
    // bot's home or `state_dir`): the hook may only read its own skill.
    request.workspace = Some(ctx.cwd());
    request.read_paths = vec![skill.dir.clone()];
    let workspace = ctx.cwd().to_string_lossy().into_owned();
    request.env.insert(ENV_WORKSPACE.to_owned(), Some(workspace));
    let skill_dir = skill.dir.to_string_lossy().into_owned();
    request.env.insert(ENV_SKILL_DIR.to_owned(), Some(skill_dir));
    request.time_zone = ctx.time_zone();
    request.origin = format!("skill {} ({kind})", skill.name);
    let spawn = match tokio::time::timeout_at(deadline, ctx.prepare_process(request)).await {
        Ok(Ok(spawn)) => spawn,
        Ok(Err(e)) => return failed(e.to_string()),
        Err(_) => {
            return HookReport {
                status: HookStatus::TimedOut(hook.timeout),
                ..failed(String::new())
            };
        }
    };
    let crate::processes::GroupChild {
        mut child,
        output: mut receiver,
        group,
    } = match crate::processes::spawn_in_group(&spawn) {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot start `sh` in {}: {e}", spawn.cwd.display())),
    };
    let mut captured: Vec<u8> = Vec::new();
    let mut seen = 0usize;
    let mut buf = vec![0u8; 8192];
    let mut eof = false;
    let mut status = None;
    let mut timed_out = false;
    let mut drain_deadline: Option<Instant> = None;
    while !(eof && status.is_some()) {
        tokio::select! {
            read = receiver.read(&mut buf), if !eof => match read {
                Ok(0) => eof = true,
                Ok(n) => {
                    seen += n;
                    let room = CAPTURE_BYTES.saturating_sub(captured.len());
                    captured.extend_from_slice(&buf[..n.min(room)]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => eof = true,
            },
            waited = child.wait(), if status.is_none() => {
                status = Some(waited);
                drain_deadline = Some(Instant::now() + Duration::from_millis(DRAIN_GRACE_MS));
            },
            () = tokio::time::sleep_until(deadline), if status.is_none() && !timed_out => {
                group.kill();
                let _ = child.start_kill();
                timed_out = true;
            },
            () = sleep_until(drain_deadline), if drain_deadline.is_some() && !eof => break,
        }
    }
    group.disarm();
    let (output, truncated) = render_output(&captured, seen, redactor);
    let status = if timed_out {
        HookStatus::TimedOut(hook.timeout)
    } else {
        match status {
            Some(Ok(s)) => match (s.code(), s.signal()) {
                (Some(code), _) => HookStatus::Exited(code),
                (None, Some(sig)) => HookStatus::Signaled(sig),
                (None, None) => HookStatus::Failed("ended without an exit code".to_owned()),
            },
            Some(Err(e)) => HookStatus::Failed(format!("cannot wait for the hook: {e}")),
            None => HookStatus::Failed("did not exit".to_owned()),
        }
    };
    HookReport {
        output,
        truncated,
        status,
    }
}

/// Redacts the captured bytes, then cuts them to [`MAX_HOOK_OUTPUT_BYTES`] at a character
/// boundary; trailing whitespace is dropped. Returns the text and whether anything was cut.
fn render_output(captured: &[u8], seen: usize, redactor: &dyn SecretRedactor) -> (String, bool) {
    let redacted = redactor.redact(&String::from_utf8_lossy(captured));
    let mut cut = redacted.len().min(MAX_HOOK_OUTPUT_BYTES);
    while !redacted.is_char_boundary(cut) {
        cut -= 1;
    }
    let truncated = cut < redacted.len() || seen > captured.len();
    (redacted[..cut].trim_end().to_owned(), truncated)
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::processes::Redactor;

    #[test]
    fn output_is_redacted_before_it_is_cut() {
        let redactor = Redactor::with_secrets(["sk-secret-value-123"]);
        let mut raw = "a".repeat(MAX_HOOK_OUTPUT_BYTES - 5).into_bytes();
        raw.extend_from_slice(b"sk-secret-value-123 tail");
        let (text, truncated) = render_output(&raw, raw.len(), &redactor);
        assert!(truncated);
        assert_eq!(text.len(), MAX_HOOK_OUTPUT_BYTES);
        assert!(text.ends_with("aaaaa[REDA"), "{}", &text[text.len() - 12..]);
        assert!(!text.contains("sk-sec"));
    }

    #[test]
    fn short_output_is_kept_whole_and_cut_at_a_character_boundary() {
        let redactor = Redactor::new();
        assert_eq!(render_output(b"hello\n\n", 7, &redactor), ("hello".to_owned(), false));
        let raw = "é".repeat(MAX_HOOK_OUTPUT_BYTES).into_bytes();
        let (text, truncated) = render_output(&raw, raw.len(), &redactor);
        assert!(truncated);
        assert_eq!(text.len(), MAX_HOOK_OUTPUT_BYTES);
        // Seen more than captured: cut even when the captured part fits.
        assert_eq!(render_output(b"x", 10, &redactor), ("x".to_owned(), true));
    }

    #[test]
    fn report_text_says_how_the_hook_ended() {
        let report = |output: &str, truncated, status| HookReport {
            output: output.to_owned(),
            truncated,
            status,
        };
        let kind = SkillHookKind::TurnEnd;
        assert_eq!(report("", false, HookStatus::Exited(0)).text(kind), None);
        assert_eq!(report("ok", false, HookStatus::Exited(0)).text(kind).unwrap(), "ok");
        assert_eq!(
            report("out", true, HookStatus::Exited(2)).text(kind).unwrap(),
            "out\n[output cut at 16 KB]\n[turn-end hook exited with code 2]"
        );
        assert_eq!(
            report("", false, HookStatus::TimedOut(Duration::from_secs(1)))
                .text(SkillHookKind::SessionStart)
                .unwrap(),
            "[session-start hook timed out after 1 s and was stopped]"
        );
    }
}
