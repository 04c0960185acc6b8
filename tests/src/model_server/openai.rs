//! OpenAI Chat Completions wire format (`POST /v1/chat/completions`): SSE chunks, the
//! non-streaming completion body and the error body.
//!
//! Stream order: a first chunk with `delta.role`, then one chunk per piece of
//! `delta.reasoning_content` (as DeepSeek, vLLM and llama.cpp send thinking), `delta.content` and
//! `delta.tool_calls` (id, type and name in the first chunk of a call, `function.arguments` split
//! over several), a chunk with an empty delta and `finish_reason`, when the request asked for
//! `stream_options.include_usage` a chunk with empty `choices` and `usage` (all other chunks then
//! carry `"usage": null`, as OpenAI does), and the terminal `data: [DONE]`.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::Rejection;
use super::respond::{ReplyContext, sse_data, sse_event};
use super::script::{Block, Turn, split_chunks};

/// Pieces a text or reasoning block is split into.
const TEXT_CHUNKS: usize = 3;
/// Pieces the tool arguments string is split into.
const JSON_CHUNKS: usize = 3;

/// The OpenAI error `type` and `code` for an HTTP status.
pub(crate) fn error_type(status: u16) -> (&'static str, Option<&'static str>) {
    match status {
        401 => ("invalid_request_error", Some("invalid_api_key")),
        429 => ("requests", Some("rate_limit_exceeded")),
        500..=599 => ("server_error", None),
        _ => ("invalid_request_error", None),
    }
}

/// `{"error":{"message":..,"type":..,"param":null,"code":..}}` for a rejection.
pub(crate) fn error_body(rejection: &Rejection) -> Value {
    json!({
        "error": {
            "message": rejection.message,
            "type": rejection.kind,
            "param": null,
            "code": rejection.code,
        },
    })
}

fn completion_id(ctx: &ReplyContext) -> String {
    format!("chatcmpl-testkit-{:04}", ctx.seq)
}

fn usage_json(ctx: &ReplyContext) -> Value {
    let usage = ctx.usage;
    let prompt = usage.input + usage.cache_read + usage.cache_write;
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": usage.output,
        "total_tokens": prompt + usage.output,
        "prompt_tokens_details": { "cached_tokens": usage.cache_read },
    })
}

/// One `chat.completion.chunk` with the given `choices`; `usage` is included only when the
/// request asked for it.
fn chunk(ctx: &ReplyContext, choices: Value, usage: Value) -> Bytes {
    let mut object = Map::new();
    object.insert("id".into(), json!(completion_id(ctx)));
    object.insert("object".into(), json!("chat.completion.chunk"));
    object.insert("created".into(), json!(ctx.created));
    object.insert("model".into(), json!(ctx.model));
    object.insert("system_fingerprint".into(), json!("fp_testkit"));
    object.insert("choices".into(), choices);
    if ctx.include_usage {
        object.insert("usage".into(), usage);
    }
    sse_event(None, &Value::Object(object))
}

/// A chunk carrying one choice with this delta and finish reason.
fn delta_chunk(ctx: &ReplyContext, delta: Value, finish_reason: Option<&str>) -> Bytes {
    chunk(
        ctx,
        json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}]),
        Value::Null,
    )
}

/// All SSE lines of a complete streamed reply, terminal `data: [DONE]` last.
pub(crate) fn stream_events(turn: &Turn, ctx: &ReplyContext) -> Vec<Bytes> {
    let mut events = vec![delta_chunk(
        ctx,
        json!({"role": "assistant", "content": "", "refusal": null}),
        None,
    )];
    let mut call_index = 0;
    for block in turn.blocks() {
        match block {
            Block::Thinking { text, .. } => {
                for piece in split_chunks(text, TEXT_CHUNKS) {
                    events.push(delta_chunk(ctx, json!({"reasoning_content": piece}), None));
                }
            }
            Block::Text(text) => {
                for piece in split_chunks(text, TEXT_CHUNKS) {
                    events.push(delta_chunk(ctx, json!({"content": piece}), None));
                }
            }
            Block::ToolCall { id, name, arguments } => {
                events.push(delta_chunk(
                    ctx,
                    json!({"tool_calls": [{
                        "index": call_index,
                        "id": id,
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }]}),
                    None,
                ));
                let arguments = arguments.to_string();
                for piece in split_chunks(&arguments, JSON_CHUNKS) {
                    events.push(delta_chunk(
                        ctx,
                        json!({"tool_calls": [{"index": call_index, "function": {"arguments": piece}}]}),
                        None,
                    ));
                }
                call_index += 1;
            }
        }
    }
    events.push(delta_chunk(ctx, json!({}), Some(turn.effective_stop_reason().openai())));
    if ctx.include_usage {
        events.push(chunk(ctx, json!([]), usage_json(ctx)));
    }
    events.push(sse_data("[DONE]"));
    events
}

/// The in-stream error line sent by [`Turn::fail_after`].
pub(crate) fn stream_error(message: &str) -> Bytes {
    sse_event(
        None,
        &json!({"error": {"message": message, "type": "server_error", "param": null, "code": null}}),
    )
}

/// The non-streaming response body (`"stream"` absent or false).
pub(crate) fn completion_body(turn: &Turn, ctx: &ReplyContext) -> Value {
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut calls = Vec::new();
    for block in turn.blocks() {
        match block {
            Block::Thinking { text: thought, .. } => reasoning.push_str(thought),
            Block::Text(piece) => text.push_str(piece),
            Block::ToolCall { id, name, arguments } => calls.push(json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()},
            })),
        }
    }
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert(
        "content".into(),
        if text.is_empty() && !calls.is_empty() {
            Value::Null
        } else {
            json!(text)
        },
    );
    message.insert("refusal".into(), Value::Null);
    if !reasoning.is_empty() {
        message.insert("reasoning_content".into(), json!(reasoning));
    }
    if !calls.is_empty() {
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    json!({
        "id": completion_id(ctx),
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "system_fingerprint": "fp_testkit",
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": turn.effective_stop_reason().openai(),
        }],
        "usage": usage_json(ctx),
    })
}
