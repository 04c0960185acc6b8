//! Durable task files: `<state_dir>/a2a/<caller>/tasks/<task id>.json`, each written whole to a
//! temporary file and renamed over the old one, so a crash leaves the old or the new version.

use std::path::{Path, PathBuf};

use a2a::{Task, TaskPushNotificationConfig};
use serde::{Deserialize, Serialize};

use crate::error::ServerError;

/// What is kept of one task.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct StoredTask {
    pub task: Task,
    #[serde(default)]
    pub push: Vec<PushTarget>,
}

/// A push config and the dialect it was made in (0.3 targets get 0.3 payloads).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PushTarget {
    pub config: TaskPushNotificationConfig,
    #[serde(default)]
    pub v03: bool,
}

/// The tasks folder of one caller.
#[derive(Debug, Clone)]
pub(crate) struct TaskDir {
    dir: PathBuf,
}

/// Task ids name files: only ids made of safe characters are stored (ours are UUIDs).
fn safe_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl TaskDir {
    /// The folder for `caller` under `state_dir`, created if missing.
    pub fn open(state_dir: &Path, caller: &str) -> Result<TaskDir, ServerError> {
        let dir = state_dir.join("a2a").join(caller).join("tasks");
        std::fs::create_dir_all(&dir).map_err(|source| ServerError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        Ok(TaskDir { dir })
    }

    /// Every stored task; unreadable files are reported and left in place.
    pub fn load(&self) -> Result<Vec<StoredTask>, ServerError> {
        let entries = std::fs::read_dir(&self.dir).map_err(|source| ServerError::Io {
            path: self.dir.display().to_string(),
            source,
        })?;
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            match std::fs::read(&path).map(|b| serde_json::from_slice::<StoredTask>(&b)) {
                Ok(Ok(t)) => out.push(t),
                Ok(Err(e)) => tracing::warn!(file = %path.display(), "unreadable A2A task file left in place: {e}"),
                Err(e) => tracing::warn!(file = %path.display(), "A2A task file cannot be read: {e}"),
            }
        }
        Ok(out)
    }

    /// Writes one task atomically (temporary file + rename).
    pub fn save(&self, stored: &StoredTask) {
        if !safe_id(&stored.task.id) {
            return;
        }
        let path = self.dir.join(format!("{}.json", stored.task.id));
        let tmp = self.dir.join(format!(".{}.json.tmp", stored.task.id));
        let result = serde_json::to_vec(stored)
            .map_err(std::io::Error::other)
            .and_then(|bytes| std::fs::write(&tmp, bytes))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = result {
            tracing::warn!(file = %path.display(), "A2A task not saved: {e}");
        }
    }

    /// Forgets one task.
    pub fn remove(&self, id: &str) {
        if safe_id(id) {
            let _ = std::fs::remove_file(self.dir.join(format!("{id}.json")));
        }
    }
}
