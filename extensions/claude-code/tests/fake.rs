//! The provider against the test kit's fake `claude` (`volcanic_testkit::fake_claude`): a
//! streamed answer, a resumed conversation, Claude's own tool calls, an error result, a login
//! failure, a crash, a missing binary and an aborted slow turn.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::StreamExt;
use pretty_assertions::assert_eq;
use std::time::Duration;
use volcanic_abstractions::{
    AssistantContent, AssistantMessage, AssistantMessageEvent as Ev, Message, Provider, ProviderContext, StopReason,
    StreamOptions,
};
use volcanic_claude_code::{ClaudeCodeConfig, ClaudeCodeProvider, models};

struct Setup {
    provider: ClaudeCodeProvider,
    dir: tempfile::TempDir,
}

fn setup(command: Option<String>) -> Setup {
    let command = command.unwrap_or_else(|| {
        volcanic_testkit::fake_claude::path()
            .unwrap_or_else(|e| panic!("the fake claude is needed: {e}"))
            .display()
            .to_string()
    });
    let config = ClaudeCodeConfig::new(Some(command), Some("plan"), Some(vec!["Read".into()])).unwrap();
    Setup {
        provider: ClaudeCodeProvider::new(config),
        dir: tempfile::tempdir().unwrap(),
    }
}

impl Setup {
    fn context(&self, messages: Vec<Message>) -> ProviderContext {
        ProviderContext {
            system_prompt: "You are helpful.".into(),
            messages,
            tools: Vec::new(),
        }
    }

    /// The session's place, as the runtime passes it.
    fn options(&self) -> StreamOptions {
        StreamOptions {
            cwd: Some(self.dir.path().to_path_buf()),
            time_zone: Some("Europe/Berlin".into()),
            ..StreamOptions::default()
        }
    }

    /// All events of one call with `options`, within 30 s.
    async fn call_with(&self, messages: Vec<Message>, options: StreamOptions) -> Vec<Ev> {
        let model = models().remove(0);
        let stream = self.provider.stream(&model, self.context(messages), options);
        tokio::time::timeout(Duration::from_secs(30), stream.collect::<Vec<_>>())
            .await
            .expect("the stream ends within 30 s")
    }

    async fn call(&self, text: &str) -> Vec<Ev> {
        self.call_with(vec![Message::user_text(text, 1)], self.options()).await
    }
}

fn last(events: &[Ev]) -> (StopReason, AssistantMessage) {
    match events.last() {
        Some(Ev::Done { reason, message }) => (*reason, message.clone()),
        Some(Ev::Error { reason, error }) => (*reason, error.clone()),
        other => panic!("no terminal event: {other:?}"),
    }
}

#[tokio::test]
async fn an_answer_streams_with_usage_cost_and_the_session_id() {
    let s = setup(None);
    let events = s.call("hello there").await;
    let names: Vec<&str> = events.iter().map(Ev::name).collect();
    assert_eq!(
        names,
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "done"
        ]
    );
    let (reason, message) = last(&events);
    assert_eq!(reason, StopReason::Stop);
    let text = message.text();
    let cwd = s.dir.path().display().to_string();
    assert!(text.starts_with("fake claude (new session fake-"), "{text}");
    assert!(text.contains(", model sonnet, TZ Europe/Berlin, cwd "), "{text}");
    assert!(text.contains(&cwd) && text.ends_with("): hello there"), "{text}");
    let session = message.response_id.clone().unwrap();
    assert!(text.contains(&session), "{text}");
    assert_eq!((message.usage.input, message.usage.output), (10, 5));
    assert_eq!((message.usage.cache_read, message.usage.cache_write), (30, 20));
    assert_eq!(message.usage.cost.total, 0.0123);
}

#[tokio::test]
async fn the_next_turn_resumes_the_session_with_only_the_new_text() {
    let s = setup(None);
    let (_, first) = last(&s.call("first").await);
    let session = first.response_id.clone().unwrap();
    let messages = vec![
        Message::user_text("first", 1),
        Message::Assistant(first),
        Message::user_text("second", 3),
    ];
    let (reason, second) = last(&s.call_with(messages, StreamOptions::default()).await);
    assert_eq!(reason, StopReason::Stop);
    assert!(
        second
            .text()
            .starts_with(&format!("fake claude (resumed session {session}, ")),
        "{}",
        second.text()
    );
    assert!(second.text().ends_with("): second"), "{}", second.text());
    assert_eq!(second.response_id, Some(session));
}

#[tokio::test]
async fn claudes_own_tool_calls_are_paired_provider_tool_calls_never_tool_calls() {
    let s = setup(None);
    let events = s.call("look around [tool]").await;
    volcanic_provider_support::testing::assert_well_formed(&events);
    assert!(events.iter().all(|e| !e.name().starts_with("toolcall")), "{events:?}");
    let progress: Vec<&str> = events
        .iter()
        .map(|e| e.name())
        .filter(|n| n.starts_with("provider_"))
        .collect();
    assert_eq!(progress, ["provider_toolcall", "provider_toolresult"]);
    let (reason, message) = last(&events);
    assert_eq!(reason, StopReason::Stop);
    assert_eq!(message.tool_calls().count(), 0);
    let blocks: Vec<String> = message
        .content
        .iter()
        .map(|c| match c {
            AssistantContent::ProviderToolCall(call) => format!("ran: {}", call.as_text()),
            AssistantContent::Thinking(t) => format!("thinking: {}", t.thinking),
            AssistantContent::Text(_) => "text".into(),
            AssistantContent::ToolCall(call) => format!("call: {}", call.name),
        })
        .collect();
    assert_eq!(
        blocks,
        [
            "ran: Ran tool `Bash` with {\"command\":\"ls\"}\nResult:\nnotes.txt",
            "thinking: Considering.",
            "text"
        ]
    );
}

#[tokio::test]
async fn an_error_result_a_login_failure_and_a_crash_are_error_events_saying_what_to_do() {
    let s = setup(None);
    let (reason, m) = last(&s.call("[error]").await);
    assert_eq!(reason, StopReason::Error);
    assert_eq!(
        m.error_message.as_deref(),
        Some("Claude Code failed: error_during_execution: the fake failed during execution")
    );
    assert_eq!(m.usage.cost.total, 0.0123, "an error result still costs");

    let (_, m) = last(&s.call("[login]").await);
    let said = m.error_message.unwrap();
    assert!(
        said.contains("Please run /login") && said.contains("claude setup-token"),
        "{said}"
    );

    let (reason, m) = last(&s.call("[crash]").await);
    assert_eq!(reason, StopReason::Error);
    let said = m.error_message.unwrap();
    assert!(
        said.starts_with("Claude Code: it exited (exit status: 1) without a result"),
        "{said}"
    );
    assert!(said.contains("crashed on purpose"), "{said}");
}

#[tokio::test]
async fn a_missing_claude_says_to_install_it() {
    let s = setup(Some("/nonexistent/claude".into()));
    let (reason, m) = last(&s.call("hi").await);
    assert_eq!(reason, StopReason::Error);
    let said = m.error_message.unwrap();
    assert!(
        said.contains("`/nonexistent/claude` was not found: install Claude Code"),
        "{said}"
    );
    assert!(said.contains("/login"), "{said}");
}

#[tokio::test]
async fn an_abort_kills_a_slow_turn_and_ends_the_stream_aborted() {
    let s = setup(None);
    let cancel = tokio_util::sync::CancellationToken::new();
    let options = StreamOptions {
        cancel: cancel.clone(),
        ..s.options()
    };
    let model = models().remove(0);
    let mut stream = s.provider.stream(
        &model,
        s.context(vec![Message::user_text("take your time [slow]", 1)]),
        options,
    );
    let mut events = Vec::new();
    // Wait until the fake is mid-answer, then abort.
    while let Some(e) = tokio::time::timeout(Duration::from_secs(30), stream.next())
        .await
        .unwrap()
    {
        let first_text = matches!(e, Ev::TextDelta { .. });
        events.push(e);
        if first_text {
            assert!(running_in(s.dir.path()), "the fake runs in the session's directory");
            cancel.cancel();
        }
    }
    let (reason, m) = last(&events);
    assert_eq!(reason, StopReason::Aborted);
    assert_eq!(m.text(), "fake claude ");
    // The fake sleeps 120 s; the stream ended because its group was killed, not because it finished.
    assert!(!events.iter().any(|e| matches!(e, Ev::Done { .. })));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while running_in(s.dir.path()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the fake still runs after the abort"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whether any process runs with `dir` as its working directory (Linux `/proc`).
fn running_in(dir: &std::path::Path) -> bool {
    let dir = dir.canonicalize().unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
        .any(|e| std::fs::read_link(e.path().join("cwd")).is_ok_and(|cwd| cwd == dir))
}

#[test]
fn the_fake_refuses_a_foreign_environment_variable() {
    let env = [("TELEGRAM_BOT_TOKEN".to_owned(), "123:abc".to_owned())].into();
    let args: Vec<String> = [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
    ]
    .map(str::to_owned)
    .into();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = volcanic_testkit::fake_claude::run(&args, &env, "hi", &mut out, &mut err);
    assert_eq!(code, 3);
    assert!(String::from_utf8_lossy(&err).contains("unexpected environment variable TELEGRAM_BOT_TOKEN"));
}
