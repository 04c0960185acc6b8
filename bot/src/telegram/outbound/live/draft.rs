//! One answer's draft in a private chat, as state: what it shows, when it is due, which of its
//! chunks are finished and go out early as messages. The delivery task
//! ([`output`](crate::telegram::outbound::output)) does the sending.
//!
//! - Before any text: Telegram's "Thinking…" placeholder, then the progress line while tools run.
//! - The text: the chunk being written, rendered as the answer will be (the same Markdown → HTML
//!   path, [`markdown_chunks`]); the chunks before it are finished and sent as messages, journaled
//!   like the answer's ([`Finished`]), and the final answer continues after them ([`Final`]).
//! - Paced: a change is shown at most once per interval (the first at once); an unchanged draft
//!   is sent again every [`REFRESH`], as Telegram drops a draft after about 30 s.

use crate::telegram::inbound::journal::Answering;
use crate::telegram::outbound::render::{Chunk, markdown_chunks, markdown_chunks_ending};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// How often an unchanged draft is sent again: Telegram drops a draft about 30 s after it was
/// sent (Bot API 9.5, `sendMessageDraft`).
pub const REFRESH: Duration = Duration::from_secs(20);

/// A fresh draft id: non-zero (the Bot API's rule), different for every answer, also across
/// restarts (the first is the start's Unix time in milliseconds).
fn next_draft_id() -> i64 {
    static NEXT: OnceLock<AtomicI64> = OnceLock::new();
    let next = NEXT.get_or_init(|| {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| i64::try_from(d.as_millis()).unwrap_or(1));
        AtomicI64::new(ms.max(1))
    });
    next.fetch_add(1, Ordering::Relaxed)
}

/// What a draft shows now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    /// No text and no tool yet: "Thinking…".
    Thinking,
    /// The progress line.
    Progress(String),
    /// The chunk being written.
    Text(Chunk),
}

/// Chunks finished while the answer is written, to send before the draft.
#[derive(Debug, Default)]
pub struct Finished {
    /// `(index in the answer, chunk)`, in order.
    pub chunks: Vec<(u32, Chunk)>,
    /// The prompts the answer answers (its chunks are journaled under them).
    pub of: Answering,
    /// These are the answer's first early chunks: its prompts are marked so that a crash
    /// before the answer is in the transcript does not run them again behind the user's back.
    pub first: bool,
}

/// How the final answer continues after the chunks sent early.
#[derive(Debug, PartialEq, Eq)]
pub enum Final {
    /// Its chunks from this index on (those before were sent early, identical).
    From(usize),
    /// The answer rendered out of context from this Markdown on (the chunks sent early were
    /// rendered differently in the whole answer), numbered from `first`.
    Rest {
        /// The Markdown after the sent chunks' source.
        md: String,
        /// The index of its first chunk.
        first: usize,
        /// The byte offset in the answer where `md` begins.
        at: usize,
    },
}

/// One answer's draft (see the module docs).
#[derive(Debug)]
pub struct DraftStream {
    id: i64,
    interval: Duration,
    /// The answer so far (Markdown); empty before the first text.
    text: String,
    /// The run's tools so far, for the progress line.
    tools: Vec<String>,
    of: Answering,
    /// HTML of the chunks sent early, and the source offset after them.
    early: Vec<String>,
    early_end: usize,
    /// Changed since last sent.
    dirty: bool,
    /// Some of the text was shown (the first text goes out at once, not after the interval).
    text_shown: bool,
    last_sent: Option<Instant>,
}

impl DraftStream {
    /// A new draft (a fresh id), updated at most once per `interval`.
    pub fn new(interval: Duration) -> Self {
        DraftStream {
            id: next_draft_id(),
            interval,
            text: String::new(),
            tools: Vec::new(),
            of: Answering::default(),
            early: Vec::new(),
            early_end: 0,
            dirty: true,
            text_shown: false,
            last_sent: None,
        }
    }

    /// The Bot API `draft_id`.
    pub fn id(&self) -> i64 {
        self.id
    }

    /// What the text being written answers (empty before the first text).
    pub fn answers(&self) -> &Answering {
        &self.of
    }

    /// Whether the draft showed (or was to show) any of the answer's text.
    pub fn has_text(&self) -> bool {
        !self.text.trim().is_empty() || !self.early.is_empty()
    }

    /// The answer so far (`md`, Markdown) for `of`.
    pub fn text(&mut self, md: String, of: Answering) {
        if md != self.text {
            self.text = md;
            self.of = of;
            self.dirty = true;
        }
    }

    /// Whether chunks of the text were sent early (as messages, journaled).
    pub fn sent_early(&self) -> bool {
        !self.early.is_empty()
    }

    /// A tool started: the progress line shows it. Text written before a tool call is not the
    /// answer: the draft drops it (chunks of it already sent stay, see docs/telegram.md).
    pub fn tool(&mut self, name: String) {
        self.tools.push(name);
        if !self.early.is_empty() {
            tracing::warn!("text sent early was followed by a tool call: the answer is sent whole after it");
        }
        self.text.clear();
        self.early.clear();
        self.early_end = 0;
        self.dirty = true;
    }

    /// When the draft should be sent next: a change once the interval since the last send has
    /// passed (at once for the first), an unchanged draft after [`REFRESH`].
    pub fn due(&self) -> Instant {
        match (self.last_sent, self.dirty) {
            (None, _) => Instant::now(),
            (Some(_), true) if !self.text_shown && !self.text.is_empty() => Instant::now(),
            (Some(at), true) => at + self.interval,
            (Some(at), false) => at + REFRESH,
        }
    }

    /// Notes that the draft was sent (or skipped: it is tried again after the interval), with
    /// text or not.
    pub fn sent(&mut self, with_text: bool) {
        self.last_sent = Some(Instant::now());
        self.dirty = false;
        self.text_shown |= with_text;
    }

    /// Takes the chunks finished since the last call (all but the one being written). Only for
    /// an answer to messages (a feature's prompt has no early chunks: its delivery is
    /// recovered from the transcript alone).
    pub fn take_finished(&mut self) -> Finished {
        if self.of.ids.is_empty() || !self.of.deliveries.is_empty() || self.text.is_empty() {
            return Finished::default();
        }
        let chunks = markdown_chunks_ending(&self.text);
        let first = self.early.is_empty();
        let mut out = Vec::new();
        let writing = chunks.len().saturating_sub(1);
        for (n, (chunk, end)) in chunks.into_iter().enumerate().take(writing).skip(self.early.len()) {
            self.early.push(chunk.html.clone());
            self.early_end = end;
            out.push((u32::try_from(n).unwrap_or(u32::MAX), chunk));
        }
        Finished {
            first: first && !out.is_empty(),
            of: if out.is_empty() {
                Answering::default()
            } else {
                self.of.clone()
            },
            chunks: out,
        }
    }

    /// What the draft shows now: the last chunk of the text, else the progress line, else
    /// "Thinking…".
    pub fn shown(&self, progress: impl Fn(&[String]) -> String) -> Shown {
        match markdown_chunks(&self.text).pop() {
            Some(chunk) => Shown::Text(chunk),
            _ if !self.tools.is_empty() => Shown::Progress(progress(&self.tools)),
            _ => Shown::Thinking,
        }
    }

    /// How the final answer `md` goes out after the chunks sent early.
    pub fn final_from(&self, md: &str) -> Final {
        if self.early.is_empty() {
            return Final::From(0);
        }
        let chunks = markdown_chunks(md);
        let same =
            chunks.len() > self.early.len() - 1 && chunks.iter().zip(&self.early).all(|(c, sent)| c.html == *sent);
        if same {
            return Final::From(self.early.len());
        }
        match md.get(self.early_end..) {
            Some(rest) if md.starts_with(self.text.get(..self.early_end).unwrap_or_default()) => Final::Rest {
                md: rest.to_owned(),
                first: self.early.len(),
                at: self.early_end,
            },
            // Not the text the chunks came from: sent whole.
            _ => Final::From(0),
        }
    }
}
