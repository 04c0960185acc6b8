//! The memory files in `state_dir/memory/<name>.json`, through the host's one helper for state
//! files ([`crate::store_file`]: temp file, fsync, rename, mode 0600; a corrupt file renamed to
//! `<name>.json.corrupt-<unix time>` and reported).

use crate::store_file::{self, load_json, save_json};
use std::path::{Path, PathBuf};
use volcanic_memory::{Loaded, Memory, MemoryFiles};

/// The folder under `state_dir` that holds the memory files.
pub const FOLDER: &str = "memory";

/// The memory files of one `state_dir`.
#[derive(Debug)]
pub struct StateFiles {
    dir: PathBuf,
}

impl StateFiles {
    /// The files under `state_dir/memory/`.
    pub fn new(state_dir: &Path) -> StateFiles {
        StateFiles {
            dir: state_dir.join(FOLDER),
        }
    }

    /// The file of `name` (a chat's key, an A2A caller's, or `global`).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }
}

impl MemoryFiles for StateFiles {
    fn load(&self, name: &str) -> std::io::Result<Loaded> {
        Ok(match load_json::<Memory>(&self.path(name))? {
            store_file::Loaded::Missing => Loaded::Missing,
            store_file::Loaded::Ok(m) => Loaded::Found(m),
            store_file::Loaded::SetAside(path) => Loaded::SetAside(path),
        })
    }

    fn save(&self, name: &str, memory: &Memory) -> std::io::Result<()> {
        save_json(&self.path(name), memory)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use volcanic_memory::{Memories, Scope};

    #[test]
    fn files_are_private_and_a_corrupt_one_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let files = std::sync::Arc::new(StateFiles::new(dir.path()));
        let memories = Memories::new(files.clone(), 100);
        memories.add("g42", "Meets on Mondays", Scope::Chat, "s1").unwrap();
        let path = files.path("g42");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::write(&path, b"{ torn").unwrap();
        let view = memories.view("g42").unwrap();
        assert!(view.chat.is_empty());
        assert_eq!(view.set_aside.len(), 1);
        assert_eq!(std::fs::read(&view.set_aside[0]).unwrap(), b"{ torn");
    }
}
