//! Calendar API calls through google-calendar3's `CalendarHub`, pointed at `[google]
//! api_base_url` (its `base_url`/`root_url`), with the chat's access token as a fixed token.
//! Rate-limit and quota errors (429, 403 `rateLimitExceeded`, `userRateLimitExceeded`,
//! `quotaExceeded`) and 5xx are retried with exponential backoff (Google Calendar API,
//! "Handle API errors": "Implement exponential backoff"), three retries at most.

use std::future::Future;
use std::time::Duration;

use google_calendar3::CalendarHub;
use google_calendar3::common::Error as HubError;

use crate::error::CalendarError;
use crate::tokens::Connector;

/// The hub type used here.
pub(crate) type Hub = CalendarHub<Connector>;

/// Retries after the first attempt.
const RETRIES: u32 = 3;

/// A hub for one call with `token`.
pub(crate) fn hub(connector: &Connector, api_base_url: &str, token: String) -> Hub {
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build::<_, google_calendar3::common::Body>(connector.clone());
    let mut hub = CalendarHub::new(client, token);
    let base = if api_base_url.ends_with('/') {
        api_base_url.to_owned()
    } else {
        format!("{api_base_url}/")
    };
    let root = base.trim_end_matches("calendar/v3/").to_owned();
    hub.base_url(base);
    hub.root_url(root);
    hub
}

/// A failed call, classified.
#[derive(Debug)]
pub(crate) struct ApiFailure {
    pub(crate) status: u16,
    pub(crate) reason: String,
    pub(crate) message: String,
}

impl ApiFailure {
    fn retryable(&self) -> bool {
        self.status == 429
            || self.status >= 500
            || (self.status == 403
                && matches!(
                    self.reason.as_str(),
                    "rateLimitExceeded" | "userRateLimitExceeded" | "quotaExceeded"
                ))
    }
}

/// Classifies a google-calendar3 error.
pub(crate) fn classify(e: &HubError) -> Result<ApiFailure, CalendarError> {
    match e {
        HubError::BadRequest(v) => Ok(ApiFailure {
            status: v["error"]["code"]
                .as_u64()
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or(400),
            reason: v["error"]["errors"][0]["reason"]
                .as_str()
                .unwrap_or("unknown")
                .to_owned(),
            message: bounded(v["error"]["message"].as_str().unwrap_or_default()),
        }),
        HubError::Failure(r) => Ok(ApiFailure {
            status: r.status().as_u16(),
            reason: "unknown".into(),
            message: r.status().canonical_reason().unwrap_or_default().to_owned(),
        }),
        HubError::HttpError(e) => Err(CalendarError::Transient(bounded(&e.to_string()))),
        HubError::Io(e) => Err(CalendarError::Transient(bounded(&e.to_string()))),
        // A `JsonDecodeError` shows the whole body it could not read: bounded.
        other => Err(CalendarError::Transient(bounded(&other.to_string()))),
    }
}

/// The longest error text taken from an answer.
const MAX_ERROR_CHARS: usize = 300;

/// `text` cut at [`MAX_ERROR_CHARS`] characters (an ellipsis marks the cut).
pub(crate) fn bounded(text: &str) -> String {
    if text.chars().count() <= MAX_ERROR_CHARS {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(MAX_ERROR_CHARS).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_whole_body_in_an_error_is_cut() {
        let body = "x".repeat(10_000);
        let e = google_calendar3::common::Error::JsonDecodeError(
            body.clone(),
            serde_json::from_str::<serde_json::Value>("{")
                .err()
                .unwrap_or_else(|| panic!("parsed")),
        );
        let text = super::classify(&e).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(text.chars().count() < 400 && text.contains('…'), "{}", text.len());
        assert!(!text.contains(&body));
    }
}

/// What a call was doing and the scope it needs, for `insufficientPermissions`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Needs {
    pub(crate) scope: &'static str,
    pub(crate) what: &'static str,
}

/// The backoff's first delay and the time one attempt may take.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    pub(crate) backoff: Duration,
    pub(crate) timeout: Duration,
}

/// Runs `call` with backoff; maps the final failure to a [`CalendarError`]. A 409 comes back as
/// `Err(CalendarError::Api { status: 409, .. })` for the caller to decide. An attempt that takes
/// longer than the timeout fails at once (not retried: it may have taken effect).
pub(crate) async fn with_backoff<T, F, Fut>(timing: Timing, needs: Needs, mut call: F) -> Result<T, CalendarError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, HubError>>,
{
    let mut delay = timing.backoff;
    let mut attempt = 0;
    loop {
        let answer = tokio::time::timeout(timing.timeout, call()).await.map_err(|_| {
            CalendarError::Transient(format!(
                "Google Calendar did not answer within {} s",
                timing.timeout.as_secs_f32()
            ))
        })?;
        let failure = match answer {
            Ok(v) => return Ok(v),
            Err(e) => classify(&e)?,
        };
        if failure.retryable() && attempt < RETRIES {
            tracing::info!(status = failure.status, reason = %failure.reason, ?delay, "Google Calendar API: backing off");
            tokio::time::sleep(delay).await;
            delay *= 2;
            attempt += 1;
            continue;
        }
        return Err(match (failure.status, failure.reason.as_str()) {
            (403, "insufficientPermissions") => CalendarError::MissingScope {
                scope: needs.scope,
                what: needs.what,
            },
            (401, _) => CalendarError::Unauthorized,
            _ => CalendarError::Api {
                status: failure.status,
                reason: failure.reason,
                message: failure.message,
            },
        });
    }
}
