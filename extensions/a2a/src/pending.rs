//! The chat's pending tasks: `.volcanic/a2a/pending.json` in its workspace, written whole to a
//! temporary file, synced and renamed over the old one (a crash leaves the old file or the new,
//! never half of one). A file that does not parse is set aside as `pending.json.corrupt-<unix
//! seconds>` and reported, never overwritten.
//!
//! ```json
//! {"version": 1, "tasks": [{"agent": "research", "url": "https://agents.example.org/research",
//!   "task_id": "…", "context_id": "…", "chat": {"chat_id": 42}, "state": "working",
//!   "since": 1764620000, "push_id": "…"}]}
//! ```
//!
//! An entry stays until its result (or its request for input) has been delivered into the chat:
//! removing it is the "delivered" mark.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{A2aError, Result};

/// The file, relative to the workspace.
pub const PENDING_FILE: &str = ".volcanic/a2a/pending.json";

/// Where a result goes: a chat and, in forums, a topic (Bot API `message_thread_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChatRef {
    /// The chat's id (Bot API `chat.id`).
    pub chat_id: i64,
    /// The forum topic (Bot API `message_thread_id`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<i64>,
}

/// One task followed for a chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingTask {
    /// The agent's name in the chat's `agents.json`.
    pub agent: String,
    /// The agent's base URL (its card is read from there).
    pub url: String,
    /// The remote task's id.
    pub task_id: String,
    /// Its context id.
    #[serde(default)]
    pub context_id: String,
    /// Where its result goes.
    pub chat: ChatRef,
    /// The state last seen (`working`, …).
    pub state: String,
    /// When it was handed to the registry (Unix seconds).
    pub since: u64,
    /// The id of its push receiver (`/a2a/push/<id>`), when push was set up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_id: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct PendingFile {
    version: u32,
    tasks: Vec<PendingTask>,
}

/// The path of the file in `workspace`.
pub fn pending_path(workspace: &Path) -> PathBuf {
    workspace.join(PENDING_FILE)
}

fn file_error(path: &Path, reason: impl std::fmt::Display) -> A2aError {
    A2aError::File {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

/// The pending tasks of `workspace` (none when the file does not exist).
///
/// # Errors
/// [`A2aError::File`] when it cannot be read; when it does not parse, it is renamed to
/// `pending.json.corrupt-<unix seconds>` first and the error names that file (so that the next
/// write starts afresh without losing what was there).
pub fn read_pending(workspace: &Path) -> Result<Vec<PendingTask>> {
    let path = pending_path(workspace);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(file_error(&path, e)),
    };
    match serde_json::from_slice::<PendingFile>(&text) {
        Ok(f) => Ok(f.tasks),
        Err(parse) => {
            let aside = path.with_file_name(format!("pending.json.corrupt-{}", now_secs()));
            std::fs::rename(&path, &aside)
                .map_err(|e| file_error(&path, format!("does not parse ({parse}) and cannot be set aside: {e}")))?;
            Err(file_error(
                &path,
                format!(
                    "did not parse ({parse}); set aside as {} (its tasks are no longer followed: \
                     check them with the a2a tool's status action)",
                    aside.display()
                ),
            ))
        }
    }
}

/// Writes `tasks` as the pending tasks of `workspace` (temporary file, fsync, rename, fsync of
/// the folder); an empty list removes the file.
///
/// # Errors
/// [`A2aError::File`] naming the file and what failed.
pub fn write_pending(workspace: &Path, tasks: &[PendingTask]) -> Result<()> {
    let path = pending_path(workspace);
    let dir = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| workspace.to_path_buf());
    if tasks.is_empty() {
        return match std::fs::remove_file(&path) {
            Ok(()) => sync_dir(&dir),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(file_error(&path, e)),
        };
    }
    std::fs::create_dir_all(&dir).map_err(|e| file_error(&dir, e))?;
    let body = serde_json::to_vec_pretty(&PendingFile {
        version: 1,
        tasks: tasks.to_vec(),
    })
    .map_err(|e| file_error(&path, e))?;
    let tmp = dir.join(format!(".pending.json.{}.tmp", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&body)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_file(&tmp);
        return Err(file_error(&path, e));
    }
    sync_dir(&dir)
}

fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| file_error(dir, e))
}

/// Now, in Unix seconds.
pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str) -> PendingTask {
        PendingTask {
            agent: "a".into(),
            url: "http://127.0.0.1:1".into(),
            task_id: id.into(),
            context_id: "c".into(),
            chat: ChatRef {
                chat_id: 7,
                topic: None,
            },
            state: "working".into(),
            since: 1,
            push_id: None,
        }
    }

    #[test]
    fn tasks_round_trip_and_an_empty_list_removes_the_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_pending(dir.path()).ok(), Some(Vec::new()));
        write_pending(dir.path(), &[task("t1"), task("t2")]).unwrap_or_else(|e| panic!("{e}"));
        let back = read_pending(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, vec![task("t1"), task("t2")]);
        write_pending(dir.path(), &[]).unwrap_or_else(|e| panic!("{e}"));
        assert!(!pending_path(dir.path()).exists());
    }

    #[test]
    fn a_corrupt_file_is_set_aside_and_reported_never_overwritten() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = pending_path(dir.path());
        std::fs::create_dir_all(path.parent().unwrap_or(dir.path())).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&path, b"{not json").unwrap_or_else(|e| panic!("{e}"));
        let e = read_pending(dir.path())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("set aside as") && e.contains("corrupt-"), "{e}");
        write_pending(dir.path(), &[task("t1")]).unwrap_or_else(|e| panic!("{e}"));
        let aside: Vec<_> = std::fs::read_dir(path.parent().unwrap_or(dir.path()))
            .unwrap_or_else(|e| panic!("{e}"))
            .flatten()
            .filter(|d| d.file_name().to_string_lossy().starts_with("pending.json.corrupt-"))
            .collect();
        assert_eq!(aside.len(), 1);
        assert_eq!(std::fs::read(aside[0].path()).ok(), Some(b"{not json".to_vec()));
    }
}
