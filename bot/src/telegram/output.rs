//! What a chat sees while its agent works: the typing action (refreshed), one progress message
//! with the tool names (edited at most about once a second, deleted when the run ends), and the
//! final answers rendered from Markdown to Telegram HTML in chunks. Fed by the session's events;
//! delivery runs in its own task so the agent loop never waits for Telegram.

use super::api::{Target, Tg};
use super::progress_marks::ProgressMarks;
use super::render::markdown_chunks;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::messages::StopReason;

/// Typing refresh period (Telegram shows the action for about 5 s).
const TYPING_EVERY: Duration = Duration::from_secs(4);
/// Minimum gap between progress edits.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug)]
enum Out {
    RunStart,
    Tool(String),
    Answer(String),
    Error(String),
    RunEnd,
    /// Answered once everything queued before it was delivered.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// Delivery of one chat's (or topic's) output.
#[derive(Debug, Clone)]
pub struct Output {
    tx: mpsc::UnboundedSender<Out>,
    /// Answer chunks Telegram did not take (after the plain-text fallback and flood waits).
    failed: Arc<std::sync::atomic::AtomicU64>,
}

impl Output {
    /// Starts the delivery task for `to`.
    /// `marks` remembers the progress message on disk while it is shown.
    pub fn spawn(tg: Arc<Tg>, marks: Arc<ProgressMarks>, to: Target) -> Output {
        let (tx, rx) = mpsc::unbounded_channel();
        let failed = Arc::new(std::sync::atomic::AtomicU64::new(0));
        tokio::spawn(deliver(tg, marks, to, rx, failed.clone()));
        Output { tx, failed }
    }

    /// How many answer chunks could not be delivered so far (compare before and after a run).
    pub fn failed_sends(&self) -> u64 {
        self.failed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Turns a session event into output (called synchronously on the agent loop).
    pub fn on_event(&self, e: &AgentSessionEvent) {
        let out = match e {
            AgentSessionEvent::AgentStart => Some(Out::RunStart),
            AgentSessionEvent::ToolExecutionStart { tool_name, .. } => Some(Out::Tool(tool_name.clone())),
            AgentSessionEvent::TurnEnd { message, .. }
                if message.tool_calls().next().is_none()
                    && matches!(message.stop_reason, StopReason::Stop | StopReason::Length) =>
            {
                let text = message.text();
                (!text.trim().is_empty()).then_some(Out::Answer(text))
            }
            // The turn's final message: a context overflow recovered by compaction is not shown.
            AgentSessionEvent::TurnEnd { message: a, .. } if a.stop_reason == StopReason::Error => Some(Out::Error(
                a.error_message
                    .clone()
                    .unwrap_or_else(|| "the model call failed".into()),
            )),
            AgentSessionEvent::AgentSettled => Some(Out::RunEnd),
            _ => None,
        };
        if let Some(o) = out {
            let _ = self.tx.send(o);
        }
    }

    /// Waits until everything queued so far was delivered (shutdown, scheduled runs).
    pub async fn flush(&self) {
        let (done, delivered) = tokio::sync::oneshot::channel();
        if self.tx.send(Out::Flush(done)).is_ok() {
            let _ = delivered.await;
        }
    }

    /// Sends a notice (Markdown) in order with the answers.
    pub fn notice(&self, markdown: impl Into<String>) {
        let _ = self.tx.send(Out::Answer(markdown.into()));
    }
}

async fn deliver(
    tg: Arc<Tg>,
    marks: Arc<ProgressMarks>,
    to: Target,
    mut rx: mpsc::UnboundedReceiver<Out>,
    failed: Arc<std::sync::atomic::AtomicU64>,
) {
    let mut running = false;
    let mut tools: Vec<String> = Vec::new();
    let mut progress: Option<i32> = None;
    let mut dirty = false;
    let mut typing = tokio::time::interval(TYPING_EVERY);
    let mut edits = tokio::time::interval(PROGRESS_EVERY);
    loop {
        tokio::select! {
            msg = rx.recv() => {
                let Some(msg) = msg else { break };
                match msg {
                    Out::RunStart => {
                        running = true;
                        tg.typing(to).await;
                        typing.reset();
                    }
                    Out::Tool(name) => {
                        tools.push(name);
                        if progress.is_none() {
                            if let Ok(m) = tg.send_plain(to, &progress_text(&tools), None).await {
                                progress = Some(m.id.0);
                                marks.set(to, m.id.0);
                            }
                            edits.reset();
                        } else {
                            dirty = true;
                        }
                    }
                    Out::Answer(md) => {
                        for chunk in markdown_chunks(&md) {
                            if let Err(e) = tg.send_html(to, &chunk.html, &chunk.source, None).await {
                                failed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                                tracing::error!(chat = to.chat_id, "cannot deliver the answer: {e}");
                            }
                        }
                    }
                    Out::Error(msg) => {
                        if let Err(e) = tg.send_plain(to, &format!("⚠️ {msg}"), None).await {
                            tracing::error!(chat = to.chat_id, "cannot deliver an error notice: {e}");
                        }
                    }
                    Out::RunEnd => {
                        running = false;
                        dirty = false;
                        tools.clear();
                        if let Some(id) = progress.take() {
                            tg.delete(to, id).await;
                            marks.clear(to);
                        }
                    }
                    Out::Flush(done) => {
                        let _ = done.send(());
                    }
                }
            }
            _ = typing.tick(), if running => tg.typing(to).await,
            _ = edits.tick(), if dirty => {
                if let Some(id) = progress {
                    tg.edit_progress(to, id, &progress_text(&tools)).await;
                }
                dirty = false;
            }
        }
    }
}

/// The progress line: the tools used so far, short.
fn progress_text(tools: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut names: Vec<&str> = tools.iter().map(String::as_str).collect();
    let more = names.len().saturating_sub(SHOWN);
    names.drain(..more);
    let mut s = format!("⚙️ {}", names.join(" → "));
    if more > 0 {
        s = format!("⚙️ … +{more} → {}", names.join(" → "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_text_keeps_the_last_tools() {
        assert_eq!(progress_text(&["bash".into(), "read".into()]), "⚙️ bash → read");
        let many: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
        assert!(progress_text(&many).starts_with("⚙️ … +2 → t2"));
    }
}
