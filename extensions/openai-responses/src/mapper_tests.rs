//! The mapper on hand-made event sequences: items to blocks, the call id pair, summary parts,
//! usage and cost, terminal statuses.

#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;
use serde_json::json;
use volcanic_abstractions::{Api, AssistantContent, AssistantMessageEvent, InputKind, Model, ModelCost, StopReason};
use volcanic_provider_support::{EventMapper, ProviderError};

use super::Mapper;

fn model() -> Model {
    Model {
        id: "gpt-5".into(),
        name: "GPT-5".into(),
        provider: "openai".into(),
        api: Api::OpenAiResponses,
        base_url: "http://x/v1".into(),
        reasoning: true,
        input: vec![InputKind::Text],
        cost: ModelCost {
            input: 1.0,
            output: 10.0,
            cache_read: 0.1,
            cache_write: 0.0,
        },
        context_window: 1000,
        max_tokens: 100,
    }
}

fn feed(mapper: &mut Mapper, events: &[serde_json::Value]) -> (Vec<AssistantMessageEvent>, Result<(), ProviderError>) {
    let mut out = Vec::new();
    for data in events {
        let event = volcanic_provider_support::testing::sse_data(&data.to_string());
        if let Err(error) = mapper.on_sse_event(&event, &mut out) {
            return (out, Err(error));
        }
    }
    (out, Ok(()))
}

#[test]
fn reasoning_text_and_calls_become_blocks_with_usage_and_cost() {
    let mut mapper = Mapper::new(&model(), 1);
    let (events, result) = feed(
        &mut mapper,
        &[
            json!({"type": "response.created", "response": {"id": "resp_1"}}),
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "First."}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 1, "delta": "Second."}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "First."}, {"type": "summary_text", "text": "Second."}], "encrypted_content": "ENC"}}),
            json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "bash", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{\"command\":"}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "\"ls\"}"}),
            json!({"type": "response.function_call_arguments.done", "output_index": 1, "arguments": "{\"command\":\"ls\"}"}),
            json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "bash", "arguments": "{\"command\":\"ls\"}"}}),
            json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 400}, "output_tokens": 100}}}),
        ],
    );
    result.unwrap();
    assert!(mapper.is_finished());
    let names: Vec<&str> = events.iter().map(AssistantMessageEvent::name).collect();
    assert_eq!(
        names,
        [
            "thinking_start",
            "thinking_delta",
            "thinking_delta",
            "thinking_end",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_delta",
            "toolcall_end"
        ]
    );
    let (message, result) = mapper.finish();
    result.unwrap();
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(message.response_id.as_deref(), Some("resp_1"));
    let AssistantContent::Thinking(thinking) = &message.content[0] else {
        panic!("thinking first: {message:?}");
    };
    assert_eq!(thinking.thinking, "First.\n\nSecond.");
    let item: serde_json::Value = serde_json::from_str(thinking.thinking_signature.as_deref().unwrap()).unwrap();
    assert_eq!(item["encrypted_content"], "ENC");
    assert_eq!(item["id"], "rs_1");
    let call = message.tool_calls().next().unwrap();
    assert_eq!(call.id, "call_1|fc_1");
    assert_eq!(call.arguments, json!({"command": "ls"}));
    assert_eq!(
        (message.usage.input, message.usage.cache_read, message.usage.output),
        (600, 400, 100)
    );
    assert!((message.usage.cost.total - (600.0 * 1.0 + 400.0 * 0.1 + 100.0 * 10.0) / 1e6).abs() < 1e-12);
}

#[test]
fn terminal_statuses_map_to_stop_reasons_and_errors() {
    let text = [
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "msg_1", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Hi"}),
    ];
    let mut incomplete = Mapper::new(&model(), 1);
    let mut events = text.to_vec();
    events.push(json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}}));
    feed(&mut incomplete, &events).1.unwrap();
    let (message, result) = incomplete.finish();
    result.unwrap();
    assert_eq!(message.stop_reason, StopReason::Length);
    assert_eq!(message.text(), "Hi");

    let mut filtered = Mapper::new(&model(), 1);
    feed(&mut filtered, &[json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "content_filter"}}})]).1.unwrap();
    let error = filtered.finish().1.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the model stopped with incomplete_details.reason `content_filter`"
    );

    let mut failed = Mapper::new(&model(), 1);
    let error = feed(&mut failed, &[json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "server_error", "message": "The model failed."}}})]).1.unwrap_err();
    assert_eq!(error.to_string(), "server_error: The model failed.");
    assert!(error.is_transient());

    let mut errored = Mapper::new(&model(), 1);
    let error = feed(
        &mut errored,
        &[json!({"type": "error", "code": "invalid_prompt", "message": "Bad prompt."})],
    )
    .1
    .unwrap_err();
    assert!(!error.is_transient());
}
