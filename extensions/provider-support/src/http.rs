//! Transport helpers: retry timing, `retry-after` parsing, cancellation, the idle timeout, the
//! event channel behind a provider stream, error texts.

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
pub(crate) use volcanic_abstractions::errors::error_chain;

use futures::channel::mpsc;
use futures::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::{AssistantMessageEvent, ProviderStream};

/// HTTP settings of a provider: retry timing for transient failures, how long a stream may
/// stay silent, the connect timeout. Tests shorten the delays (e.g. `base_delay` of 10 ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderConfig {
    /// Delay before the first retry; doubles with each further retry.
    pub base_delay: Duration,
    /// Longest wait between attempts. A server asking (`retry-after`) for a longer wait is not
    /// retried here: the error goes to the caller, whose own retry policy decides.
    pub max_delay: Duration,
    /// Retries after the first attempt when `StreamOptions::max_retries` is 0.
    pub max_retries: u32,
    /// Longest silence allowed while waiting for response headers or between two SSE events.
    pub idle_timeout: Duration,
    /// Timeout for establishing a TCP/TLS connection.
    pub connect_timeout: Duration,
}

impl Default for ProviderConfig {
    /// 1 s base delay, 30 s cap, 3 retries, 120 s idle timeout, 30 s connect timeout.
    fn default() -> Self {
        Self {
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            max_retries: 3,
            idle_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(30),
        }
    }
}

impl ProviderConfig {
    /// The wait before retry number `retry` (0 for the first retry), or `None` when the
    /// server's `retry_after` exceeds [`max_delay`](Self::max_delay) and the retry is left to
    /// the caller.
    pub(crate) fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Option<Duration> {
        match retry_after {
            Some(wait) if wait > self.max_delay => None,
            Some(wait) => Some(wait),
            None => {
                let factor = 2u32.saturating_pow(retry);
                Some(self.base_delay.saturating_mul(factor).min(self.max_delay))
            }
        }
    }

    /// Retries allowed for one call: the call's own setting when non-zero, else the config's.
    pub(crate) fn retries_for(&self, from_options: u32) -> u32 {
        if from_options > 0 {
            from_options
        } else {
            self.max_retries
        }
    }
}

/// The wait a server asks for: `retry-after-ms` (milliseconds), else `retry-after` in seconds
/// or as an HTTP date (relative to `now`). Unparsable or negative values are ignored.
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|value| value.to_str().ok()).map(str::trim);
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = text("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let at = UNIX_EPOCH.checked_add(Duration::from_secs(u64::try_from(date.timestamp()).ok()?))?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Anthropic's and OpenAI's `x-should-retry` header: the server's own verdict, when given.
pub(crate) fn should_retry(headers: &HeaderMap) -> Option<bool> {
    match headers.get("x-should-retry")?.to_str().ok()?.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// Whether an HTTP status is worth another attempt: timeouts, rate limits, server errors and
/// Anthropic's 529 "overloaded".
pub(crate) fn is_transient_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 500 | 502 | 503 | 504 | 529)
}

/// Runs `future` unless `cancel` fires first (`None` then). Cancellation wins ties.
pub(crate) async fn cancellable<F: Future>(cancel: &CancellationToken, future: F) -> Option<F::Output> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => None,
        output = future => Some(output),
    }
}

/// How a wait for the server ended without a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interrupted {
    /// `options.cancel` fired.
    Cancelled,
    /// Nothing arrived within the idle timeout.
    Idle,
}

/// Waits for `future` at most `idle`, giving up early when `cancel` fires.
pub(crate) async fn within<F: Future>(
    cancel: &CancellationToken,
    idle: Duration,
    future: F,
) -> Result<F::Output, Interrupted> {
    match cancellable(cancel, tokio::time::timeout(idle, future)).await {
        None => Err(Interrupted::Cancelled),
        Some(Err(_elapsed)) => Err(Interrupted::Idle),
        Some(Ok(output)) => Ok(output),
    }
}

/// Sends events to the consumer of a provider stream (see [`channel`]).
#[derive(Debug, Clone)]
pub(crate) struct Emitter(mpsc::UnboundedSender<AssistantMessageEvent>);

impl Emitter {
    /// Queues one event. A consumer that went away drops the stream, and with it the producer,
    /// so a failed send needs no handling.
    pub(crate) fn emit(&self, event: AssistantMessageEvent) {
        let _ = self.0.unbounded_send(event);
    }
}

/// A connected emitter and receiver (the receiver is what a provider stream yields; it ends
/// once every emitter is dropped).
pub(crate) fn channel() -> (Emitter, mpsc::UnboundedReceiver<AssistantMessageEvent>) {
    let (sender, receiver) = mpsc::unbounded();
    (Emitter(sender), receiver)
}

/// A provider stream driven by `producer`, which runs as the consumer polls (no task is
/// spawned, so dropping the stream cancels the HTTP request) and ends when the producer
/// returns and every queued event was delivered.
pub(crate) fn event_stream<F, Fut>(producer: F) -> ProviderStream
where
    F: FnOnce(Emitter) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (emitter, receiver) = channel();
    let driver =
        futures::stream::once(producer(emitter)).filter_map(|()| futures::future::ready(None::<AssistantMessageEvent>));
    futures::stream::select(receiver, driver).boxed()
}

/// Reads SSE events from a byte stream (`eventsource-stream`; chunk boundaries, including
/// ones inside a UTF-8 sequence, do not matter).
pub(crate) fn sse_events<S, B, E>(
    bytes: S,
) -> impl Stream<Item = Result<eventsource_stream::Event, eventsource_stream::EventStreamError<E>>>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    eventsource_stream::Eventsource::eventsource(bytes)
}

/// The causes of an error (joined as by [`error_chain`]), or its own text when it has none:
/// for a failed request, reqwest's own text only repeats the URL.
pub(crate) fn cause_chain(error: &dyn std::error::Error) -> String {
    match error.source() {
        Some(source) => error_chain(source),
        None => error.to_string(),
    }
}

/// Unix epoch milliseconds now.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// `text` cut to at most `max` chars (Unicode scalar values, cut on a char boundary), with `…`
/// appended when cut (so the result has at most `max + 1` chars).
pub fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn retry_after_reads_ms_seconds_and_http_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        type Case = (&'static [(&'static str, &'static str)], Option<Duration>);
        let cases: &[Case] = &[
            (&[], None),
            (&[("retry-after", "2")], Some(Duration::from_secs(2))),
            (&[("retry-after", "1.5")], Some(Duration::from_millis(1500))),
            (&[("retry-after-ms", "250")], Some(Duration::from_millis(250))),
            (
                &[("retry-after-ms", "250"), ("retry-after", "9")],
                Some(Duration::from_millis(250)),
            ),
            (
                &[("retry-after", "Sun, 06 Nov 1994 08:49:47 GMT")],
                Some(Duration::from_secs(10)),
            ),
            (
                &[("retry-after", "Sun, 06 Nov 1994 08:49:00 GMT")],
                Some(Duration::ZERO),
            ),
            (&[("retry-after", "soon")], None),
            (&[("retry-after", "-3")], None),
        ];
        for (pairs, expected) in cases {
            assert_eq!(retry_after(&headers(pairs), now), *expected, "{pairs:?}");
        }
    }

    #[test]
    fn delay_doubles_caps_and_defers_long_server_waits() {
        let config = ProviderConfig {
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            ..ProviderConfig::default()
        };
        let secs = |s| Some(Duration::from_secs(s));
        assert_eq!(config.delay(0, None), secs(1));
        assert_eq!(config.delay(1, None), secs(2));
        assert_eq!(config.delay(2, None), secs(4));
        assert_eq!(config.delay(10, None), secs(30));
        assert_eq!(config.delay(40, None), secs(30));
        assert_eq!(config.delay(0, secs(7)), secs(7));
        assert_eq!(config.delay(0, secs(31)), None);
        assert_eq!(config.retries_for(0), 3);
        assert_eq!(config.retries_for(5), 5);
    }

    #[test]
    fn should_retry_header_is_read() {
        assert_eq!(should_retry(&headers(&[("x-should-retry", "true")])), Some(true));
        assert_eq!(should_retry(&headers(&[("x-should-retry", "false")])), Some(false));
        assert_eq!(should_retry(&headers(&[])), None);
    }

    #[test]
    fn error_chains_join_causes_and_skip_repeats() {
        #[derive(Debug, thiserror::Error)]
        #[error("error sending request for url (http://x)")]
        struct Outer(#[source] std::io::Error);
        let error = Outer(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "connection refused",
        ));
        assert_eq!(
            error_chain(&error),
            "error sending request for url (http://x): connection refused"
        );
        assert_eq!(cause_chain(&error), "connection refused");
        let plain = std::io::Error::other("plain");
        assert_eq!(cause_chain(&plain), "plain");
    }

    #[test]
    fn truncate_cuts_on_char_boundaries() {
        assert_eq!(truncate("héllo", 2), "hé…");
        assert_eq!(truncate("hi", 5), "hi");
    }

    #[tokio::test]
    async fn within_reports_idle_and_cancel() {
        let cancel = CancellationToken::new();
        let idle = within(&cancel, Duration::from_millis(10), futures::future::pending::<()>());
        assert_eq!(idle.await, Err(Interrupted::Idle));
        cancel.cancel();
        let cancelled = within(&cancel, Duration::from_secs(10), futures::future::pending::<()>());
        assert_eq!(cancelled.await, Err(Interrupted::Cancelled));
        let fresh = CancellationToken::new();
        let ready = within(&fresh, Duration::from_secs(1), async { 5 });
        assert_eq!(ready.await, Ok(5));
    }
}
