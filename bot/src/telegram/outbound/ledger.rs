//! Which accepted updates a conversation's session is working on, message by message, for the journal.
//!
//! A prompt (one message, an album or a split paste: a group of `update_id`s) is *queued* when it
//! is handed to the session, becomes *active* when its user message is added to the transcript
//! (`message_start`, which the session emits before it writes the message: a process killed in
//! between leaves a `started` mark whose prompt recovery does not find, and handles as new, never
//! a prompt in the transcript the journal does not know reached it; matched by the digest of its
//! text, so follow-ups queued behind a running run get their own marks when they are taken, not
//! the run's), is marked `tool` (durably, before
//! the tool runs) when a tool starts while it is active, and is *answered* by the next final
//! assistant message (no tool calls), whose delivery marks it `done` ([`Output`](crate::telegram::outbound::output)).
//! While that message is written, each text delta names the prompts it answers (without taking
//! them): a live answer journals the chunks it sends early under them.
//! A run that ends without an answer (an error, `/stop`, nothing to say) finishes its active
//! groups when it settles. At shutdown a run cut off keeps its marks, so the restart recovers its
//! messages ([`recovery`](crate::telegram::conversation::recovery)).

use crate::telegram::inbound::journal::{Answering, Journal, Progress, prompt_digest};
use crate::telegram::outbound::ui::Asker;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::messages::{Message, StopReason};
use volcanic_abstractions::provider::AssistantMessageEvent;

/// One prompt's updates (or the key of a prompt a feature handed in).
#[derive(Debug)]
struct Group {
    of: Answering,
    /// Who sent it: `None` for a prompt no one's message led to (a feature's, a resumed run's).
    asker: Option<Asker>,
    /// [`prompt_digest`] of the prompt's text.
    digest: String,
    /// A `tool` mark was written for it.
    tool: bool,
}

#[derive(Debug, Default)]
struct State {
    /// Handed to the session, not yet in the transcript.
    queued: Vec<Group>,
    /// In the transcript, not answered yet.
    active: Vec<Group>,
    /// Who sent the extension command running in the session ([`Ledger::command_of`]).
    command: Option<Asker>,
}

/// An extension command running for its sender ([`Ledger::command_of`]); dropping it ends that.
#[derive(Debug)]
pub struct CommandRun {
    ledger: Arc<Ledger>,
    /// The sender, so a later command's note is not taken back by this one.
    id: i64,
}

impl Drop for CommandRun {
    fn drop(&mut self) {
        let mut st = self.ledger.lock();
        if st.command.as_ref().is_some_and(|a| a.id == self.id) {
            st.command = None;
        }
    }
}

/// A conversation's prompts in flight (see the module docs).
#[derive(Debug)]
pub struct Ledger {
    journal: Arc<Journal>,
    /// Set once the bot is shutting down: an aborted run then keeps its marks.
    shutting_down: Arc<AtomicBool>,
    state: Mutex<State>,
}

impl Ledger {
    /// A ledger writing to `journal`.
    pub fn new(journal: Arc<Journal>, shutting_down: Arc<AtomicBool>) -> Self {
        Ledger {
            journal,
            shutting_down,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes that the prompt of `ids`, whose text is `text`, sent by `asker`, is being handed to
    /// the session (call it before the hand-over, so its `message_start` cannot come first).
    pub fn queue(&self, ids: &[i64], text: &str, asker: Asker) {
        self.queue_for(ids.to_vec().into(), text, Some(asker));
    }

    /// The sender of the prompt the run works on now (the newest in the transcript and not yet
    /// answered): whom its questions are for. `None` when that prompt is no one's message (a
    /// feature's, a resumed run's) or none is.
    /// While no prompt is, the sender of the extension command running
    /// ([`command_of`](Self::command_of)).
    pub fn asker(&self) -> Option<Asker> {
        let st = self.lock();
        match st.active.last() {
            Some(g) => g.asker.clone(),
            None => st.command.clone(),
        }
    }

    /// Notes that `asker`'s extension command runs in the session until the returned guard is
    /// dropped: questions it asks are for `asker` ([`asker`](Self::asker)), unless a run is
    /// working on a prompt meanwhile (its questions stay its sender's: deny by default).
    pub fn command_of(self: &Arc<Self>, asker: Asker) -> CommandRun {
        let id = asker.id;
        self.lock().command = Some(asker);
        CommandRun {
            ledger: self.clone(),
            id,
        }
    }

    /// The sender of the prompt that includes update `update_id`, while it is queued or active.
    pub fn sender_of(&self, update_id: i64) -> Option<i64> {
        let st = self.lock();
        st.active
            .iter()
            .chain(&st.queued)
            .find(|g| g.of.ids.contains(&update_id))
            .and_then(|g| g.asker.as_ref().map(|a| a.id))
    }

    /// Notes that a prompt a feature hands in (`text`) is being handed to the session: its
    /// answer's delivery is journaled under `key` (its key's digest, see
    /// [`journal::deliveries`](crate::telegram::inbound::journal::deliveries)). Its tools are the
    /// feature's to record.
    pub fn queue_delivery(&self, key: String, text: &str) {
        self.queue_for(Answering::delivery(key), text, None);
    }

    fn queue_for(&self, of: Answering, text: &str, asker: Option<Asker>) {
        self.lock().queued.push(Group {
            of,
            asker,
            digest: prompt_digest(text),
            tool: false,
        });
    }

    /// Takes back the prompt of `ids` (the session refused it, an extension consumed it, or a
    /// resumed run did not start); returns whether it was still there.
    pub fn forget(&self, ids: &[i64]) -> bool {
        self.forget_for(&ids.to_vec().into())
    }

    /// Takes back a prompt queued with [`queue_delivery`](Self::queue_delivery) (the session refused
    /// it); returns whether it was still there.
    pub fn forget_delivery(&self, key: String) -> bool {
        self.forget_for(&Answering::delivery(key))
    }

    fn forget_for(&self, of: &Answering) -> bool {
        let mut st = self.lock();
        let before = st.queued.len() + st.active.len();
        st.queued.retain(|g| g.of != *of);
        st.active.retain(|g| g.of != *of);
        st.queued.len() + st.active.len() != before
    }

    /// Notes that the prompt of `ids` (digest `digest`), sent by `asker`, is already in the
    /// transcript and its run is being continued (recovery after a crash).
    pub fn resume(&self, ids: &[i64], digest: &str, asker: Asker) {
        self.resume_for(ids.to_vec().into(), digest, Some(asker));
    }

    /// Notes that a prompt a feature handed in (digest `digest`) is in the transcript and its run is
    /// being continued; see [`queue_delivery`](Self::queue_delivery).
    pub fn resume_delivery(&self, key: String, digest: &str) {
        self.resume_for(Answering::delivery(key), digest, None);
    }

    fn resume_for(&self, of: Answering, digest: &str, asker: Option<Asker>) {
        self.lock().active.push(Group {
            of,
            asker,
            digest: digest.to_owned(),
            tool: false,
        });
    }

    /// Follows one session event (called synchronously, in order, by the session's
    /// subscriber); returns what it answers or finishes, whose `done` mark waits for the
    /// delivery of what the event shows.
    pub fn on_event(&self, e: &AgentSessionEvent) -> Answering {
        match e {
            AgentSessionEvent::MessageStart {
                message: Message::User(u),
            } => {
                let arrived = {
                    let mut st = self.lock();
                    if st.queued.is_empty() {
                        return Answering::default();
                    }
                    let digest = prompt_digest(&u.content.text());
                    let at = st.queued.iter().position(|g| g.digest == digest);
                    at.map(|i| {
                        let g = st.queued.remove(i);
                        let out = (g.of.ids.clone(), g.digest.clone());
                        st.active.push(g);
                        out
                    })
                };
                if let Some((ids, digest)) = arrived {
                    self.journal.started(&ids, &digest);
                }
                Answering::default()
            }
            AgentSessionEvent::ToolExecutionStart { .. } => {
                let ids: Vec<i64> = {
                    let mut st = self.lock();
                    st.active
                        .iter_mut()
                        .filter(|g| !g.tool)
                        .flat_map(|g| {
                            g.tool = true;
                            g.of.ids.iter().copied()
                        })
                        .collect()
                };
                // Durable before the tool runs: a crash from here on never runs it again.
                if !ids.is_empty() {
                    self.journal.mark_all(&ids, Progress::Tool);
                }
                Answering::default()
            }
            AgentSessionEvent::TurnEnd { message, .. } if message.tool_calls().next().is_none() => {
                let cut_off = message.stop_reason == StopReason::Aborted && self.stopping();
                if cut_off {
                    Answering::default()
                } else {
                    self.take_active()
                }
            }
            AgentSessionEvent::AgentSettled if !self.stopping() => self.take_active(),
            // What the text being written answers (peeked, not taken): a live answer journals
            // the chunks it sends early under it.
            AgentSessionEvent::MessageUpdate {
                assistant_message_event: AssistantMessageEvent::TextDelta { .. },
                ..
            } => self.peek_active(),
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
            | AgentSessionEvent::ExtensionError { .. }
            | AgentSessionEvent::ModelFallback { .. }
            | AgentSessionEvent::SessionChanged { .. } => Answering::default(),
        }
    }

    fn stopping(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    fn peek_active(&self) -> Answering {
        let st = self.lock();
        let mut of = Answering::default();
        for g in &st.active {
            of.extend(g.of.clone());
        }
        of
    }

    fn take_active(&self) -> Answering {
        let mut st = self.lock();
        let mut of = Answering::default();
        for g in st.active.drain(..) {
            of.extend(g.of);
        }
        of
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use volcanic_abstractions::messages::{AssistantMessage, UserBody, UserMessage};

    fn user(text: &str) -> AgentSessionEvent {
        AgentSessionEvent::MessageStart {
            message: Message::User(UserMessage {
                content: UserBody::Text(text.into()),
                timestamp: 0,
            }),
        }
    }

    fn answer(stop: StopReason) -> AgentSessionEvent {
        let mut a = AssistantMessage::empty("anthropic-messages", "anthropic", "m", 0);
        a.stop_reason = stop;
        AgentSessionEvent::TurnEnd {
            message: a,
            tool_results: Vec::new(),
        }
    }

    fn who(id: i64, name: &str) -> Asker {
        Asker { id, name: name.into() }
    }

    fn tool() -> AgentSessionEvent {
        AgentSessionEvent::ToolExecutionStart {
            tool_call_id: "c".into(),
            tool_name: "bash".into(),
            args: serde_json::Value::Null,
        }
    }

    #[test]
    fn a_commands_questions_are_its_senders_unless_a_prompt_runs() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, _) = Journal::open(dir.path()).unwrap();
        let ledger = Arc::new(Ledger::new(Arc::new(journal), Arc::new(AtomicBool::new(false))));
        let running = ledger.command_of(who(9, "Cy"));
        assert_eq!(ledger.asker(), Some(who(9, "Cy")));
        // A prompt in the transcript meanwhile: its sender's, never the command's.
        ledger.queue(&[1], "first", who(7, "Ann"));
        ledger.on_event(&user("first"));
        assert_eq!(ledger.asker(), Some(who(7, "Ann")));
        ledger.on_event(&answer(StopReason::Stop));
        assert_eq!(ledger.asker(), Some(who(9, "Cy")));
        // A later command's note is not taken back by an earlier one's end.
        let later = ledger.command_of(who(10, "Di"));
        drop(running);
        assert_eq!(ledger.asker(), Some(who(10, "Di")));
        drop(later);
        assert_eq!(ledger.asker(), None, "no command runs");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_follow_up_gets_its_own_marks_when_it_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, _) = Journal::open(dir.path()).unwrap();
        let journal = Arc::new(journal);
        let (_, durable) = journal
            .accept(vec![
                (1, serde_json::json!({"update_id": 1})),
                (2, serde_json::json!({"update_id": 2})),
            ])
            .unwrap();
        journal.durable(durable).await;
        let ledger = Ledger::new(journal.clone(), Arc::new(AtomicBool::new(false)));
        ledger.queue(&[1], "first", who(7, "Ann"));
        assert_eq!(ledger.asker(), None, "nothing in the transcript yet");
        assert!(ledger.on_event(&user("first")).is_empty());
        assert_eq!(ledger.asker(), Some(who(7, "Ann")), "the run works on Ann's prompt");
        // A follow-up queued while the first runs: the first's tool is not on its behalf.
        ledger.queue(&[2], "second", who(8, "Bob"));
        assert_eq!((ledger.sender_of(1), ledger.sender_of(2)), (Some(7), Some(8)));
        assert_eq!(ledger.asker(), Some(who(7, "Ann")), "Bob's is only queued");
        assert!(ledger.on_event(&tool()).is_empty());
        assert_eq!(ledger.on_event(&answer(StopReason::Stop)).ids, vec![1]);
        assert_eq!((ledger.asker(), ledger.sender_of(1)), (None, None), "answered");
        assert!(ledger.on_event(&user("second")).is_empty());
        assert_eq!(ledger.asker(), Some(who(8, "Bob")));
        assert_eq!(ledger.on_event(&answer(StopReason::Stop)).ids, vec![2]);
        assert!(ledger.on_event(&AgentSessionEvent::AgentSettled).is_empty());
        // A prompt no one's message led to: its questions are nobody's in particular.
        ledger.queue_delivery("job".into(), "a job");
        ledger.on_event(&user("a job"));
        assert_eq!(ledger.asker(), None);
        drop(ledger);
        drop(journal);
        // `done` is the delivery's to write: both are still unfinished, each with its own marks.
        let (_, unfinished) = Journal::open(dir.path()).unwrap();
        let got: Vec<(i64, Progress, Option<String>)> =
            unfinished.into_iter().map(|u| (u.id, u.progress, u.prompt)).collect();
        assert_eq!(
            got,
            vec![
                (1, Progress::Tool, Some(prompt_digest("first"))),
                (2, Progress::Started, Some(prompt_digest("second")))
            ]
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_run_cut_off_by_shutdown_keeps_its_marks_but_a_stop_finishes_it() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, _) = Journal::open(dir.path()).unwrap();
        let stopping = Arc::new(AtomicBool::new(false));
        let ledger = Ledger::new(Arc::new(journal), stopping.clone());
        ledger.queue(&[5, 6], "album", who(5, "Eve"));
        ledger.on_event(&user("album"));
        assert_eq!(ledger.on_event(&answer(StopReason::Aborted)).ids, vec![5, 6]);
        ledger.queue(&[7], "next", who(5, "Eve"));
        ledger.on_event(&user("next"));
        stopping.store(true, Ordering::SeqCst);
        assert!(ledger.on_event(&answer(StopReason::Aborted)).is_empty());
        assert!(ledger.on_event(&AgentSessionEvent::AgentSettled).is_empty());
        // A run resumed after a crash: its questions are still its sender's.
        ledger.resume(&[9], &prompt_digest("resumed"), who(5, "Eve"));
        assert_eq!(ledger.asker(), Some(who(5, "Eve")));
        // A prompt an extension consumed never arrives: it is taken back.
        ledger.queue(&[8], "consumed", who(5, "Eve"));
        assert!(ledger.forget(&[8]));
        assert!(!ledger.forget(&[8]));
    }
}
