//! [`OpenAiCompletionsProvider`]: one streamed `POST {base_url}/chat/completions` per call,
//! retried while nothing of the answer was streamed, ending in exactly one `done` or `error`
//! event.

use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::{
    Api, AssistantMessage, AssistantMessageEvent, Model, Provider, ProviderContext, ProviderStream,
    StopReason, StreamOptions,
};

use crate::error::{OpenAiError, Result};
use crate::http::{
    Emitter, Interrupted, ProviderConfig, cancellable, cause_chain, event_stream, now_ms,
    retry_after, should_retry, truncate, within,
};
use crate::mapper::Mapper;
use crate::stream::read_stream;
use crate::{request, wire};

/// Longest provider error text kept when the body is not a JSON error shape.
const MAX_ERROR_TEXT: usize = 1000;

/// OpenAI Chat Completions provider ([`Api::OpenAiCompletions`]), for OpenAI and compatible
/// servers (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter).
///
/// One instance holds one HTTP client (connections are reused) and may serve any number of
/// concurrent calls. Each call POSTs to `{model.base_url}/chat/completions` (the base URL
/// includes `/v1`) with `authorization: Bearer KEY` when [`StreamOptions::api_key`] is set
/// (local servers take none), `stream: true` and `stream_options.include_usage`.
///
/// Failures never leave the stream out of band: HTTP errors
/// (`"429 rate_limit_exceeded: ..."`), broken or silent streams, in-stream error chunks and
/// aborts all end the stream with one `error` event carrying the partial message,
/// `stopReason` `error` (or `aborted` when [`StreamOptions::cancel`] fired) and the provider's
/// message in `errorMessage`. Transient failures (429, 5xx, refused or reset connections, a
/// stream that breaks off) are retried with exponential backoff, honouring `retry-after-ms` /
/// `retry-after`, as long as no content block was streamed; see [`ProviderConfig`].
///
/// Malformed tool arguments: a tool call whose streamed `arguments` text is not valid JSON
/// gets `arguments` = that raw text as a JSON **string** (not an object). Validating it
/// against the tool's object schema then fails with a clear "not an object" error that the
/// agent reports to the model, and the raw text goes back to the server unchanged in the
/// transcript. Empty arguments become `{}`.
#[derive(Debug, Clone)]
pub struct OpenAiCompletionsProvider {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: reqwest::Client,
    config: ProviderConfig,
}

impl OpenAiCompletionsProvider {
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
            .map_err(OpenAiError::Client)?;
        Ok(Self {
            inner: Arc::new(Inner { client, config }),
        })
    }

    /// The settings in use.
    pub fn config(&self) -> &ProviderConfig {
        &self.inner.config
    }
}

impl Provider for OpenAiCompletionsProvider {
    fn api(&self) -> Api {
        Api::OpenAiCompletions
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
    error: OpenAiError,
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
            let reason = if matches!(error, OpenAiError::Aborted) {
                StopReason::Aborted
            } else {
                StopReason::Error
            };
            let mut text = error.to_string();
            if attempts > 1 && reason == StopReason::Error {
                text.push_str(&format!(" (gave up after {attempts} attempts)"));
            }
            tracing::debug!(model = %model.key(), error = %text, "openai-completions call failed");
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
    let fail = |partial: AssistantMessage, error: OpenAiError, attempts: u32| Failure {
        partial,
        error,
        attempts,
    };
    let empty = || Mapper::new(model, timestamp).into_partial();
    if cancel.is_cancelled() {
        return Err(fail(empty(), OpenAiError::Aborted, 0));
    }
    let mut body = request::body(model, context, options);
    if let Some(hook) = &options.on_payload {
        body = cancellable(cancel, hook(body))
            .await
            .ok_or_else(|| fail(empty(), OpenAiError::Aborted, 0))?;
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
                    OpenAiError::Aborted,
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
            "openai-completions call failed; retrying",
        );
        if cancellable(cancel, tokio::time::sleep(delay))
            .await
            .is_none()
        {
            return Err(fail(
                mapper.into_partial(),
                OpenAiError::Aborted,
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
        Err(Interrupted::Cancelled) => return Err(OpenAiError::Aborted),
        Err(Interrupted::Idle) => return Err(OpenAiError::Idle(idle)),
        Ok(Err(error)) => {
            return Err(OpenAiError::Connect {
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
) -> OpenAiError {
    let status = response.status();
    let retry_after = retry_after(response.headers(), SystemTime::now());
    let should_retry = should_retry(response.headers());
    let text = match within(cancel, idle, response.text()).await {
        Err(Interrupted::Cancelled) => return OpenAiError::Aborted,
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
    OpenAiError::Http {
        status: status.as_u16(),
        kind: kind.unwrap_or_else(|| reason.to_owned()),
        message,
        retry_after,
        should_retry,
    }
}

/// `{base}/chat/completions`.
fn endpoint(base_url: &str) -> String {
    format!("{}/chat/completions", base_url.trim_end_matches('/'))
}

/// Request headers: JSON in, SSE out, the bearer key when there is one, then the call's extra
/// headers (which override). Header values that are not valid HTTP are skipped with a warning.
fn headers(options: &StreamOptions) -> HeaderMap {
    let mut map = HeaderMap::new();
    map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    map.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    if let Some(key) = options.api_key.as_deref().filter(|key| !key.is_empty()) {
        match HeaderValue::from_str(&format!("Bearer {key}")) {
            Ok(mut value) => {
                value.set_sensitive(true);
                map.insert(AUTHORIZATION, value);
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
    fn endpoint_appends_chat_completions() {
        assert_eq!(
            endpoint("https://api.openai.com/v1"),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            endpoint("http://127.0.0.1:11434/v1/"),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
    }

    #[test]
    fn headers_carry_the_bearer_key_only_when_set() {
        let options = StreamOptions {
            api_key: Some("sk-1".into()),
            headers: vec![
                ("openai-organization".into(), "org".into()),
                ("bad header".into(), "v".into()),
            ],
            ..StreamOptions::default()
        };
        let map = headers(&options);
        assert_eq!(
            map.get("authorization").map(|v| v.as_bytes()),
            Some(&b"Bearer sk-1"[..])
        );
        assert_eq!(
            map.get("openai-organization").map(|v| v.as_bytes()),
            Some(&b"org"[..])
        );
        assert_eq!(map.len(), 4);
        let local = StreamOptions {
            api_key: Some(String::new()),
            ..StreamOptions::default()
        };
        assert!(headers(&local).get("authorization").is_none());
        assert!(
            headers(&StreamOptions::default())
                .get("authorization")
                .is_none()
        );
    }

    #[test]
    fn provider_is_send_sync_static() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<OpenAiCompletionsProvider>();
        assert_send_sync::<crate::OpenAiError>();
    }
}
