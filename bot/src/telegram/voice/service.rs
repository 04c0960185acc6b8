//! What both audio services share: how an answer's status becomes an [`AudioError`], and which
//! failures are tried again (a rate limit, waiting its `retry-after` up to [`MAX_RETRY_AFTER`];
//! a server error (5xx) or a failed connection, after [`BACKOFF`] doubled each time), at most
//! [`RETRIES`] more times. A refused key (401, 403), a refused request (413, 400, 415), a
//! timeout and an unreadable answer are not.

use std::future::Future;
use std::time::Duration;

/// Further attempts after a failure worth trying again.
pub const RETRIES: u32 = 2;
/// A 429 asking to wait longer than this is reported rather than waited out (the chat's line
/// waits meanwhile).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);
/// First wait after a 5xx or a failed connection; doubled each time.
pub const BACKOFF: Duration = Duration::from_millis(500);

/// Why a request to an audio service (transcription or speech) failed. `Display` is the reason
/// the model or the chat gets, naming the service.
#[derive(Debug, thiserror::Error)]
pub enum AudioError {
    /// 401 or 403: the key is missing, wrong or lacks access.
    #[error("{service} refused the key (HTTP {status})")]
    Unauthorized {
        /// The service's host.
        service: String,
        /// 401 or 403.
        status: u16,
    },
    /// 413: the service takes smaller requests.
    #[error("{service} refused the file as too large (HTTP 413)")]
    TooLarge {
        /// The service's host.
        service: String,
    },
    /// 429, still after the retries, or asking for a longer wait than [`MAX_RETRY_AFTER`].
    #[error("{service} is rate-limiting the bot (HTTP 429{})", retry_after.map(|d| format!(", retry after {} s", d.as_secs())).unwrap_or_default())]
    RateLimited {
        /// The service's host.
        service: String,
        /// Its `retry-after` (or `retry-after-ms`).
        retry_after: Option<Duration>,
    },
    /// Any other status (5xx after the retries, 400, 404, 415, …), with the start of its body.
    #[error("{service} answered HTTP {status}: {body}")]
    Status {
        /// The service's host.
        service: String,
        /// HTTP status.
        status: u16,
        /// The start of the body (what the service said).
        body: String,
    },
    /// No answer within `timeout_secs`.
    #[error("{service} did not answer within {secs} s")]
    Timeout {
        /// The service's host.
        service: String,
        /// `[voice] timeout_secs`.
        secs: u64,
    },
    /// No connection, or it broke.
    #[error("{service} could not be reached ({detail})")]
    Unreachable {
        /// The service's host.
        service: String,
        /// reqwest's message.
        detail: String,
    },
    /// A 2xx whose body is not what was asked for (no `{"text": …}`, not OGG/Opus audio).
    #[error("{service} answered without {detail}")]
    BadAnswer {
        /// The service's host.
        service: String,
        /// What was missing or wrong.
        detail: String,
    },
    /// A local file (the saved note, the spoken answer) could not be read or written.
    #[error("a local file could not be used ({0})")]
    File(std::io::Error),
}

impl AudioError {
    /// How long to wait before trying again after attempt `attempt` (0-based), or `None` when
    /// trying again would not help.
    pub fn retry_in(&self, attempt: u32) -> Option<Duration> {
        match self {
            AudioError::RateLimited { retry_after, .. } => {
                let wait = retry_after.unwrap_or(BACKOFF * 2u32.pow(attempt));
                (wait <= MAX_RETRY_AFTER).then_some(wait)
            }
            AudioError::Status { status, .. } if *status >= 500 => Some(BACKOFF * 2u32.pow(attempt)),
            AudioError::Unreachable { .. } => Some(BACKOFF * 2u32.pow(attempt)),
            AudioError::Status { .. }
            | AudioError::Unauthorized { .. }
            | AudioError::TooLarge { .. }
            | AudioError::Timeout { .. }
            | AudioError::BadAnswer { .. }
            | AudioError::File(_) => None,
        }
    }
}

/// One audio service as its clients see it: its host (what messages name) and timeout.
#[derive(Debug, Clone)]
pub struct Service {
    /// The host of its base URL (`api.openai.com`, `127.0.0.1:8000`).
    pub name: String,
    /// `[voice] timeout_secs`: one request, whole.
    pub timeout: Duration,
}

impl Service {
    /// The service at `base_url`, requests limited to `timeout`.
    pub fn new(base_url: &str, timeout: Duration) -> Self {
        Service {
            name: service_name(base_url),
            timeout,
        }
    }

    /// Runs `attempt` until it succeeds, fails in a way trying again would not help, or
    /// [`RETRIES`] more attempts failed; logs each retry as `what`.
    pub async fn retrying<T, F, Fut>(&self, what: &str, mut attempt: F) -> Result<T, AudioError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, AudioError>>,
    {
        let mut n = 0;
        loop {
            match attempt().await {
                Err(e) if n < RETRIES => match e.retry_in(n) {
                    Some(wait) => {
                        tracing::info!(service = %self.name, "{what} failed ({e}); trying again in {wait:?}");
                        tokio::time::sleep(wait).await;
                        n += 1;
                    }
                    None => return Err(e),
                },
                done => return done,
            }
        }
    }

    /// The error for a non-2xx `status` with `body` (its start kept) and `retry_after`.
    pub fn refusal(&self, status: u16, retry_after: Option<Duration>, body: &str) -> AudioError {
        let service = self.name.clone();
        match status {
            401 | 403 => AudioError::Unauthorized { service, status },
            413 => AudioError::TooLarge { service },
            429 => AudioError::RateLimited { service, retry_after },
            _ => AudioError::Status {
                service,
                status,
                body: body.chars().take(200).collect(),
            },
        }
    }

    /// A request that failed on its way: [`AudioError::Timeout`] or [`AudioError::Unreachable`].
    pub fn failed(&self, e: &reqwest::Error) -> AudioError {
        if e.is_timeout() {
            AudioError::Timeout {
                service: self.name.clone(),
                secs: self.timeout.as_secs(),
            }
        } else {
            self.unreachable(e)
        }
    }

    /// [`AudioError::Unreachable`] with `e`'s message.
    pub fn unreachable(&self, e: &dyn std::error::Error) -> AudioError {
        AudioError::Unreachable {
            service: self.name.clone(),
            detail: e.to_string(),
        }
    }

    /// [`AudioError::BadAnswer`]: the answer lacked `detail`.
    pub fn bad_answer(&self, detail: String) -> AudioError {
        AudioError::BadAnswer {
            service: self.name.clone(),
            detail,
        }
    }
}

/// The host of a base URL (`api.openai.com`), or the URL when it has none.
pub fn service_name(base_url: &str) -> String {
    url::Url::parse(base_url)
        .ok()
        .and_then(|u| {
            u.host_str()
                .map(|h| u.port().map_or_else(|| h.to_owned(), |p| format!("{h}:{p}")))
        })
        .unwrap_or_else(|| base_url.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn service() -> String {
        "api.example".into()
    }

    #[test]
    fn what_is_tried_again_and_after_how_long() {
        let s = |status| AudioError::Status {
            service: service(),
            status,
            body: String::new(),
        };
        let limited = |retry_after| AudioError::RateLimited {
            service: service(),
            retry_after,
        };
        assert_eq!(s(503).retry_in(0), Some(BACKOFF));
        assert_eq!(s(502).retry_in(1), Some(BACKOFF * 2));
        assert_eq!(s(400).retry_in(0), None);
        assert_eq!(
            limited(Some(Duration::from_secs(3))).retry_in(0),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            limited(Some(Duration::from_secs(3600))).retry_in(0),
            None,
            "too long a wait is reported"
        );
        assert_eq!(limited(None).retry_in(1), Some(BACKOFF * 2));
        let key = AudioError::Unauthorized {
            service: service(),
            status: 401,
        };
        assert_eq!(key.retry_in(0), None);
        let slow = AudioError::Timeout {
            service: service(),
            secs: 120,
        };
        assert_eq!(slow.retry_in(0), None);
    }

    #[test]
    fn statuses_become_errors_and_services_are_named_by_host() {
        let s = Service::new("http://127.0.0.1:8000/v1", Duration::from_secs(5));
        assert_eq!(s.name, "127.0.0.1:8000");
        assert_eq!(service_name("https://api.openai.com/v1"), "api.openai.com");
        assert!(matches!(
            s.refusal(401, None, ""),
            AudioError::Unauthorized { status: 401, .. }
        ));
        assert!(matches!(s.refusal(413, None, ""), AudioError::TooLarge { .. }));
        assert_eq!(
            s.refusal(500, None, &"x".repeat(500)).to_string(),
            format!("127.0.0.1:8000 answered HTTP 500: {}", "x".repeat(200))
        );
    }
}
