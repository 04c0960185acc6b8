//! [`AnthropicProvider`]: one streamed `POST {base_url}/v1/messages` per call, retried while
//! nothing of the answer was streamed, ending in exactly one `done` or `error` event.

use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::{
    Api, AssistantMessage, AssistantMessageEvent, Model, Provider, ProviderContext, ProviderStream,
    StopReason, StreamOptions,
};

use crate::error::{AnthropicError, Result};
use crate::http::{
    Emitter, Interrupted, ProviderConfig, cancellable, cause_chain, event_stream, now_ms,
    retry_after, should_retry, truncate, within,
};
use crate::mapper::Mapper;
use crate::stream::read_stream;
use crate::{request, wire};

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Longest provider error text kept when the body is not Anthropic's JSON error shape.
const MAX_ERROR_TEXT: usize = 1000;

/// Anthropic Messages API provider ([`Api::AnthropicMessages`]), for Anthropic itself and any
/// compatible server.
///
/// One instance holds one HTTP client (connections are reused) and may serve any number of
/// concurrent calls. Each call POSTs to `{model.base_url}/v1/messages` (a base URL already
/// ending in `/v1` gets `/messages`) with `x-api-key` (from [`StreamOptions::api_key`]),
/// `anthropic-version: 2023-06-01` and `stream: true`.
///
/// Failures never leave the stream out of band: HTTP errors (`"429 rate_limit_error: ..."`),
/// broken or silent streams, in-stream `error` events and aborts all end the stream with one
/// `error` event carrying the partial message, `stopReason` `error` (or `aborted` when
/// [`StreamOptions::cancel`] fired) and the provider's message in `errorMessage`. Transient
/// failures (429, 5xx, 529 / `overloaded_error`, refused or reset connections, a stream that
/// breaks off) are retried with exponential backoff, honouring `retry-after-ms` /
/// `retry-after`, as long as no content block was streamed; see [`ProviderConfig`].
///
/// A tool call whose streamed input is not valid JSON gets `arguments` = the raw text as a
/// JSON string (not an object), so the agent's schema check reports it to the model.
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: reqwest::Client,
    config: ProviderConfig,
}

impl AnthropicProvider {
    /// A provider with the default [`ProviderConfig`] (1 s base delay, 3 retries, 120 s idle
    /// timeout).
    ///
    /// TLS uses rustls; when no process-wide crypto provider is installed yet, ring's is
    /// installed (the binary installs it at start anyway).
    pub fn new() -> Result<Self> {
        Self::with_config(ProviderConfig::default())
    }

    /// A provider with the given retry, idle-timeout and connect-timeout settings.
    pub fn with_config(config: ProviderConfig) -> Result<Self> {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(AnthropicError::Client)?;
        Ok(Self {
            inner: Arc::new(Inner { client, config }),
        })
    }

    /// The settings in use.
    pub fn config(&self) -> &ProviderConfig {
        &self.inner.config
    }
}

impl Provider for AnthropicProvider {
    fn api(&self) -> Api {
        Api::AnthropicMessages
    }

    fn stream(
        &self,
        model: &Model,
        context: ProviderContext,
        options: StreamOptions,
    ) -> ProviderStream {
        let inner = Arc::clone(&self.inner);
        let model = model.clone();
        event_stream(move |emitter| run(inner, model, context, options, emitter))
    }
}

/// A call that ended without an answer.
struct Failure {
    /// The message as far as it got.
    partial: AssistantMessage,
    error: AnthropicError,
    /// Attempts made (more than one when transient failures were retried).
    attempts: u32,
}

/// Runs one call: `start`, the content events, then `done` or `error`.
async fn run(
    inner: Arc<Inner>,
    model: Model,
    context: ProviderContext,
    options: StreamOptions,
    emitter: Emitter,
) {
    let timestamp = now_ms();
    emitter.emit(AssistantMessageEvent::Start {
        partial: AssistantMessage::empty(model.api.as_str(), &model.provider, &model.id, timestamp),
    });
    let last = match call(&inner, &model, &context, &options, timestamp, &emitter).await {
        Ok(message) => AssistantMessageEvent::Done {
            reason: message.stop_reason,
            message,
        },
        Err(Failure {
            mut partial,
            error,
            attempts,
        }) => {
            let reason = if matches!(error, AnthropicError::Aborted) {
                StopReason::Aborted
            } else {
                StopReason::Error
            };
            let mut text = error.to_string();
            if attempts > 1 && reason == StopReason::Error {
                text.push_str(&format!(" (gave up after {attempts} attempts)"));
            }
            tracing::debug!(model = %model.key(), error = %text, "anthropic call failed");
            partial.stop_reason = reason;
            partial.error_message = Some(text);
            AssistantMessageEvent::Error {
                reason,
                error: partial,
            }
        }
    };
    emitter.emit(last);
}

/// Builds the body, then attempts the request until it succeeds, fails for good, or the
/// retries run out.
async fn call(
    inner: &Inner,
    model: &Model,
    context: &ProviderContext,
    options: &StreamOptions,
    timestamp: i64,
    emitter: &Emitter,
) -> std::result::Result<AssistantMessage, Failure> {
    let cancel = &options.cancel;
    let fail = |partial: AssistantMessage, error: AnthropicError, attempts: u32| Failure {
        partial,
        error,
        attempts,
    };
    let empty = || Mapper::new(model, timestamp).into_partial();
    if cancel.is_cancelled() {
        return Err(fail(empty(), AnthropicError::Aborted, 0));
    }
    let mut body = request::body(model, context, options);
    if let Some(hook) = &options.on_payload {
        body = cancellable(cancel, hook(body))
            .await
            .ok_or_else(|| fail(empty(), AnthropicError::Aborted, 0))?;
    }
    let body = Bytes::from(body.to_string());
    let url = endpoint(&model.base_url);
    let headers = headers(options);
    let retries = inner.config.retries_for(options.max_retries);
    let mut attempt = 0;
    loop {
        let mut mapper = Mapper::new(model, timestamp);
        let outcome =
            attempt_once(inner, &url, &headers, &body, &mut mapper, emitter, cancel).await;
        let error = match outcome {
            Ok(()) if cancel.is_cancelled() => {
                return Err(fail(
                    mapper.into_partial(),
                    AnthropicError::Aborted,
                    attempt + 1,
                ));
            }
            Ok(()) => {
                return match mapper.finish() {
                    (message, Ok(())) => Ok(message),
                    (partial, Err(error)) => Err(fail(partial, error, attempt + 1)),
                };
            }
            Err(error) => error,
        };
        let retryable = error.is_transient() && !mapper.has_content() && attempt < retries;
        let delay = retryable
            .then(|| inner.config.delay(attempt, error.retry_after()))
            .flatten();
        let Some(delay) = delay else {
            return Err(fail(mapper.into_partial(), error, attempt + 1));
        };
        tracing::warn!(
            model = %model.key(),
            attempt = attempt + 1,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            error = %error,
            "anthropic call failed; retrying",
        );
        if cancellable(cancel, tokio::time::sleep(delay))
            .await
            .is_none()
        {
            return Err(fail(
                mapper.into_partial(),
                AnthropicError::Aborted,
                attempt + 1,
            ));
        }
        attempt += 1;
    }
}

/// One HTTP exchange: send, check the status, read the stream.
async fn attempt_once(
    inner: &Inner,
    url: &str,
    headers: &HeaderMap,
    body: &Bytes,
    mapper: &mut Mapper,
    emitter: &Emitter,
    cancel: &CancellationToken,
) -> Result<()> {
    let idle = inner.config.idle_timeout;
    let request = inner
        .client
        .post(url)
        .headers(headers.clone())
        .body(body.clone())
        .send();
    let response = match within(cancel, idle, request).await {
        Err(Interrupted::Cancelled) => return Err(AnthropicError::Aborted),
        Err(Interrupted::Idle) => return Err(AnthropicError::Idle(idle)),
        Ok(Err(error)) => {
            return Err(AnthropicError::Connect {
                url: url.to_owned(),
                detail: cause_chain(&error),
            });
        }
        Ok(Ok(response)) => response,
    };
    if !response.status().is_success() {
        return Err(http_error(response, cancel, idle).await);
    }
    read_stream(response.bytes_stream(), mapper, emitter, cancel, idle).await
}

/// The error for a non-success response, from its status, headers and body.
async fn http_error(
    response: reqwest::Response,
    cancel: &CancellationToken,
    idle: std::time::Duration,
) -> AnthropicError {
    let status = response.status();
    let retry_after = retry_after(response.headers(), SystemTime::now());
    let should_retry = should_retry(response.headers());
    let text = match within(cancel, idle, response.text()).await {
        Err(Interrupted::Cancelled) => return AnthropicError::Aborted,
        Err(Interrupted::Idle) | Ok(Err(_)) => String::new(),
        Ok(Ok(text)) => text,
    };
    let (kind, message) = wire::error_body(&text).unwrap_or((None, None));
    let reason = status.canonical_reason().unwrap_or("error");
    let message = message.unwrap_or_else(|| {
        let text = text.trim();
        if text.is_empty() {
            "(empty response body)".to_owned()
        } else {
            truncate(text, MAX_ERROR_TEXT)
        }
    });
    AnthropicError::Http {
        status: status.as_u16(),
        kind: kind.unwrap_or_else(|| reason.to_owned()),
        message,
        retry_after,
        should_retry,
    }
}

/// `{base}/v1/messages`, or `{base}/messages` when the base already ends in `/v1`.
fn endpoint(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    }
}

/// Request headers: JSON in, SSE out, version, key, then the call's extra headers (which
/// override). Header values that are not valid HTTP are skipped with a warning.
fn headers(options: &StreamOptions) -> HeaderMap {
    let mut map = HeaderMap::new();
    map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    map.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    map.insert(
        HeaderName::from_static("anthropic-version"),
        HeaderValue::from_static(ANTHROPIC_VERSION),
    );
    if let Some(key) = options.api_key.as_deref().filter(|key| !key.is_empty()) {
        match HeaderValue::from_str(key) {
            Ok(mut value) => {
                value.set_sensitive(true);
                map.insert(HeaderName::from_static("x-api-key"), value);
            }
            Err(_) => tracing::warn!("the API key is not a valid header value; not sent"),
        }
    }
    for (name, value) in &options.headers {
        match (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            (Ok(name), Ok(value)) => {
                map.insert(name, value);
            }
            (Err(_), _) | (_, Err(_)) => {
                tracing::warn!(header = %name, "extra header is not valid HTTP; not sent");
            }
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn endpoint_appends_the_messages_path_once() {
        assert_eq!(
            endpoint("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            endpoint("http://127.0.0.1:9/"),
            "http://127.0.0.1:9/v1/messages"
        );
        assert_eq!(endpoint("http://proxy/v1"), "http://proxy/v1/messages");
    }

    #[test]
    fn headers_carry_key_version_and_extras() {
        let options = StreamOptions {
            api_key: Some("sk-ant-1".into()),
            headers: vec![
                ("anthropic-beta".into(), "x".into()),
                ("bad header".into(), "v".into()),
            ],
            ..StreamOptions::default()
        };
        let map = headers(&options);
        assert_eq!(
            map.get("x-api-key").map(|v| v.as_bytes()),
            Some(&b"sk-ant-1"[..])
        );
        assert_eq!(
            map.get("anthropic-version").map(|v| v.as_bytes()),
            Some(&b"2023-06-01"[..])
        );
        assert_eq!(
            map.get("anthropic-beta").map(|v| v.as_bytes()),
            Some(&b"x"[..])
        );
        assert_eq!(map.len(), 5);
        let keyless = headers(&StreamOptions::default());
        assert!(keyless.get("x-api-key").is_none());
    }

    #[test]
    fn provider_is_send_sync_static() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<AnthropicProvider>();
        assert_send_sync::<crate::AnthropicError>();
    }
}
