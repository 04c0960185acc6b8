//! The progress messages on screen, remembered in `<state_dir>/progress/` so that after a crash
//! (`kill -9`, power loss) the next start deletes the ones the dead process left behind.
//!
//! One small file per chat or topic, `<chat id>_<topic or 0>`, holding the message id. Written
//! when a progress message is sent, removed when it is deleted. Not synced: a lost mark only
//! leaves a stale "⚙️ …" line, as before.

use crate::features::port::Target;
use crate::telegram::outbound::api::Tg;
use std::path::PathBuf;

/// Progress-message marks in one folder.
#[derive(Debug)]
pub struct ProgressMarks {
    dir: PathBuf,
}

impl ProgressMarks {
    /// Marks kept in `<state_dir>/progress/` (created on the first mark).
    pub fn new(state_dir: &std::path::Path) -> Self {
        ProgressMarks {
            dir: state_dir.join("progress"),
        }
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

    /// Forgets the progress message of `to` (it was deleted).
    pub fn clear(&self, to: Target) {
        let _ = std::fs::remove_file(self.file(to));
    }

    /// The marks left by an earlier process: `(where, message id)`. Unreadable files are removed
    /// with a log line.
    pub fn left_over(&self) -> Vec<(Target, i32)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let parsed = name.split_once('_').and_then(|(c, t)| {
                let chat_id = c.parse::<i64>().ok()?;
                let thread = t.parse::<i32>().ok()?;
                let id = std::fs::read_to_string(e.path()).ok()?.trim().parse::<i32>().ok()?;
                Some((
                    Target {
                        chat_id,
                        thread: (thread != 0).then_some(thread),
                    },
                    id,
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

    /// Deletes the progress messages an earlier process left on screen, and their marks.
    pub async fn sweep(&self, tg: &Tg) {
        for (to, id) in self.left_over() {
            tg.delete(to, id).await;
            self.clear(to);
        }
    }
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
        std::fs::write(dir.path().join("progress/garbage"), "x")?;
        let again = ProgressMarks::new(dir.path());
        assert_eq!(again.left_over(), vec![(topic, 11)]);
        assert!(
            !dir.path().join("progress/garbage").exists(),
            "unreadable marks are removed"
        );
        Ok(())
    }
}
