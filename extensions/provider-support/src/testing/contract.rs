//! The contract every streamed HTTP provider keeps, whatever its wire API: transient failures
//! (5xx, 429 with `retry-after`, dropped streams and in-stream errors before any content, refused
//! connections) are retried, within limits; others (401, a wait beyond the cap, context
//! overflow, anything after content) end the stream with the server's own words; a silent
//! stream times out; cancelling ends promptly as `aborted`; and two conversations with
//! `@copilotkit/aimock` succeed.
//!
//! Each case is a function generic over the [`WireApi`] and takes the API's [`Dialect`]: how the
//! testkit's scripted model server speaks it and what the provider makes of its errors. A
//! provider crate runs them all with one line in its tests:
//!
//! ```ignore
//! volcanic_provider_support::provider_contract_tests!(volcanic_anthropic::Messages, support::DIALECT);
//! ```

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use volcanic_abstractions::provider::is_context_overflow;
use volcanic_abstractions::{AssistantMessageEvent, Message, Model, Provider, StopReason, StreamOptions, ToolCall};
use volcanic_testkit::model_server::{ModelServer, RecordedRequest, Turn};

use super::{ask, collect, done, failed, fast_config, finish, options_with_key, provider_with, result_for, server};
use crate::{ProviderConfig, SseProvider, WireApi};

/// What an error text must be.
#[derive(Debug, Clone, Copy)]
pub enum Expect {
    /// Exactly this.
    Is(&'static str),
    /// Starting with this.
    StartsWith(&'static str),
}

impl Expect {
    /// Panics unless `text` is as expected.
    pub fn check(self, text: &str) {
        match self {
            Expect::Is(expected) => assert_eq!(text, expected),
            Expect::StartsWith(start) => assert!(text.starts_with(start), "{text}"),
        }
    }
}

/// How one wire API looks through the scripted model server: its [`Format`], where its calls
/// go and how many events a scripted text reply sends before what.
#[derive(Debug, Clone, Copy)]
pub struct Dialect {
    /// The format the server answers the API in, and the provider's words for its errors.
    pub format: Format,
    /// The test model served at a base URL.
    pub model: fn(&str) -> Model,
    /// The path calls are POSTed to, below the root (`/v1/messages`).
    pub endpoint_path: &'static str,
    /// The error text of a stream that closed before its terminal event.
    pub ended_early: &'static str,
    /// Events a scripted text reply sends before its first content block.
    pub events_before_content: usize,
    /// Events up to and including the reply's first text delta.
    pub events_to_first_delta: usize,
    /// Events a few words into the reply (two text deltas at least).
    pub events_into_text: usize,
    /// An in-stream error's message, and the error text it becomes.
    pub stream_error: (&'static str, &'static str),
}

/// What the scripted model server's error answers in one wire format (Anthropic's, OpenAI's)
/// become in a provider's error texts, and where the format is served.
#[derive(Debug, Clone, Copy)]
pub struct Format {
    /// A model's base URL for a server at `root` (`http://127.0.0.1:PORT`): `root` itself for
    /// Anthropic, `{root}/v1` for OpenAI.
    pub base_url: fn(&str) -> String,
    /// The API key calls send.
    pub api_key: &'static str,
    /// Two failing statuses with their messages, both retried.
    pub server_errors: [(u16, &'static str); 2],
    /// The error kind of a 503.
    pub unavailable_kind: &'static str,
    /// The error kind of a 429.
    pub rate_limit_kind: &'static str,
    /// A 401's message, and the error text it becomes.
    pub unauthorized: (&'static str, &'static str),
    /// The error text of a call without a key.
    pub missing_key: Expect,
    /// The start of a context overflow's error text.
    pub context_overflow: &'static str,
}

/// Anthropic's format (the Messages API).
pub const ANTHROPIC: Format = Format {
    base_url: str::to_owned,
    api_key: "sk-ant-test",
    server_errors: [(500, "Internal server error"), (529, "Overloaded")],
    unavailable_kind: "api_error",
    rate_limit_kind: "rate_limit_error",
    unauthorized: ("invalid x-api-key", "401 authentication_error: invalid x-api-key"),
    missing_key: Expect::Is("401 authentication_error: x-api-key header is required"),
    context_overflow: "400 invalid_request_error: prompt is too long",
};

/// OpenAI's format (Chat Completions and Responses alike).
pub const OPENAI: Format = Format {
    base_url: openai_base_url,
    api_key: "sk-test",
    server_errors: [(500, "The server had an error"), (502, "Bad gateway")],
    unavailable_kind: "server_error",
    rate_limit_kind: "rate_limit_exceeded",
    unauthorized: (
        "Incorrect API key provided",
        "401 invalid_api_key: Incorrect API key provided",
    ),
    missing_key: Expect::StartsWith("401 invalid_request_error: You didn't provide an API key."),
    context_overflow: "400 context_length_exceeded: This model's maximum context length",
};

/// `{root}/v1`.
fn openai_base_url(root: &str) -> String {
    format!("{root}/v1")
}

/// What one case runs: the provider with [`fast_config`], the scripted server and its model.
struct Setup<W> {
    provider: SseProvider<W>,
    server: ModelServer,
    model: Model,
}

impl Dialect {
    /// Options with the format's key.
    pub fn options(&self) -> StreamOptions {
        options_with_key(self.format.api_key)
    }

    /// The test model for a server at `root`.
    fn model_at(&self, root: &str) -> Model {
        (self.model)(&(self.format.base_url)(root))
    }

    /// A provider with `config`, a started server, and the model pointed at it.
    async fn setup<W: WireApi>(&self, config: ProviderConfig) -> Setup<W> {
        let server = server().await;
        let model = self.model_at(&server.url());
        Setup {
            provider: provider_with(config),
            server,
            model,
        }
    }

    /// A setup with [`fast_config`].
    async fn fast<W: WireApi>(&self) -> Setup<W> {
        self.setup(fast_config()).await
    }
}

impl<W: WireApi> Setup<W> {
    /// The events of one call asking "hi" with `options`.
    async fn ask(&self, options: StreamOptions) -> Vec<AssistantMessageEvent> {
        collect(self.provider.stream(&self.model, ask("hi"), options)).await
    }
}

/// Two failing statuses, then a reply: retried until it comes.
pub async fn server_error_then_success_is_retried<W: WireApi>(d: &Dialect) {
    let s = d.fast::<W>().await;
    for (status, message) in d.format.server_errors {
        s.server.push(Turn::error(status, message));
    }
    s.server.push(Turn::reply("third time lucky"));
    let events = s.ask(d.options()).await;
    assert_eq!(done(&events).text(), "third time lucky");
    assert_eq!(s.server.requests().len(), 3);
}

/// A 429 is retried after the `retry-after` it names.
pub async fn rate_limit_waits_for_retry_after<W: WireApi>(d: &Dialect) {
    let s = d.fast::<W>().await;
    s.server.push(Turn::rate_limited(1));
    s.server.push(Turn::reply("after the wait"));
    let started = Instant::now();
    let events = s.ask(d.options()).await;
    let elapsed = started.elapsed();
    assert_eq!(done(&events).text(), "after the wait");
    assert_eq!(s.server.requests().len(), 2);
    // The base delay is 10 ms: a wait of a second or more is retry-after's doing.
    assert!(elapsed >= Duration::from_secs(1), "waited only {elapsed:?}");
}

/// A `retry-after` longer than the longest delay is not waited for.
pub async fn a_retry_after_beyond_the_cap_is_left_to_the_caller<W: WireApi>(d: &Dialect) {
    let s = d.fast::<W>().await;
    s.server.push(Turn::rate_limited(60));
    let events = s.ask(d.options()).await;
    let message = failed(&events, StopReason::Error);
    assert!(
        message.starts_with(&format!("429 {}: ", d.format.rate_limit_kind)),
        "{message}"
    );
    assert_eq!(s.server.requests().len(), 1);
}

/// When the retries run out, the last status and message are reported.
pub async fn retries_give_up_with_the_last_status_and_message<W: WireApi>(d: &Dialect) {
    let s = d.fast::<W>().await;
    for _ in 0..3 {
        s.server.push(Turn::error(503, "Service unavailable"));
    }
    let options = StreamOptions {
        max_retries: 2,
        ..d.options()
    };
    let events = s.ask(options).await;
    assert_eq!(
        failed(&events, StopReason::Error),
        format!(
            "503 {}: Service unavailable (gave up after 3 attempts)",
            d.format.unavailable_kind
        )
    );
    assert_eq!(s.server.requests().len(), 3);
}

/// A 401 is reported at once.
pub async fn unauthorized_is_not_retried<W: WireApi>(d: &Dialect) {
    let s = d.fast::<W>().await;
    let (sent, expected) = d.format.unauthorized;
    s.server.push(Turn::error(401, sent));
    s.server.push(Turn::reply("never"));
    let events = s.ask(d.options()).await;
    assert_eq!(failed(&events, StopReason::Error), expected);
    assert_eq!(s.server.requests().len(), 1);
}

/// A call without a key gets the server's own words for it.
pub async fn a_missing_key_gets_the_servers_own_message<W: WireApi>(d: &Dialect) {
    let s = d.fast::<W>().await;
    let options = StreamOptions {
        api_key: None,
        ..d.options()
    };
    let events = s.ask(options).await;
    d.format.missing_key.check(&failed(&events, StopReason::Error));
}

/// A connection dropped after content is an error keeping the partial text, not retried.
pub async fn a_dropped_stream_after_content_is_an_error_keeping_the_partial_text<W: WireApi>(d: &Dialect) {
    let s = d.fast::<W>().await;
    s.server
        .push(Turn::reply("one two three four five six").drop_after(d.events_into_text));
    s.server.push(Turn::reply("never"));
    let events = s.ask(d.options()).await;
    let message = failed(&events, StopReason::Error);
    assert!(message.starts_with("the response stream broke off"), "{message}");
    let (_, partial) = finish(&events);
    assert!(!partial.text().is_empty(), "partial text is kept");
    assert_eq!(s.server.requests().len(), 1, "content was streamed: no retry");
}

/// A stream closed cleanly before its terminal event is an error naming that event.
pub async fn a_stream_closed_before_its_terminal_event_is_an_error<W: WireApi>(d: &Dialect) {
    let s = d.fast::<W>().await;
    s.server.push(Turn::reply("cut short").end_after(d.events_into_text));
    let events = s.ask(d.options()).await;
    assert_eq!(failed(&events, StopReason::Error), d.ended_early);
}

/// A connection dropped before any content is retried.
pub async fn a_drop_before_any_content_is_retried<W: WireApi>(d: &Dialect) {
    let s = d.fast::<W>().await;
    s.server.push(Turn::reply("x").drop_after(d.events_before_content));
    s.server.push(Turn::reply("second attempt"));
    let events = s.ask(d.options()).await;
    assert_eq!(done(&events).text(), "second attempt");
    assert_eq!(s.server.requests().len(), 2);
}

/// An in-stream error before content is retried; after content it is reported.
pub async fn in_stream_error_before_content_is_retried_and_after_content_is_not<W: WireApi>(d: &Dialect) {
    let s = d.fast::<W>().await;
    let (sent, expected) = d.stream_error;
    s.server
        .push(Turn::reply("x").fail_after(d.events_before_content, sent));
    s.server.push(Turn::reply("recovered"));
    let events = s.ask(d.options()).await;
    assert_eq!(done(&events).text(), "recovered");

    s.server
        .push(Turn::reply("some text first").fail_after(d.events_into_text, sent));
    let events = s.ask(d.options()).await;
    assert_eq!(failed(&events, StopReason::Error), expected);
    assert_eq!(s.server.requests().len(), 3);
}

/// A stream silent for longer than the idle timeout is an error.
pub async fn silence_beyond_the_idle_timeout_is_an_error<W: WireApi>(d: &Dialect) {
    let config = ProviderConfig {
        idle_timeout: Duration::from_millis(300),
        ..fast_config()
    };
    let s = d.setup::<W>(config).await;
    s.server
        .push(Turn::reply("stalls").stall_after(d.events_to_first_delta));
    let events = s.ask(d.options()).await;
    assert_eq!(
        failed(&events, StopReason::Error),
        "no data from the provider for 0.3 s (idle timeout)"
    );
}

/// Cancelling mid-stream ends the stream at once as `aborted`.
pub async fn cancel_mid_stream_ends_promptly_as_aborted<W: WireApi>(d: &Dialect) {
    let config = ProviderConfig {
        idle_timeout: Duration::from_secs(30),
        ..fast_config()
    };
    let s = d.setup::<W>(config).await;
    s.server
        .push(Turn::reply("a long answer that stalls").stall_after(d.events_to_first_delta));
    let cancel = tokio_util::sync::CancellationToken::new();
    let options = StreamOptions {
        cancel: cancel.clone(),
        ..d.options()
    };
    let mut stream = s.provider.stream(&s.model, ask("hi"), options);
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        let first_delta = matches!(event, AssistantMessageEvent::TextDelta { .. });
        events.push(event);
        if first_delta {
            break;
        }
    }
    let cancelled_at = Instant::now();
    cancel.cancel();
    events.extend(collect(stream).await);
    assert!(cancelled_at.elapsed() < Duration::from_secs(1));
    assert_eq!(failed(&events, StopReason::Aborted), "Request was aborted");
}

/// Cancelling while waiting to retry ends the stream as `aborted`.
pub async fn cancel_during_a_retry_wait_ends_as_aborted<W: WireApi>(d: &Dialect) {
    let s = d.fast::<W>().await;
    s.server.push(Turn::rate_limited(3));
    let cancel = tokio_util::sync::CancellationToken::new();
    let options = StreamOptions {
        cancel: cancel.clone(),
        ..d.options()
    };
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let events = s.ask(options).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(failed(&events, StopReason::Aborted), "Request was aborted");
}

/// A prompt beyond the context window is reported in words the agent recognises, not retried.
pub async fn context_overflow_is_recognisable_and_not_retried<W: WireApi>(d: &Dialect) {
    let s = d.fast::<W>().await;
    s.server.set_context_window(Some(10));
    s.server.push(Turn::reply("never"));
    let events = collect(s.provider.stream(
        &s.model,
        ask("a prompt that is far longer than ten tokens of context window"),
        d.options(),
    ))
    .await;
    let message = failed(&events, StopReason::Error);
    assert!(message.starts_with(d.format.context_overflow), "{message}");
    assert!(is_context_overflow(&message), "{message}");
    assert_eq!(s.server.requests().len(), 1);
}

/// A refused connection is retried, then reported with the URL.
pub async fn a_refused_connection_is_retried_then_reported<W: WireApi>(d: &Dialect) {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let root = format!("http://127.0.0.1:{port}");
    let events = collect(provider_with::<W>(fast_config()).stream(
        &d.model_at(&root),
        ask("hi"),
        StreamOptions {
            max_retries: 1,
            ..d.options()
        },
    ))
    .await;
    let message = failed(&events, StopReason::Error);
    assert!(
        message.starts_with(&format!("request to {root}{} failed", d.endpoint_path)),
        "{message}"
    );
    assert!(message.ends_with("(gave up after 2 attempts)"), "{message}");
}

/// Not a contract case but its first half, for the crates whose APIs stream tool calls as
/// Anthropic and Chat Completions do: a reply with text and a tool call `call_id` whose
/// arguments (returned) arrive in several deltas and are joined, then the call's result sent
/// back and answered. Returns the second request, for the API's own checks of how the result
/// went back.
pub async fn tool_call_round_trip<W: WireApi>(d: &Dialect, call_id: &str) -> (RecordedRequest, Value) {
    let s = d.fast::<W>().await;
    let arguments = json!({"command": "printf 'naïve 🌋' | wc -c", "timeout": 30});
    s.server.push(
        Turn::new()
            .text("Running it.")
            .tool_call(call_id, "bash", arguments.clone()),
    );
    s.server.push(Turn::reply("It printed 12."));
    let events = collect(s.provider.stream(&s.model, ask("count"), d.options())).await;
    let message = done(&events);
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| {
            let AssistantMessageEvent::ToolCallDelta { delta, .. } = e else {
                return None;
            };
            Some(delta.as_str())
        })
        .collect();
    assert!(deltas.len() > 1, "arguments arrive in pieces: {deltas:?}");
    assert_eq!(deltas.concat(), arguments.to_string());
    let call = message.tool_calls().next().cloned().expect("a tool call");
    assert_eq!(
        call,
        ToolCall {
            id: call_id.into(),
            name: "bash".into(),
            arguments: arguments.clone(),
            thought_signature: None,
        }
    );

    let mut context = ask("count");
    context.messages.push(Message::Assistant(message));
    context.messages.push(result_for(&call, "12"));
    let events = collect(s.provider.stream(&s.model, context, d.options())).await;
    assert_eq!(done(&events).text(), "It printed 12.");
    let second = s.server.requests()[1].clone();
    assert!(!second.is_rejected(), "{:?}", second.rejection);
    assert_eq!(second.tool_outputs(), vec![(call_id.to_owned(), "12".to_owned())]);
    (second, arguments)
}

/// `@copilotkit/aimock`'s text answer ([`aimock_text_answer`](super::aimock_text_answer)).
pub async fn aimock_text_answer<W: WireApi>(d: &Dialect) {
    let provider = provider_with::<W>(fast_config());
    super::aimock_text_answer(&provider, |url| d.model_at(url), d.options()).await;
}

/// `@copilotkit/aimock`'s two-step tool conversation
/// ([`aimock_two_step_tool_call`](super::aimock_two_step_tool_call)).
pub async fn aimock_two_step_tool_call<W: WireApi>(d: &Dialect) {
    let provider = provider_with::<W>(fast_config());
    super::aimock_two_step_tool_call(&provider, |url| d.model_at(url), d.options()).await;
}

/// One `#[tokio::test]` per case of the [`contract`](crate::testing::contract) for the wire API
/// `$wire` (a [`WireApi`](crate::WireApi)) in the [`Dialect`](crate::testing::contract::Dialect)
/// `$dialect`: `provider_contract_tests!(volcanic_anthropic::Messages, support::DIALECT);`. The
/// calling crate needs `tokio` (with `macros`) among its dev-dependencies.
#[macro_export]
macro_rules! provider_contract_tests {
    ($wire:ty, $dialect:expr) => {
        $crate::provider_contract_tests!(@cases $wire, $dialect;
            server_error_then_success_is_retried,
            rate_limit_waits_for_retry_after,
            a_retry_after_beyond_the_cap_is_left_to_the_caller,
            retries_give_up_with_the_last_status_and_message,
            unauthorized_is_not_retried,
            a_missing_key_gets_the_servers_own_message,
            a_dropped_stream_after_content_is_an_error_keeping_the_partial_text,
            a_stream_closed_before_its_terminal_event_is_an_error,
            a_drop_before_any_content_is_retried,
            in_stream_error_before_content_is_retried_and_after_content_is_not,
            silence_beyond_the_idle_timeout_is_an_error,
            cancel_mid_stream_ends_promptly_as_aborted,
            cancel_during_a_retry_wait_ends_as_aborted,
            context_overflow_is_recognisable_and_not_retried,
            a_refused_connection_is_retried_then_reported,
            aimock_text_answer,
            aimock_two_step_tool_call,
        );
    };
    (@cases $wire:ty, $dialect:expr; $($case:ident),* $(,)?) => {
        $(
            #[::tokio::test]
            async fn $case() {
                $crate::testing::contract::$case::<$wire>(&$dialect).await;
            }
        )*
    };
}
