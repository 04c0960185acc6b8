#![allow(clippy::unwrap_used)]
use super::*;
use pretty_assertions::assert_eq;

#[test]
fn pi_assistant_message_round_trips_byte_for_byte() {
    let line = r#"{"role":"assistant","content":[{"type":"thinking","thinking":"hm","thinkingSignature":"c2ln"},{"type":"text","text":"ok"},{"type":"toolCall","id":"toolu_01A","name":"read","arguments":{"path":"a.rs"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","responseId":"msg_01x","usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":10,"cost":{"input":0.1,"output":0.2,"cacheRead":0.3,"cacheWrite":0.4,"total":1.0}},"stopReason":"toolUse","timestamp":1768467600000}"#;
    let m: Message = serde_json::from_str(line).unwrap();
    assert_eq!(m.role(), "assistant");
    // JS writes 1 where Rust writes 1.0 for an f64; everything else is identical.
    assert_eq!(serde_json::to_string(&m).unwrap(), line);
}

#[test]
fn user_string_content_is_kept_as_string() {
    let line = r#"{"role":"user","content":"hi","timestamp":5}"#;
    let m: Message = serde_json::from_str(line).unwrap();
    assert_eq!(serde_json::to_string(&m).unwrap(), line);
}

#[test]
fn tool_result_omits_absent_details() {
    let line = r#"{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"x"}],"isError":false,"timestamp":7}"#;
    let m: Message = serde_json::from_str(line).unwrap();
    assert_eq!(serde_json::to_string(&m).unwrap(), line);
}

/// A session line written before `providerToolCall` existed: a Claude Code answer whose own tool
/// call and result were kept as thinking blocks. It still loads, unchanged.
#[test]
fn an_old_claude_code_line_still_parses_and_round_trips() {
    let line = r#"{"role":"assistant","content":[{"type":"thinking","thinking":"Claude Code ran Bash {\"command\":\"ls\"}"},{"type":"thinking","thinking":"Tool result: a.txt"},{"type":"text","text":"One file."}],"api":"claude-code","provider":"claude-code","model":"sonnet","responseId":"s1","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0.0,"output":0.0,"cacheRead":0.0,"cacheWrite":0.0,"total":0.25}},"stopReason":"stop","timestamp":1768467600000}"#;
    let m: Message = serde_json::from_str(line).unwrap();
    let Message::Assistant(a) = &m else { panic!("{m:?}") };
    assert_eq!(a.provider_tool_calls().count(), 0);
    assert_eq!(a.text(), "One file.");
    assert_eq!(serde_json::to_string(&m).unwrap(), line);
}

#[test]
fn a_provider_tool_call_round_trips_and_is_not_a_call_to_execute() {
    let line = r#"{"role":"assistant","content":[{"type":"providerToolCall","id":"toolu_1","name":"Bash","arguments":{"command":"ls"},"result":{"content":[{"type":"text","text":"a.txt"}],"isError":false}},{"type":"providerToolCall","id":"toolu_2","name":"Read","arguments":{}},{"type":"text","text":"One file."}],"api":"claude-code","provider":"claude-code","model":"sonnet","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0.0,"output":0.0,"cacheRead":0.0,"cacheWrite":0.0,"total":0.0}},"stopReason":"stop","timestamp":5}"#;
    let m: Message = serde_json::from_str(line).unwrap();
    assert_eq!(serde_json::to_string(&m).unwrap(), line);
    let Message::Assistant(a) = &m else { panic!("{m:?}") };
    assert_eq!(a.tool_calls().count(), 0);
    let calls: Vec<_> = a.provider_tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].result.as_ref().map(|r| r.is_error), Some(false));
    assert_eq!(calls[1].result, None);
    assert_eq!(
        m.estimated_chars(),
        "Bash".len() + 16 + 5 + "Read".len() + 2 + "One file.".len()
    );
    // `isError` may be left out (false).
    let short = r#"{"type":"providerToolCall","id":"t","name":"x","arguments":{},"result":{"content":[]}}"#;
    let block: AssistantContent = serde_json::from_str(short).unwrap();
    let AssistantContent::ProviderToolCall(c) = block else {
        panic!()
    };
    assert_eq!(c.result.map(|r| r.is_error), Some(false));
}

#[test]
fn a_provider_tool_call_as_text_says_what_ran_and_what_came_back() {
    let call = |result: Option<ProviderToolResult>| ProviderToolCall {
        id: "toolu_1".into(),
        name: "Bash".into(),
        arguments: serde_json::json!({"command": "ls"}),
        result,
    };
    let text = |t: &str| {
        UserContent::Text(TextContent {
            text: t.into(),
            text_signature: None,
        })
    };
    assert_eq!(
        call(Some(ProviderToolResult {
            content: vec![text("a.txt")],
            is_error: false
        }))
        .as_text(),
        "Ran tool `Bash` with {\"command\":\"ls\"}\nResult:\na.txt"
    );
    assert_eq!(
        call(Some(ProviderToolResult {
            content: vec![text("denied")],
            is_error: true
        }))
        .as_text(),
        "Ran tool `Bash` with {\"command\":\"ls\"}\nFailed:\ndenied"
    );
    assert_eq!(
        call(None).as_text(),
        "Ran tool `Bash` with {\"command\":\"ls\"}\n(no result)"
    );
    let image = UserContent::Image(ImageContent {
        data: "AA==".into(),
        mime_type: "image/png".into(),
    });
    assert_eq!(
        call(Some(ProviderToolResult {
            content: vec![image],
            is_error: false
        }))
        .as_text(),
        "Ran tool `Bash` with {\"command\":\"ls\"}\nResult:\n[1 image(s) not shown]"
    );
    let long = call(Some(ProviderToolResult {
        content: vec![text(&"é".repeat(PROVIDER_TOOL_TEXT_CHARS + 5))],
        is_error: false,
    }))
    .as_text();
    assert!(long.ends_with("é […]"), "{long}");
    assert_eq!(long.matches('é').count(), PROVIDER_TOOL_TEXT_CHARS);
}
