//! The inbound journal (`<state_dir>/inbound.jsonl`): every accepted update is appended and
//! synced to disk BEFORE its offset is acknowledged to Telegram, then its progress is recorded
//! (`started`, `tool`, `done`), so after a crash nothing accepted is lost and nothing is answered
//! twice. Records (one JSON object per line):
//!
//! ```text
//! {"t":"update","id":17,"update":{…Bot API Update…}}
//! {"t":"state","id":17,"s":"started"|"tool"|"retried"|"done"}
//! ```
//!
//! At start-up the journal is read, finished updates are dropped and the rest rewritten
//! atomically (it only ever holds unfinished work plus the highest update id seen).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How far an accepted update got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Progress {
    /// Persisted, not yet run.
    Accepted,
    /// A run with it started.
    Started,
    /// It was retried once after a crash.
    Retried,
    /// A tool ran for it (not safe to retry automatically).
    Tool,
    /// Answered (or nothing to answer).
    Done,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "lowercase")]
enum Record {
    Update { id: i64, update: Value },
    State { id: i64, s: Progress },
    Seen { id: i64 },
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
}

/// The journal file.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: Mutex<File>,
    last_id: Mutex<Option<i64>>,
}

impl Journal {
    /// Opens (or creates) the journal; returns it, the unfinished updates in id order, and the
    /// highest update id ever accepted.
    pub fn open(state_dir: &Path) -> std::io::Result<(Journal, Vec<Unfinished>)> {
        std::fs::create_dir_all(state_dir)?;
        let path = state_dir.join("inbound.jsonl");
        let mut updates: BTreeMap<i64, (Value, Progress)> = BTreeMap::new();
        let mut last_id: Option<i64> = None;
        if let Ok(f) = File::open(&path) {
            for (n, line) in std::io::BufReader::new(f).lines().enumerate() {
                let line = line?;
                if line.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<Record>(&line) {
                    Ok(Record::Update { id, update }) => {
                        last_id = last_id.max(Some(id));
                        updates.insert(id, (update, Progress::Accepted));
                    }
                    Ok(Record::State { id, s }) => {
                        if let Some(u) = updates.get_mut(&id) {
                            u.1 = u.1.max(s);
                        }
                    }
                    Ok(Record::Seen { id }) => last_id = last_id.max(Some(id)),
                    // A torn last line from a crash mid-append: that update was never acknowledged,
                    // so Telegram sends it again.
                    Err(e) => {
                        tracing::warn!(file = %path.display(), line = n + 1, "skipping unreadable journal line: {e}")
                    }
                }
            }
        }
        let unfinished: Vec<Unfinished> = updates
            .into_iter()
            .filter(|(_, (_, p))| *p != Progress::Done)
            .map(|(id, (update, progress))| Unfinished { id, update, progress })
            .collect();
        // Rewrite with only what is still needed.
        let mut text = String::new();
        if let Some(id) = last_id {
            text.push_str(&line(&Record::Seen { id }));
        }
        for u in &unfinished {
            text.push_str(&line(&Record::Update {
                id: u.id,
                update: u.update.clone(),
            }));
            if u.progress != Progress::Accepted {
                text.push_str(&line(&Record::State {
                    id: u.id,
                    s: u.progress,
                }));
            }
        }
        super::store_file::write_atomic(&path, text.as_bytes())?;
        let file = OpenOptions::new().append(true).open(&path)?;
        Ok((
            Journal {
                path,
                file: Mutex::new(file),
                last_id: Mutex::new(last_id),
            },
            unfinished,
        ))
    }

    /// The highest update id accepted so far.
    pub fn last_id(&self) -> Option<i64> {
        *self.last_id.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends a batch of updates and syncs; returns those not seen before (repeats of an
    /// `update_id` are ignored). Only after this returns may the offset move past them.
    pub fn accept(&self, batch: Vec<(i64, Value)>) -> std::io::Result<Vec<(i64, Value)>> {
        let mut last = self.last_id.lock().unwrap_or_else(|e| e.into_inner());
        // A repeat inside one batch counts as a repeat too.
        let mut in_batch = std::collections::HashSet::new();
        let fresh: Vec<(i64, Value)> = batch
            .into_iter()
            .filter(|(id, _)| last.is_none_or(|l| *id > l) && in_batch.insert(*id))
            .collect();
        if fresh.is_empty() {
            return Ok(fresh);
        }
        let mut text = String::new();
        for (id, update) in &fresh {
            text.push_str(&line(&Record::Update {
                id: *id,
                update: update.clone(),
            }));
        }
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        f.write_all(text.as_bytes())?;
        f.sync_data()?;
        *last = fresh.iter().map(|(id, _)| *id).max().max(*last);
        Ok(fresh)
    }

    /// Records progress of an update (best effort: a failure is logged).
    pub fn mark(&self, id: i64, progress: Progress) {
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let r = f
            .write_all(line(&Record::State { id, s: progress }).as_bytes())
            .and_then(|()| f.sync_data());
        if let Err(e) = r {
            tracing::error!(file = %self.path.display(), "cannot record update progress: {e}");
        }
    }
}

fn line(r: &Record) -> String {
    let mut s = serde_json::to_string(r).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepted_updates_survive_and_repeats_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let (j, unfinished) = Journal::open(dir.path()).unwrap();
        assert!(unfinished.is_empty() && j.last_id().is_none());
        let fresh = j
            .accept(vec![(1, json!({"update_id": 1})), (2, json!({"update_id": 2}))])
            .unwrap();
        assert_eq!(fresh.len(), 2);
        assert!(j.accept(vec![(2, json!({"update_id": 2}))]).unwrap().is_empty());
        j.mark(1, Progress::Started);
        j.mark(1, Progress::Done);
        j.mark(2, Progress::Started);
        j.mark(2, Progress::Tool);
        drop(j);
        // A torn line at the end is skipped.
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.path().join("inbound.jsonl"))
            .unwrap();
        f.write_all(b"{\"t\":\"update\",\"id\":3,\"upd").unwrap();
        drop(f);
        let (j, unfinished) = Journal::open(dir.path()).unwrap();
        assert_eq!(j.last_id(), Some(2));
        assert_eq!(unfinished.len(), 1);
        assert_eq!((unfinished[0].id, unfinished[0].progress), (2, Progress::Tool));
        // The rewrite kept the highest id even after everything is done.
        j.mark(2, Progress::Done);
        drop(j);
        let (j, unfinished) = Journal::open(dir.path()).unwrap();
        assert!(unfinished.is_empty());
        assert_eq!(j.last_id(), Some(2));
    }

    #[test]
    fn a_repeat_inside_one_batch_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let (j, _) = Journal::open(dir.path()).unwrap();
        let fresh = j
            .accept(vec![(4, json!({"update_id": 4})), (4, json!({"update_id": 4}))])
            .unwrap();
        assert_eq!(fresh.len(), 1);
    }
}
