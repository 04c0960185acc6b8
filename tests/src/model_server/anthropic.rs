//! Anthropic Messages wire format (`POST /v1/messages`): SSE events, the non-streaming message
//! body and the error body.
//!
//! Stream order, as the real API sends it: `message_start`, `ping`, then per content block
//! `content_block_start`, one or more `content_block_delta`, `content_block_stop`; then
//! `message_delta` (stop reason, output tokens) and the terminal `message_stop`.

use bytes::Bytes;
use serde_json::{Value, json};

use super::Rejection;
use super::respond::{ReplyContext, sse_event};
use super::script::{Block, Turn, split_chunks};

/// Pieces a text or thinking block is split into.
const TEXT_CHUNKS: usize = 3;
/// Pieces the tool input JSON is split into (after the initial empty `partial_json`).
const JSON_CHUNKS: usize = 3;

/// The Anthropic error `type` for an HTTP status.
pub(crate) fn error_type(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

/// `{"type":"error","error":{"type":..,"message":..}}` for a rejection.
pub(crate) fn error_body(rejection: &Rejection) -> Value {
    json!({
        "type": "error",
        "error": { "type": rejection.kind, "message": rejection.message },
    })
}

/// The message id for the turn with this sequence number.
fn message_id(ctx: &ReplyContext) -> String {
    format!("msg_testkit_{:04}", ctx.seq)
}

fn usage_json(ctx: &ReplyContext, output_tokens: u64) -> Value {
    json!({
        "input_tokens": ctx.usage.input,
        "cache_creation_input_tokens": ctx.usage.cache_write,
        "cache_read_input_tokens": ctx.usage.cache_read,
        "output_tokens": output_tokens,
    })
}

/// All SSE events of a complete streamed reply, terminal `message_stop` last.
pub(crate) fn stream_events(turn: &Turn, ctx: &ReplyContext) -> Vec<Bytes> {
    let mut events = vec![
        sse_event(
            Some("message_start"),
            &json!({
                "type": "message_start",
                "message": {
                    "id": message_id(ctx),
                    "type": "message",
                    "role": "assistant",
                    "model": ctx.model,
                    "content": [],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": usage_json(ctx, 1),
                },
            }),
        ),
        sse_event(Some("ping"), &json!({"type": "ping"})),
    ];
    for (index, block) in turn.blocks().iter().enumerate() {
        block_events(&mut events, index, block);
    }
    events.push(sse_event(
        Some("message_delta"),
        &json!({
            "type": "message_delta",
            "delta": {
                "stop_reason": turn.effective_stop_reason().anthropic(),
                "stop_sequence": null,
            },
            "usage": { "output_tokens": ctx.usage.output },
        }),
    ));
    events.push(sse_event(Some("message_stop"), &json!({"type": "message_stop"})));
    events
}

fn block_events(events: &mut Vec<Bytes>, index: usize, block: &Block) {
    let start = |content_block: Value| {
        sse_event(
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": index, "content_block": content_block}),
        )
    };
    let delta = |delta: Value| {
        sse_event(
            Some("content_block_delta"),
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    };
    match block {
        Block::Text(text) => {
            events.push(start(json!({"type": "text", "text": ""})));
            for piece in split_chunks(text, TEXT_CHUNKS) {
                events.push(delta(json!({"type": "text_delta", "text": piece})));
            }
        }
        Block::Thinking { text, signature } => {
            events.push(start(json!({"type": "thinking", "thinking": ""})));
            for piece in split_chunks(text, TEXT_CHUNKS) {
                events.push(delta(json!({"type": "thinking_delta", "thinking": piece})));
            }
            if let Some(signature) = signature {
                events.push(delta(json!({"type": "signature_delta", "signature": signature})));
            }
        }
        Block::ToolCall { id, name, arguments } => {
            events.push(start(json!({"type": "tool_use", "id": id, "name": name, "input": {}})));
            events.push(delta(json!({"type": "input_json_delta", "partial_json": ""})));
            let arguments = arguments.to_string();
            for piece in split_chunks(&arguments, JSON_CHUNKS) {
                events.push(delta(json!({"type": "input_json_delta", "partial_json": piece})));
            }
        }
    }
    events.push(sse_event(
        Some("content_block_stop"),
        &json!({"type": "content_block_stop", "index": index}),
    ));
}

/// The in-stream error event sent by [`Turn::fail_after`].
pub(crate) fn stream_error(message: &str) -> Bytes {
    sse_event(
        Some("error"),
        &json!({"type": "error", "error": {"type": "overloaded_error", "message": message}}),
    )
}

/// The non-streaming response body (`"stream"` absent or false).
pub(crate) fn message_body(turn: &Turn, ctx: &ReplyContext) -> Value {
    let content: Vec<Value> = turn
        .blocks()
        .iter()
        .map(|block| match block {
            Block::Text(text) => json!({"type": "text", "text": text}),
            Block::Thinking { text, signature } => {
                json!({"type": "thinking", "thinking": text, "signature": signature.as_deref().unwrap_or("")})
            }
            Block::ToolCall { id, name, arguments } => {
                json!({"type": "tool_use", "id": id, "name": name, "input": arguments})
            }
        })
        .collect();
    json!({
        "id": message_id(ctx),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": turn.effective_stop_reason().anthropic(),
        "stop_sequence": null,
        "usage": usage_json(ctx, ctx.usage.output),
    })
}
