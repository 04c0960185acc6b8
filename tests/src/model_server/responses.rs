//! OpenAI Responses wire format (`POST /v1/responses`): SSE events, the non-streaming response
//! body and the in-stream error.
//!
//! Stream order (as the API reference's "Streaming events" gives it): `response.created`,
//! `response.in_progress`, then per block one output item (`output_index` = the block's place):
//! - thinking → a `reasoning` item: `output_item.added`, `reasoning_summary_part.added`,
//!   `reasoning_summary_text.delta` pieces, `reasoning_summary_text.done`,
//!   `reasoning_summary_part.done`, `output_item.done` whose item carries `encrypted_content` when
//!   the request asked for it (`include: ["reasoning.encrypted_content"]`): the block's signature,
//!   or `enc_testkit_<turn>_<block>`;
//! - text → a `message` item: `output_item.added`, `content_part.added`, `output_text.delta`
//!   pieces, `output_text.done`, `content_part.done`, `output_item.done`;
//! - a tool call → a `function_call` item (`id` `fc_testkit_<turn>_<block>`, `call_id` the
//!   scripted id): `output_item.added`, `function_call_arguments.delta` pieces,
//!   `function_call_arguments.done`, `output_item.done`;
//!
//! and the terminal event: `response.failed` for [`Turn::failed`], `response.incomplete`
//! (`max_output_tokens`) for a turn cut by its length, else `response.completed`, with `usage`.
//! Every event has an `event:` line naming its `type`, and a `sequence_number`.

use bytes::Bytes;
use serde_json::{Value, json};

use super::respond::{ReplyContext, sse_event};
use super::script::{Block, StopReason, Turn, split_chunks};

/// Pieces a text or summary is split into.
const TEXT_CHUNKS: usize = 3;

fn response_id(ctx: &ReplyContext) -> String {
    format!("resp_testkit_{:04}", ctx.seq)
}

/// The `encrypted_content` a thinking block at `index` of turn `seq` carries.
pub(crate) fn encrypted_content(signature: Option<&str>, seq: usize, index: usize) -> String {
    signature.map_or_else(|| format!("enc_testkit_{seq:04}_{index}"), str::to_owned)
}

/// The encrypted reasoning this turn hands out, when the request asked for it.
pub(crate) fn issued_reasoning(turn: &Turn, seq: usize) -> Vec<String> {
    turn.blocks()
        .iter()
        .enumerate()
        .filter_map(|(index, block)| match block {
            Block::Thinking { signature, .. } => Some(encrypted_content(signature.as_deref(), seq, index)),
            Block::Text(_) | Block::ToolCall { .. } => None,
        })
        .collect()
}

fn usage_json(ctx: &ReplyContext) -> Value {
    let usage = ctx.usage;
    let input = usage.input + usage.cache_read + usage.cache_write;
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": usage.cache_read},
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + usage.output,
    })
}

/// The finished output item of a block.
fn item(turn_seq: usize, index: usize, block: &Block, encrypted: bool) -> Value {
    match block {
        Block::Thinking { text, signature } => {
            let mut item = json!({
                "type": "reasoning",
                "id": format!("rs_testkit_{turn_seq:04}_{index}"),
                "summary": [{"type": "summary_text", "text": text}],
            });
            if encrypted {
                item["encrypted_content"] = json!(encrypted_content(signature.as_deref(), turn_seq, index));
            }
            item
        }
        Block::Text(text) => json!({
            "type": "message",
            "id": format!("msg_testkit_{turn_seq:04}_{index}"),
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }),
        Block::ToolCall { id, name, arguments } => json!({
            "type": "function_call",
            "id": format!("fc_testkit_{turn_seq:04}_{index}"),
            "call_id": id,
            "name": name,
            "arguments": arguments.to_string(),
            "status": "completed",
        }),
    }
}

/// The `response` object with this status and output.
fn response_object(turn: &Turn, ctx: &ReplyContext, status: &str, output: Vec<Value>) -> Value {
    let mut response = json!({
        "id": response_id(ctx),
        "object": "response",
        "created_at": ctx.created,
        "status": status,
        "model": ctx.model,
        "output": output,
        "store": false,
        "usage": if status == "in_progress" { Value::Null } else { usage_json(ctx) },
    });
    if status == "incomplete" {
        response["incomplete_details"] = json!({"reason": "max_output_tokens"});
    }
    if status == "failed" {
        response["error"] = json!({"code": "server_error", "message": turn.failure.clone().unwrap_or_default()});
    }
    response
}

/// The terminal status of a turn.
fn final_status(turn: &Turn) -> &'static str {
    if turn.failure.is_some() {
        "failed"
    } else if turn.effective_stop_reason() == StopReason::MaxTokens {
        "incomplete"
    } else {
        "completed"
    }
}

/// Collects events, numbering them.
struct Events {
    out: Vec<Bytes>,
}

impl Events {
    fn push(&mut self, kind: &str, mut data: Value) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.out.len());
        self.out.push(sse_event(Some(kind), &data));
    }
}

/// All SSE events of a complete streamed reply, the terminal event last.
pub(crate) fn stream_events(turn: &Turn, ctx: &ReplyContext) -> Vec<Bytes> {
    let mut events = Events { out: Vec::new() };
    events.push(
        "response.created",
        json!({"response": response_object(turn, ctx, "in_progress", vec![])}),
    );
    events.push(
        "response.in_progress",
        json!({"response": response_object(turn, ctx, "in_progress", vec![])}),
    );
    let mut output = Vec::new();
    for (index, block) in turn.blocks().iter().enumerate() {
        let done = item(ctx.seq, index, block, ctx.encrypted);
        let item_id = done["id"].clone();
        let at = json!({"item_id": item_id, "output_index": index});
        let with = |extra: Value| {
            let mut value = at.clone();
            if let (Some(target), Value::Object(extra)) = (value.as_object_mut(), extra) {
                target.extend(extra);
            }
            value
        };
        match block {
            Block::Thinking { text, .. } => {
                let mut added = done.clone();
                added["summary"] = json!([]);
                if let Some(map) = added.as_object_mut() {
                    map.remove("encrypted_content");
                }
                events.push(
                    "response.output_item.added",
                    json!({"output_index": index, "item": added}),
                );
                let part = |text: &str| json!({"type": "summary_text", "text": text});
                events.push(
                    "response.reasoning_summary_part.added",
                    with(json!({"summary_index": 0, "part": part("")})),
                );
                for piece in split_chunks(text, TEXT_CHUNKS) {
                    events.push(
                        "response.reasoning_summary_text.delta",
                        with(json!({"summary_index": 0, "delta": piece})),
                    );
                }
                events.push(
                    "response.reasoning_summary_text.done",
                    with(json!({"summary_index": 0, "text": text})),
                );
                events.push(
                    "response.reasoning_summary_part.done",
                    with(json!({"summary_index": 0, "part": part(text)})),
                );
            }
            Block::Text(text) => {
                let mut added = done.clone();
                added["content"] = json!([]);
                added["status"] = json!("in_progress");
                events.push(
                    "response.output_item.added",
                    json!({"output_index": index, "item": added}),
                );
                let part = |text: &str| json!({"type": "output_text", "text": text, "annotations": []});
                events.push(
                    "response.content_part.added",
                    with(json!({"content_index": 0, "part": part("")})),
                );
                for piece in split_chunks(text, TEXT_CHUNKS) {
                    events.push(
                        "response.output_text.delta",
                        with(json!({"content_index": 0, "delta": piece})),
                    );
                }
                events.push(
                    "response.output_text.done",
                    with(json!({"content_index": 0, "text": text})),
                );
                events.push(
                    "response.content_part.done",
                    with(json!({"content_index": 0, "part": part(text)})),
                );
            }
            Block::ToolCall { arguments, .. } => {
                let mut added = done.clone();
                added["arguments"] = json!("");
                added["status"] = json!("in_progress");
                events.push(
                    "response.output_item.added",
                    json!({"output_index": index, "item": added}),
                );
                let arguments = arguments.to_string();
                for piece in split_chunks(&arguments, TEXT_CHUNKS) {
                    events.push("response.function_call_arguments.delta", with(json!({"delta": piece})));
                }
                events.push(
                    "response.function_call_arguments.done",
                    with(json!({"arguments": arguments})),
                );
            }
        }
        events.push(
            "response.output_item.done",
            json!({"output_index": index, "item": done}),
        );
        output.push(done);
    }
    let status = final_status(turn);
    events.push(
        &format!("response.{status}"),
        json!({"response": response_object(turn, ctx, status, output)}),
    );
    events.out
}

/// The in-stream `error` event sent by [`Turn::fail_after`].
pub(crate) fn stream_error(message: &str) -> Bytes {
    sse_event(
        Some("error"),
        &json!({"type": "error", "code": "server_error", "message": message, "param": null}),
    )
}

/// The non-streaming response body (`"stream"` absent or false).
pub(crate) fn response_body(turn: &Turn, ctx: &ReplyContext) -> Value {
    let output = turn
        .blocks()
        .iter()
        .enumerate()
        .map(|(index, block)| item(ctx.seq, index, block, ctx.encrypted))
        .collect();
    response_object(turn, ctx, final_status(turn), output)
}
