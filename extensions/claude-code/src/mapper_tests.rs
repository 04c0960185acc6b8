use super::*;
use pretty_assertions::assert_eq;

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
fn own_tool_calls_and_results_become_thinking_blocks_never_tool_calls() {
    let (events, m) = run(&[
        r#"{"type":"assistant","message":{"id":"msg_1","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]},"parent_tool_use_id":null}"#,
        r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a.txt"}]},"parent_tool_use_id":null}"#,
        r#"{"type":"assistant","message":{"id":"msg_9","content":[{"type":"text","text":"sub"}]},"parent_tool_use_id":"toolu_1"}"#,
        r#"{"type":"assistant","message":{"id":"msg_2","content":[{"type":"text","text":"One file."}]},"parent_tool_use_id":null}"#,
    ]);
    assert!(events.iter().all(|e| !e.name().starts_with("toolcall")));
    let message = m.finish(&mut Vec::new());
    assert_eq!(message.tool_calls().count(), 0);
    let blocks: Vec<String> = message
        .content
        .iter()
        .map(|c| match c {
            AssistantContent::Thinking(t) => format!("thinking: {}", t.thinking),
            AssistantContent::Text(t) => format!("text: {}", t.text),
            AssistantContent::ToolCall(t) => format!("call: {}", t.name),
        })
        .collect();
    assert_eq!(
        blocks,
        [
            r#"thinking: Claude Code ran Bash {"command":"ls"}"#,
            "thinking: Tool result: a.txt",
            "text: One file."
        ]
    );
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
