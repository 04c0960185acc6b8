//! [`SseProvider`]: one streamed `POST` per call to a [`WireApi`], retried while nothing of the
//! answer was streamed, ending in exactly one `done` or `error` event; [`registration`] puts it
//! in the model registry with a catalogue.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::provider::ProviderRegistration;
use volcanic_abstractions::{
    Api, AssistantMessage, AssistantMessageEvent, Model, Provider, ProviderContext, ProviderStream, StopReason,
    StreamOptions,
};

use crate::error::{ProviderError, Result};
use crate::http::{
    Emitter, Interrupted, ProviderConfig, cancellable, cause_chain, event_stream, now_ms, retry_after, should_retry,
    truncate, within,
};
use crate::shortage::{Pauses, local_shortage};
use crate::stream::{EventMapper, read_stream};

/// Longest provider error text kept when the body is not the API's JSON error shape.
const MAX_ERROR_TEXT: usize = 1000;

/// What distinguishes one streaming wire API (Anthropic Messages, OpenAI Chat Completions,
/// OpenAI Responses) for an [`SseProvider`]: where to send a call, how to authenticate, the
/// request body, the error body and how to read the response events.
pub trait WireApi: Send + Sync + 'static {
    /// The API's name in log lines (`anthropic`, `openai-completions`).
    const NAME: &'static str;

    /// The API models name in their `api` field, served by `SseProvider<Self>`.
    const API: Api;

    /// Maps the SSE events of one response.
    type Mapper: EventMapper;

    /// The path a call is POSTed to, below the model's base URL (`/chat/completions`).
    const PATH: &'static str;

    /// The URL a call is POSTed to, from the model's base URL: by default the base URL
    /// (without a trailing `/`) and [`PATH`](Self::PATH).
    fn endpoint(base_url: &str) -> String {
        format!("{}{}", base_url.trim_end_matches('/'), Self::PATH)
    }

    /// The header carrying a (non-empty) API key, and its value: by default
    /// `authorization: Bearer KEY`; e.g. `x-api-key: KEY` for Anthropic.
    fn key_header(key: &str) -> (HeaderName, String) {
        (AUTHORIZATION, format!("Bearer {key}"))
    }

    /// Headers the API wants on every request besides content type, accept and the key (e.g.
    /// a version); none by default.
    fn fixed_headers(map: &mut HeaderMap) {
        let _ = map;
    }

    /// The request body of one streamed call, borrowing from what it is made of; serialized
    /// straight to bytes ([`body_bytes`]), or to a tree when a `before_provider_request` hook
    /// wants one ([`body_tree`]). A tree built for every request would deep-copy the transcript
    /// and every tool schema (a thousand chats asking at once kept megabytes of copies in the
    /// heap; a hundred long conversations spent a tenth of the CPU).
    type Body<'a>: RequestBody<'a>;

    /// The `(kind, message)` of an HTTP error body, when it has the API's error shape.
    fn error_body(text: &str) -> Option<(Option<String>, Option<String>)>;

    /// Request headers: JSON in, SSE out, [`fixed_headers`](Self::fixed_headers), the
    /// [`key_header`](Self::key_header) when a non-empty key is set, then the call's extra
    /// headers (which override). Header names and values that are not valid HTTP are skipped
    /// with a warning.
    fn headers(options: &StreamOptions) -> HeaderMap {
        let mut map = HeaderMap::new();
        map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        map.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        Self::fixed_headers(&mut map);
        if let Some(key) = options.api_key.as_deref().filter(|key| !key.is_empty()) {
            let (name, value) = Self::key_header(key);
            match HeaderValue::from_str(&value) {
                Ok(mut value) => {
                    value.set_sensitive(true);
                    map.insert(name, value);
                }
                Err(_) => tracing::warn!("the API key is not a valid header value; not sent"),
            }
        }
        for (name, value) in &options.headers {
            match (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value)) {
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
}

/// The request body of a wire API, built from what it borrows.
pub trait RequestBody<'a>: serde::Serialize {
    /// The body of one streamed call to `model` with `context`.
    fn new(model: &'a Model, context: &'a ProviderContext, options: &StreamOptions) -> Self;
}

/// A provider speaking the wire API `W` over streamed HTTP (server-sent events).
///
/// One instance holds one HTTP client (connections are reused) and may serve any number of
/// concurrent calls. Each call POSTs [`WireApi::Body`] to [`WireApi::endpoint`] with
/// [`WireApi::headers`] and yields pi's event sequence: `start`, the content events, then
/// exactly one `done` or `error`.
///
/// Failures never leave the stream out of band: HTTP errors, broken or silent streams,
/// in-stream errors and aborts all end the stream with one `error` event carrying the partial
/// message, `stopReason` `error` (or `aborted` when [`StreamOptions::cancel`] fired) and the
/// [`ProviderError`]'s text in `errorMessage` (with " (gave up after N attempts)" when retries
/// ran out). Transient failures ([`ProviderError::is_transient`]) are retried with exponential
/// backoff, honouring `retry-after-ms` / `retry-after`, as long as no content block was
/// streamed; see [`ProviderConfig`].
pub struct SseProvider<W> {
    inner: Arc<Inner>,
    wire: PhantomData<fn() -> W>,
}

#[derive(Debug)]
struct Inner {
    client: reqwest::Client,
    config: ProviderConfig,
}

impl<W> Clone for SseProvider<W> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            wire: PhantomData,
        }
    }
}

impl<W> std::fmt::Debug for SseProvider<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseProvider").field("inner", &self.inner).finish()
    }
}

impl<W: WireApi> SseProvider<W> {
    /// A provider with the default [`ProviderConfig`] (1 s base delay, 3 retries, 120 s idle
    /// timeout).
    ///
    /// TLS uses rustls; when no process-wide crypto provider is installed yet, ring's is
    /// installed (the binary installs it at start anyway).
    ///
    /// # Errors
    /// [`ProviderError::Client`] when the HTTP client cannot be built.
    pub fn new() -> Result<Self> {
        Self::with_config(ProviderConfig::default())
    }

    /// A provider with the given retry, idle-timeout and connect-timeout settings (TLS as for
    /// [`new`](Self::new)).
    ///
    /// # Errors
    /// [`ProviderError::Client`] when the HTTP client cannot be built.
    pub fn with_config(config: ProviderConfig) -> Result<Self> {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(ProviderError::Client)?;
        Ok(Self {
            inner: Arc::new(Inner { client, config }),
            wire: PhantomData,
        })
    }

    /// The settings in use.
    pub fn config(&self) -> &ProviderConfig {
        &self.inner.config
    }
}

impl<W: WireApi> Provider for SseProvider<W> {
    fn api(&self) -> Api {
        W::API
    }

    /// Starts one call. The request runs as the stream is polled; dropping the stream cancels it.
    fn stream(&self, model: &Model, context: ProviderContext, options: StreamOptions) -> ProviderStream {
        let inner = Arc::clone(&self.inner);
        let model = model.clone();
        event_stream(move |emitter| run::<W>(inner, model, context, options, emitter))
    }
}

/// The registration of provider `name` speaking `W` (with the default [`ProviderConfig`]) with
/// its catalogue `models`, its key read from the environment variable `api_key_env` (none for
/// an API whose servers take no key). A config section `[providers.NAME]` may override the
/// base URL and key.
///
/// # Errors
/// [`ProviderError::Client`] when the HTTP client cannot be built (TLS set-up).
pub fn registration<W: WireApi>(
    name: &str,
    models: Vec<Model>,
    api_key_env: Option<&str>,
) -> Result<ProviderRegistration> {
    Ok(ProviderRegistration {
        name: name.into(),
        provider: Arc::new(SseProvider::<W>::new()?),
        models,
        api_key: None,
        api_key_env: api_key_env.map(str::to_owned),
    })
}

/// A call that ended without an answer.
struct Failure {
    /// The message as far as it got.
    partial: AssistantMessage,
    error: ProviderError,
    /// Attempts made (more than one when transient failures were retried).
    attempts: u32,
}

/// Runs one call: `start`, the content events, then `done` or `error`.
async fn run<W: WireApi>(
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
    let last = match call::<W>(&inner, &model, &context, &options, timestamp, &emitter).await {
        Ok(message) => AssistantMessageEvent::Done {
            reason: message.stop_reason,
            message,
        },
        Err(Failure {
            mut partial,
            error,
            attempts,
        }) => {
            let reason = if matches!(error, ProviderError::Aborted) {
                StopReason::Aborted
            } else {
                StopReason::Error
            };
            let mut text = error.to_string();
            if attempts > 1 && reason == StopReason::Error {
                text.push_str(&format!(" (gave up after {attempts} attempts)"));
            }
            tracing::debug!(model = %model.key(), error = %text, "{} call failed", W::NAME);
            partial.stop_reason = reason;
            partial.error_message = Some(text);
            AssistantMessageEvent::Error { reason, error: partial }
        }
    };
    emitter.emit(last);
}

/// `W`'s request body as a JSON tree (what a `before_provider_request` hook gets).
pub fn body_tree<W: WireApi>(model: &Model, context: &ProviderContext, options: &StreamOptions) -> Value {
    serde_json::to_value(W::Body::new(model, context, options)).unwrap_or_default()
}

/// `W`'s request body serialized (what is sent when no hook wants the tree).
pub fn body_bytes<W: WireApi>(model: &Model, context: &ProviderContext, options: &StreamOptions) -> Vec<u8> {
    serde_json::to_vec(&W::Body::new(model, context, options)).unwrap_or_default()
}

/// Builds the body, then attempts the request until it succeeds, fails for good, or the
/// retries run out.
async fn call<W: WireApi>(
    inner: &Inner,
    model: &Model,
    context: &ProviderContext,
    options: &StreamOptions,
    timestamp: i64,
    emitter: &Emitter,
) -> std::result::Result<AssistantMessage, Failure> {
    let cancel = &options.cancel;
    let fail = |partial: AssistantMessage, error: ProviderError, attempts: u32| Failure {
        partial,
        error,
        attempts,
    };
    let empty = || W::Mapper::new(model, timestamp).into_partial();
    if cancel.is_cancelled() {
        return Err(fail(empty(), ProviderError::Aborted, 0));
    }
    let body = match &options.on_payload {
        Some(hook) => {
            let body = cancellable(cancel, hook(body_tree::<W>(model, context, options)))
                .await
                .ok_or_else(|| fail(empty(), ProviderError::Aborted, 0))?;
            Bytes::from(body.to_string())
        }
        None => Bytes::from(body_bytes::<W>(model, context, options)),
    };
    let url = W::endpoint(&model.base_url);
    let headers = W::headers(options);
    let retries = inner.config.retries_for(options.max_retries);
    let mut attempt = 0;
    loop {
        let mut mapper = W::Mapper::new(model, timestamp);
        let outcome = attempt_once::<W>(inner, &url, &headers, &body, &mut mapper, emitter, cancel).await;
        let error = match outcome {
            Ok(()) if cancel.is_cancelled() => {
                return Err(fail(mapper.into_partial(), ProviderError::Aborted, attempt + 1));
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
            "{} call failed; retrying",
            W::NAME,
        );
        if cancellable(cancel, tokio::time::sleep(delay)).await.is_none() {
            return Err(fail(mapper.into_partial(), ProviderError::Aborted, attempt + 1));
        }
        attempt += 1;
    }
}

/// One HTTP exchange: send, check the status, read the stream.
async fn attempt_once<W: WireApi>(
    inner: &Inner,
    url: &str,
    headers: &HeaderMap,
    body: &Bytes,
    mapper: &mut W::Mapper,
    emitter: &Emitter,
    cancel: &CancellationToken,
) -> Result<()> {
    let idle = inner.config.idle_timeout;
    let response = send(inner, url, headers, body, cancel).await?;
    if !response.status().is_success() {
        return Err(http_error::<W>(response, cancel, idle).await);
    }
    read_stream(response.bytes_stream(), mapper, emitter, cancel, idle).await
}

/// Sends the request and waits for the response's head. A shortage on this machine met while
/// connecting ([`local_shortage`]) is waited out, however long it lasts, without counting as an
/// attempt: the request never left, and the shortage says nothing about the provider.
async fn send(
    inner: &Inner,
    url: &str,
    headers: &HeaderMap,
    body: &Bytes,
    cancel: &CancellationToken,
) -> Result<reqwest::Response> {
    let idle = inner.config.idle_timeout;
    let mut pauses = Pauses::default();
    loop {
        let request = inner
            .client
            .post(url)
            .headers(headers.clone())
            .body(body.clone())
            .send();
        let error = match within(cancel, idle, request).await {
            Err(Interrupted::Cancelled) => return Err(ProviderError::Aborted),
            Err(Interrupted::Idle) => return Err(ProviderError::Idle(idle)),
            Ok(Ok(response)) => {
                if pauses.tries() > 0 {
                    tracing::info!(tries = pauses.tries(), "{url}: resources are back");
                }
                return Ok(response);
            }
            Ok(Err(error)) => error,
        };
        if !local_shortage(&error) {
            return Err(ProviderError::Connect {
                url: url.to_owned(),
                detail: cause_chain(&error),
            });
        }
        let pause = pauses.next_pause();
        if pauses.tries() == 1 {
            tracing::warn!(
                "{url}: this machine is short of descriptors or memory ({}); trying again until it is not",
                cause_chain(&error)
            );
        }
        if cancellable(cancel, tokio::time::sleep(pause)).await.is_none() {
            return Err(ProviderError::Aborted);
        }
    }
}

/// The error for a non-success response, from its status, headers and body.
async fn http_error<W: WireApi>(
    response: reqwest::Response,
    cancel: &CancellationToken,
    idle: Duration,
) -> ProviderError {
    let status = response.status();
    let retry_after = retry_after(response.headers(), SystemTime::now());
    let should_retry = should_retry(response.headers());
    let text = match within(cancel, idle, response.text()).await {
        Err(Interrupted::Cancelled) => return ProviderError::Aborted,
        Err(Interrupted::Idle) | Ok(Err(_)) => String::new(),
        Ok(Ok(text)) => text,
    };
    let (kind, message) = W::error_body(&text).unwrap_or((None, None));
    let reason = status.canonical_reason().unwrap_or("error");
    let message = message.unwrap_or_else(|| {
        let text = text.trim();
        if text.is_empty() {
            "(empty response body)".to_owned()
        } else {
            truncate(text, MAX_ERROR_TEXT)
        }
    });
    ProviderError::Http {
        status: status.as_u16(),
        kind: kind.unwrap_or_else(|| reason.to_owned()),
        message,
        retry_after,
        should_retry,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A wire API with a version header and a bearer key; only its headers are used.
    struct Versioned;

    impl WireApi for Versioned {
        const NAME: &'static str = "versioned";
        const API: Api = Api::OpenAiCompletions;
        type Mapper = Never;

        const PATH: &'static str = "/call";

        fn fixed_headers(map: &mut HeaderMap) {
            map.insert(HeaderName::from_static("api-version"), HeaderValue::from_static("1"));
        }

        type Body<'a> = Value;

        fn error_body(_: &str) -> Option<(Option<String>, Option<String>)> {
            None
        }
    }

    impl RequestBody<'_> for Value {
        fn new(_: &Model, _: &ProviderContext, _: &StreamOptions) -> Self {
            Value::Null
        }
    }

    /// A mapper that is never built.
    enum Never {}

    impl EventMapper for Never {
        const TERMINAL_EVENT: &'static str = "never";

        fn new(_: &Model, _: i64) -> Self {
            unreachable!("the header tests build no mapper")
        }

        fn message(&self) -> &AssistantMessage {
            match *self {}
        }

        fn is_finished(&self) -> bool {
            match *self {}
        }

        type Event = Never;

        fn decode(_: &eventsource_stream::Event) -> Result<Never> {
            unreachable!("the header tests decode nothing")
        }

        fn on_event(&mut self, _: Never, _: &mut Vec<AssistantMessageEvent>) -> Result<()> {
            match *self {}
        }

        fn finish(self) -> (AssistantMessage, Result<()>) {
            match self {}
        }

        fn into_partial(self) -> AssistantMessage {
            match self {}
        }
    }

    fn header<'a>(map: &'a HeaderMap, name: &str) -> Option<&'a [u8]> {
        map.get(name).map(HeaderValue::as_bytes)
    }

    #[test]
    fn headers_carry_json_sse_fixed_key_and_valid_extras() {
        let options = StreamOptions {
            api_key: Some("k-1".into()),
            headers: vec![
                ("x-extra".into(), "x".into()),
                ("api-version".into(), "2".into()),
                ("bad header".into(), "v".into()),
                ("x-bad-value".into(), "a\nb".into()),
            ],
            ..StreamOptions::default()
        };
        let map = Versioned::headers(&options);
        assert_eq!(header(&map, "content-type"), Some(&b"application/json"[..]));
        assert_eq!(header(&map, "accept"), Some(&b"text/event-stream"[..]));
        assert_eq!(header(&map, "authorization"), Some(&b"Bearer k-1"[..]));
        assert!(map.get("authorization").is_some_and(HeaderValue::is_sensitive));
        assert_eq!(header(&map, "x-extra"), Some(&b"x"[..]));
        assert_eq!(header(&map, "api-version"), Some(&b"2"[..]), "extras override");
        assert_eq!(map.len(), 5);
    }

    #[test]
    fn an_empty_or_invalid_key_is_not_sent() {
        for key in [None, Some(String::new()), Some("a\nb".to_owned())] {
            let options = StreamOptions {
                api_key: key,
                ..StreamOptions::default()
            };
            let map = Versioned::headers(&options);
            assert!(map.get("authorization").is_none());
            assert_eq!(map.len(), 3);
        }
    }

    #[test]
    fn provider_and_error_are_send_sync_static() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<SseProvider<Versioned>>();
        assert_send_sync::<ProviderError>();
    }
}
