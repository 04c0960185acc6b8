//! The crate's error type: what went wrong and what the user can do about it.

/// Why a calendar operation failed. The `Display` text is meant for the chat or the model.
#[derive(Debug, thiserror::Error)]
pub enum CalendarError {
    /// `[google] client_id` / `client_secret` (or `GOOGLE_CLIENT_ID` / `GOOGLE_CLIENT_SECRET`)
    /// are not set.
    #[error(
        "Google Calendar is not configured: set `[google] client_id` and `client_secret` in the config \
         (or the environment variables GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET) and restart"
    )]
    NotConfigured,
    /// The chat has no Google account connected.
    #[error("this chat has no Google Calendar connected: run /calendar connect")]
    NotConnected,
    /// Google refused the refresh token (`invalid_grant`: revoked, expired, or an app in
    /// "Testing" status after 7 days); the chat must connect again.
    #[error("the Google connection of this chat has expired or was revoked: run /calendar connect again")]
    NeedsReconnect,
    /// The Calendar API refused the access token (401): it was revoked before it expired. The
    /// tool drops the token and tries once more, which refreshes (or finds `invalid_grant`).
    #[error("Google refused the access token; run /calendar connect again if this persists")]
    Unauthorized,
    /// A sign-in `state` that is unknown or was already used.
    #[error("this sign-in link is unknown or was already used: run /calendar connect again")]
    UnknownState,
    /// A sign-in older than 10 minutes.
    #[error("this sign-in link has expired (links last 10 minutes): run /calendar connect again")]
    Expired,
    /// A pasted address from a sign-in started in another chat (or by another user).
    #[error(
        "this address belongs to a sign-in started in another chat or by another user; it was not \
         used (that sign-in is cancelled): run /calendar connect in the chat you want to connect"
    )]
    WrongChat,
    /// The pasted or received address is not a complete OAuth redirect.
    #[error("this is not the address Google sent you back to: {0}")]
    BadRedirect(String),
    /// Google (or the browser) reported an error instead of a code (e.g. `access_denied`).
    #[error("Google did not grant access: {0}")]
    Denied(String),
    /// The token endpoint refused the code exchange.
    #[error("Google refused the sign-in: {0}; run /calendar connect again")]
    Exchange(String),
    /// The Calendar API lacks a scope for this call (`insufficientPermissions`).
    #[error(
        "Google refused: this connection lacks the permission `{scope}` needed to {what}; run \
         /calendar connect again and tick that permission"
    )]
    MissingScope {
        /// The scope needed (short form, e.g. `calendar.events`).
        scope: &'static str,
        /// What the call was doing.
        what: &'static str,
    },
    /// The Calendar API answered an error.
    #[error("Google Calendar API error {status} ({reason}): {message}")]
    Api {
        /// HTTP status.
        status: u16,
        /// Google's `errors[0].reason`, e.g. `notFound`, `rateLimitExceeded`.
        reason: String,
        /// Google's message.
        message: String,
    },
    /// Google could not give the free/busy times of a calendar (its `calendars[id].errors`,
    /// e.g. `notFound`): reported rather than shown as free.
    #[error(
        "Google could not read the free/busy times of calendar `{calendar}` ({reasons}); check the id \
         with list_calendars"
    )]
    FreeBusy {
        /// The calendar asked for.
        calendar: String,
        /// Google's reasons, e.g. `notFound`.
        reasons: String,
    },
    /// The network or Google failed in a way a later retry may fix.
    #[error("could not reach Google: {0}; try again later")]
    Transient(String),
    /// The tool's arguments are wrong.
    #[error("{0}")]
    Invalid(String),
    /// The token store failed.
    #[error("token store: {0}")]
    Store(#[from] std::io::Error),
}

/// Shorthand.
pub type Result<T, E = CalendarError> = std::result::Result<T, E>;
