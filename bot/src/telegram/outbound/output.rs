//! What a chat sees while its agent works: the typing action (refreshed), one progress message
//! with the tool names (edited at most about once a second, deleted when the run ends), or in a
//! private chat with live answers a draft of the answer ([`live`]),
//! and the final answers rendered from Markdown to Telegram HTML in chunks. Fed by the session's
//! events; delivery runs in its own task so the agent loop never waits for Telegram.
//!
//! An answer carries what it answers ([`Ledger`]): the updates, or a
//! prompt a feature handed in ([`Answering`]). Each chunk's attempt is journaled (`sending` as it leaves,
//! then `sent` or `refused`), and they are finished (`done`) only once Telegram took the last
//! chunk, so a crash in between is recovered from the transcript without sending twice what was
//! delivered.

mod preview;
mod progress;

use crate::features::port::Target;
use crate::telegram::inbound::journal::{Answering, ChunkState, Journal, Progress, Rest};
use crate::telegram::outbound::api::{Attempt, DraftText, Tg};
use crate::telegram::outbound::ledger::Ledger;
use crate::telegram::outbound::live::draft::{DraftStream, Final, Shown};
use crate::telegram::outbound::live::reaction::Outcome;
use crate::telegram::outbound::live::{self, Mode};
use crate::telegram::outbound::progress_marks::ProgressMarks;
use crate::telegram::outbound::render::{Chunk, markdown_chunks};
use crate::telegram::outbound::texts;
use crate::telegram::voice::Speech;
use crate::telegram::voice::answer::{TextPart, VOICE_CHUNK};
use progress::progress_line;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::messages::StopReason;
use volcanic_abstractions::provider::AssistantMessageEvent;
use volcanic_abstractions::shortage::Lack;

/// Typing refresh period (Telegram shows the action for about 5 s).
const TYPING_EVERY: Duration = Duration::from_secs(4);
/// Minimum gap between progress edits.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug)]
enum Out {
    RunStart,
    Tool(String),
    /// What a voice note was heard as (`🎤 “…”`): the first line of the progress line or draft.
    Heard(String),
    /// The answer so far (Markdown) for `of`, while the model writes it.
    Text {
        md: String,
        of: Answering,
    },
    /// The answer (Markdown) of a turn for `of`: continues the chunks its draft sent early.
    Final {
        md: String,
        of: Answering,
    },
    /// An answer (Markdown) for `of` whose first chunk has the index `first` (0 unless it is
    /// the rest after chunks sent early), from chunk `from` on (`first` unless recovering);
    /// spoken where the chat wants it when `speak` (the model's answers, not notices).
    Answer {
        md: String,
        of: Answering,
        first: usize,
        from: usize,
        speak: bool,
    },
    /// A failure shown to the chat, finishing `of`.
    Error {
        msg: String,
        of: Answering,
    },
    /// `of` is finished once everything before this was delivered.
    Done(Answering),
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
    /// The `timestamp`s (ms) of the assistant messages this process showed as answers (the
    /// newest few): an answer found in the transcript is not shown twice by one process.
    shown: Arc<std::sync::Mutex<std::collections::VecDeque<i64>>>,
    /// How answers show while they are written here.
    mode: Mode,
    /// The `draft_id` of the draft shown now, 0 for none.
    draft: Arc<AtomicI64>,
    /// The message id of the group preview shown now, 0 for none.
    preview: Arc<AtomicI64>,
    /// A Stop (the native button or `/stop`) was asked for the run in progress and nothing
    /// said so yet ([`Output::stopping`]).
    stopping: Arc<AtomicBool>,
    /// A full disk was told ([`Output::short_of`]) and has not been found over since.
    disk_told: Arc<AtomicBool>,
    /// Answers with voice (`[voice]`), shared with the delivery task.
    speech: Option<Arc<Speech>>,
    /// `(from, to)` of the run's failover: its answers end with a footer naming `to`.
    fallback: Arc<std::sync::Mutex<Option<(String, String)>>>,
}

/// How many shown answers [`Output`] remembers.
const SHOWN_KEPT: usize = 16;

impl Output {
    /// Starts the delivery task for `to`.
    /// `marks` remembers the progress message on disk while it is shown.
    /// `journal` records which answer chunk is being sent and when updates are done.
    /// `ledger` says who sent the prompt an answer is for (a group preview's Stop is theirs).
    /// `speech` speaks answers (`/voice on|auto`; `None` without `[voice]`).
    pub fn spawn(
        tg: Arc<Tg>,
        journal: Arc<Journal>,
        marks: Arc<ProgressMarks>,
        ledger: Arc<Ledger>,
        to: Target,
        speech: Option<Arc<Speech>>,
    ) -> Output {
        let (tx, rx) = mpsc::unbounded_channel();
        let failed = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let mode = live::mode(tg.live(), to);
        let draft = Arc::new(AtomicI64::new(0));
        let preview = Arc::new(AtomicI64::new(0));
        let delivery = Delivery {
            tg,
            journal,
            marks,
            ledger,
            to,
            failed: failed.clone(),
            mode,
            draft: draft.clone(),
            preview: preview.clone(),
            speech: speech.clone(),
        };
        tokio::spawn(delivery.run(rx));
        Output {
            tx,
            failed,
            shown: Arc::default(),
            mode,
            draft,
            preview,
            stopping: Arc::default(),
            disk_told: Arc::default(),
            fallback: Arc::default(),
            speech,
        }
    }

    /// Notes that update `id` brought a voice note: under `/voice auto` its answer is spoken.
    pub fn heard(&self, id: i64) {
        if let Some(s) = &self.speech {
            s.heard(id);
        }
    }

    /// Whether the group preview shown now is the message `message_id`.
    pub fn shows_preview(&self, message_id: i32) -> bool {
        message_id != 0 && self.preview.load(Ordering::SeqCst) == i64::from(message_id)
    }

    /// Whether the draft shown now has the `draft_id` `id` (a private chat's answer being
    /// written).
    pub fn shows_draft(&self, id: i64) -> bool {
        id != 0 && self.draft.load(Ordering::SeqCst) == id
    }

    /// A message of this chat waits out a shortage
    /// ([`shortage`](crate::telegram::inbound::shortage)): a full disk is told once
    /// ([`texts::DISK_FULL_WAITING`]) until [`Output::resources_back`]; other shortages only
    /// wait, untold.
    pub fn short_of(&self, lack: Lack) {
        match lack {
            Lack::Disk if !self.disk_told.swap(true, Ordering::SeqCst) => self.notice(texts::DISK_FULL_WAITING),
            Lack::Disk | Lack::Descriptors | Lack::Memory => {}
        }
    }

    /// A message of this chat reached its session: a later full disk is told again.
    pub fn resources_back(&self) {
        self.disk_told.store(false, Ordering::SeqCst);
    }

    /// Notes that the run in progress is being stopped (call before aborting it), so the chat
    /// learns it once: the partial answer, if the model had written any, ends in
    /// [`STOPPED_MARK`](live::STOPPED_MARK); otherwise [`STOPPED`](live::STOPPED) is sent when
    /// the run settles.
    pub fn stopping(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }

    /// How many answer chunks could not be delivered so far (compare before and after a run).
    pub fn failed_sends(&self) -> u64 {
        self.failed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Turns a session event into output (called synchronously on the agent loop); `of` is what
    /// the event answers or finishes ([`Ledger::on_event`](crate::telegram::outbound::ledger::Ledger::on_event)),
    /// finished once what it shows was delivered.
    pub fn on_event(&self, e: &AgentSessionEvent, of: Answering) {
        if let AgentSessionEvent::MessageUpdate {
            message,
            assistant_message_event: AssistantMessageEvent::TextDelta { .. },
        } = e
        {
            // `of` here is what the text answers (not finished by it).
            if self.mode != Mode::Off {
                let _ = self.tx.send(Out::Text { md: message.text(), of });
            }
            return;
        }
        let answers = !of.is_empty();
        let mut of = Some(of);
        let mut take = || of.take().unwrap_or_default();
        let out = match e {
            AgentSessionEvent::AgentStart => {
                // A Stop asked too late for the run before is not this run's.
                self.stopping.store(false, Ordering::SeqCst);
                *self.fallback.lock().unwrap_or_else(|e| e.into_inner()) = None;
                Some(Out::RunStart)
            }
            AgentSessionEvent::ModelFallback { from, to, .. } => {
                *self.fallback.lock().unwrap_or_else(|e| e.into_inner()) = Some((from.clone(), to.clone()));
                Some(Out::Tool(texts::fallback_step(to)))
            }
            AgentSessionEvent::ToolExecutionStart { tool_name, .. } => Some(Out::Tool(tool_name.clone())),
            AgentSessionEvent::TurnEnd { message, .. }
                if message.tool_calls().next().is_none()
                    && matches!(message.stop_reason, StopReason::Stop | StopReason::Length) =>
            {
                let text = message.text();
                self.remember_shown(message.timestamp);
                (!text.trim().is_empty()).then(|| Out::Final {
                    md: self.with_fallback_footer(text),
                    of: take(),
                })
            }
            // Stopped (the native Stop or `/stop`, not a shutdown: that leaves `of` empty and the
            // message to recovery): the text so far is the answer, marked as stopped.
            AgentSessionEvent::TurnEnd { message, .. }
                if message.stop_reason == StopReason::Aborted
                    && message.tool_calls().next().is_none()
                    && !message.text().trim().is_empty()
                    && answers =>
            {
                // The mark says it: no second notice when the run settles.
                self.stopping.store(false, Ordering::SeqCst);
                Some(Out::Final {
                    md: format!("{}\n\n{}", message.text(), live::STOPPED_MARK),
                    of: take(),
                })
            }
            // The turn's final message: a context overflow recovered by compaction is not shown.
            AgentSessionEvent::TurnEnd { message: a, .. } if a.stop_reason == StopReason::Error => Some(Out::Error {
                msg: a
                    .error_message
                    .clone()
                    .unwrap_or_else(|| "the model call failed".into()),
                of: take(),
            }),
            AgentSessionEvent::AgentSettled => {
                if self.stopping.swap(false, Ordering::SeqCst) {
                    let _ = self.tx.send(Out::Answer {
                        md: live::STOPPED.into(),
                        of: Answering::default(),
                        first: 0,
                        from: 0,
                        speak: false,
                    });
                }
                Some(Out::RunEnd)
            }
            AgentSessionEvent::AgentEnd { .. }
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
            | AgentSessionEvent::SessionChanged { .. } => None,
        };
        let rest = take();
        if !rest.is_empty() {
            let _ = self.tx.send(Out::Done(rest));
        }
        if let Some(o) = out {
            let _ = self.tx.send(o);
        }
    }

    /// Sends `md` (an answer found in the transcript after a restart, or what is left of it
    /// after chunks sent early: [`Chunks::layout`](crate::telegram::inbound::journal::Chunks::layout))
    /// for `of`, its first chunk numbered `first`, from the chunk numbered `from` on (the chunks
    /// before it were delivered), then finishes it.
    pub fn answer(&self, md: String, of: impl Into<Answering>, first: usize, from: usize) {
        let _ = self.tx.send(Out::Answer {
            md,
            of: of.into(),
            first,
            from,
            speak: true,
        });
    }

    /// `md`, with the footer naming the fallback model when one answered this run.
    fn with_fallback_footer(&self, md: String) -> String {
        match &*self.fallback.lock().unwrap_or_else(|e| e.into_inner()) {
            Some((from, to)) => format!("{md}\n\n{}", texts::answered_by_fallback(to, from)),
            None => md,
        }
    }

    fn remember_shown(&self, timestamp: i64) {
        let mut shown = self.shown.lock().unwrap_or_else(|e| e.into_inner());
        if shown.len() == SHOWN_KEPT {
            shown.pop_front();
        }
        shown.push_back(timestamp);
    }

    /// Whether this process already showed the assistant message stamped `timestamp` (ms) as an
    /// answer.
    pub fn was_shown(&self, timestamp: i64) -> bool {
        self.shown
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&timestamp)
    }

    /// Finishes `of` (marks its updates `done`) once everything queued before was delivered.
    pub fn done(&self, of: impl Into<Answering>) {
        let of = of.into();
        if !of.is_empty() {
            let _ = self.tx.send(Out::Done(of));
        }
    }

    /// Sends a notice (Markdown) that finishes `of`, in order with the answers.
    pub fn notice_for(&self, markdown: impl Into<String>, of: impl Into<Answering>) {
        let _ = self.tx.send(Out::Answer {
            md: markdown.into(),
            of: of.into(),
            first: 0,
            from: 0,
            speak: false,
        });
    }

    /// Waits until everything queued so far was delivered (shutdown, scheduled runs).
    pub async fn flush(&self) {
        let (done, delivered) = tokio::sync::oneshot::channel();
        if self.tx.send(Out::Flush(done)).is_ok() {
            let _ = delivered.await;
        }
    }

    /// Shows what a voice note was heard as (`quote`, `🎤 “…”`) on the progress line or the
    /// draft until the answer comes; in a group with previews, as a message.
    pub fn heard_as(&self, quote: String) {
        let _ = self.tx.send(Out::Heard(quote));
    }

    /// Sends a notice (Markdown) in order with the answers.
    pub fn notice(&self, markdown: impl Into<String>) {
        self.notice_for(markdown, Answering::default());
    }
}

/// The delivery task of one chat or topic.
struct Delivery {
    tg: Arc<Tg>,
    journal: Arc<Journal>,
    marks: Arc<ProgressMarks>,
    /// Who sent the prompts in flight.
    ledger: Arc<Ledger>,
    to: Target,
    failed: Arc<std::sync::atomic::AtomicU64>,
    mode: Mode,
    /// Shared with [`Output::shows_draft`].
    draft: Arc<AtomicI64>,
    /// Shared with [`Output::shows_preview`].
    preview: Arc<AtomicI64>,
    /// Answers with voice.
    speech: Option<Arc<Speech>>,
}

impl Delivery {
    async fn run(self, mut rx: mpsc::UnboundedReceiver<Out>) {
        let mut st = RunState::default();
        let mut typing = tokio::time::interval(TYPING_EVERY);
        let mut edits = tokio::time::interval(PROGRESS_EVERY);
        loop {
            let due = st.stream.as_ref().map(DraftStream::due);
            let draft_due = tokio::time::sleep_until(due.unwrap_or_else(tokio::time::Instant::now));
            tokio::select! {
                msg = rx.recv() => {
                    let Some(msg) = msg else { break };
                    if let Out::RunStart = msg {
                        typing.reset();
                    }
                    if let Out::Tool(_) = msg && st.progress.is_none() {
                        edits.reset();
                    }
                    self.on_out(msg, &mut st).await;
                }
                _ = typing.tick(), if st.running => self.tg.typing(self.to).await,
                _ = edits.tick(), if st.dirty => self.edit_progress(&mut st).await,
                () = draft_due, if due.is_some() => {
                    if let Some(stream) = st.stream.as_mut() {
                        match self.mode {
                            Mode::Drafts => self.flush(stream, st.heard.as_deref()).await,
                            Mode::Edits => self.flush_preview(stream, &mut st.preview).await,
                            Mode::Off => {}
                        }
                    }
                }
            }
        }
    }

    /// Handles one piece of output, in order.
    async fn on_out(&self, msg: Out, st: &mut RunState) {
        let (tg, to) = (&self.tg, self.to);
        match msg {
            Out::RunStart => {
                st.running = true;
                if self.mode != Mode::Off {
                    st.stream = Some(self.new_stream());
                }
                tg.typing(to).await;
            }
            Out::Tool(name) if self.mode != Mode::Off => {
                let stream = st.stream.get_or_insert_with(|| self.new_stream());
                if stream.sent_early() {
                    // Those chunks were not the answer: a crash must not count them as its own.
                    self.journal.drop_early(&stream.answers().ids);
                }
                stream.tool(name);
            }
            Out::Tool(name) => {
                st.tools.push(name);
                self.show_progress(st).await;
            }
            Out::Heard(quote) if self.mode == Mode::Edits => {
                if let Err(e) = tg.send_plain(to, &quote, None).await {
                    tracing::warn!(chat = to.chat_id, "cannot show what a voice note was heard as: {e}");
                }
            }
            Out::Heard(quote) => {
                st.heard = Some(quote);
                if self.mode == Mode::Off {
                    self.show_progress(st).await;
                }
            }
            Out::Text { md, of } => st.stream.get_or_insert_with(|| self.new_stream()).text(md, of),
            Out::Final { md, of } => {
                st.heard = None;
                let stream = st.stream.take();
                self.draft.store(0, Ordering::SeqCst);
                if let Some(id) = st.preview.take() {
                    // A spoken answer replaces its preview.
                    if !self.speech.as_ref().is_some_and(|s| s.speaks(&md, &of)) {
                        return self.answer_into_preview(&md, &of, id).await;
                    }
                    self.drop_preview(id).await;
                }
                match stream.map(|s| s.final_from(&md)) {
                    None => self.answer(&md, &of, 0, 0, true).await,
                    Some(Final::From(from)) => self.answer(&md, &of, 0, from, true).await,
                    Some(Final::Rest { md: rest, first, at }) => {
                        tracing::info!(
                            chat = to.chat_id,
                            first,
                            "the answer continues after its chunks sent early"
                        );
                        let first32 = u32::try_from(first).unwrap_or(u32::MAX);
                        // Recovery must cut the rest as it is cut here.
                        self.journal.rest(&of.ids, Rest { first: first32, at });
                        self.answer(&rest, &of, first, first, false).await;
                    }
                }
            }
            Out::Answer {
                md,
                of,
                first,
                from,
                speak,
            } => self.answer(&md, &of, first, from, speak).await,
            Out::Error { msg, of } => {
                st.heard = None;
                st.stream = None;
                self.draft.store(0, Ordering::SeqCst);
                if let Some(id) = st.preview.take() {
                    self.drop_preview(id).await;
                }
                if let Err(e) = tg
                    .send_plain(to, &crate::telegram::outbound::failures::model(&msg), None)
                    .await
                {
                    tracing::error!(chat = to.chat_id, "cannot deliver an error notice: {e}");
                }
                self.finish(&of, Outcome::Failed);
            }
            Out::Done(of) => self.finish(&of, Outcome::Answered),
            Out::RunEnd => {
                st.running = false;
                st.dirty = false;
                st.tools.clear();
                st.heard = None;
                st.stream = None;
                self.draft.store(0, Ordering::SeqCst);
                if let Some(id) = st.preview.take() {
                    self.drop_preview(id).await;
                }
                if let Some(id) = st.progress.take() {
                    tg.delete(to, id).await;
                    self.marks.clear(to);
                }
            }
            Out::Flush(done) => {
                let _ = done.send(());
            }
        }
    }

    fn new_stream(&self) -> DraftStream {
        DraftStream::new(self.tg.live().interval)
    }

    /// Sends what `stream` has finished as messages, then the draft (see
    /// [`live::draft`]), led by what a voice note was `heard` as.
    async fn flush(&self, stream: &mut DraftStream, heard: Option<&str>) {
        let finished = stream.take_finished();
        if finished.first {
            // Durable before the chunk leaves: a crash before the answer is in the transcript
            // offers a Retry instead of answering again under what was shown.
            self.journal.mark_all(&finished.of.ids, Progress::Tool);
        }
        for (n, chunk) in &finished.chunks {
            self.send_chunk(chunk, *n, &finished.of).await;
        }
        let shown = match (stream.shown(|tools| progress_line(heard, tools)), heard) {
            (Shown::Thinking, Some(quote)) => Shown::Progress(quote.to_owned()),
            (shown, _) => shown,
        };
        let text = match &shown {
            Shown::Thinking => DraftText::Thinking,
            Shown::Progress(line) => DraftText::Plain(line),
            Shown::Text(chunk) => DraftText::Html {
                html: &chunk.html,
                plain: &chunk.source,
            },
        };
        let with_text = matches!(shown, Shown::Text(_)) || stream.has_text();
        self.draft.store(stream.id(), Ordering::SeqCst);
        self.tg.send_draft(self.to, stream.id(), text).await;
        stream.sent(with_text);
    }

    /// Sends the chunks of `md`, numbered from `first` (0 unless it is the rest after chunks
    /// sent early; journal numbers: [`voice::answer`](crate::telegram::voice::answer) after a
    /// voice message), from the one numbered `from` on, each attempt journaled (`chunk`), then
    /// finishes `of`. Spoken first when the chat wants it and `speak` (never a rest).
    async fn answer(&self, md: &str, of: &Answering, first: usize, from: usize, speak: bool) {
        let failed = self.failed_sends();
        let chunks = markdown_chunks(md);
        let text = match self.speech.as_ref().filter(|_| speak && first == 0) {
            Some(s) => {
                let report = self.reporter(of, u32::try_from(VOICE_CHUNK).unwrap_or(u32::MAX));
                s.deliver(&self.tg, self.to, (md, &chunks), of, from, &report).await
            }
            None => TextPart::rest(first, from),
        };
        let rest = chunks.into_iter().enumerate().skip(text.from);
        self.send_chunks(rest.map(|(n, c)| (n + text.base, c)), of).await;
        if let Some(notice) = text.notice
            && let Err(e) = self.tg.send_plain(self.to, &notice, None).await
        {
            tracing::error!(chat = self.to.chat_id, "cannot tell why the answer was not spoken: {e}");
        }
        self.finish(of, self.outcome_since(failed));
    }

    /// Finishes `of` (its updates `done` in the journal) and marks its messages with
    /// `outcome`'s reaction.
    fn finish(&self, of: &Answering, outcome: Outcome) {
        self.journal.finish(of);
        self.tg.react_finished(&of.ids, outcome);
    }

    /// How many answer chunks this chat could not deliver so far.
    fn failed_sends(&self) -> u64 {
        self.failed.load(Ordering::SeqCst)
    }

    /// [`Outcome::Failed`] when a chunk could not be delivered since [`failed_sends`](Self::failed_sends)
    /// was `before`.
    fn outcome_since(&self, before: u64) -> Outcome {
        if self.failed_sends() > before {
            Outcome::Failed
        } else {
            Outcome::Answered
        }
    }

    /// Sends `(index, chunk)`s in order, each journaled under `of`.
    async fn send_chunks(&self, chunks: impl Iterator<Item = (usize, Chunk)>, of: &Answering) {
        for (n, chunk) in chunks {
            self.send_chunk(&chunk, u32::try_from(n).unwrap_or(u32::MAX), of).await;
        }
    }

    /// Sends chunk `n` of an answer for `of`, each attempt journaled (`sending` as it leaves,
    /// then `sent` or `refused`).
    async fn send_chunk(&self, chunk: &Chunk, n: u32, of: &Answering) {
        let report = self.reporter(of, n);
        if let Err(e) = self
            .tg
            .send_html_reporting(self.to, &chunk.html, &chunk.source, None, &report)
            .await
        {
            self.failed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tracing::error!(chat = self.to.chat_id, "cannot deliver the answer: {e}");
        }
    }
}

impl Delivery {
    /// Journals each attempt to deliver chunk `n` of an answer for `of` (`sending` as it
    /// leaves, then `sent` or `refused`; one with no answer stays in flight).
    fn reporter<'a>(&'a self, of: &'a Answering, n: u32) -> impl Fn(Attempt) + Send + Sync + 'a {
        move |a: Attempt| {
            let s = match a {
                Attempt::Sending => ChunkState::Sending,
                Attempt::Sent => ChunkState::Sent,
                Attempt::Refused => ChunkState::Refused,
                // Left in flight: Telegram may show it.
                Attempt::Unknown => return,
            };
            if !of.is_empty() {
                self.journal.chunk(of, n, s);
            }
        }
    }
}

/// What the delivery task keeps of the run in progress.
#[derive(Debug, Default)]
struct RunState {
    running: bool,
    /// The progress line's tools, its message and whether it needs an edit.
    tools: Vec<String>,
    progress: Option<i32>,
    dirty: bool,
    /// What the voice note being answered was heard as (`🎤 “…”`), until its answer.
    heard: Option<String>,
    /// The answer being written (with live answers): drafted, or previewed in `preview`.
    stream: Option<DraftStream>,
    preview: preview::Preview,
}
