//! The inbound journal (`<state_dir>/inbound.jsonl`): every accepted update is appended BEFORE
//! it is handed over and synced to disk before its offset is acknowledged to Telegram, then the
//! progress of each update is recorded on its own (not per run): whether its prompt reached the
//! session (`started`, with a digest of the prompt's text as the transcript holds it), whether a
//! tool ran on its behalf (`tool`), each chunk of its answer being handed to Telegram
//! (`chunk`: `sending` before each attempt, then `sent` once Telegram took it or `refused` when
//! Telegram answered with an error), and that its answer was delivered (`done`, only after
//! Telegram accepted the last chunk). After a crash nothing accepted is lost and nothing is answered twice (the rules are
//! in [`recovery`](crate::telegram::conversation::recovery)). Records (one JSON object per line):
//!
//! ```text
//! {"t":"update","id":17,"update":{…Bot API Update…}}
//! {"t":"state","id":17,"s":"started","p":"<prompt digest>"}
//! {"t":"state","id":17,"s":"tool"|"retried"|"done"}
//! {"t":"chunk","id":17,"n":0,"s":"sending"|"sent"|"refused"}   chunk n (0-based) of its answer
//! {"t":"seen","id":17}                   the highest id, kept by a rewrite
//! {"t":"rest","id":17,"first":2,"at":8190}   its answer goes on after chunks sent early ([`Rest`])
//! {"t":"dropped","id":17}                its chunks so far were of text before a tool call
//! {"t":"slot","k":"<key digest>",…}     a feature's prompt's answer, chunk by chunk ([`deliveries`])
//! ```
//!
//! What is written and synced when:
//!
//! - Every record is written (`write(2)`) at once, in order: a killed process (`kill -9`, a
//!   panic) loses nothing that was recorded, whatever was synced.
//! - Syncing (`fdatasync`) is grouped: a background thread syncs when asked, and one sync covers
//!   every record written before it. It is asked once updates are handed over (the poll waits
//!   for them, [`Journal::durable`]), by a `done` mark, and by anyone waiting for the disk; a
//!   `started` mark rides along with the next sync. Nothing on the way from an update to its
//!   model request waits for the disk, or wakes the thread (on two cores its wake-up and
//!   `fdatasync` compete with the run being started).
//! - An update is synced before its offset is acknowledged ([`Journal::durable`]: the next
//!   `getUpdates`, or a webhook's 200), and everything recorded is synced before anything else
//!   leaves the bot for Telegram ([`Journal::barrier`], in every message sent, edited or deleted):
//!   no answer is ever seen for an update, or for a run's start, that a power failure could take
//!   back (a chunk's `sending` mark is written right after that barrier, as the request
//!   leaves, and rides with the next sync). A `tool` or `retried` mark
//!   is synced before [`Journal::mark`] returns (a tool must not run twice, nor a retry happen
//!   twice).
//! - What a power failure (not a process crash) can still do: a `done` mark written just after
//!   the answer left but not yet synced (one sync, milliseconds) is lost, and the update's answer
//!   is judged from its `chunk` marks as after a crash; a session file line that reached the disk
//!   before the journal records of its update (nothing was sent yet) makes that prompt appear
//!   twice in the transcript, answered once.
//! - A failed sync stops the bot (exit status 3): after a failed `fdatasync` nothing written
//!   before it can be trusted to be on disk, and Linux reports the failure only once. Restarted,
//!   the bot recovers from the journal as after a crash, and Telegram resends what was not
//!   acknowledged.
//!
//! At start-up the journal is read, finished updates are dropped and the rest rewritten
//! atomically (it only ever holds unfinished work plus the highest update id seen). A line that
//! cannot be read (invalid UTF-8, a torn or garbled record, anywhere in the file) is skipped,
//! and the whole file is first copied aside to `inbound.jsonl.corrupt-<unix time>` and reported:
//! the bot starts with every record it could read, and nothing is lost.

mod chunks;
pub mod deliveries;
mod sync;

pub use chunks::{ChunkState, Chunks, Rest};

use deliveries::{DeliveryState, LineDeliveries, LineDelivery};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use sync::{GroupSync, SyncState};
use tokio::sync::watch;

/// How far an accepted update got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Progress {
    /// Persisted, not yet in the session.
    Accepted,
    /// Its prompt reached the session (and so the model), no tool ran for it yet.
    Started,
    /// It was run again after a crash cut its run off before any tool.
    Retried,
    /// A tool ran on its behalf (not safe to run again without the user's say).
    Tool,
    /// Answered (delivered), or nothing to answer.
    Done,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "lowercase")]
enum Record<'a> {
    /// Borrowed when written (an update is not copied to be journaled).
    Update {
        id: i64,
        update: Cow<'a, Value>,
    },
    State {
        id: i64,
        s: Progress,
        /// With `started`: the digest of the prompt as the session holds it ([`prompt_digest`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p: Option<Cow<'a, str>>,
    },
    /// Chunk `n` (0-based) of the update's answer: being handed to Telegram, taken, or refused.
    Chunk {
        id: i64,
        n: u32,
        s: ChunkState,
    },
    Seen {
        id: i64,
    },
    /// The update's answer goes on after its chunks sent early, cut as [`Rest`] says.
    Rest {
        id: i64,
        first: u32,
        at: usize,
    },
    /// The chunks recorded for the update were of text written before a tool call: forgotten.
    Dropped {
        id: i64,
    },
    /// The answer of a prompt a feature handed in (see [`deliveries`]): chunk `n`'s attempt, or
    /// `done` (no `n`). Tagged `slot` on disk, as since the scheduler was its first user.
    #[serde(rename = "slot")]
    Delivery {
        k: Cow<'a, str>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        n: Option<u32>,
        s: DeliveryState,
        /// Unix time (s) when written.
        at: i64,
    },
}

/// What an answer is for, as its delivery is journaled: the updates it answers, and the
/// prompts features handed in (by [`prompt_digest`] of their key, see [`deliveries`]) it
/// answers. Either may be empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answering {
    /// `update_id`s.
    pub ids: Vec<i64>,
    /// Digests of the keys of prompts features handed in.
    pub deliveries: Vec<String>,
}

impl Answering {
    /// The answer of a prompt a feature handed in, by the digest of its key.
    pub fn delivery(digest: String) -> Self {
        Answering {
            ids: Vec::new(),
            deliveries: vec![digest],
        }
    }

    /// Nothing to record.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty() && self.deliveries.is_empty()
    }

    /// Adds what `other` is for.
    pub fn extend(&mut self, other: Answering) {
        self.ids.extend(other.ids);
        self.deliveries.extend(other.deliveries);
    }
}

impl From<Vec<i64>> for Answering {
    fn from(ids: Vec<i64>) -> Self {
        Answering {
            ids,
            deliveries: Vec::new(),
        }
    }
}

/// An update that was accepted but not finished when the bot last stopped.
#[derive(Debug, Clone)]
pub struct Unfinished {
    /// `update_id`.
    pub id: i64,
    /// The update as received.
    pub update: Value,
    /// How far it got.
    pub progress: Progress,
    /// The digest of its prompt in the session ([`prompt_digest`]), once it got there.
    pub prompt: Option<String>,
    /// How far the delivery of its answer got.
    pub chunks: Chunks,
    /// How many times it was run again after a crash.
    pub retries: u32,
}

impl Unfinished {
    fn new(id: i64, update: Value) -> Self {
        Unfinished {
            id,
            update,
            progress: Progress::Accepted,
            prompt: None,
            chunks: Chunks::default(),
            retries: 0,
        }
    }
}

/// The digest of a prompt's text as the session's user message holds it: 16 hex digits of its
/// SHA-256 (stable across builds; recovery finds the prompt in the transcript by it).
pub fn prompt_digest(text: &str) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(text.as_bytes());
    d[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The journal file.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    /// The append handle; held while a record is written, never while syncing.
    file: Mutex<File>,
    last_id: Mutex<Option<i64>>,
    sync: Arc<GroupSync>,
    syncer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Line deliveries of the last days, as found at start-up ([`deliveries::KEPT_FOR_SECS`]).
    deliveries: Mutex<BTreeMap<String, LineDelivery>>,
}

/// Waiting for accepted updates to be on disk ([`Journal::durable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "acknowledge the updates only after Journal::durable"]
pub struct Durable(u64);

/// What reading the journal found: the unfinished updates by id, the highest id, and whether a
/// line could not be read.
struct Read {
    updates: BTreeMap<i64, Unfinished>,
    last_id: Option<i64>,
    deliveries: LineDeliveries,
    /// `(line number, why)` of the first unreadable line, and how many there were.
    unreadable: Option<((usize, String), usize)>,
}

fn read(bytes: &[u8]) -> Read {
    let mut out = Read {
        updates: BTreeMap::new(),
        last_id: None,
        deliveries: LineDeliveries::default(),
        unreadable: None,
    };
    for (n, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let parsed = std::str::from_utf8(raw)
            .map_err(|e| format!("invalid UTF-8 ({e})"))
            .and_then(|line| serde_json::from_str::<Record>(line).map_err(|e| e.to_string()));
        match parsed {
            Ok(Record::Update { id, update }) => {
                out.last_id = out.last_id.max(Some(id));
                out.updates.insert(id, Unfinished::new(id, update.into_owned()));
            }
            Ok(Record::State { id, s, p }) => {
                if let Some(u) = out.updates.get_mut(&id) {
                    u.progress = u.progress.max(s);
                    if s == Progress::Retried {
                        u.retries += 1;
                    }
                    if let Some(p) = p {
                        u.prompt = Some(p.into_owned());
                    }
                }
            }
            Ok(Record::Chunk { id, n, s }) => {
                if let Some(u) = out.updates.get_mut(&id) {
                    u.chunks.note(n, s);
                }
            }
            Ok(Record::Seen { id }) => out.last_id = out.last_id.max(Some(id)),
            Ok(Record::Rest { id, first, at }) => {
                if let Some(u) = out.updates.get_mut(&id) {
                    u.chunks.rest = Some(Rest { first, at });
                }
            }
            Ok(Record::Dropped { id }) => {
                if let Some(u) = out.updates.get_mut(&id) {
                    u.chunks.drop_early();
                }
            }
            Ok(Record::Delivery { k, n, s, at }) => out.deliveries.note(&k, n, s, at),
            Err(why) => match &mut out.unreadable {
                Some((_, count)) => *count += 1,
                None => out.unreadable = Some(((n + 1, why), 1)),
            },
        }
    }
    out
}

impl Journal {
    /// Opens (or creates) the journal; returns it, the unfinished updates in id order, and the
    /// highest update id ever accepted. An unreadable line is skipped after the file was copied
    /// aside (see the module docs); an error means the state dir cannot be read or written.
    pub fn open(state_dir: &Path) -> std::io::Result<(Journal, Vec<Unfinished>)> {
        std::fs::create_dir_all(state_dir)?;
        let path = state_dir.join("inbound.jsonl");
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let found = read(&bytes);
        if let Some(((line, why), count)) = &found.unreadable {
            // Kept as it was before the rewrite below drops what could not be read.
            let aside = crate::telegram::conversation::store_file::corrupt_path(&path);
            std::fs::write(&aside, &bytes)?;
            tracing::warn!(
                file = %path.display(),
                copy = %aside.display(),
                "the inbound journal had {count} unreadable line(s) (first: line {line}: {why}); \
                 the file was copied aside and every readable record kept"
            );
        }
        let last_id = found.last_id;
        let unfinished: Vec<Unfinished> = found
            .updates
            .into_values()
            .filter(|u| u.progress != Progress::Done)
            .collect();
        // Rewrite with only what is still needed.
        let mut text = String::new();
        if let Some(id) = last_id {
            text.push_str(&line(&Record::Seen { id }));
        }
        for u in &unfinished {
            text.push_str(&unfinished_lines(u));
        }
        let deliveries = found.deliveries.kept(now());
        for (k, d) in &deliveries {
            text.push_str(&delivery_lines(k, d));
        }
        crate::telegram::conversation::store_file::write_atomic(&path, text.as_bytes())?;
        let file = OpenOptions::new().append(true).open(&path)?;
        let sync = Arc::new(GroupSync {
            file: file.try_clone()?,
            state: Mutex::new(SyncState::default()),
            changed: Condvar::new(),
            synced: watch::Sender::new(0),
        });
        let syncer = {
            let sync = sync.clone();
            std::thread::Builder::new()
                .name("journal-sync".into())
                .spawn(move || sync.run())?
        };
        Ok((
            Journal {
                path,
                file: Mutex::new(file),
                last_id: Mutex::new(last_id),
                sync,
                syncer: Mutex::new(Some(syncer)),
                deliveries: Mutex::new(deliveries),
            },
            unfinished,
        ))
    }

    /// Writes `text` (whole records) at the end; returns the number to wait for.
    /// `sync_soon`: have the background thread sync it at once.
    fn write(&self, text: &str, sync_soon: bool) -> std::io::Result<u64> {
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        f.write_all(text.as_bytes())?;
        Ok(self.sync.written(sync_soon))
    }

    /// Waits until the updates of an [`accept`](Self::accept) are on disk: acknowledge them to
    /// Telegram only after this.
    pub async fn durable(&self, d: Durable) {
        self.sync.wait_async(d.0).await;
    }

    /// Waits until everything recorded so far is on disk. Anything sent to Telegram waits for
    /// this first, so no one ever sees an answer that a power failure could make the bot forget
    /// it gave (or even received the message for).
    pub async fn barrier(&self) {
        let n = self.sync.written_so_far();
        self.sync.wait_async(n).await;
    }

    /// The highest update id accepted so far.
    pub fn last_id(&self) -> Option<i64> {
        *self.last_id.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends a batch of updates; returns those not seen before (repeats of an `update_id` are
    /// ignored), to hand over at once, and what to wait for before the offset may move past them
    /// ([`durable`](Self::durable)). An error means nothing was accepted (not written).
    pub fn accept(&self, batch: Vec<(i64, Value)>) -> std::io::Result<(Vec<(i64, Value)>, Durable)> {
        let mut last = self.last_id.lock().unwrap_or_else(|e| e.into_inner());
        // A repeat inside one batch counts as a repeat too.
        let mut in_batch = std::collections::HashSet::new();
        let fresh: Vec<(i64, Value)> = batch
            .into_iter()
            .filter(|(id, _)| last.is_none_or(|l| *id > l) && in_batch.insert(*id))
            .collect();
        if fresh.is_empty() {
            // Repeats: their first delivery's records must be on disk before this one is
            // acknowledged too (a sync is asked for only once that delivery was handed over).
            return Ok((fresh, Durable(self.sync.written_so_far())));
        }
        let mut text = String::new();
        for (id, update) in &fresh {
            text.push_str(&line(&Record::Update {
                id: *id,
                update: Cow::Borrowed(update),
            }));
        }
        // Synced once they are handed over: `durable` asks for it.
        let n = self.write(&text, false)?;
        *last = fresh.iter().map(|(id, _)| *id).max().max(*last);
        crate::ops::answers::arrived(&fresh);
        Ok((fresh, Durable(n)))
    }

    /// Records progress of one update; see [`mark_all`](Self::mark_all).
    pub fn mark(&self, id: i64, progress: Progress) {
        self.mark_all(&[id], progress);
    }

    /// Records progress of updates (best effort: a failure is logged), in one write. `tool` and
    /// `retried` are durable when this returns; `done` is synced soon in the background;
    /// `started` rides along with the next sync (see the module docs). Use
    /// [`started`](Self::started) to record a prompt's arrival with its digest.
    pub fn mark_all(&self, ids: &[i64], progress: Progress) {
        let text: String = ids
            .iter()
            .map(|&id| {
                line(&Record::State {
                    id,
                    s: progress,
                    p: None,
                })
            })
            .collect();
        self.append(&text, progress);
    }

    /// Records that the prompt of `ids` reached the session, as the user message whose text has
    /// the digest `prompt` ([`prompt_digest`]).
    pub fn started(&self, ids: &[i64], prompt: &str) {
        let text: String = ids
            .iter()
            .map(|&id| {
                line(&Record::State {
                    id,
                    s: Progress::Started,
                    p: Some(Cow::Borrowed(prompt)),
                })
            })
            .collect();
        self.append(&text, Progress::Started);
    }

    /// Records how chunk `n` (0-based) of the answer of `ids` fares. `sending` is written right
    /// before each attempt leaves, after every wait (so a crash after it means the request was
    /// on its way); not synced (a power failure can lose it: the chunk is then sent again).
    pub fn chunk(&self, of: &Answering, n: u32, s: ChunkState) {
        crate::ops::answers::chunk(&of.ids, n, s == ChunkState::Sent);
        let mut text: String = of.ids.iter().map(|&id| line(&Record::Chunk { id, n, s })).collect();
        for k in &of.deliveries {
            text.push_str(&line(&Record::Delivery {
                k: Cow::Borrowed(k),
                n: Some(n),
                s: DeliveryState::of(s),
                at: now(),
            }));
        }
        self.append(&text, Progress::Started);
    }

    /// Records that the chunks recorded for `ids` so far were sent early of text that was
    /// followed by a tool call, not of the answer ([`Chunks`] forgets them).
    pub fn drop_early(&self, ids: &[i64]) {
        let text: String = ids.iter().map(|&id| line(&Record::Dropped { id })).collect();
        self.append(&text, Progress::Started);
    }

    /// Records that the answer of `ids` goes on after its chunks sent early, cut as `rest` says.
    pub fn rest(&self, ids: &[i64], rest: Rest) {
        let text: String = ids
            .iter()
            .map(|&id| {
                line(&Record::Rest {
                    id,
                    first: rest.first,
                    at: rest.at,
                })
            })
            .collect();
        self.append(&text, Progress::Started);
    }

    /// Records that the answer for `of` was delivered (or that there is none): its updates are
    /// `done`, its deliveries too.
    pub fn finish(&self, of: &Answering) {
        crate::ops::answers::finished(&of.ids);
        let mut text: String = of
            .ids
            .iter()
            .map(|&id| {
                line(&Record::State {
                    id,
                    s: Progress::Done,
                    p: None,
                })
            })
            .collect();
        for k in &of.deliveries {
            text.push_str(&line(&Record::Delivery {
                k: Cow::Borrowed(k),
                n: None,
                s: DeliveryState::Done,
                at: now(),
            }));
        }
        self.append(&text, Progress::Done);
    }

    /// Where delivering the answer handed in with key digest `key` goes on after the last stop:
    /// from chunk `Some(n)` ([`Chunks::resume_at`]; 0 when none went out), or `None` when it was
    /// delivered whole.
    pub fn delivery_resume_at(&self, key: &str) -> Option<usize> {
        let deliveries = self.deliveries.lock().unwrap_or_else(|e| e.into_inner());
        match deliveries.get(key) {
            Some(d) if d.done => None,
            Some(d) => Some(d.chunks.resume_at()),
            None => Some(0),
        }
    }

    fn append(&self, text: &str, progress: Progress) {
        if text.is_empty() {
            return;
        }
        // `done` is synced soon (a power failure then cannot make the update run again);
        // `started` waits for the next sync (the barrier before anything reaches Telegram).
        let sync_soon = progress == Progress::Done;
        match self.write(text, sync_soon) {
            Ok(n) if matches!(progress, Progress::Tool | Progress::Retried) => {
                volcanic_core::blocking::run(|| self.sync.wait(n));
            }
            Ok(_) => {}
            Err(e) => tracing::error!(file = %self.path.display(), "cannot record update progress: {e}"),
        }
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.sync.lock().stop = true;
        self.sync.changed.notify_all();
        let syncer = self.syncer.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = syncer {
            let _ = t.join();
        }
    }
}

/// The records that restore `u` after a rewrite.
fn unfinished_lines(u: &Unfinished) -> String {
    let mut text = line(&Record::Update {
        id: u.id,
        update: Cow::Borrowed(&u.update),
    });
    let state = |s: Progress, p: Option<&str>| {
        line(&Record::State {
            id: u.id,
            s,
            p: p.map(Cow::Borrowed),
        })
    };
    if let Some(p) = &u.prompt {
        text.push_str(&state(Progress::Started, Some(p)));
    }
    for _ in 0..u.retries {
        text.push_str(&state(Progress::Retried, None));
    }
    let written = match (&u.prompt, u.retries) {
        (_, 1..) => Progress::Retried,
        (Some(_), 0) => Progress::Started,
        (None, 0) => Progress::Accepted,
    };
    if u.progress > written {
        text.push_str(&state(u.progress, None));
    }
    if let Some(r) = u.chunks.rest {
        text.push_str(&line(&Record::Rest {
            id: u.id,
            first: r.first,
            at: r.at,
        }));
    }
    if let Some(n) = u.chunks.delivered {
        text.push_str(&line(&Record::Chunk {
            id: u.id,
            n,
            s: ChunkState::Sent,
        }));
    }
    if let Some(n) = u.chunks.in_flight {
        text.push_str(&line(&Record::Chunk {
            id: u.id,
            n,
            s: ChunkState::Sending,
        }));
    }
    text
}

/// The records that restore a line delivery after a rewrite.
fn delivery_lines(k: &str, d: &LineDelivery) -> String {
    let rec = |n: u32, s: DeliveryState| {
        line(&Record::Delivery {
            k: Cow::Borrowed(k),
            n: Some(n),
            s,
            at: d.at,
        })
    };
    if d.done {
        return line(&Record::Delivery {
            k: Cow::Borrowed(k),
            n: None,
            s: DeliveryState::Done,
            at: d.at,
        });
    }
    let mut text = String::new();
    if let Some(n) = d.chunks.delivered {
        text.push_str(&rec(n, DeliveryState::Sent));
    }
    if let Some(n) = d.chunks.in_flight {
        text.push_str(&rec(n, DeliveryState::Sending));
    }
    text
}

/// Unix time (s).
fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn line(r: &Record<'_>) -> String {
    let mut s = serde_json::to_string(r).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
