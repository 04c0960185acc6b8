//! What a host offers for talking to the user mid-run, and for delivering into the chat.

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

/// Interactive UI of a host (Telegram buttons, terminal prompts). Every method may be cancelled;
/// `None` means dismissed, timed out or cancelled.
///
/// A question the host could not show at all (Telegram refused the message) is not an answer:
/// the `try_` forms return it as an [`AskError`], which a caller reports as such ("could not ask
/// the user: ..."), never as the user's refusal. Their defaults call the plain forms, for hosts
/// whose questions cannot fail to be shown.
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

    /// [`select`](Self::select), telling a question that could not be shown (`Err`) from no
    /// answer (`Ok(None)`).
    async fn try_select(
        &self,
        title: &str,
        options: &[String],
        cancel: CancellationToken,
    ) -> Result<Option<String>, AskError> {
        Ok(self.select(title, options, cancel).await)
    }

    /// [`confirm`](Self::confirm), telling a question that could not be shown (`Err`) from no
    /// answer (`Ok(None)`).
    async fn try_confirm(
        &self,
        title: &str,
        message: &str,
        cancel: CancellationToken,
    ) -> Result<Option<bool>, AskError> {
        Ok(self.confirm(title, message, cancel).await)
    }

    /// [`input`](Self::input), telling a question that could not be shown (`Err`) from no
    /// answer (`Ok(None)`).
    async fn try_input(
        &self,
        title: &str,
        placeholder: Option<&str>,
        cancel: CancellationToken,
    ) -> Result<Option<String>, AskError> {
        Ok(self.input(title, placeholder, cancel).await)
    }
}

/// A question the host could not put to the user; the text says why (e.g. what Telegram
/// answered). Displayed as `could not ask the user: <why>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("could not ask the user: {0}")]
pub struct AskError(pub String);

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
    /// Sends the open `file` (opened by the caller within the session's file boundary, so what
    /// is sent is what was checked, whatever happens to its path meanwhile), shown in the chat
    /// as `name`, with an optional caption; `as_photo` asks for an inline photo.
    async fn send_file(
        &self,
        file: std::fs::File,
        name: &str,
        caption: Option<&str>,
        as_photo: bool,
    ) -> Result<(), ChannelError>;
}
