//! The progress messages on screen, remembered in `<state_dir>/progress/` so that after a crash
//! (`kill -9`, power loss) the next start deletes the ones the dead process left behind.
//!
//! One small file per chat or topic, `<chat id>_<topic or 0>`, holding the message id. Written
//! when a progress message (or a group's answer preview, [`live`](crate::telegram::outbound::live))
//! is sent, removed when it is deleted. Not synced: a `kill -9` keeps what was written, and a
//! power loss only leaves a stale line, as before.
//!
//! A preview becoming its answer's first chunk is marked with that chunk (JSON `{"id", "html",
//! "plain"}`, written before the edit is journaled as the chunk's `sending`): the next start
//! finishes that edit instead of deleting the message, since the journal counts a chunk whose
//! request was on its way as delivered.

use crate::features::port::Target;
use crate::telegram::outbound::api::Tg;
use std::path::PathBuf;

/// Progress-message marks in one folder.
#[derive(Debug)]
pub struct ProgressMarks {
    dir: PathBuf,
    /// The marks an earlier process left, read when this one started (before it could write
    /// its own for the same chat), for [`sweep`](Self::sweep).
    left: std::sync::Mutex<Vec<(Target, Left)>>,
}

impl ProgressMarks {
    /// Marks kept in `<state_dir>/progress/` (created on the first mark); the ones left there
    /// by an earlier process are read now.
    pub fn new(state_dir: &std::path::Path) -> Self {
        let marks = ProgressMarks {
            dir: state_dir.join("progress"),
            left: std::sync::Mutex::default(),
        };
        *marks.left.lock().unwrap_or_else(|e| e.into_inner()) = marks.left_over();
        marks
    }

    fn file(&self, to: Target) -> PathBuf {
        self.dir.join(format!("{}_{}", to.chat_id, to.thread.unwrap_or(0)))
    }

    /// Remembers the progress message `message_id` shown in `to`.
    pub fn set(&self, to: Target, message_id: i32) {
        let r = std::fs::create_dir_all(&self.dir).and_then(|()| std::fs::write(self.file(to), message_id.to_string()));
        if let Err(e) = r {
            tracing::warn!(chat = to.chat_id, "cannot remember the progress message: {e}");
        }
    }

    /// Notes that the preview `message_id` in `to` is being edited into an answer chunk (`html`,
    /// `plain` if Telegram cannot parse it): after a crash the edit is finished, not the
    /// message deleted. Written whole (a temporary file renamed) before the call returns.
    pub fn set_final(&self, to: Target, message_id: i32, html: &str, plain: &str) {
        let mark = serde_json::json!({"id": message_id, "html": html, "plain": plain}).to_string();
        let tmp = self.dir.join(".final.tmp");
        let r = std::fs::create_dir_all(&self.dir)
            .and_then(|()| std::fs::write(&tmp, mark))
            .and_then(|()| std::fs::rename(&tmp, self.file(to)));
        if let Err(e) = r {
            tracing::warn!(
                chat = to.chat_id,
                "cannot remember the preview becoming the answer: {e}"
            );
        }
    }

    /// Forgets the progress message of `to` (it was deleted).
    pub fn clear(&self, to: Target) {
        let _ = std::fs::remove_file(self.file(to));
    }

    /// The marks left by an earlier process: `(where, mark)`. Unreadable files are removed with
    /// a log line.
    pub fn left_over(&self) -> Vec<(Target, Left)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                // A final mark being written (`set_final`).
                continue;
            }
            let parsed = name.split_once('_').and_then(|(c, t)| {
                let chat_id = c.parse::<i64>().ok()?;
                let thread = t.parse::<i32>().ok()?;
                let left = read_mark(&std::fs::read_to_string(e.path()).ok()?)?;
                Some((
                    Target {
                        chat_id,
                        thread: (thread != 0).then_some(thread),
                    },
                    left,
                ))
            });
            match parsed {
                Some(p) => out.push(p),
                None => {
                    tracing::warn!("removing unreadable progress mark {}", e.path().display());
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        out
    }

    /// Deletes the progress messages and previews an earlier process left on screen (as read
    /// at [`new`](Self::new)), finishes the edits of previews that were becoming answers, and
    /// drops their marks (unless this process marked a message of its own there meanwhile).
    pub async fn sweep(&self, tg: &Tg) {
        let left = std::mem::take(&mut *self.left.lock().unwrap_or_else(|e| e.into_inner()));
        for (to, left) in left {
            match &left {
                Left::Shown(id) => tg.delete(to, *id).await,
                Left::Final { id, html, plain } => tg.finish_edit(to, *id, html, plain).await,
            }
            let now = std::fs::read_to_string(self.file(to)).ok().and_then(|t| read_mark(&t));
            if now.as_ref() == Some(&left) {
                self.clear(to);
            }
        }
    }
}

/// A mark left by an earlier process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Left {
    /// A progress message or preview on screen (to delete).
    Shown(i32),
    /// A preview being edited into an answer chunk (to finish).
    Final {
        /// The message.
        id: i32,
        /// The chunk's HTML.
        html: String,
        /// Its plain text.
        plain: String,
    },
}

fn read_mark(text: &str) -> Option<Left> {
    if let Ok(id) = text.trim().parse::<i32>() {
        return Some(Left::Shown(id));
    }
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    Some(Left::Final {
        id: i32::try_from(v["id"].as_i64()?).ok()?,
        html: v["html"].as_str()?.to_owned(),
        plain: v["plain"].as_str()?.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_survive_a_restart_and_clear() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let marks = ProgressMarks::new(dir.path());
        let topic = Target {
            chat_id: -100123,
            thread: Some(7),
        };
        let private = Target {
            chat_id: 42,
            thread: None,
        };
        marks.set(topic, 11);
        marks.set(private, 12);
        marks.clear(private);
        let group = Target {
            chat_id: -100456,
            thread: None,
        };
        marks.set(group, 13);
        marks.set_final(group, 13, "<b>a</b>", "a");
        std::fs::write(dir.path().join("progress/garbage"), "x")?;
        let again = ProgressMarks::new(dir.path());
        let mut left = again.left_over();
        left.sort_by_key(|(to, _)| to.chat_id);
        let finished = Left::Final {
            id: 13,
            html: "<b>a</b>".into(),
            plain: "a".into(),
        };
        assert_eq!(left, vec![(group, finished), (topic, Left::Shown(11))]);
        // A mark this process writes does not hide the one read at its start.
        again.set(topic, 99);
        let mut read_at_start = again.left.lock().map(|l| l.clone()).unwrap_or_default();
        read_at_start.sort_by_key(|(to, _)| to.chat_id);
        assert_eq!(read_at_start, left);
        assert!(
            !dir.path().join("progress/garbage").exists(),
            "unreadable marks are removed"
        );
        Ok(())
    }
}
