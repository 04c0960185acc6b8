//! What comes in: updates from Telegram (long polling or the webhook), made durable in the
//! journal before they are acknowledged, read into messages, set aside when unreadable, routed
//! (access, addressing, commands) and merged (albums, long pastes) into one prompt.

pub(crate) mod journal;
pub(crate) mod merge;
pub(crate) mod poller;
pub(crate) mod router;
pub(crate) mod shortage;
pub(crate) mod unreadable;
pub(crate) mod update;
pub(crate) mod webhook;

/// The update kinds the bot asks Telegram for (`getUpdates` and `setWebhook` `allowed_updates`):
/// one list, so a kind added for a feature reaches both modes.
/// `stopped_message_generation`: Telegram's Stop button on a draft (Bot API 10.3; not sent
/// unless listed).
pub(crate) const ALLOWED_UPDATES: &[&str] = &["message", "callback_query", "stopped_message_generation"];
