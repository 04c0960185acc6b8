//! Conversations against `@copilotkit/aimock` (`llmock`, a third-party model API mock installed
//! by `./scripts/test.sh` into `.testdeps/`, pinned in `.testdeps/package.json`; its fixture is
//! `fixtures/aimock.json` in this crate), the same for every wire API.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;
use volcanic_abstractions::provider::ToolSpec;
use volcanic_abstractions::{Message, Model, Provider, ProviderContext, StopReason, StreamOptions};

use super::{collect, done, result_for};

/// A running `llmock` serving this crate's `fixtures/aimock.json`, killed (by its own handle)
/// when dropped.
#[derive(Debug)]
pub struct Llmock {
    child: tokio::process::Child,
    /// Its base URL, `http://127.0.0.1:PORT` (without `/v1`).
    pub url: String,
}

impl Drop for Llmock {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

impl Llmock {
    /// Starts `llmock` on a free local port and waits (at most 20 s) until it reports healthy.
    /// Panics when it is not installed, does not start or does not become healthy.
    pub async fn start() -> Self {
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let bin = crate_dir.join("../../.testdeps/node_modules/.bin/llmock");
        assert!(
            bin.exists(),
            "llmock (@copilotkit/aimock) is not installed at {}: run ./scripts/test.sh, which \
             installs the pinned test peers (npm ci --prefix .testdeps) before running the tests",
            bin.display()
        );
        let fixture: PathBuf = crate_dir.join("fixtures/aimock.json");
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
        assert!(Instant::now() < deadline, "llmock did not become healthy at {url}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The `get_weather` tool of the aimock fixture.
fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Current weather of a city".into(),
        parameters: std::sync::Arc::new(json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["city"],
        })),
    }
}

/// Asks `llmock` a geography question through `provider` with the model `model_at(mock URL)`
/// returns, and checks the fixture's text answer arrives with stop reason `stop`.
pub async fn aimock_text_answer(provider: &dyn Provider, model_at: impl Fn(&str) -> Model, options: StreamOptions) {
    let mock = Llmock::start().await;
    let context = ProviderContext {
        system_prompt: "You are a geography assistant.".into(),
        messages: vec![Message::user_text("What is the capital of France?", 1)],
        tools: vec![],
    };
    let events = collect(provider.stream(&model_at(&mock.url), context, options)).await;
    let message = done(&events);
    assert_eq!(message.text(), "The capital of France is Paris.");
    assert_eq!(message.stop_reason, StopReason::Stop);
}

/// Runs the fixture's two-step tool conversation against `llmock`: a `get_weather` call with
/// the fixture's arguments, then, after the tool result went back, the final text answer.
pub async fn aimock_two_step_tool_call(
    provider: &dyn Provider,
    model_at: impl Fn(&str) -> Model,
    options: StreamOptions,
) {
    let mock = Llmock::start().await;
    let model = model_at(&mock.url);
    let mut context = ProviderContext {
        system_prompt: "You are a weather assistant.".into(),
        messages: vec![Message::user_text("What is the weather in Paris?", 1)],
        tools: vec![weather_tool()],
    };
    let events = collect(provider.stream(&model, context.clone(), options.clone())).await;
    let first = done(&events);
    assert_eq!(first.stop_reason, StopReason::ToolUse);
    let call = first.tool_calls().next().cloned().expect("a tool call");
    assert_eq!(call.name, "get_weather");
    assert_eq!(call.arguments, json!({"city": "Paris", "unit": "celsius"}));
    assert!(!call.id.is_empty());

    context.messages.push(Message::Assistant(first));
    context.messages.push(result_for(&call, "21 °C, sunny"));
    let events = collect(provider.stream(&model, context, options)).await;
    let second = done(&events);
    assert_eq!(second.text(), "It is 21 °C and sunny in Paris.");
    assert_eq!(second.stop_reason, StopReason::Stop);
}
