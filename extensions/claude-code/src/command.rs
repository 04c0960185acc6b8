//! What one call starts: `claude`'s arguments, environment, working directory and prompt, all
//! read from the call's context.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use volcanic_abstractions::{AssistantContent, AssistantMessage, Message, ProviderContext, StreamOptions, UserContent};
use volcanic_provider_support::{branch_summary_text, compaction_summary_text};

use crate::{ClaudeCodeConfig, ClaudeCodeError, PROVIDER};

/// Variables passed from the bot's environment to `claude` when set: what it needs to run
/// (`PATH`, `HOME`, `LANG`) and its own login (`CLAUDE_CODE_OAUTH_TOKEN` from
/// `claude setup-token`, `CLAUDE_CONFIG_DIR`). `ANTHROPIC_API_KEY` is not among them: it is the
/// bot's own key for the `anthropic` provider, and Claude Code would bill it instead of the
/// subscription.
pub const PASSED_ENV: &[&str] = &["PATH", "HOME", "LANG", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR"];

/// Claude Code's `--permission-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PermissionMode {
    /// `default`: tools that need permission are denied in `-p` mode (reading works).
    #[default]
    Default,
    /// `acceptEdits`: file edits are allowed, commands still need `allowed_tools`.
    AcceptEdits,
    /// `plan`: nothing is changed; `claude` only plans.
    Plan,
    /// `bypassPermissions`: everything is allowed (only for a trusted, sandboxed host).
    BypassPermissions,
}

impl PermissionMode {
    /// The flag value.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::BypassPermissions => "bypassPermissions",
        }
    }
}

impl FromStr for PermissionMode {
    type Err = ClaudeCodeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            PermissionMode::Default,
            PermissionMode::AcceptEdits,
            PermissionMode::Plan,
            PermissionMode::BypassPermissions,
        ]
        .into_iter()
        .find(|m| m.as_str() == s)
        .ok_or_else(|| ClaudeCodeError::PermissionMode(s.to_owned()))
    }
}

/// One `claude` run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Invocation {
    pub(crate) args: Vec<String>,
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) stdin: String,
    /// The `--resume` id, if any.
    pub(crate) resume: Option<String>,
    /// What the sandbox opens for `claude` besides its workspace: its executable (read) and
    /// its own state (read-write), see [`claude_paths`].
    pub(crate) read_paths: Vec<PathBuf>,
    /// See [`read_paths`](Self::read_paths).
    pub(crate) write_paths: Vec<PathBuf>,
}

/// The run for `model_id` and `context`, in the session's working directory and time zone
/// (`options.cwd`, `options.time_zone`); `env` reads the bot's environment.
pub(crate) fn invocation(
    config: &ClaudeCodeConfig,
    model_id: &str,
    context: &ProviderContext,
    options: &StreamOptions,
    env: impl Fn(&str) -> Option<String>,
) -> Invocation {
    let resume = resume_id(&context.messages);
    let mut args: Vec<String> = [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--model",
        model_id,
        "--permission-mode",
        config.permission_mode.as_str(),
    ]
    .map(str::to_owned)
    .into();
    if !config.allowed_tools.is_empty() {
        args.push("--allowedTools".into());
        args.push(config.allowed_tools.join(","));
    }
    if let Some(id) = &resume {
        args.push("--resume".into());
        args.push(id.clone());
    }
    let mut vars: BTreeMap<String, String> = PASSED_ENV
        .iter()
        .filter_map(|k| env(k).map(|v| ((*k).to_owned(), v)))
        .collect();
    if let Some(tz) = &options.time_zone {
        vars.insert("TZ".into(), tz.clone());
    }
    let cwd = options.cwd.clone();
    let stdin = prompt(&context.messages, resume.is_some());
    let (read_paths, write_paths) = claude_paths(&config.command, &vars);
    Invocation {
        args,
        env: vars,
        cwd,
        stdin,
        resume,
        read_paths,
        write_paths,
    }
}

/// What `claude` needs beyond its workspace when it runs confined (docs/sandbox.md, "Claude
/// Code"): `(read, read-write)`. Read: the executable `command` (a path, or the first match on
/// `PATH`), for an install outside the system folders (`~/.local/bin/claude`; a Node install
/// under the home needs its folder in `[sandbox] read_paths`). Read-write: its login and
/// settings, `CLAUDE_CONFIG_DIR` when set, else `~/.claude` and `~/.claude.json`, from the
/// environment `claude` gets.
pub(crate) fn claude_paths(command: &str, env: &BTreeMap<String, String>) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let executable = if command.contains('/') {
        Some(PathBuf::from(command))
    } else {
        env.get("PATH").and_then(|path| {
            std::env::split_paths(path)
                .map(|dir| dir.join(command))
                .find(|candidate| candidate.is_file())
        })
    };
    let state = match (env.get("CLAUDE_CONFIG_DIR"), env.get("HOME")) {
        (Some(dir), _) => vec![PathBuf::from(dir)],
        (None, Some(home)) => vec![Path::new(home).join(".claude"), Path::new(home).join(".claude.json")],
        (None, None) => Vec::new(),
    };
    (executable.into_iter().collect(), state)
}

/// The session to resume: the `response_id` of the latest `claude-code` answer, unless a
/// compaction happened after it (the kept messages are older than the summary) or another
/// model answered since.
pub(crate) fn resume_id(messages: &[Message]) -> Option<String> {
    let compacted_at = messages
        .iter()
        .filter_map(|m| match m {
            Message::CompactionSummary(s) => Some(s.timestamp),
            Message::User(_)
            | Message::Assistant(_)
            | Message::ToolResult(_)
            | Message::Custom(_)
            | Message::BashExecution(_)
            | Message::BranchSummary(_) => None,
        })
        .max();
    let last = messages.iter().rev().find_map(|m| match m {
        Message::Assistant(a) => Some(a),
        Message::User(_)
        | Message::ToolResult(_)
        | Message::Custom(_)
        | Message::BashExecution(_)
        | Message::BranchSummary(_)
        | Message::CompactionSummary(_) => None,
    })?;
    (last.provider == PROVIDER && compacted_at.is_none_or(|t| last.timestamp > t))
        .then(|| last.response_id.clone())
        .flatten()
}

/// The prompt: when resuming, the user text after the last answer; when starting fresh, the
/// whole transcript as text (empty after `/new`, the summary after a compaction) ending with it.
fn prompt(messages: &[Message], resuming: bool) -> String {
    let start = messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant(_)))
        .map_or(0, |i| i + 1);
    let new: Vec<String> = messages[start..].iter().filter_map(user_text).collect();
    let new = new.join("\n\n");
    if resuming || start == 0 && messages.iter().all(|m| matches!(m, Message::User(_))) {
        return new;
    }
    let mut out = String::from("The conversation so far:\n\n");
    for m in &messages[..start] {
        let line = match m {
            Message::User(_) => user_text(m).map(|t| format!("User: {t}")),
            Message::Assistant(a) => {
                let text = assistant_text(a);
                (!text.is_empty()).then(|| format!("Assistant: {text}"))
            }
            Message::ToolResult(r) => Some(format!("Tool result ({}): {}", r.tool_name, join(&r.content))),
            Message::CompactionSummary(s) => Some(compaction_summary_text(s)),
            Message::BranchSummary(s) => Some(branch_summary_text(s)),
            Message::Custom(_) | Message::BashExecution(_) => None,
        };
        if let Some(line) = line {
            out.push_str(&line);
            out.push_str("\n\n");
        }
    }
    out.push_str("Now the user says:\n\n");
    out.push_str(&new);
    out
}

/// An answer in a fresh start's transcript: its text, with the tools it called and those the
/// provider ran itself (Claude Code's own, in an earlier `claude` session) said in words, in
/// order.
fn assistant_text(a: &AssistantMessage) -> String {
    let parts: Vec<String> = a
        .content
        .iter()
        .filter_map(|c| match c {
            AssistantContent::Text(t) => Some(t.text.clone()),
            AssistantContent::ProviderToolCall(call) => Some(call.as_text()),
            AssistantContent::ToolCall(call) => Some(format!("Called tool `{}` with {}", call.name, call.arguments)),
            AssistantContent::Thinking(_) => None,
        })
        .filter(|t| !t.trim().is_empty())
        .collect();
    parts.join("\n\n")
}

fn user_text(m: &Message) -> Option<String> {
    match m {
        Message::User(u) => Some(u.content.text()),
        Message::Assistant(_)
        | Message::ToolResult(_)
        | Message::Custom(_)
        | Message::BashExecution(_)
        | Message::BranchSummary(_)
        | Message::CompactionSummary(_) => None,
    }
}

fn join(blocks: &[UserContent]) -> String {
    volcanic_abstractions::join_text(blocks)
}

#[cfg(test)]
#[path = "command_tests.rs"]
mod tests;
