//! Helpers for the provider crates' tests (feature `testing`): short retry settings, a provider
//! and the testkit's scripted model server to run it against, reading SSE bytes through a mapper
//! (in any chunking), collecting a provider stream with a timeout, a check of the event grammar
//! every stream must follow, a context with the `bash` tool; two conversations against
//! `@copilotkit/aimock` ([`aimock`]); and the [`contract`] every wire API's provider keeps, run
//! by [`provider_contract_tests!`](crate::provider_contract_tests).
//!
//! The helpers panic (with a message saying what was expected) when a check fails, as test
//! assertions do.
#![allow(clippy::expect_used)]

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use volcanic_abstractions::provider::ToolSpec;
use volcanic_abstractions::{
    AssistantMessage, AssistantMessageEvent, BashExecutionMessage, CustomMessage, Message, Model, ProviderContext,
    ProviderStream, StopReason, StreamOptions, TextContent, ToolCall, ToolResultMessage, UserBody, UserContent,
};

use tokio_util::sync::CancellationToken;
use volcanic_testkit::model_server::ModelServer;

use crate::http::channel;
use crate::stream::read_stream;
use crate::{EventMapper, ProviderConfig, SseProvider, WireApi};

pub mod aimock;
pub mod contract;

pub use aimock::{Llmock, aimock_text_answer, aimock_two_step_tool_call};

/// Longest [`collect`] waits for a whole stream.
pub const STREAM_TIMEOUT: Duration = Duration::from_secs(20);

/// Short retry delays (10 ms base, 5 s cap, 3 retries) and 2 s idle and connect timeouts.
pub fn fast_config() -> ProviderConfig {
    ProviderConfig {
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(5),
        max_retries: 3,
        idle_timeout: Duration::from_secs(2),
        connect_timeout: Duration::from_secs(2),
    }
}

/// A provider speaking `W` with `config`, after installing the ring TLS provider as the binary
/// does.
pub fn provider_with<W: WireApi>(config: ProviderConfig) -> SseProvider<W> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    SseProvider::with_config(config).expect("provider builds")
}

/// Options sending `api_key`.
pub fn options_with_key(api_key: &str) -> StreamOptions {
    StreamOptions {
        api_key: Some(api_key.into()),
        ..StreamOptions::default()
    }
}

/// A started scripted model server (`volcanic-testkit`).
pub async fn server() -> ModelServer {
    ModelServer::start().await.expect("model server starts")
}

/// An SSE event named `name` carrying `data`, as the decoder hands it to a mapper.
pub fn sse_event(name: &str, data: &str) -> eventsource_stream::Event {
    eventsource_stream::Event {
        event: name.into(),
        data: data.into(),
        id: String::new(),
        retry: None,
    }
}

/// An SSE event without a name (`message`, as the OpenAI APIs send them) carrying `data`.
pub fn sse_data(data: &str) -> eventsource_stream::Event {
    sse_event("message", data)
}

/// Reads `chunks` as one response body, as the provider does, through a fresh `M` for `model`
/// (stamped `timestamp`, 5 s idle timeout); returns the events emitted and the final message
/// ([`EventMapper::finish`]), or the error's text.
pub async fn read_chunks<M: EventMapper>(
    model: &Model,
    timestamp: i64,
    chunks: Vec<Vec<u8>>,
) -> (Vec<AssistantMessageEvent>, Result<AssistantMessage, String>) {
    let body = futures::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
    let mut mapper = M::new(model, timestamp);
    let (emitter, receiver) = channel();
    let cancel = CancellationToken::new();
    let result = read_stream(body, &mut mapper, &emitter, &cancel, Duration::from_secs(5)).await;
    drop(emitter);
    let events: Vec<AssistantMessageEvent> = receiver.collect().await;
    let outcome = match result {
        Ok(()) => match mapper.finish() {
            (message, Ok(())) => Ok(message),
            (_, Err(error)) => Err(error.to_string()),
        },
        Err(error) => Err(error.to_string()),
    };
    (events, outcome)
}

/// Panics unless [`read_chunks`] of `body` yields `events` and `message` however the body
/// arrives: whole, with CRLF line endings, in fixed chunk sizes of 1, 2, 3, 5, 7, 13 and 64
/// bytes (size 1 splits every multi-byte character), and cut in two at every byte (there only
/// the number of events is compared: a cut can split one delta into two).
pub async fn assert_body_maps_to<M: EventMapper>(
    model: &Model,
    timestamp: i64,
    body: &str,
    events: &[AssistantMessageEvent],
    message: &AssistantMessage,
) {
    let expected = Ok(message.clone());
    let crlf = body.replace('\n', "\r\n");
    for (name, text) in [("whole", body), ("CRLF", crlf.as_str())] {
        let (got, outcome) = read_chunks::<M>(model, timestamp, vec![text.into()]).await;
        assert_eq!(got, events, "{name}");
        assert_eq!(outcome, expected, "{name}");
    }
    let bytes = body.as_bytes();
    for size in [1, 2, 3, 5, 7, 13, 64] {
        let chunks = bytes.chunks(size).map(<[u8]>::to_vec).collect();
        let (got, outcome) = read_chunks::<M>(model, timestamp, chunks).await;
        assert_eq!(got, events, "chunk size {size}");
        assert_eq!(outcome, expected, "chunk size {size}");
    }
    for cut in 1..bytes.len() {
        let chunks = vec![bytes[..cut].to_vec(), bytes[cut..].to_vec()];
        let (got, outcome) = read_chunks::<M>(model, timestamp, chunks).await;
        assert_eq!(got.len(), events.len(), "cut at {cut}");
        assert_eq!(outcome, expected, "cut at {cut}");
    }
}

/// All events of a stream; panics when it does not end within [`STREAM_TIMEOUT`].
pub async fn collect(stream: ProviderStream) -> Vec<AssistantMessageEvent> {
    tokio::time::timeout(STREAM_TIMEOUT, stream.collect::<Vec<_>>())
        .await
        .expect("the provider stream ends")
}

/// The terminal event's reason and message, after checking the event grammar
/// ([`assert_well_formed`]); panics when the last event is not `done` or `error`.
pub fn finish(events: &[AssistantMessageEvent]) -> (StopReason, AssistantMessage) {
    assert_well_formed(events);
    match events.last() {
        Some(AssistantMessageEvent::Done { reason, message }) => (*reason, message.clone()),
        Some(AssistantMessageEvent::Error { reason, error }) => (*reason, error.clone()),
        other => panic!("stream did not end with done/error: {other:?}"),
    }
}

/// The final message of a successful stream; panics unless it ended with `done` whose reason
/// is the message's stop reason.
pub fn done(events: &[AssistantMessageEvent]) -> AssistantMessage {
    let (reason, message) = finish(events);
    assert!(
        matches!(events.last(), Some(AssistantMessageEvent::Done { .. })),
        "expected done, got {reason:?}: {:?}",
        message.error_message
    );
    assert_eq!(reason, message.stop_reason);
    message
}

/// The `errorMessage` of a failed stream; panics unless it ended with an `error` event of
/// reason `expected`.
pub fn failed(events: &[AssistantMessageEvent], expected: StopReason) -> String {
    let (reason, message) = finish(events);
    assert!(
        matches!(events.last(), Some(AssistantMessageEvent::Error { .. })),
        "expected an error event, got {events:?}"
    );
    assert_eq!(reason, expected);
    assert_eq!(message.stop_reason, expected);
    message.error_message.expect("error events carry errorMessage")
}

/// Panics unless the events follow pi's grammar: `start` first, exactly one terminal event
/// last, and every block's events in order (`*_start`, deltas, `*_end`; a `provider_toolcall`
/// is a whole block, its `provider_toolresult` comes after it), with content indexes counting
/// up from 0; after `done`, every block has ended.
pub fn assert_well_formed(events: &[AssistantMessageEvent]) {
    use AssistantMessageEvent as E;
    assert!(
        matches!(events.first(), Some(E::Start { .. })),
        "first event must be start: {events:?}"
    );
    let terminals = events.iter().filter(|e| e.is_terminal()).count();
    assert_eq!(terminals, 1, "exactly one terminal event: {events:?}");
    assert!(events.last().is_some_and(AssistantMessageEvent::is_terminal));
    // content index → (kind, ended)
    let mut blocks: HashMap<usize, (&'static str, bool)> = HashMap::new();
    let mut next_index = 0;
    for event in &events[1..events.len() - 1] {
        let (index, kind, phase) = match event {
            E::TextStart { content_index } => (*content_index, "text", 0),
            E::TextDelta { content_index, .. } => (*content_index, "text", 1),
            E::TextEnd { content_index, .. } => (*content_index, "text", 2),
            E::ThinkingStart { content_index } => (*content_index, "thinking", 0),
            E::ThinkingDelta { content_index, .. } => (*content_index, "thinking", 1),
            E::ThinkingEnd { content_index, .. } => (*content_index, "thinking", 2),
            E::ToolCallStart { content_index, .. } => (*content_index, "toolcall", 0),
            E::ToolCallDelta { content_index, .. } => (*content_index, "toolcall", 1),
            E::ToolCallEnd { content_index, .. } => (*content_index, "toolcall", 2),
            // A whole block at once: starts and ends here.
            E::ProviderToolCall { content_index, .. } => {
                assert_eq!(*content_index, next_index, "blocks start in index order: {events:?}");
                next_index += 1;
                blocks.insert(*content_index, ("providertoolcall", true));
                continue;
            }
            // Comes after its call ended.
            E::ProviderToolResult { content_index, .. } => {
                assert!(
                    matches!(blocks.get(content_index), Some(("providertoolcall", _))),
                    "provider_toolresult without its provider_toolcall: {events:?}"
                );
                continue;
            }
            E::Start { .. } | E::Done { .. } | E::Error { .. } => {
                panic!("unexpected {} in the middle: {events:?}", event.name())
            }
        };
        match phase {
            0 => {
                assert_eq!(index, next_index, "blocks start in index order: {events:?}");
                next_index += 1;
                blocks.insert(index, (kind, false));
            }
            _ => {
                let Some((started, ended)) = blocks.get_mut(&index) else {
                    panic!("{} before its start: {events:?}", event.name());
                };
                assert_eq!(*started, kind, "block kind changed: {events:?}");
                assert!(!*ended, "{} after the block ended: {events:?}", event.name());
                *ended = phase == 2;
            }
        }
    }
    if matches!(events.last(), Some(E::Done { .. })) {
        assert!(
            blocks.values().all(|(_, ended)| *ended),
            "every block ends before done: {events:?}"
        );
    }
}

/// A context asking `text`, with a system prompt and the [`bash_tool`].
pub fn ask(text: &str) -> ProviderContext {
    ProviderContext {
        system_prompt: "You are a test.".into(),
        messages: vec![Message::user_text(text, 1)],
        tools: vec![bash_tool()],
    }
}

/// The `bash` tool spec (one required string parameter, `command`).
pub fn bash_tool() -> ToolSpec {
    ToolSpec {
        name: "bash".into(),
        description: "Run a shell command".into(),
        parameters: std::sync::Arc::new(json!({
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        })),
    }
}

/// The agent's own roles after a tool result (timestamps 4 and 5): a hidden `reminder`
/// custom message and a `pwd` run by the user (`/work`, exit code 0).
pub fn reminder_and_bash() -> [Message; 2] {
    [
        Message::Custom(CustomMessage {
            custom_type: "reminder".into(),
            content: UserBody::Text("A reminder.".into()),
            display: false,
            details: None,
            timestamp: 4,
        }),
        Message::BashExecution(BashExecutionMessage {
            command: "pwd".into(),
            output: "/work".into(),
            exit_code: Some(0),
            cancelled: false,
            truncated: false,
            full_output_path: None,
            timestamp: 5,
            exclude_from_context: None,
        }),
    ]
}

/// A successful text result for `call` (timestamp 3).
pub fn result_for(call: &ToolCall, text: &str) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: vec![UserContent::Text(TextContent {
            text: text.into(),
            text_signature: None,
        })],
        details: None,
        is_error: false,
        timestamp: 3,
    })
}

/// The text [`claude_code_turn`]'s tool call reads as for any other API
/// ([`ProviderToolCall::as_text`](volcanic_abstractions::ProviderToolCall::as_text)).
pub const CLAUDE_CODE_TOOL_TEXT: &str = "Ran tool `Bash` with {\"command\":\"ls\"}\nResult:\nnotes.txt";

/// A turn of Claude Code (`api` `claude-code`) that ran its own `Bash` (a `providerToolCall`
/// with its result), then answered `One file.`, between two user messages: for request builders
/// to show they send it as text, with no tool call left unanswered.
pub fn claude_code_turn() -> Vec<Message> {
    use volcanic_abstractions::{AssistantContent, ProviderToolCall, ProviderToolResult};
    let mut answer = AssistantMessage::empty("claude-code", "claude-code", "sonnet", 2);
    answer.content = vec![
        AssistantContent::ProviderToolCall(ProviderToolCall {
            id: "toolu_1".into(),
            name: "Bash".into(),
            arguments: json!({"command": "ls"}),
            result: Some(ProviderToolResult {
                content: vec![UserContent::Text(TextContent {
                    text: "notes.txt".into(),
                    text_signature: None,
                })],
                is_error: false,
            }),
        }),
        AssistantContent::Text(TextContent {
            text: "One file.".into(),
            text_signature: None,
        }),
    ];
    answer.response_id = Some("sess-1".into());
    vec![
        Message::user_text("list the files", 1),
        Message::Assistant(answer),
        Message::user_text("and now?", 3),
    ]
}
