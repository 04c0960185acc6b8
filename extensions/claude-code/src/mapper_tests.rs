#![allow(clippy::unwrap_used)]

use super::*;
use pretty_assertions::assert_eq;
use volcanic_abstractions::StopReason;

fn run(lines: &[&str]) -> (Vec<Ev>, Mapper) {
    let model = crate::models().remove(0);
    let mut m = Mapper::new(&model, 1);
    let mut out = Vec::new();
    for l in lines {
        m.on_line(l, &mut out);
    }
    (out, m)
}

#[test]
fn partial_text_streams_and_the_whole_block_of_the_same_message_is_not_repeated() {
    let (events, m) = run(&[
        r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5"}"#,
        r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1"}},"parent_tool_use_id":null}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}},"parent_tool_use_id":null}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}},"parent_tool_use_id":null}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}},"parent_tool_use_id":null}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_stop","index":0},"parent_tool_use_id":null}"#,
        r#"{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"Hello"}]},"parent_tool_use_id":null}"#,
        r#"{"type":"brand_new_kind","x":1}"#,
        "not json",
        r#"{"type":"result","subtype":"success","is_error":false,"result":"Hello","session_id":"s1","total_cost_usd":0.25,"usage":{"input_tokens":3,"output_tokens":4,"cache_read_input_tokens":5,"cache_creation_input_tokens":6}}"#,
    ]);
    let names: Vec<&str> = events.iter().map(Ev::name).collect();
    assert_eq!(names, ["text_start", "text_delta", "text_delta", "text_end"]);
    assert_eq!(m.outcome(), Some(&Outcome::Success));
    let message = m.finish(&mut Vec::new());
    assert_eq!(message.text(), "Hello");
    assert_eq!(message.response_id.as_deref(), Some("s1"));
    assert_eq!(message.usage.total_tokens, 18);
    assert_eq!(message.usage.cost.total, 0.25);
}

#[test]
fn own_tool_calls_and_results_are_paired_provider_tool_calls_never_tool_calls() {
    let (events, m) = run(&[
        // Partials of the tool-using message: its tool_use block still counts (whole, below).
        r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1"}},"parent_tool_use_id":null}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}},"parent_tool_use_id":null}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Looking."}},"parent_tool_use_id":null}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_stop","index":0},"parent_tool_use_id":null}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}},"parent_tool_use_id":null}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"command\":\"ls\"}"}},"parent_tool_use_id":null}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_stop","index":1},"parent_tool_use_id":null}"#,
        r#"{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"Looking."}]},"parent_tool_use_id":null}"#,
        r#"{"type":"assistant","message":{"id":"msg_1","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]},"parent_tool_use_id":null}"#,
        r#"{"type":"assistant","message":{"id":"msg_1","content":[{"type":"tool_use","id":"toolu_2","name":"Read","input":{"file_path":"/x"}}]},"parent_tool_use_id":null}"#,
        // A subagent's lines and a result of no known call are skipped.
        r#"{"type":"assistant","message":{"id":"msg_9","content":[{"type":"tool_use","id":"toolu_9","name":"Bash","input":{}}]},"parent_tool_use_id":"toolu_1"}"#,
        r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_404","content":"?"}]},"parent_tool_use_id":null}"#,
        r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"no such file"},{"type":"image","source":{}}],"is_error":true},{"type":"tool_result","tool_use_id":"toolu_1","content":"a.txt"}]},"parent_tool_use_id":null}"#,
        // A second result of one call is skipped.
        r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"again"}]},"parent_tool_use_id":null}"#,
        r#"{"type":"assistant","message":{"id":"msg_2","content":[{"type":"text","text":"One file."}]},"parent_tool_use_id":null}"#,
    ]);
    let names: Vec<&str> = events.iter().map(Ev::name).collect();
    assert_eq!(
        names,
        [
            "text_start",
            "text_delta",
            "text_end",
            "provider_toolcall",
            "provider_toolcall",
            "provider_toolresult",
            "provider_toolresult",
            "text_start",
            "text_delta",
            "text_end"
        ]
    );
    let Ev::ProviderToolCall {
        content_index,
        tool_call,
    } = &events[3]
    else {
        panic!("{:?}", events[3])
    };
    assert_eq!((*content_index, tool_call.name.as_str()), (1, "Bash"));
    assert_eq!(tool_call.result, None);
    let Ev::ProviderToolResult { content_index, result } = &events[5] else {
        panic!("{:?}", events[5])
    };
    assert_eq!((*content_index, result.is_error), (2, true));
    let mut all = vec![m.start()];
    all.extend(events.iter().cloned());
    let message = m.finish(&mut Vec::new());
    all.push(Ev::Done {
        reason: StopReason::Stop,
        message: message.clone(),
    });
    volcanic_provider_support::testing::assert_well_formed(&all);
    assert_eq!(message.tool_calls().count(), 0, "never ours to execute");
    let text = |t: &str| {
        vec![UserContent::Text(TextContent {
            text: t.into(),
            text_signature: None,
        })]
    };
    let calls: Vec<ProviderToolCall> = message.provider_tool_calls().cloned().collect();
    assert_eq!(
        calls,
        [
            ProviderToolCall {
                id: "toolu_1".into(),
                name: "Bash".into(),
                arguments: serde_json::json!({"command": "ls"}),
                result: Some(ProviderToolResult {
                    content: text("a.txt"),
                    is_error: false
                }),
            },
            ProviderToolCall {
                id: "toolu_2".into(),
                name: "Read".into(),
                arguments: serde_json::json!({"file_path": "/x"}),
                result: Some(ProviderToolResult {
                    content: text("no such file\n[image]"),
                    is_error: true
                }),
            },
        ]
    );
    assert_eq!(message.text(), "Looking.One file.");
}

#[test]
fn a_long_tool_result_is_cut() {
    let long = "x".repeat(RESULT_CHARS + 10);
    let (_, m) = run(&[
        r#"{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"Bash"}]}}"#,
        &format!(
            r#"{{"type":"user","message":{{"content":[{{"type":"tool_result","tool_use_id":"t","content":"{long}"}}]}}}}"#
        ),
    ]);
    let message = m.finish(&mut Vec::new());
    let call = message.provider_tool_calls().next().unwrap();
    assert_eq!(call.arguments, serde_json::json!({}));
    let result = call.result.as_ref().unwrap();
    let volcanic_abstractions::UserContent::Text(t) = &result.content[0] else {
        panic!()
    };
    assert_eq!(t.text, format!("{} […]", "x".repeat(RESULT_CHARS)));
}

#[test]
fn an_error_result_is_a_failure_with_what_it_said() {
    let (_, m) = run(&[
        r#"{"type":"result","subtype":"error_max_turns","is_error":true,"session_id":"s1","total_cost_usd":0.1,"usage":{}}"#,
    ]);
    assert_eq!(m.outcome(), Some(&Outcome::Failed("error_max_turns".into())));
    let (_, m) = run(&[
        r#"{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login","usage":{}}"#,
    ]);
    assert_eq!(
        m.outcome(),
        Some(&Outcome::Failed("success: Invalid API key · Please run /login".into()))
    );
}
