//! The error type of a provider call. A call never returns it: the provider turns every failure
//! into the stream's final `error` event, whose `errorMessage` is the error's `Display`. Only
//! building a provider returns it directly.

use std::time::Duration;

use crate::http::is_transient_status;

/// Result alias with [`ProviderError`] as the default error.
pub type Result<T, E = ProviderError> = std::result::Result<T, E>;

/// What went wrong talking to a streaming LLM API (Anthropic Messages, OpenAI Chat Completions
/// or a compatible server).
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The HTTP client could not be built (TLS set-up).
    #[error("could not build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),

    /// The API answered with an error status; `kind` is the error body's type or code as the
    /// wire API reads it (Anthropic: `rate_limit_error`, `authentication_error`, ...; OpenAI:
    /// `rate_limit_exceeded`, `context_length_exceeded`, `invalid_api_key`, ...), else the
    /// status's reason phrase.
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

    /// Nothing arrived for the idle timeout (response headers or the next SSE event); the
    /// timeout is shown in seconds.
    #[error("no data from the provider for {} s (idle timeout)", .0.as_secs_f64())]
    Idle(Duration),

    /// The stream closed cleanly without its terminal event, which is named here
    /// (`message_stop`, `[DONE]`).
    #[error("stream ended before {0}")]
    EndedEarly(&'static str),

    /// The stream carried an error event (Anthropic's `error` event, OpenAI's `{"error": ...}`
    /// chunk).
    #[error("{kind}: {message}")]
    Stream {
        /// The error's type or code (`overloaded_error`, `server_error`, ...).
        kind: String,
        /// The provider's own message.
        message: String,
        /// Whether the wire API counts this error as worth another attempt (overload, rate
        /// limits, server errors).
        transient: bool,
    },

    /// An event could not be decoded.
    #[error("malformed `{event}` event from the provider: {detail}")]
    Decode {
        /// The SSE event name.
        event: String,
        /// What was wrong.
        detail: String,
    },

    /// The model ended with a stop reason that is a failure (`refusal`, `content_filter`, an
    /// unknown one).
    #[error("the model stopped with {field} `{reason}`")]
    StopReason {
        /// The wire field that carried it (`stop_reason`, `finish_reason`).
        field: &'static str,
        /// Its value.
        reason: String,
    },

    /// `StreamOptions::cancel` fired.
    #[error("Request was aborted")]
    Aborted,
}

impl ProviderError {
    /// Whether another attempt may succeed (rate limits, overload, server errors, dropped
    /// connections; the server's `x-should-retry` verdict wins when given). The provider
    /// retries only while nothing of the answer was streamed yet.
    pub fn is_transient(&self) -> bool {
        match self {
            ProviderError::Http {
                status,
                message,
                should_retry,
                ..
            } => should_retry
                .unwrap_or_else(|| is_transient_status(*status) || message.to_ascii_lowercase().contains("overloaded")),
            ProviderError::Connect { .. } | ProviderError::Body(_) | ProviderError::EndedEarly(_) => true,
            ProviderError::Stream { transient, .. } => *transient,
            ProviderError::Client(_)
            | ProviderError::Idle(_)
            | ProviderError::Decode { .. }
            | ProviderError::StopReason { .. }
            | ProviderError::Aborted => false,
        }
    }

    /// The wait the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Http { retry_after, .. } => *retry_after,
            ProviderError::Client(_)
            | ProviderError::Connect { .. }
            | ProviderError::Body(_)
            | ProviderError::Idle(_)
            | ProviderError::EndedEarly(_)
            | ProviderError::Stream { .. }
            | ProviderError::Decode { .. }
            | ProviderError::StopReason { .. }
            | ProviderError::Aborted => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn http(status: u16, message: &str, should_retry: Option<bool>) -> ProviderError {
        ProviderError::Http {
            status,
            kind: "kind".into(),
            message: message.into(),
            retry_after: Some(Duration::from_secs(2)),
            should_retry,
        }
    }

    #[test]
    fn transient_statuses_overload_and_the_servers_verdict() {
        assert!(http(529, "x", None).is_transient());
        assert!(http(400, "Overloaded", None).is_transient());
        assert!(!http(401, "x", None).is_transient());
        assert!(!http(503, "x", Some(false)).is_transient());
        assert!(http(400, "x", Some(true)).is_transient());
        assert!(ProviderError::EndedEarly("[DONE]").is_transient());
        assert!(!ProviderError::Aborted.is_transient());
        let stream = |transient| ProviderError::Stream {
            kind: "k".into(),
            message: "m".into(),
            transient,
        };
        assert!(stream(true).is_transient());
        assert!(!stream(false).is_transient());
    }

    #[test]
    fn texts_name_the_wire_fields() {
        assert_eq!(
            ProviderError::EndedEarly("message_stop").to_string(),
            "stream ended before message_stop"
        );
        let stop = ProviderError::StopReason {
            field: "finish_reason",
            reason: "content_filter".into(),
        };
        assert_eq!(
            stop.to_string(),
            "the model stopped with finish_reason `content_filter`"
        );
        assert_eq!(
            ProviderError::Idle(Duration::from_millis(50)).to_string(),
            "no data from the provider for 0.05 s (idle timeout)"
        );
        assert_eq!(http(429, "slow", None).retry_after(), Some(Duration::from_secs(2)));
        assert_eq!(ProviderError::Aborted.retry_after(), None);
    }
}
