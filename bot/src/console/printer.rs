//! The console's output: session events rendered for the terminal (the answer streamed, tool
//! calls, errors) or as JSON lines.

use super::{Mode, terminal};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::messages::{Message, StopReason};
use volcanic_abstractions::provider::AssistantMessageEvent;

/// Renders session events to the terminal (text) or as JSON lines.
pub(super) struct Printer {
    pub(super) mode: Mode,
    interactive: bool,
    /// Styles the answer's Markdown (interactive text mode on a terminal only).
    markdown: Option<std::sync::Mutex<terminal::LiveAnswer>>,
    /// The model wrote text in the current run (a stopped run says so differently).
    pub(super) wrote: AtomicBool,
}

impl Printer {
    pub(super) fn new(mode: Mode, interactive: bool) -> Self {
        use std::io::IsTerminal;
        let styled = interactive && mode == Mode::Text && std::io::stdout().is_terminal();
        Printer {
            mode,
            interactive,
            markdown: styled.then(|| std::sync::Mutex::new(terminal::LiveAnswer::default())),
            wrote: AtomicBool::new(false),
        }
    }

    /// Writes what the Markdown styler still holds (the answer's last line).
    fn finish_markdown(&self, stdout: &mut impl Write) {
        if let Some(md) = &self.markdown {
            let rest = md.lock().unwrap_or_else(|e| e.into_inner()).finish(columns());
            if !rest.is_empty() {
                let _ = write!(stdout, "{rest}");
                let _ = stdout.flush();
            }
        }
    }

    /// A run was stopped and has ended: the text written so far stays, marked, as Telegram's
    /// Stop leaves it ([`crate::telegram::outbound::live::STOPPED_MARK`]).
    pub(super) fn stopped(&self) {
        self.finish_markdown(&mut std::io::stdout().lock());
        let json = self.mode == Mode::Json;
        if self.wrote.load(Ordering::Relaxed) {
            say!(json, "\n⏹ Stopped.");
        } else {
            say!(json, "\nStopped.");
        }
    }

    pub(super) fn on_event(&self, e: &AgentSessionEvent) {
        // The stdout lock keeps one event's output together.
        let mut stdout = std::io::stdout().lock();
        match self.mode {
            Mode::Json => {
                if let Ok(line) = serde_json::to_string(e) {
                    let _ = writeln!(stdout, "{line}");
                }
            }
            Mode::Text if self.interactive => match e {
                AgentSessionEvent::MessageUpdate {
                    assistant_message_event: AssistantMessageEvent::TextDelta { delta, .. },
                    ..
                } => {
                    self.wrote.store(true, Ordering::Relaxed);
                    let shown = match &self.markdown {
                        Some(md) => md.lock().unwrap_or_else(|e| e.into_inner()).push(delta, columns()),
                        None => delta.clone(),
                    };
                    let _ = write!(stdout, "{shown}");
                    let _ = stdout.flush();
                }
                AgentSessionEvent::MessageEnd {
                    message: Message::Assistant(_),
                } => self.finish_markdown(&mut stdout),
                AgentSessionEvent::ToolExecutionStart { tool_name, args, .. } => {
                    self.finish_markdown(&mut stdout);
                    let _ = writeln!(stdout, "\n→ {tool_name} {}", short(&args.to_string(), 200));
                }
                AgentSessionEvent::ToolExecutionEnd {
                    is_error: true, result, ..
                } => {
                    let text: String = result
                        .content
                        .iter()
                        .filter_map(|c| match c {
                            volcanic_abstractions::messages::UserContent::Text(t) => Some(t.text.as_str()),
                            volcanic_abstractions::messages::UserContent::Image(_) => None,
                        })
                        .collect();
                    let _ = writeln!(stdout, "  ✗ {}", short(&text, 300));
                }
                // The turn's final message: an overflow recovered by compaction is not shown.
                AgentSessionEvent::TurnEnd { message: a, .. } if a.stop_reason == StopReason::Error => {
                    let _ = writeln!(stdout, "\nerror: {}", a.error_message.clone().unwrap_or_default());
                }
                AgentSessionEvent::CompactionStart { reason } if reason != "manual" => {
                    let _ = writeln!(stdout, "\n(compacting the conversation: {reason})");
                }
                AgentSessionEvent::CompactionEnd {
                    reason,
                    success: false,
                    error_message,
                } if reason != "manual" => {
                    let _ = writeln!(
                        stdout,
                        "(compaction failed: {})",
                        error_message.as_deref().unwrap_or("?")
                    );
                }
                AgentSessionEvent::ModelFallback {
                    from,
                    to,
                    error_message,
                } => {
                    self.finish_markdown(&mut stdout);
                    let _ = writeln!(stdout, "\n{}", fallback_note(from, to, error_message));
                }
                AgentSessionEvent::ExtensionError {
                    extension,
                    event,
                    error,
                } => {
                    let _ = writeln!(stdout, "\nextension {extension} failed on {event}: {error}");
                }
                AgentSessionEvent::AgentStart
                | AgentSessionEvent::AgentEnd { .. }
                | AgentSessionEvent::AgentSettled
                | AgentSessionEvent::TurnStart
                | AgentSessionEvent::TurnEnd { .. }
                | AgentSessionEvent::MessageStart { .. }
                | AgentSessionEvent::MessageUpdate { .. }
                | AgentSessionEvent::MessageEnd { .. }
                | AgentSessionEvent::ToolExecutionUpdate { .. }
                | AgentSessionEvent::ToolExecutionEnd { .. }
                | AgentSessionEvent::AutoRetryStart { .. }
                | AgentSessionEvent::AutoRetryEnd { .. }
                | AgentSessionEvent::CompactionStart { .. }
                | AgentSessionEvent::CompactionEnd { .. }
                | AgentSessionEvent::SessionChanged { .. } => {}
            },
            // A one-shot answer is stdout alone: the note goes to stderr.
            Mode::Text => {
                if let AgentSessionEvent::ModelFallback {
                    from,
                    to,
                    error_message,
                } = e
                {
                    eprintln!("{}", fallback_note(from, to, error_message));
                }
            }
        }
    }
}

/// The line saying a fallback model took over the turn.
fn fallback_note(from: &str, to: &str, error: &str) -> String {
    format!("↪ {from} failed ({error}); answering with {to}")
}

/// The terminal's width in columns (80 when stdout does not say).
fn columns() -> usize {
    rustix::termios::tcgetwinsize(std::io::stdout())
        .ok()
        .map(|w| usize::from(w.ws_col))
        .filter(|c| *c > 0)
        .unwrap_or(80)
}

fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        s.chars().take(max).collect::<String>() + "…"
    }
}
