//! `OpenAiCompletionsProvider` against `@copilotkit/aimock` (`llmock`), a third-party mock of
//! the Chat Completions API, installed by `./scripts/test.sh` into `.testdeps/` (pinned in
//! `.testdeps/package.json`). Fixtures: `tests/fixtures/aimock.json`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::json;
use volcanic_abstractions::provider::ToolSpec;
use volcanic_abstractions::{
    Message, Provider, ProviderContext, StopReason, TextContent, ToolResultMessage, UserContent,
};

use super::support::{collect, done, model, options, provider};

/// A running `llmock`, killed (by its own handle) when dropped.
struct Llmock {
    child: tokio::process::Child,
    url: String,
}

impl Drop for Llmock {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

async fn start_llmock() -> Llmock {
    let bin = repo_root().join(".testdeps/node_modules/.bin/llmock");
    assert!(
        bin.exists(),
        "llmock (@copilotkit/aimock) is not installed at {}: run ./scripts/test.sh, which \
         installs the pinned test peers (npm ci --prefix .testdeps) before running the tests",
        bin.display()
    );
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/aimock.json");
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
        listener.local_addr().expect("local addr").port()
    };
    let child = tokio::process::Command::new(&bin)
        .args(["-p", &port.to_string(), "-h", "127.0.0.1", "-f"])
        .arg(&fixture)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("llmock starts");
    let mock = Llmock {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    wait_healthy(&mock.url).await;
    mock
}

async fn wait_healthy(url: &str) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let health = client.get(format!("{url}/__aimock/health")).send().await;
        if health.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "llmock did not become healthy at {url}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Current weather of a city".into(),
        parameters: json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["city"],
        }),
    }
}

#[tokio::test]
async fn aimock_text_answer() {
    let mock = start_llmock().await;
    let context = ProviderContext {
        system_prompt: "You are a geography assistant.".into(),
        messages: vec![Message::user_text("What is the capital of France?", 1)],
        tools: vec![],
    };
    let events =
        collect(provider().stream(&model(&format!("{}/v1", mock.url)), context, options())).await;
    let message = done(&events);
    assert_eq!(message.text(), "The capital of France is Paris.");
    assert_eq!(message.stop_reason, StopReason::Stop);
}

#[tokio::test]
async fn aimock_two_step_tool_call() {
    let mock = start_llmock().await;
    let provider = provider();
    let model = model(&format!("{}/v1", mock.url));
    let mut context = ProviderContext {
        system_prompt: "You are a weather assistant.".into(),
        messages: vec![Message::user_text("What is the weather in Paris?", 1)],
        tools: vec![weather_tool()],
    };
    let events = collect(provider.stream(&model, context.clone(), options())).await;
    let first = done(&events);
    assert_eq!(first.stop_reason, StopReason::ToolUse);
    let call = first.tool_calls().next().cloned().expect("a tool call");
    assert_eq!(call.name, "get_weather");
    assert_eq!(call.arguments, json!({"city": "Paris", "unit": "celsius"}));
    assert!(!call.id.is_empty());

    context.messages.push(Message::Assistant(first));
    context
        .messages
        .push(Message::ToolResult(ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: vec![UserContent::Text(TextContent {
                text: "21 °C, sunny".into(),
                text_signature: None,
            })],
            details: None,
            is_error: false,
            timestamp: 3,
        }));
    let events = collect(provider.stream(&model, context, options())).await;
    let second = done(&events);
    assert_eq!(second.text(), "It is 21 °C and sunny in Paris.");
    assert_eq!(second.stop_reason, StopReason::Stop);
}
