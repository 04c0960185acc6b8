//! Helpers for the model server's own tests: a client, posting in each format, SSE parsing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::ModelServer;

/// A reqwest client (plain HTTP; the provider install keeps reqwest's TLS setup from panicking).
pub(crate) fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().build().expect("reqwest client")
}

/// Starts a server.
pub(crate) async fn server() -> ModelServer {
    ModelServer::start().await.expect("model server starts")
}

/// A minimal valid streaming Anthropic request body with these messages.
pub(crate) fn anthropic_body(messages: Value) -> Value {
    json!({"model": "claude-test", "max_tokens": 1024, "stream": true, "messages": messages})
}

/// A minimal valid streaming OpenAI request body with these messages, asking for usage.
pub(crate) fn openai_body(messages: Value) -> Value {
    json!({
        "model": "gpt-test",
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": messages,
    })
}

/// POSTs to `/v1/messages` with the headers the real API wants.
pub(crate) async fn post_anthropic(server: &ModelServer, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/v1/messages", server.anthropic_base_url()))
        .header("x-api-key", "sk-ant-test")
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .expect("request reaches the server")
}

/// POSTs to `/chat/completions` under the OpenAI base URL with a bearer key.
pub(crate) async fn post_openai(server: &ModelServer, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/chat/completions", server.openai_base_url()))
        .bearer_auth("sk-test")
        .json(body)
        .send()
        .await
        .expect("request reaches the server")
}

/// One parsed SSE event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SseEvent {
    /// The `event:` name, if any.
    pub(crate) name: Option<String>,
    /// The `data:` payload.
    pub(crate) data: String,
}

impl SseEvent {
    /// The payload as JSON.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.data).expect("SSE data is JSON")
    }
}

/// Parses a complete SSE text into events (blank-line separated).
pub(crate) fn parse_sse(text: &str) -> Vec<SseEvent> {
    text.split("\n\n")
        .filter(|chunk| !chunk.trim().is_empty())
        .map(|chunk| {
            let mut name = None;
            let mut data = Vec::new();
            for line in chunk.lines() {
                if let Some(value) = line.strip_prefix("event: ") {
                    name = Some(value.to_owned());
                } else if let Some(value) = line.strip_prefix("data: ") {
                    data.push(value);
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            SseEvent {
                name,
                data: data.join("\n"),
            }
        })
        .collect()
}

/// Reads a body chunk by chunk until it ends or fails; returns the text received and whether
/// the transfer failed.
pub(crate) async fn read_until_end(response: reqwest::Response) -> (String, bool) {
    use futures::StreamExt;
    let mut stream = response.bytes_stream();
    let mut received = Vec::new();
    let mut failed = false;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => received.extend_from_slice(&bytes),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    (String::from_utf8(received).expect("UTF-8 body"), failed)
}
