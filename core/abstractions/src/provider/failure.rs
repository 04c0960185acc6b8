//! [`ProviderFailure`]: what a model call's error message says went wrong, for a host that tells
//! its user what to do about it.

use super::is_context_overflow;

/// The kind of failure an assistant message with `StopReason::Error` reports in its
/// `error_message`. Providers never fail out of band (the message is the failure), so the kind is
/// read from that text, as [`is_context_overflow`] does: providers built on
/// `volcanic-provider-support` start an HTTP error with its status and the body's error type
/// (`401 authentication_error: invalid x-api-key`), and name a failing stop reason, a broken
/// connection or an idle timeout in fixed words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderFailure {
    /// The provider refused the credentials or the account: HTTP 401, 402 or 403 (a wrong or
    /// revoked key, billing, permissions).
    Unauthorized {
        /// The HTTP status.
        status: u16,
    },
    /// The provider did not accept the request as sent: another HTTP 4xx (a model the account
    /// cannot use, a request too large or malformed).
    Rejected {
        /// The HTTP status.
        status: u16,
    },
    /// The model declined to answer: a `refusal` or `content_filter` stop.
    Refused,
    /// Too many requests, overloaded or a server error (HTTP 429, 5xx), still so after the
    /// provider's retries.
    Unavailable,
    /// The context is longer than the model's window ([`is_context_overflow`]).
    ContextOverflow,
    /// The provider could not be reached or stopped answering (connection refused or reset,
    /// idle timeout, a stream that broke off).
    Unreachable,
    /// Anything else (the text says what).
    Other,
}

impl ProviderFailure {
    /// The kind of failure `error_message` reports (see the type's docs).
    pub fn of(error_message: &str) -> ProviderFailure {
        if is_context_overflow(error_message) {
            return ProviderFailure::ContextOverflow;
        }
        let m = error_message.to_ascii_lowercase();
        if m.starts_with("the model stopped with") && (m.contains("refusal") || m.contains("content_filter")) {
            return ProviderFailure::Refused;
        }
        if let Some(status) = leading_status(&m) {
            return match status {
                401..=403 => ProviderFailure::Unauthorized { status },
                429 | 500..=599 => ProviderFailure::Unavailable,
                400..=499 if m.contains("overloaded") => ProviderFailure::Unavailable,
                400..=499 => ProviderFailure::Rejected { status },
                _ => ProviderFailure::Other,
            };
        }
        let busy = ["overloaded", "rate_limit", "rate limit", "server_error", "api_error"];
        if busy.iter().any(|w| m.starts_with(w)) {
            return ProviderFailure::Unavailable;
        }
        let unreachable = [
            "request to ",
            "the response stream broke off",
            "no data from the provider",
            "stream ended before",
        ];
        if unreachable.iter().any(|w| m.starts_with(w)) {
            return ProviderFailure::Unreachable;
        }
        ProviderFailure::Other
    }
}

/// The HTTP status a message starts with (`"401 authentication_error: ..."`).
fn leading_status(m: &str) -> Option<u16> {
    let (first, rest) = m.split_at_checked(3)?;
    if !rest.starts_with(' ') {
        return None;
    }
    first.parse().ok().filter(|s| (100..=599).contains(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_the_provider_texts() {
        use ProviderFailure::*;
        let cases = [
            (
                "401 authentication_error: invalid x-api-key",
                Unauthorized { status: 401 },
            ),
            ("403 permission_error: not allowed", Unauthorized { status: 403 }),
            ("402 billing: payment required", Unauthorized { status: 402 }),
            ("404 not_found_error: model: claude-x", Rejected { status: 404 }),
            ("400 invalid_request_error: bad image", Rejected { status: 400 }),
            (
                "400 invalid_request_error: prompt is too long: 250000 tokens",
                ContextOverflow,
            ),
            (
                "429 rate_limit_error: slow down (gave up after 4 attempts)",
                Unavailable,
            ),
            ("529 overloaded_error: Overloaded", Unavailable),
            ("500 api_error: internal", Unavailable),
            ("overloaded_error: Overloaded", Unavailable),
            ("the model stopped with stop_reason `refusal`", Refused),
            ("the model stopped with finish_reason `content_filter`", Refused),
            ("the model stopped with finish_reason `weird`", Other),
            (
                "request to http://127.0.0.1:1/v1 failed: connection refused",
                Unreachable,
            ),
            ("no data from the provider for 120 s (idle timeout)", Unreachable),
            ("the response stream broke off: reset", Unreachable),
            ("stream ended before message_stop", Unreachable),
            (
                "no API key for provider `anthropic`: set the environment variable X",
                Other,
            ),
            ("12 monkeys", Other),
            ("", Other),
        ];
        for (text, want) in cases {
            assert_eq!(ProviderFailure::of(text), want, "{text:?}");
        }
    }
}
