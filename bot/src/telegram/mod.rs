//! The Telegram host: one agent session per chat (per forum topic in forums), long polling with
//! persist-before-acknowledge, deny-by-default access, per-chat settings, commands, rendered and
//! chunked output, and graceful shutdown.
//!
//! Three rooms, by direction:
//! - [`inbound`]: updates in (polling or the webhook), the journal that makes them durable before
//!   they are acknowledged, parsing, unreadable updates, routing and merging;
//! - [`conversation`]: each chat's conversation with its agent (sessions, settings, access,
//!   commands, menus, crash recovery, the hand-off of a prompt to the session);
//! - [`outbound`]: the Bot API client and its flood control, answers and progress, rendering,
//!   buttons and the texts a chat is told.
//!
//! [`host`] starts and stops it all. The host features ([`crate::features`]) reach the chats
//! only through the chat port, implemented here by [`TelegramPort`].

mod chat_port;
mod conversation;
mod host;
mod inbound;
pub mod outbound;
mod voice;

pub(crate) use chat_port::TelegramPort;
pub(crate) use conversation::settings::stored_time_zone;
pub(crate) use host::{TelegramHost, private_files, run};
