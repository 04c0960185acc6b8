//! The crate's error type. A provider call never returns it: [`AnthropicProvider::stream`]
//! turns every failure into the stream's final `error` event whose `errorMessage` is the
//! error's `Display`. Only [`AnthropicProvider::new`] returns it directly.
//!
//! [`AnthropicProvider::stream`]: crate::AnthropicProvider
//! [`AnthropicProvider::new`]: crate::AnthropicProvider::new

use std::time::Duration;

use crate::http::is_transient_status;

/// Result alias of this crate.
pub type Result<T, E = AnthropicError> = std::result::Result<T, E>;

/// What went wrong talking to an Anthropic Messages API.
#[derive(Debug, thiserror::Error)]
pub enum AnthropicError {
    /// The HTTP client could not be built (TLS set-up).
    #[error("could not build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),

    /// The API answered with an error status; `kind` is the body's `error.type`
    /// (`rate_limit_error`, `authentication_error`, ...) or the status's reason phrase.
    #[error("{status} {kind}: {message}")]
    Http {
        /// HTTP status.
        status: u16,
        /// Error type from the body.
        kind: String,
        /// The provider's own message.
        message: String,
        /// The wait the server asked for (`retry-after-ms` / `retry-after`).
        retry_after: Option<Duration>,
        /// The server's `x-should-retry` verdict, when given.
        should_retry: Option<bool>,
    },

    /// The request did not reach the server or its response could not be read
    /// (connection refused or reset, DNS, TLS).
    #[error("request to {url} failed: {detail}")]
    Connect {
        /// The endpoint.
        url: String,
        /// What the transport reported.
        detail: String,
    },

    /// The response stream broke off while being read.
    #[error("the response stream broke off: {0}")]
    Body(String),

    /// Nothing arrived for the idle timeout (response headers or the next SSE event).
    #[error("no data from the provider for {} s (idle timeout)", .0.as_secs_f64())]
    Idle(Duration),

    /// The stream closed cleanly without its terminal event.
    #[error("stream ended before message_stop")]
    EndedEarly,

    /// The stream carried an `error` event (`overloaded_error`, `api_error`, ...).
    #[error("{kind}: {message}")]
    Stream {
        /// The event's `error.type`.
        kind: String,
        /// The provider's own message.
        message: String,
    },

    /// An event could not be decoded.
    #[error("malformed `{event}` event from the provider: {detail}")]
    Decode {
        /// The SSE event name.
        event: String,
        /// What was wrong.
        detail: String,
    },

    /// The model ended with a stop reason that is a failure (`refusal`, an unknown one).
    #[error("the model stopped with stop_reason `{0}`")]
    StopReason(String),

    /// `StreamOptions::cancel` fired.
    #[error("Request was aborted")]
    Aborted,
}

impl AnthropicError {
    /// Whether another attempt may succeed (rate limits, overload, server errors, dropped
    /// connections). The provider retries only while nothing of the answer was streamed yet.
    pub fn is_transient(&self) -> bool {
        match self {
            AnthropicError::Http {
                status,
                message,
                should_retry,
                ..
            } => should_retry.unwrap_or_else(|| {
                is_transient_status(*status) || message.to_ascii_lowercase().contains("overloaded")
            }),
            AnthropicError::Connect { .. }
            | AnthropicError::Body(_)
            | AnthropicError::EndedEarly => true,
            AnthropicError::Stream { kind, message } => {
                matches!(
                    kind.as_str(),
                    "overloaded_error" | "api_error" | "rate_limit_error"
                ) || message.to_ascii_lowercase().contains("overloaded")
            }
            AnthropicError::Client(_)
            | AnthropicError::Idle(_)
            | AnthropicError::Decode { .. }
            | AnthropicError::StopReason(_)
            | AnthropicError::Aborted => false,
        }
    }

    /// The wait the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            AnthropicError::Http { retry_after, .. } => *retry_after,
            AnthropicError::Client(_)
            | AnthropicError::Connect { .. }
            | AnthropicError::Body(_)
            | AnthropicError::Idle(_)
            | AnthropicError::EndedEarly
            | AnthropicError::Stream { .. }
            | AnthropicError::Decode { .. }
            | AnthropicError::StopReason(_)
            | AnthropicError::Aborted => None,
        }
    }
}
