use super::*;
use pretty_assertions::assert_eq;
use volcanic_abstractions::{
    AssistantContent, AssistantMessage, ProviderToolCall, ProviderToolResult, SummaryMessage, TextContent, ToolCall,
};

fn answer(provider: &str, id: Option<&str>, ts: i64) -> Message {
    let mut a = AssistantMessage::empty("claude-code", provider, "sonnet", ts);
    a.response_id = id.map(str::to_owned);
    Message::Assistant(a)
}

/// The session's place, as the runtime passes it.
fn options() -> StreamOptions {
    StreamOptions {
        cwd: Some("/work/chat-1".into()),
        time_zone: Some("Asia/Tokyo".into()),
        ..StreamOptions::default()
    }
}

fn context(messages: Vec<Message>) -> ProviderContext {
    ProviderContext {
        // The prompt's own lines are not where the session's place comes from (a context file
        // may quote anything): the options are.
        system_prompt: "You are helpful.\nTime zone: Europe/Paris\nCurrent working directory: /elsewhere".into(),
        messages,
        tools: Vec::new(),
    }
}

#[test]
fn first_call_has_the_flags_the_allow_listed_env_tz_and_cwd() {
    let config = ClaudeCodeConfig::new(
        None,
        Some("acceptEdits"),
        Some(vec!["Read".into(), "Bash(git log:*)".into()]),
    )
    .unwrap_or_default();
    let env = |k: &str| match k {
        "PATH" => Some("/usr/bin".to_owned()),
        "HOME" => Some("/home/bot".to_owned()),
        "TELEGRAM_BOT_TOKEN" | "ANTHROPIC_API_KEY" => Some("secret".to_owned()),
        _ => None,
    };
    let run = invocation(
        &config,
        "sonnet",
        &context(vec![Message::user_text("hi", 1)]),
        &options(),
        env,
    );
    assert_eq!(
        run.args,
        [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--model",
            "sonnet",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            "Read,Bash(git log:*)"
        ]
    );
    let vars: Vec<(&str, &str)> = run.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(
        vars,
        [("HOME", "/home/bot"), ("PATH", "/usr/bin"), ("TZ", "Asia/Tokyo")]
    );
    assert_eq!(run.cwd, Some(PathBuf::from("/work/chat-1")));
    assert_eq!(run.stdin, "hi");
    assert_eq!(run.resume, None);
}

#[test]
fn resumes_the_latest_claude_answer_with_the_new_text_only() {
    let messages = vec![
        Message::user_text("one", 1),
        answer("claude-code", Some("sess-1"), 2),
        Message::user_text("two", 3),
    ];
    let run = invocation(
        &ClaudeCodeConfig::default(),
        "opus",
        &context(messages),
        &options(),
        |_| None,
    );
    assert_eq!(run.resume.as_deref(), Some("sess-1"));
    assert_eq!(&run.args[run.args.len() - 2..], ["--resume", "sess-1"]);
    assert_eq!(run.stdin, "two");
}

#[test]
fn starts_fresh_after_a_compaction_or_another_model_with_the_transcript_as_text() {
    let summary = Message::CompactionSummary(SummaryMessage {
        summary: "we talked about ducks".into(),
        tokens_before: Some(10),
        from_id: None,
        timestamp: 5,
    });
    // The kept answer is older than the summary.
    let messages = vec![
        summary,
        answer("claude-code", Some("sess-1"), 2),
        Message::user_text("more", 6),
    ];
    let run = invocation(
        &ClaudeCodeConfig::default(),
        "sonnet",
        &context(messages),
        &options(),
        |_| None,
    );
    assert_eq!(run.resume, None);
    assert!(run.stdin.contains("we talked about ducks"), "{}", run.stdin);
    assert!(run.stdin.ends_with("Now the user says:\n\nmore"), "{}", run.stdin);

    let other = vec![
        Message::user_text("a", 1),
        answer("anthropic", Some("msg_1"), 2),
        Message::user_text("b", 3),
    ];
    assert_eq!(resume_id(&other), None);
}

/// A Claude Code answer that ran `Bash` itself, then said "One file.".
fn answer_with_a_tool(id: Option<&str>, ts: i64) -> Message {
    let Message::Assistant(mut a) = answer("claude-code", id, ts) else {
        unreachable!()
    };
    a.content = vec![
        AssistantContent::ProviderToolCall(ProviderToolCall {
            id: "toolu_1".into(),
            name: "Bash".into(),
            arguments: serde_json::json!({"command": "ls"}),
            result: Some(ProviderToolResult {
                content: vec![UserContent::Text(TextContent {
                    text: "a.txt".into(),
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
    Message::Assistant(a)
}

#[test]
fn its_own_tool_calls_are_not_resent_on_resume_and_are_text_on_a_fresh_start() {
    let resumed = invocation(
        &ClaudeCodeConfig::default(),
        "sonnet",
        &context(vec![
            Message::user_text("list", 1),
            answer_with_a_tool(Some("sess-1"), 2),
            Message::user_text("next", 3),
        ]),
        &options(),
        |_| None,
    );
    assert_eq!(resumed.resume.as_deref(), Some("sess-1"));
    assert_eq!(resumed.stdin, "next", "claude has its own history");

    // Fresh (after another model answered): the whole history as text, calls in words.
    let Message::Assistant(mut other) = answer("anthropic", None, 4) else {
        unreachable!()
    };
    other.content = vec![AssistantContent::ToolCall(ToolCall {
        id: "c1".into(),
        name: "read".into(),
        arguments: serde_json::json!({"path": "a.txt"}),
        thought_signature: None,
    })];
    let fresh = invocation(
        &ClaudeCodeConfig::default(),
        "sonnet",
        &context(vec![
            Message::user_text("list", 1),
            answer_with_a_tool(Some("sess-1"), 2),
            Message::Assistant(other),
            Message::user_text("next", 5),
        ]),
        &options(),
        |_| None,
    );
    assert_eq!(fresh.resume, None);
    assert_eq!(
        fresh.stdin,
        "The conversation so far:\n\nUser: list\n\nAssistant: Ran tool `Bash` with {\"command\":\"ls\"}\n\
         Result:\na.txt\n\nOne file.\n\nAssistant: Called tool `read` with {\"path\":\"a.txt\"}\n\n\
         Now the user says:\n\nnext"
    );
}

#[test]
fn config_errors_say_what_to_write() {
    let e = ClaudeCodeConfig::new(None, Some("yolo"), None)
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        e.as_deref(),
        Some("`yolo`: use default, acceptEdits, plan or bypassPermissions")
    );
    assert!(ClaudeCodeConfig::new(Some(" ".into()), None, None).is_err());
    assert!(ClaudeCodeConfig::new(None, None, Some(vec!["Read,Write".into()])).is_err());
}

#[test]
#[allow(clippy::unwrap_used)]
fn the_sandbox_opens_claudes_executable_and_its_own_state() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("claude"), "").unwrap();
    let bin = dir.path().display().to_string();
    let env = BTreeMap::from([
        ("PATH".to_owned(), format!("/nonexistent:{bin}")),
        ("HOME".to_owned(), "/home/bot".to_owned()),
    ]);
    let (read, write) = claude_paths("claude", &env);
    assert_eq!(read, vec![dir.path().join("claude")]);
    assert_eq!(
        write,
        vec![
            PathBuf::from("/home/bot/.claude"),
            PathBuf::from("/home/bot/.claude.json")
        ]
    );
    let mut env = env;
    env.insert("CLAUDE_CONFIG_DIR".into(), "/srv/claude".into());
    let (read, write) = claude_paths("/opt/claude/bin/claude", &env);
    assert_eq!(read, vec![PathBuf::from("/opt/claude/bin/claude")]);
    assert_eq!(write, vec![PathBuf::from("/srv/claude")]);
    assert_eq!(claude_paths("not-installed", &env).0, Vec::<PathBuf>::new());
}
