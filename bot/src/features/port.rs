//! The chat port: the one way a host feature reaches the host's chats ([`ChatPort`]), and the
//! plain data it speaks in ([`Target`], [`Incoming`], [`UrlButton`], [`LinePrompt`]).
//!
//! A feature never sees the host's internals (the Bot API client, the journal, a chat's output):
//! it sends a message with URL buttons, deletes one, tells a chat something in line with its
//! answers, hands a prompt into a chat's line with the exactly-once bookkeeping behind it, or
//! makes a session of its own. The Telegram host implements the port
//! (`TelegramPort`, in the Telegram host); the console has no chats a feature can address, so its
//! features get none ([`Services::chats`](super::Services::chats) is `None`).

use async_trait::async_trait;
use std::path::PathBuf;
use std::sync::Arc;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::extensions::ExtensionFactory;
use volcanic_abstractions::messages::{Message, StopReason};
use volcanic_abstractions::ui::UserInterface;
use volcanic_core::agent::AgentSession;

/// Where a message goes: a chat, and a forum topic in it (Bot API `chat_id` and
/// `message_thread_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target {
    /// Chat id (negative for groups).
    pub chat_id: i64,
    /// Forum topic (`message_thread_id`).
    pub thread: Option<i32>,
}

/// The folder name of a chat: the chat id for private chats, `g<id without the minus>` for
/// groups (a folder name must never start with `-`). Names its workspace, its sessions' folder
/// and the files features keep per chat.
pub fn chat_key(chat_id: i64) -> String {
    if chat_id < 0 {
        format!("g{}", chat_id.unsigned_abs())
    } else {
        chat_id.to_string()
    }
}

/// The chat a workspace folder belongs to: the inverse of [`chat_key`] on the folder's name
/// (`123` → 123, `g123` → -123); `None` for any other name.
pub fn chat_of_workspace(path: &std::path::Path) -> Option<i64> {
    let name = path.file_name()?.to_str()?;
    match name.strip_prefix('g') {
        Some(group) => group.parse::<i64>().ok().map(|id| -id),
        None => name.parse().ok(),
    }
}

/// A message handed to a feature (its command, or a text it takes): where it was written and by
/// whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    /// Its id in the chat (Bot API `message_id`).
    pub message_id: i64,
    /// Its chat.
    pub chat_id: i64,
    /// Its forum topic, if any.
    pub thread: Option<i32>,
    /// The sender's user id (`from.id`).
    pub from_id: i64,
    /// Whether the chat is a group or supergroup (not a private chat).
    pub group: bool,
}

impl Incoming {
    /// Whether it was written in a group (where a sign-in link must go privately).
    pub fn is_group(&self) -> bool {
        self.group
    }

    /// Where an answer to it goes: its chat and topic.
    pub fn target(&self) -> Target {
        Target {
            chat_id: self.chat_id,
            thread: self.thread,
        }
    }
}

/// A button that opens a URL (Bot API `InlineKeyboardButton` with `url`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlButton {
    /// Its label.
    pub text: String,
    /// What it opens.
    pub url: url::Url,
}

/// A button a feature handles when it is pressed (Bot API `InlineKeyboardButton` with
/// `callback_data`): the press comes back to the feature whose
/// [`press_prefix`](super::HostFeature::press_prefix) `data` starts with
/// ([`HostFeature::press`](super::HostFeature::press)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PressButton {
    /// Its label.
    pub text: String,
    /// What a press hands back: the feature's prefix, then its own payload; at most
    /// [`PRESS_DATA_LIMIT`] bytes (longer is refused by [`ChatPort::offer`]).
    pub data: String,
}

/// Bot API limit of `callback_data`, in bytes.
pub const PRESS_DATA_LIMIT: usize = 64;

/// Why the port could not do what a feature asked. Its `Display` is the sentence a feature
/// passes on (to a chat, a log line, a task's failure).
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    /// The host is shutting down (or not started): nothing more goes into its chats.
    #[error("the bot is shutting down")]
    ShuttingDown,
    /// The chat's session could not be opened (its file or folder); the cause follows.
    #[error("cannot open the chat's session: {0}")]
    Session(String),
    /// The session refused the prompt (e.g. it is being disposed).
    #[error("{0}")]
    Prompt(String),
    /// The session's spend gate refused the run's model request before it was made (an
    /// allowance is spent, `docs/costs.md`); the gate's sentence.
    #[error("{0}")]
    Spent(String),
    /// The chat's service (Telegram) refused the message; its own words.
    #[error("{0}")]
    Refused(String),
}

/// Watches a session's events while a [`LinePrompt`] is in its line (synchronously, in order).
pub trait LineWatch: Send + Sync {
    /// One event of the chat's session.
    fn on_event(&self, event: &AgentSessionEvent);

    /// The prompt was in the transcript already (handed over before a restart) and its run goes
    /// on from it: the watch will not see its user message.
    fn resumed(&self) {}
}

/// A prompt a feature hands into a chat's line (e.g. a scheduled job's, an A2A result's).
pub struct LinePrompt {
    /// The chat (and topic) whose session takes it.
    pub to: Target,
    /// The prompt's text, a follow-up of whatever runs.
    pub text: String,
    /// What names it, unique per prompt (a job's slot, an A2A result's key): its answer's
    /// delivery is journaled under this, so after a crash nothing of it is shown twice.
    pub key: String,
    /// Whether a user message's text is this prompt, handed over before a restart.
    pub is_this: Box<dyn Fn(&str) -> bool + Send + Sync>,
    /// Follows the session's events while the prompt is in line.
    pub watch: Option<Arc<dyn LineWatch>>,
}

impl std::fmt::Debug for LinePrompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinePrompt")
            .field("to", &self.to)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// How a [`LinePrompt`] went.
#[derive(Debug)]
pub enum Delivered {
    /// The transcript already held its answer (a restart came between): what the chat had not
    /// seen of it was sent; the model was not asked again.
    Earlier,
    /// Its run ended (or was cut off): the transcript after it, and how many parts of the
    /// answer the chat's service did not take.
    Ran {
        /// The session's messages once it was idle again.
        messages: Vec<Message>,
        /// Parts of the answer (or notices) not delivered meanwhile.
        undelivered: u64,
    },
}

/// The A2A caller a session serves, as features see it: its name and whether its tools include
/// `bash`. A caller's privileges are exactly its tools (docs/security.md, "Trust model"): without
/// `bash` nothing its sessions hold in their workspace runs as code (skill hooks, the workspace's
/// MCP servers and extensions are not loaded), and its scheduled jobs run with its tools, its
/// watchers not at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerGrant {
    /// Its name (`[[a2a.server.callers]] name`).
    pub name: String,
    /// Whether its tools include `bash`.
    pub bash: bool,
}

/// What [`ChatPort::own_session`] makes: a session outside any chat's line (e.g. an A2A
/// caller's), made like a chat's.
pub struct OwnSession {
    /// Its working directory, created if missing.
    pub cwd: PathBuf,
    /// Its store scope: a folder under `<state_dir>/sessions/`.
    pub scope: String,
    /// The chat it acts for (its time zone, model and per-chat features); `None`: no chat.
    pub acts_for: Option<Target>,
    /// Model (`provider/id`) for a new session.
    pub model: Option<String>,
    /// Where its questions go.
    pub ui: Option<Arc<dyn UserInterface>>,
    /// Extensions after the features'.
    pub extra_extensions: Vec<ExtensionFactory>,
    /// The A2A caller it serves (`None`: the host's own, e.g. a chat's).
    pub caller: Option<CallerGrant>,
}

/// One line of a chat's "while I was down" report (docs/exactly-once.md): what happened to
/// something of the chat's while the bot was down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownLine {
    /// What it is about and what happened (e.g. `j<job>@<slot>:skipped`): a line whose key
    /// was reported before is not reported again.
    pub key: String,
    /// What the chat reads.
    pub text: String,
}

/// How a host feature reaches the host's chats (see the module docs).
#[async_trait]
pub trait ChatPort: Send + Sync + std::fmt::Debug {
    /// Sends `text` (plain, not Markdown) to `to` at once, with `buttons` in one row (none when
    /// empty). Errors: [`PortError::Refused`] with the service's words (e.g. a user who never
    /// opened a private chat with the bot).
    async fn send(&self, to: Target, text: &str, buttons: &[UrlButton]) -> Result<(), PortError>;

    /// Sends `text` (plain) to `to` at once with rows of [`PressButton`]s; returns the message's
    /// id (to [`edit`](Self::edit) it after a press). Errors: a button's data is longer than
    /// [`PRESS_DATA_LIMIT`], or [`PortError::Refused`] with the service's words.
    async fn offer(&self, to: Target, text: &str, rows: &[Vec<PressButton>]) -> Result<i64, PortError>;

    /// Replaces the text and buttons of message `message_id` of `to` (no rows: no buttons), e.g.
    /// a list after one of its entries was deleted. Errors as [`offer`](Self::offer).
    async fn edit(&self, to: Target, message_id: i64, text: &str, rows: &[Vec<PressButton>]) -> Result<(), PortError>;

    /// Sends `png` (a PNG image) to `to` at once as a photo with the plain `caption` (at most
    /// 1024 characters, Telegram's caption limit). Errors: [`PortError::Refused`] with the
    /// service's words; a host that cannot send photos refuses every one (the default).
    async fn send_photo(&self, to: Target, png: Vec<u8>, caption: &str) -> Result<(), PortError> {
        let _ = (to, png, caption);
        Err(PortError::Refused("this host cannot send photos".into()))
    }

    /// Deletes message `message_id` of `to` (e.g. one carrying a pasted sign-in code).
    async fn delete(&self, to: Target, message_id: i64) -> Result<(), PortError>;

    /// Tells `to` `text` in line with its answers (after what it is being shown), and waits until
    /// it was delivered. Errors: shutting down, or the service did not take it.
    async fn notice(&self, to: Target, text: String) -> Result<(), PortError>;

    /// Hands `prompt` to its chat's session as a follow-up (behind any run in progress) and
    /// waits for its run to end, exactly once across crashes: a prompt found in the transcript
    /// is not asked again (its answer is delivered from where delivery stopped, or its cut-off
    /// run goes on). Errors: shutting down, the session cannot be opened, the prompt was refused.
    async fn deliver(&self, prompt: LinePrompt) -> Result<Delivered, PortError>;

    /// Hands what start-up's catch-up did (every chat's lines, once per start) to the chats'
    /// "while I was down" reports, each sent once with what crash recovery found; returns once
    /// they hold the lines durably. Errors: no report is kept (the default) or it could not be
    /// written: the feature tells each chat itself.
    async fn while_down(&self, lines: Vec<(Target, DownLine)>) -> Result<(), PortError> {
        let _ = lines;
        Err(PortError::Refused("no \"while I was down\" report here".into()))
    }

    /// A session of the feature's own (see [`OwnSession`]): the host's factory, the workspace's
    /// extensions, every feature's for its place, then the spec's own. Resumes the scope's most
    /// recent session. Errors: shutting down, the folder or the session file cannot be made.
    async fn own_session(&self, spec: OwnSession) -> anyhow::Result<AgentSession>;
}

/// The answer to the prompt at `index` of a transcript, the rule crash recovery uses: the first
/// final assistant message after it (passing the other prompts taken in the same turn), as
/// `(its index, what to show)`; an error stop shows its error. `None` when the run was cut off
/// before one.
pub fn answer_after(messages: &[Message], index: usize) -> Option<(usize, String)> {
    let mut in_prompts = true;
    for (i, m) in messages.iter().enumerate().skip(index + 1) {
        match m {
            Message::User(_) if !in_prompts => return None,
            Message::User(_) | Message::Custom(_) => {}
            Message::Assistant(a) if a.tool_calls().next().is_none() => match a.stop_reason {
                StopReason::Stop | StopReason::Length => return Some((i, a.text())),
                StopReason::Error => {
                    let why = a.error_message.as_deref().unwrap_or("the model call failed");
                    return Some((i, format!("⚠️ {why}")));
                }
                StopReason::ToolUse | StopReason::Aborted => return None,
            },
            Message::Assistant(_)
            | Message::ToolResult(_)
            | Message::BashExecution(_)
            | Message::BranchSummary(_)
            | Message::CompactionSummary(_) => in_prompts = false,
        }
    }
    None
}

/// The answer to the prompt at `index` ([`answer_after`]) unless its run failed, as `(the
/// answer's timestamp in ms, what to show)`.
pub fn settled_answer(messages: &[Message], index: usize) -> Option<(i64, String)> {
    let (at, answer) = answer_after(messages, index)?;
    match &messages[at] {
        Message::Assistant(a) if a.stop_reason != StopReason::Error => Some((a.timestamp, answer)),
        Message::Assistant(_)
        | Message::User(_)
        | Message::ToolResult(_)
        | Message::Custom(_)
        | Message::BashExecution(_)
        | Message::BranchSummary(_)
        | Message::CompactionSummary(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_keys_never_start_with_a_dash() {
        assert_eq!(chat_key(12345), "12345");
        assert_eq!(chat_key(-4567), "g4567");
        assert_eq!(chat_key(-1001234567890), "g1001234567890");
    }

    #[test]
    fn workspace_folders_map_back_to_their_chats() {
        for id in [12345_i64, -4567, -1_001_234_567_890] {
            let key = chat_key(id);
            assert_eq!(chat_of_workspace(std::path::Path::new(&format!("/w/{key}"))), Some(id));
        }
        assert_eq!(chat_of_workspace(std::path::Path::new("/w/notes")), None);
    }
}
