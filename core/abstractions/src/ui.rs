//! What a host offers for talking to the user mid-run, and for delivering into the chat.

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

/// Interactive UI of a host (Telegram buttons, terminal prompts). Every method may be cancelled;
/// `None` means dismissed, timed out or cancelled.
#[async_trait]
pub trait UserInterface: Send + Sync {
    /// Lets the user pick one option; returns the option text.
    async fn select(&self, title: &str, options: &[String], cancel: CancellationToken) -> Option<String>;
    /// Asks yes/no.
    async fn confirm(&self, title: &str, message: &str, cancel: CancellationToken) -> Option<bool>;
    /// Asks for free text (the user's next message on Telegram).
    async fn input(&self, title: &str, placeholder: Option<&str>, cancel: CancellationToken) -> Option<String>;
    /// Shows a notice.
    async fn notify(&self, message: &str, level: NotifyLevel);
    /// Shows a short status (a chat action on Telegram); `None` clears it.
    async fn status(&self, key: &str, text: Option<&str>);
}

/// Severity of a notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NotifyLevel {
    /// Information.
    #[default]
    Info,
    /// Warning.
    Warning,
    /// Error.
    Error,
}

/// Error delivering into a chat.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ChannelError(pub String);

/// Delivers texts and files into the conversation's chat (the `send` tool uses it).
#[async_trait]
pub trait ChatChannel: Send + Sync {
    /// Sends text (Markdown, rendered by the host).
    async fn send_text(&self, text: &str) -> Result<(), ChannelError>;
    /// Sends a file from disk, with an optional caption; `as_photo` asks for an inline photo.
    async fn send_file(
        &self,
        path: &std::path::Path,
        caption: Option<&str>,
        as_photo: bool,
    ) -> Result<(), ChannelError>;
}
