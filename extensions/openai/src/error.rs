//! The crate's error type. A provider call never returns it: [`OpenAiCompletionsProvider::stream`]
//! turns every failure into the stream's final `error` event whose `errorMessage` is the
//! error's `Display`. Only [`OpenAiCompletionsProvider::new`] returns it directly.
//!
//! [`OpenAiCompletionsProvider::stream`]: crate::OpenAiCompletionsProvider
//! [`OpenAiCompletionsProvider::new`]: crate::OpenAiCompletionsProvider::new

use std::time::Duration;

use crate::http::is_transient_status;

/// Result alias of this crate.
pub type Result<T, E = OpenAiError> = std::result::Result<T, E>;

/// What went wrong talking to an OpenAI Chat Completions API (or a compatible server).
#[derive(Debug, thiserror::Error)]
pub enum OpenAiError {
    /// The HTTP client could not be built (TLS set-up).
    #[error("could not build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),

    /// The API answered with an error status; `kind` is the body's `error.code` when it is a
    /// string (`rate_limit_exceeded`, `context_length_exceeded`, `invalid_api_key`), else its
    /// `error.type`, else the status's reason phrase.
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
    #[error("stream ended before [DONE]")]
    EndedEarly,

    /// The stream carried an `{"error": ...}` chunk (`server_error`, ...).
    #[error("{kind}: {message}")]
    Stream {
        /// The chunk's `error.code` or `error.type`.
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

    /// The model ended with a finish reason that is a failure (`content_filter`).
    #[error("the model stopped with finish_reason `{0}`")]
    StopReason(String),

    /// `StreamOptions::cancel` fired.
    #[error("Request was aborted")]
    Aborted,
}

impl OpenAiError {
    /// Whether another attempt may succeed (rate limits, overload, server errors, dropped
    /// connections). The provider retries only while nothing of the answer was streamed yet.
    pub fn is_transient(&self) -> bool {
        match self {
            OpenAiError::Http {
                status,
                message,
                should_retry,
                ..
            } => should_retry.unwrap_or_else(|| {
                is_transient_status(*status) || message.to_ascii_lowercase().contains("overloaded")
            }),
            OpenAiError::Connect { .. } | OpenAiError::Body(_) | OpenAiError::EndedEarly => true,
            OpenAiError::Stream { kind, message } => {
                let message = message.to_ascii_lowercase();
                matches!(
                    kind.as_str(),
                    "server_error" | "api_error" | "rate_limit_exceeded" | "overloaded_error"
                ) || message.contains("overloaded")
                    || message.contains("rate limit")
            }
            OpenAiError::Client(_)
            | OpenAiError::Idle(_)
            | OpenAiError::Decode { .. }
            | OpenAiError::StopReason(_)
            | OpenAiError::Aborted => false,
        }
    }

    /// The wait the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            OpenAiError::Http { retry_after, .. } => *retry_after,
            OpenAiError::Client(_)
            | OpenAiError::Connect { .. }
            | OpenAiError::Body(_)
            | OpenAiError::Idle(_)
            | OpenAiError::EndedEarly
            | OpenAiError::Stream { .. }
            | OpenAiError::Decode { .. }
            | OpenAiError::StopReason(_)
            | OpenAiError::Aborted => None,
        }
    }
}
