//! What a chat session's current run is, so that a chat whose cap refused a run no one in it
//! asked for is told what was refused (a scheduled job, a watcher's output, a run a restart cut
//! off, another prompt) rather than always "scheduled jobs". A small extension in each chat
//! session ([`factory`]) notes it before each run (`before_agent_start`: its prompt, none for a
//! run continued after a restart) and at each prompt taken during a run (`message_start` of a
//! user message); the session's gate reads it when a request is refused.
//!
//! A scheduled prompt is known by the heading the scheduler puts first (`[Scheduled job …`,
//! `volcanic_scheduler::envelope::heading`), a watcher's by the line the scheduler adds after it
//! (`envelope::watcher_prompt`).

use std::sync::{Arc, Mutex};
use volcanic_abstractions::extensions::events::{BeforeAgentStartEvent, MessageStartEvent};
use volcanic_abstractions::extensions::{BoxError, Extension, ExtensionApi, ExtensionApiExt, ExtensionFactory};
use volcanic_abstractions::messages::Message;
use volcanic_scheduler::envelope;

/// What started the current run of a session, as far as its prompt tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunKind {
    /// A scheduled prompt job's slot.
    #[default]
    ScheduledJob,
    /// A watcher's output.
    Watcher,
    /// A run continued after a restart cut it off (no new prompt).
    Resumed,
    /// Any other prompt (a person's message, an A2A result, a feature's).
    Other,
}

impl RunKind {
    /// The kind of a run whose prompt is `prompt` (empty: a continued run).
    pub fn of_prompt(prompt: &str) -> RunKind {
        if prompt.is_empty() {
            RunKind::Resumed
        } else if !prompt.starts_with(envelope::HEADING_START) {
            RunKind::Other
        } else if prompt.contains(envelope::WATCHER_LINE) {
            RunKind::Watcher
        } else {
            RunKind::ScheduledJob
        }
    }
}

/// The current run's kind of one session, shared by its extension and its gate.
pub type RunCell = Arc<Mutex<RunKind>>;

struct RunWatch {
    cell: RunCell,
}

/// The extension that keeps `cell` up to date for one session.
pub fn factory(cell: RunCell) -> ExtensionFactory {
    Arc::new(move || Box::new(RunWatch { cell: cell.clone() }) as Box<dyn Extension>)
}

fn set(cell: &RunCell, kind: RunKind) {
    *cell.lock().unwrap_or_else(|e| e.into_inner()) = kind;
}

#[async_trait::async_trait]
impl Extension for RunWatch {
    fn name(&self) -> &str {
        "allowance-runs"
    }

    async fn activate(&self, api: Arc<dyn ExtensionApi>) -> Result<(), BoxError> {
        let cell = self.cell.clone();
        api.on::<BeforeAgentStartEvent, _>(move |e, _ctx, _cancel| {
            set(&cell, RunKind::of_prompt(&e.prompt));
            Box::pin(async { Ok(()) })
        });
        let cell = self.cell.clone();
        api.on::<MessageStartEvent, _>(move |e, _ctx, _cancel| {
            if let Message::User(u) = &e.message {
                set(&cell, RunKind::of_prompt(&u.content.text()));
            }
            Box::pin(async { Ok(()) })
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_kind_comes_from_its_prompt() {
        let job = "[Scheduled job a1 · every 30 s · slot Mon 7 Dec 09:00 UTC. This message comes from the scheduler, not typed by the user now.]\nReport the weather.";
        assert_eq!(RunKind::of_prompt(job), RunKind::ScheduledJob);
        // The scheduler's own watcher prompt.
        let heading = job.lines().next().unwrap_or_default();
        let watcher = volcanic_scheduler::envelope::watcher_prompt(heading, "check.sh", None, "disk 91% full");
        assert_eq!(RunKind::of_prompt(&watcher), RunKind::Watcher);
        assert_eq!(RunKind::of_prompt(""), RunKind::Resumed);
        assert_eq!(RunKind::of_prompt("A2A result r1. The agent answered"), RunKind::Other);
        // A person quoting the line is not a watcher: the heading comes first.
        assert_eq!(RunKind::of_prompt("hi\nThe watcher script `x` printed"), RunKind::Other);
    }
}
