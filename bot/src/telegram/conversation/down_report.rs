//! "While I was down": after a start that found unfinished work (a crash, or a shutdown that cut
//! runs off) or scheduled runs missed while the bot was down, each affected chat gets one
//! message saying what happened to each of its messages (answered now, run again, not run again
//! with a Retry button, the rest of an answer delivered) and to each of its jobs' slots (run
//! now, skipped, coalesced, a cut-off run run again or not). A chat with nothing to report gets
//! nothing (docs/exactly-once.md, "While I was down").
//!
//! Two sources feed it at start-up: crash recovery, one conversation at a time
//! ([`recovery`](super::recovery)), and the scheduler's catch-up, once (through the chat port).
//! Each chat's report is sent once both are in (or [`GATHER_BOUND`] passed).
//!
//! Sent once across crashes, the way answer chunks are: each chat's lines are written to
//! `<state_dir>/down-reports/<chat>[-<topic>].json` before anything they stand for is finished
//! (a Retry offer's updates are marked `done` only once their line is on disk), the record is
//! marked `sending` as its request leaves (after any flood-control wait, as an answer chunk is),
//! back to `gathering` when Telegram refuses it (a 429 included) and `sent` once Telegram took
//! it. A restart finds a report still `gathering` and sends it (with whatever the new start
//! adds); one `sending` is counted as shown (the journal's one limit: `sendMessage` has no
//! idempotency key); a line whose key was reported before is never reported again.

use crate::features::port::{Target, chat_key};
use crate::store_file::{self, Loaded};
use crate::telegram::outbound::api::{Attempt, Tg};
use crate::telegram::outbound::texts::down::{self, HEADING, INTRO, RETRYING};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use teloxide::RequestError;
use teloxide::types::{InlineKeyboardButton, InlineKeyboardMarkup};

/// How long the report waits for the scheduler's catch-up after start-up.
pub const GATHER_BOUND: Duration = Duration::from_secs(10);

/// How long it waits for recovery (a large session loads slowly) before it reports what it
/// has; a conversation done later sends its lines as a report of their own.
pub const RECOVERY_BOUND: Duration = Duration::from_secs(60);

/// Keys of reported lines kept per chat (the oldest forgotten first).
const REPORTED_KEPT: usize = 500;

/// One line of a chat's report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    /// What it is about and what happened (`u<update>:<outcome>`, `j<job>@<slot>:<outcome>`):
    /// a line with a key reported before is not reported again.
    pub key: String,
    /// What the chat reads.
    pub text: String,
    /// The update a Retry button under it runs again (`retry:<id>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<i64>,
}

/// Where a chat's report stands on disk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Stage {
    /// Lines gathered, not sent yet.
    #[default]
    Gathering,
    /// Its request left (a crash now: counted as shown).
    Sending,
    /// Telegram took it.
    Sent,
}

/// A chat's report file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Record {
    /// The chat and topic.
    chat_id: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    thread: Option<i32>,
    /// The newest report's lines.
    lines: Vec<Line>,
    state: Stage,
    /// The newest report's message, once sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message_id: Option<i32>,
    /// Updates whose Retry under the newest report was pressed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pressed: Vec<i64>,
    /// Keys of the lines of earlier reports.
    #[serde(default)]
    reported: Vec<String>,
    /// Lines gathered while the newest report was on its way (not in its text): the next
    /// report's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    later: Vec<Line>,
}

impl Record {
    /// Adds the lines kept for [`later`](Self::later) and `new` to the report being gathered (a
    /// sent one is filed as reported first); lines reported or gathered before are dropped.
    /// Returns whether anything was added.
    fn gather(&mut self, new: Vec<Line>) -> bool {
        let new: Vec<Line> = std::mem::take(&mut self.later).into_iter().chain(new).collect();
        if self.state != Stage::Gathering {
            // `Sending` found at start-up: Telegram may show it (the one limit), so it counts.
            let done = std::mem::take(&mut self.lines);
            self.reported.extend(done.into_iter().map(|l| l.key));
            let extra = self.reported.len().saturating_sub(REPORTED_KEPT);
            self.reported.drain(..extra);
            self.state = Stage::Gathering;
            self.message_id = None;
            self.pressed.clear();
        }
        let before = self.lines.len();
        for line in new {
            if !self.knows(&line.key) {
                self.lines.push(line);
            }
        }
        self.lines.len() > before
    }

    /// Keeps `new` for the report after the one on its way; lines reported, gathered or kept
    /// before are dropped. Returns whether anything was kept.
    fn hold(&mut self, new: Vec<Line>) -> bool {
        let before = self.later.len();
        for line in new {
            if !self.knows(&line.key) {
                self.later.push(line);
            }
        }
        self.later.len() > before
    }

    /// Whether a line with `key` was reported, is in this report or kept for the next.
    fn knows(&self, key: &str) -> bool {
        self.reported.iter().any(|k| k == key) || self.lines.iter().chain(&self.later).any(|l| l.key == key)
    }

    /// The message: heading, intro, a bullet per line (a pressed Retry marked).
    fn text(&self) -> String {
        let mut s = format!("{HEADING}\n{INTRO}");
        for l in &self.lines {
            s.push_str("\n• ");
            s.push_str(&l.text);
            if l.retry.is_some_and(|r| self.pressed.contains(&r)) {
                s.push_str(RETRYING);
            }
        }
        s
    }

    /// A Retry button per line that has one and was not pressed.
    fn markup(&self) -> Option<InlineKeyboardMarkup> {
        let rows: Vec<Vec<InlineKeyboardButton>> = self
            .lines
            .iter()
            .filter_map(|l| Some((l.retry.filter(|r| !self.pressed.contains(r))?, l)))
            .map(|(id, l)| {
                vec![InlineKeyboardButton::callback(
                    down::retry_button(&retry_label(&l.text)),
                    format!("{}{id}", super::recovery::RETRY_PREFIX),
                )]
            })
            .collect();
        (!rows.is_empty()).then(|| InlineKeyboardMarkup::new(rows))
    }

    fn target(&self) -> Target {
        Target {
            chat_id: self.chat_id,
            thread: self.thread,
        }
    }
}

/// Whether `r` holds lines not sent yet: a report gathering, or lines kept for the next one.
fn has_news(r: &Record) -> bool {
    (r.state == Stage::Gathering && !r.lines.is_empty()) || !r.later.is_empty()
}

/// The quoted message of a line, short (for its button).
fn retry_label(text: &str) -> String {
    let quoted = text.split('”').next().unwrap_or(text);
    let short: String = quoted.chars().take(28).collect();
    if short.len() < quoted.len() {
        format!("{short}…”")
    } else {
        format!("{short}”")
    }
}

/// What start-up still waits for.
#[derive(Debug, Default)]
struct Gather {
    /// Conversations recovery has not finished classifying.
    recovering: usize,
    /// Whether recovery said how many there are.
    recovery_known: bool,
    /// Whether the scheduler's catch-up is in (or the wait for it ended).
    scheduler_in: bool,
    /// Chats with lines this start.
    touched: Vec<Target>,
}

/// The host's "while I was down" report (see the module docs).
#[derive(Debug)]
pub struct DownReport {
    dir: PathBuf,
    tg: Arc<Tg>,
    gather: Mutex<Gather>,
    /// Serialises the record files' read-modify-write; holds the chats whose report is on its
    /// way (new lines for them wait in the record's `later`).
    files: Mutex<HashSet<Target>>,
}

impl DownReport {
    /// A report whose records live in `<state_dir>/down-reports/`, sent through `tg`.
    pub fn new(state_dir: &Path, tg: Arc<Tg>) -> Self {
        DownReport {
            dir: state_dir.join("down-reports"),
            tg,
            gather: Mutex::default(),
            files: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Gather> {
        self.gather.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn files(&self) -> std::sync::MutexGuard<'_, HashSet<Target>> {
        self.files.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn path(&self, to: Target) -> PathBuf {
        let topic = to.thread.map_or_else(String::new, |t| format!("-{t}"));
        self.dir.join(format!("{}{topic}.json", chat_key(to.chat_id)))
    }

    /// `to`'s record; a new one when there is none or it cannot be read.
    fn load(&self, to: Target) -> Record {
        match store_file::load_json::<Record>(&self.path(to)) {
            Ok(Loaded::Ok(r)) => return r,
            Ok(Loaded::Missing | Loaded::SetAside(_)) => {}
            Err(e) => tracing::warn!(chat = to.chat_id, "cannot read the chat's down report: {e}"),
        }
        Record {
            chat_id: to.chat_id,
            thread: to.thread,
            ..Record::default()
        }
    }

    /// Recovery found `conversations` conversations with unfinished updates; each reports once
    /// through [`recovered`](Self::recovered). Starts the bounds on the waits for the scheduler
    /// ([`GATHER_BOUND`]) and for recovery ([`RECOVERY_BOUND`]).
    pub fn expect(self: &Arc<Self>, conversations: usize) {
        {
            let mut g = self.state();
            g.recovering += conversations;
            g.recovery_known = true;
        }
        let me = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(GATHER_BOUND).await;
            let late = !std::mem::replace(&mut me.state().scheduler_in, true);
            if late {
                tracing::warn!("the scheduler's catch-up was not in after {GATHER_BOUND:?}: reporting without it");
            }
            me.close_if_ready().await;
            tokio::time::sleep(RECOVERY_BOUND.saturating_sub(GATHER_BOUND)).await;
            let stuck = std::mem::take(&mut me.state().recovering);
            if stuck > 0 {
                tracing::warn!(
                    stuck,
                    "recovery had not reported after {RECOVERY_BOUND:?}: reporting without it"
                );
                me.close_if_ready().await;
            }
        });
        let me = self.clone();
        tokio::spawn(async move { me.close_if_ready().await });
    }

    /// One conversation's lines from recovery, on disk when this returns (so what they stand
    /// for may be finished). Errors: the record could not be written (nothing is finished then).
    pub async fn recovered(&self, to: Target, lines: Vec<Line>) -> std::io::Result<()> {
        let kept = self.keep(to, lines);
        {
            let mut g = self.state();
            g.recovering = g.recovering.saturating_sub(1);
        }
        self.close_if_ready().await;
        kept
    }

    /// The scheduler's catch-up: every chat's lines, once per start; on disk when this returns.
    pub async fn caught_up(&self, lines: Vec<(Target, Line)>) -> std::io::Result<()> {
        let mut by_chat: BTreeMap<(i64, i32), (Target, Vec<Line>)> = BTreeMap::new();
        for (to, line) in lines {
            by_chat
                .entry((to.chat_id, to.thread.unwrap_or(0)))
                .or_insert_with(|| (to, Vec::new()))
                .1
                .push(line);
        }
        let mut kept = Ok(());
        for (to, lines) in by_chat.into_values() {
            if let Err(e) = self.keep(to, lines) {
                kept = Err(e);
            }
        }
        self.state().scheduler_in = true;
        self.close_if_ready().await;
        kept
    }

    /// Writes `lines` into `to`'s record (a report being gathered, or kept for the next one
    /// while a report is on its way); once the reports went out, they are sent as a report of
    /// their own.
    fn keep(&self, to: Target, lines: Vec<Line>) -> std::io::Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        let files = self.files();
        let mut record = self.load(to);
        let added = if files.contains(&to) {
            record.hold(lines)
        } else {
            record.gather(lines)
        };
        if !added {
            return Ok(());
        }
        store_file::save_json(&self.path(to), &record)?;
        let mut g = self.state();
        if !g.touched.contains(&to) {
            g.touched.push(to);
        }
        Ok(())
    }

    /// Sends every gathered report once recovery and the scheduler are in.
    async fn close_if_ready(&self) {
        let chats = {
            let mut g = self.state();
            let ready = g.recovery_known && g.recovering == 0 && g.scheduler_in;
            if !ready {
                return;
            }
            // From here on, what comes later is sent at once.
            std::mem::take(&mut g.touched)
        };
        let mut chats = chats;
        // Reports a crash kept from going out last time, for chats with nothing new.
        for t in self.left_over() {
            if !chats.contains(&t) {
                chats.push(t);
            }
        }
        for to in chats {
            self.send(to).await;
        }
    }

    /// Chats whose record on disk is still gathering, or holds lines for a next report.
    fn left_over(&self) -> Vec<Target> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| match store_file::load_json::<Record>(&e.path()) {
                Ok(Loaded::Ok(r)) if has_news(&r) => Some(r.target()),
                _ => None,
            })
            .collect()
    }

    /// Sends `to`'s gathered report, and then the lines gathered while it was on its way, as a
    /// report of their own (unless Telegram refused the first: they wait with it).
    async fn send(&self, to: Target) {
        while self.send_once(to).await {}
    }

    /// Sends `to`'s gathered report unless one is on its way already: `sending` on disk as its
    /// request leaves (after the flood-control waits), `gathering` again when Telegram refuses
    /// it (a 429 included: a crash before the retry sends it after the restart), `sent` once
    /// Telegram took it; with no answer (the connection failed) it stays `sending`, counted as
    /// shown (it may have arrived). Returns whether lines kept meanwhile are to be sent now.
    async fn send_once(&self, to: Target) -> bool {
        let Some(record) = self.take_for_sending(to) else {
            return false;
        };
        let report = |a: Attempt| match a {
            Attempt::Sending => self.mark(to, Stage::Sending),
            Attempt::Refused => self.mark(to, Stage::Gathering),
            // Sent: noted with its message by `settle`; no answer: left `sending`.
            Attempt::Sent | Attempt::Unknown => {}
        };
        let sent = self
            .tg
            .send_plain_reporting(to, &record.text(), record.markup(), &report)
            .await;
        self.settle(to, sent.map(|m| m.id.0))
    }

    /// `to`'s report to send (its lines kept for later gathered first), the chat noted as having
    /// its report on its way; `None` when there is nothing to send or a report is on its way
    /// (what came meanwhile is in `later`: that send goes on with it).
    fn take_for_sending(&self, to: Target) -> Option<Record> {
        let mut files = self.files();
        if files.contains(&to) {
            return None;
        }
        let mut record = self.load(to);
        if !record.later.is_empty() {
            record.gather(Vec::new());
            if let Err(e) = store_file::save_json(&self.path(to), &record) {
                tracing::error!(chat = to.chat_id, "cannot gather the down report (not sent now): {e}");
                return None;
            }
        }
        if record.state != Stage::Gathering || record.lines.is_empty() {
            return None;
        }
        files.insert(to);
        Some(record)
    }

    /// Notes how `to`'s report went (`sent`: the message's id) and that it is no longer on its
    /// way. Returns whether lines kept meanwhile are to be sent now (not after a refusal: they
    /// join the refused report, sent after the next restart).
    fn settle(&self, to: Target, sent: Result<i32, RequestError>) -> bool {
        let mut files = self.files();
        let mut now = self.load(to);
        match sent {
            Ok(id) => {
                now.state = Stage::Sent;
                now.message_id = Some(id);
                tracing::info!(chat = to.chat_id, lines = now.lines.len(), "sent the down report");
            }
            Err(RequestError::Network(_) | RequestError::Io(_)) => {
                tracing::warn!(
                    chat = to.chat_id,
                    "no answer to the down report (it may have arrived: not sent again)"
                );
            }
            Err(e) => {
                tracing::warn!(
                    chat = to.chat_id,
                    "the down report was not taken (sent after the next restart): {e}"
                );
                now.state = Stage::Gathering;
                now.gather(Vec::new());
            }
        }
        if let Err(e) = store_file::save_json(&self.path(to), &now) {
            tracing::error!(chat = to.chat_id, "cannot note the down report's delivery: {e}");
        }
        files.remove(&to);
        !now.later.is_empty()
    }

    /// Notes `to`'s report as `stage` (an attempt to send it leaving or refused).
    fn mark(&self, to: Target, stage: Stage) {
        let _files = self.files();
        let mut record = self.load(to);
        record.state = stage;
        if let Err(e) = store_file::save_json(&self.path(to), &record) {
            tracing::error!(chat = to.chat_id, ?stage, "cannot note the down report's stage: {e}");
        }
    }

    /// The Retry of update `kept` under message `message_id` of `to` was pressed: if that
    /// message is the chat's report, the report as it reads now (the line marked retrying, its
    /// button gone), to edit it with. `None` for any other message. A press can come before the
    /// report's id is on disk (Telegram showed it before the bot read the reply): a report whose
    /// line holds that Retry is then taken to be the message.
    pub fn pressed(&self, to: Target, message_id: i64, kept: i64) -> Option<(String, Option<InlineKeyboardMarkup>)> {
        let _files = self.files();
        let mut record = self.load(to);
        let offers = record.state != Stage::Gathering && record.lines.iter().any(|l| l.retry == Some(kept));
        let is_report = match record.message_id {
            Some(id) => i64::from(id) == message_id,
            None => offers,
        };
        if !is_report {
            return None;
        }
        if !record.pressed.contains(&kept) {
            record.pressed.push(kept);
            if let Err(e) = store_file::save_json(&self.path(to), &record) {
                tracing::warn!(chat = to.chat_id, "cannot note a pressed Retry in the down report: {e}");
            }
        }
        Some((record.text(), record.markup()))
    }
}

/// `text`'s first words in quotes, for a report line (`“…”`, 60 characters at most).
pub fn quote(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.is_empty() {
        return down::NO_TEXT.to_owned();
    }
    let mut q: String = one_line.chars().take(60).collect();
    if q.len() < one_line.len() {
        q.push('…');
    }
    format!("“{q}”")
}

#[cfg(test)]
#[path = "down_report_tests.rs"]
mod tests;
