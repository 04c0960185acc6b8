//! Google Calendar for Volcanic chats: one Google account per chat, connected with
//! `/calendar connect` (authorization code + PKCE), and the `calendar` tool in every chat session.
//!
//! - [`GoogleCalendarConnections`]: the process-wide service: sign-ins ([`connect`],
//!   [`finish_callback`], [`finish_paste`]), token refresh through `yup-oauth2`
//!   ([`access_token`]; `invalid_grant` marks the chat and tells it once), [`status`],
//!   [`disconnect`], and the per-chat [`extension_factory`].
//! - [`TokenStore`]: `<state_dir>/google/<chat key>.json`, mode 0600, atomic writes. Tokens are
//!   registered with the host's `SecretRedactor`, so no tool output shows them.
//! - The `calendar` tool ([`CalendarArgs`]): calls the Calendar API v3 through
//!   `google-calendar3`'s hub pointed at `[google] api_base_url`, with backoff on rate-limit
//!   and quota errors; creates use ids derived from the chat and the tool call ([`event_id`]).
//!
//! [`connect`]: GoogleCalendarConnections::connect
//! [`finish_callback`]: GoogleCalendarConnections::finish_callback
//! [`finish_paste`]: GoogleCalendarConnections::finish_paste
//! [`access_token`]: GoogleCalendarConnections::access_token
//! [`status`]: GoogleCalendarConnections::status
//! [`disconnect`]: GoogleCalendarConnections::disconnect
//! [`extension_factory`]: GoogleCalendarConnections::extension_factory

mod actions;
mod api;
mod config;
mod connections;
mod error;
mod event_id;
mod extension;
mod flow;
mod status;
mod store;
mod times;
mod tokens;
mod tool;
mod update;

pub use config::{
    CALLBACK_PATH, GOOGLE_API_BASE_URL, GOOGLE_AUTH_URL, GOOGLE_REVOKE_URL, GOOGLE_TOKEN_URL, GoogleConfig,
    LOOPBACK_REDIRECT,
};
pub use connections::{ConnectLink, Connected, GoogleCalendarConnections, Notifier, short_scope};
pub use error::{CalendarError, Result};
pub use event_id::{base32hex, event_id};
pub use extension::CalendarExtension;
pub use flow::{ChatRef, FLOW_TTL, Redirect, SCOPES, challenge, is_paste_back, parse_redirect, query_of};
pub use store::{Account, TokenStore};
pub use tool::{Action, CalendarArgs, CalendarTool};
