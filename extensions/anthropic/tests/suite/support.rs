//! Helpers: a provider with short delays, a model pointed at a server, event collection with a
//! timeout, and a check of the event grammar every stream must follow.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use volcanic_abstractions::provider::ToolSpec;
use volcanic_abstractions::{
    Api, AssistantMessage, AssistantMessageEvent, InputKind, Model, ModelCost, ProviderStream,
    StopReason, StreamOptions,
};
use volcanic_abstractions::{
    Message, ProviderContext, TextContent, ToolCall, ToolResultMessage, UserContent,
};
use volcanic_anthropic::{AnthropicProvider, ProviderConfig};
use volcanic_testkit::model_server::ModelServer;

/// Longest a test waits for a whole stream.
const STREAM_TIMEOUT: Duration = Duration::from_secs(20);

/// Short retry delays (10 ms base) and a 2 s idle timeout.
pub fn fast_config() -> ProviderConfig {
    ProviderConfig {
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(5),
        max_retries: 3,
        idle_timeout: Duration::from_secs(2),
        connect_timeout: Duration::from_secs(2),
    }
}

/// A provider with [`fast_config`].
pub fn provider() -> AnthropicProvider {
    provider_with(fast_config())
}

/// A provider with `config`, after installing the ring TLS provider as the binary does.
pub fn provider_with(config: ProviderConfig) -> AnthropicProvider {
    let _ = rustls::crypto::ring::default_provider().install_default();
    AnthropicProvider::with_config(config).expect("provider builds")
}

/// A reasoning, image-taking model served at `base_url`, priced 3 / 15 / 0.3 / 3.75 USD per
/// million input / output / cache-read / cache-write tokens.
pub fn model(base_url: &str) -> Model {
    Model {
        id: "claude-sonnet-4-5".into(),
        name: "Claude Sonnet 4.5".into(),
        provider: "anthropic".into(),
        api: Api::AnthropicMessages,
        base_url: base_url.into(),
        reasoning: true,
        input: vec![InputKind::Text, InputKind::Image],
        cost: ModelCost {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        },
        context_window: 200_000,
        max_tokens: 64_000,
    }
}

/// Options with an API key.
pub fn options() -> StreamOptions {
    StreamOptions {
        api_key: Some("sk-ant-test".into()),
        ..StreamOptions::default()
    }
}

/// All events of a stream; panics when it does not end in time.
pub async fn collect(stream: ProviderStream) -> Vec<AssistantMessageEvent> {
    tokio::time::timeout(STREAM_TIMEOUT, stream.collect::<Vec<_>>())
        .await
        .expect("the provider stream ends")
}

/// The terminal event's reason and message, after checking the event grammar.
pub fn finish(events: &[AssistantMessageEvent]) -> (StopReason, AssistantMessage) {
    assert_well_formed(events);
    match events.last() {
        Some(AssistantMessageEvent::Done { reason, message }) => (*reason, message.clone()),
        Some(AssistantMessageEvent::Error { reason, error }) => (*reason, error.clone()),
        other => panic!("stream did not end with done/error: {other:?}"),
    }
}

/// The final message of a successful stream.
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

/// The `errorMessage` of a failed stream, checking the reason.
pub fn failed(events: &[AssistantMessageEvent], expected: StopReason) -> String {
    let (reason, message) = finish(events);
    assert!(
        matches!(events.last(), Some(AssistantMessageEvent::Error { .. })),
        "expected an error event, got {events:?}"
    );
    assert_eq!(reason, expected);
    assert_eq!(message.stop_reason, expected);
    message
        .error_message
        .expect("error events carry errorMessage")
}

/// `start` first, exactly one terminal event last, and every block's events in order:
/// `*_start`, deltas, `*_end`, with content indexes counting up from 0.
pub fn assert_well_formed(events: &[AssistantMessageEvent]) {
    use AssistantMessageEvent as E;
    assert!(
        matches!(events.first(), Some(E::Start { .. })),
        "first event must be start: {events:?}"
    );
    let terminals = events.iter().filter(|e| e.is_terminal()).count();
    assert_eq!(terminals, 1, "exactly one terminal event: {events:?}");
    assert!(
        events
            .last()
            .is_some_and(AssistantMessageEvent::is_terminal)
    );
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
                assert!(
                    !*ended,
                    "{} after the block ended: {events:?}",
                    event.name()
                );
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

/// A started scripted model server.
pub async fn server() -> ModelServer {
    ModelServer::start().await.expect("model server starts")
}

/// A context asking `text`, with a system prompt and the `bash` tool.
pub fn ask(text: &str) -> ProviderContext {
    ProviderContext {
        system_prompt: "You are a test.".into(),
        messages: vec![Message::user_text(text, 1)],
        tools: vec![bash_tool()],
    }
}

/// The `bash` tool spec.
pub fn bash_tool() -> ToolSpec {
    ToolSpec {
        name: "bash".into(),
        description: "Run a shell command".into(),
        parameters: json!({
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        }),
    }
}

/// A successful text result for `call`.
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
