//! The A2A TCK's behaviours as an [`Executor`] for `volcanic-a2a-server` ([`ScriptedExecutor`]),
//! chosen by the message id's prefix (the TCK prefixes ids with `tck-`), and [`serve`], which
//! runs the very server the bot mounts with it on `127.0.0.1` (the `a2a-tck-server` bin and the
//! tests use it).
//!
//! - `tck-complete-task` → completed, status message "Hello from TCK";
//! - `tck-artifact-text` / `-file` / `-file-url` / `-data` → completed with that artifact;
//! - `tck-message-response` → a direct message "Direct message response";
//! - `tck-input-required` → input-required (the answer, with the task id, completes it);
//! - `tck-reject-task` → rejected; `tck-fail` → failed;
//! - `tck-stream-002` → completed; `tck-stream-artifact-chunked` → working, two chunks, completed;
//! - `tck-stream-*` (others) → working, artifact, completed;
//! - `test-resubscribe-message-id` / `slow` → working for [`SLOW`], then completed (cancelable);
//! - anything else → completed with the artifact `echo: <text>`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use a2a::{Artifact, Part, PartContent, TaskState};
use async_trait::async_trait;
use volcanic_a2a_server::{A2aServer, ExecRequest, Executor, ServerConfig, TaskEvents};

/// How long the slow behaviours work before completing.
pub const SLOW: Duration = Duration::from_secs(5);

/// The scripted executor.
#[derive(Debug, Default, Clone)]
pub struct ScriptedExecutor;

fn artifact(name: &str, parts: Vec<Part>) -> Artifact {
    Artifact {
        artifact_id: a2a::new_artifact_id(),
        name: Some(name.to_owned()),
        description: None,
        parts,
        metadata: None,
        extensions: None,
    }
}

fn first_text(req: &ExecRequest) -> String {
    req.message
        .parts
        .iter()
        .find_map(|p| match &p.content {
            PartContent::Text(t) => Some(t.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[async_trait]
impl Executor for ScriptedExecutor {
    async fn execute(&self, req: ExecRequest, ev: TaskEvents) {
        let id = req.message.message_id.to_ascii_lowercase();
        let text = first_text(&req);
        let key = if id.starts_with("tck-") || id.starts_with("test-") {
            id.as_str()
        } else {
            text.as_str()
        };
        if key.starts_with("tck-message-response") || key.starts_with("message") {
            ev.reply(vec![Part::text("Direct message response")]).await;
        } else if key.starts_with("tck-input-required") || key.starts_with("ask") {
            ev.status(TaskState::InputRequired, Some("Please provide more input"))
                .await;
        } else if key.starts_with("tck-reject-task") {
            ev.status(TaskState::Rejected, Some("Task rejected by TCK executor"))
                .await;
        } else if key.starts_with("tck-fail") || key.starts_with("fail") {
            ev.status(TaskState::Failed, Some("failed on purpose")).await;
        } else if key.starts_with("tck-artifact-text") {
            ev.artifact(
                artifact("text", vec![Part::text("Generated text content")]),
                false,
                true,
            )
            .await;
            ev.status(TaskState::Completed, None).await;
        } else if key.starts_with("tck-artifact-file-url") {
            let part = Part::url("https://example.com/output.txt")
                .with_filename("output.txt")
                .with_media_type("text/plain");
            ev.artifact(artifact("file-url", vec![part]), false, true).await;
            ev.status(TaskState::Completed, None).await;
        } else if key.starts_with("tck-artifact-file") {
            let part = Part::raw(b"tck".to_vec())
                .with_filename("output.txt")
                .with_media_type("text/plain");
            ev.artifact(artifact("file", vec![part]), false, true).await;
            ev.status(TaskState::Completed, None).await;
        } else if key.starts_with("tck-artifact-data") {
            let part = Part::data(serde_json::json!({"key": "value", "count": 42}));
            ev.artifact(artifact("data", vec![part]), false, true).await;
            ev.status(TaskState::Completed, None).await;
        } else if key.starts_with("tck-stream-002") {
            ev.status(TaskState::Completed, Some("Hello from TCK")).await;
        } else if key.starts_with("tck-stream-artifact-chunked") {
            ev.status(TaskState::Working, None).await;
            let first = artifact("chunked", vec![Part::text("chunk one ")]);
            let mut second = first.clone();
            second.parts = vec![Part::text("chunk two")];
            ev.artifact(first, false, false).await;
            ev.artifact(second, true, true).await;
            ev.status(TaskState::Completed, None).await;
        } else if key.starts_with("tck-stream") {
            ev.status(TaskState::Working, None).await;
            ev.artifact(artifact("stream", vec![Part::text("Streamed content")]), false, true)
                .await;
            ev.status(TaskState::Completed, None).await;
        } else if key.starts_with("test-resubscribe") || key.starts_with("slow") {
            ev.status(TaskState::Working, Some("working")).await;
            tokio::select! {
                () = tokio::time::sleep(SLOW) => ev.status(TaskState::Completed, Some("done")).await,
                () = req.cancel.cancelled() => {}
            }
        } else if key.starts_with("tck-") {
            ev.status(TaskState::Completed, Some("Hello from TCK")).await;
        } else {
            ev.artifact(
                artifact("answer", vec![Part::text(format!("echo: {text}"))]),
                false,
                true,
            )
            .await;
            ev.status(TaskState::Completed, None).await;
        }
    }
}

/// Serves `config` with the scripted executor on `addr` until the process ends; returns the
/// bound address through `bound` once listening.
///
/// Errors: the server could not be built (see [`A2aServer::new`]) or the address not bound.
pub async fn serve(
    config: ServerConfig,
    anonymous: Option<String>,
    addr: SocketAddr,
    bound: impl FnOnce(SocketAddr),
) -> Result<(), String> {
    let server = A2aServer::with_anonymous(config, Arc::new(ScriptedExecutor), anonymous).map_err(|e| e.to_string())?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("bind {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    bound(local);
    // SSE events are small writes: without TCP_NODELAY each waits for the peer's delayed ACK.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, server.router()).await.map_err(|e| e.to_string())
}

#[cfg(test)]
#[path = "a2a_server_tests.rs"]
mod tests;
