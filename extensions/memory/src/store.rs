//! The memory files of every chat and the global one, behind one lock: [`Memories`]. Reading and
//! writing a file is the host's ([`MemoryFiles`]: atomic, private, a corrupt file set aside), so
//! this crate holds the rules and the host its one helper for state files.

use crate::entry::{ChangeError, Entry, Memory, Scope, Stamp};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The name of the global memory's file (a chat's file is named by its key, which never is this).
pub const GLOBAL: &str = "global";

/// What [`MemoryFiles::load`] found.
#[derive(Debug)]
pub enum Loaded {
    /// No file yet.
    Missing,
    /// The parsed file.
    Found(Memory),
    /// The file did not parse; it was renamed to this path (nothing lost) and reported.
    SetAside(PathBuf),
}

/// Where memory files live: one per name (a chat's key, or [`GLOBAL`]). The host writes them
/// atomically with mode 0600 in `state_dir/memory/` and sets a corrupt one aside.
pub trait MemoryFiles: Send + Sync + std::fmt::Debug {
    /// Reads the file `name`. Errors: it exists but cannot be read.
    fn load(&self, name: &str) -> std::io::Result<Loaded>;
    /// Replaces the file `name` with `memory`, atomically.
    fn save(&self, name: &str, memory: &Memory) -> std::io::Result<()>;
}

/// Why a memory operation failed.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The change breaks a rule (the cap, an unknown id, ...); nothing was written.
    #[error(transparent)]
    Refused(#[from] ChangeError),
    /// A file could not be read or written.
    #[error("memory file `{name}`: {source}; check the permissions and free space of state_dir/memory")]
    File {
        /// The file's name.
        name: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// Result of this crate's operations.
pub type Result<T, E = MemoryError> = std::result::Result<T, E>;

/// What a chat sees: its own entries and the global ones, and any file set aside on the way.
#[derive(Debug, Default, Clone)]
pub struct View {
    /// The chat's entries, oldest first.
    pub chat: Vec<Entry>,
    /// The global entries, oldest first.
    pub global: Vec<Entry>,
    /// Characters the chat's entries use.
    pub used: usize,
    /// Files found corrupt and renamed to these paths while reading.
    pub set_aside: Vec<PathBuf>,
}

/// Every chat's memory and the global one (one per process). Each change reads, changes and
/// writes its file under one lock, so two sessions never lose each other's change.
#[derive(Debug)]
pub struct Memories {
    files: Arc<dyn MemoryFiles>,
    max_chars: usize,
    lock: Mutex<()>,
}

impl Memories {
    /// Memories kept in `files`, each file capped at `max_chars` characters.
    pub fn new(files: Arc<dyn MemoryFiles>, max_chars: usize) -> Memories {
        Memories {
            files,
            max_chars,
            lock: Mutex::new(()),
        }
    }

    /// The cap in characters.
    pub fn max_chars(&self) -> usize {
        self.max_chars
    }

    /// What the chat `key` sees.
    pub fn view(&self, key: &str) -> Result<View> {
        let _held = self.hold();
        let mut set_aside = Vec::new();
        let chat = self.load(key, &mut set_aside)?;
        let global = self.load(GLOBAL, &mut set_aside)?;
        Ok(View {
            used: chat.used(),
            chat: chat.entries,
            global: global.entries,
            set_aside,
        })
    }

    /// Adds `text` to the chat `key` (or the global memory for [`Scope::Global`]).
    pub fn add(&self, key: &str, text: &str, scope: Scope, session: &str) -> Result<Entry> {
        let stamp = self.stamp(session);
        self.change(file_of(key, scope), |m| m.add(text, scope, &stamp))
    }

    /// Replaces the chat's entry `id`.
    pub fn replace(&self, key: &str, id: u32, text: &str, session: &str) -> Result<Entry> {
        let stamp = self.stamp(session);
        self.change(key, |m| m.replace(id, text, &stamp))
    }

    /// Removes entry `id` of the chat `key` (or of the global memory).
    pub fn remove(&self, key: &str, scope: Scope, id: u32) -> Result<Entry> {
        self.change(file_of(key, scope), |m| m.remove(id))
    }

    /// Moves the chat's entry `id` into the global memory (an owner's decision), keeping when
    /// and where it was learned. Errors: no such entry, or the global memory is full.
    pub fn promote(&self, key: &str, id: u32) -> Result<Entry> {
        let _held = self.hold();
        let mut chat = self.load(key, &mut Vec::new())?;
        let mut global = self.load(GLOBAL, &mut Vec::new())?;
        let entry = chat
            .get(id)
            .cloned()
            .ok_or_else(|| ChangeError::NoEntry(id.to_string()))?;
        let stamp = Stamp {
            at: entry.learned_at,
            session: entry.session.clone(),
            max_chars: self.max_chars,
        };
        let promoted = global.add(&entry.text, Scope::Global, &stamp)?;
        chat.remove(id)?;
        self.save(GLOBAL, &global)?;
        self.save(key, &chat)?;
        Ok(promoted)
    }

    /// Removes every entry of the chat `key`; returns how many there were.
    pub fn clear(&self, key: &str) -> Result<usize> {
        let _held = self.hold();
        let mut chat = self.load(key, &mut Vec::new())?;
        let n = chat.entries.len();
        chat.entries.clear();
        self.save(key, &chat)?;
        Ok(n)
    }

    /// Reads the file `name`, applies `f`, writes it when `f` succeeded.
    fn change(&self, name: &str, f: impl FnOnce(&mut Memory) -> Result<Entry, ChangeError>) -> Result<Entry> {
        let _held = self.hold();
        let mut memory = self.load(name, &mut Vec::new())?;
        let entry = f(&mut memory)?;
        self.save(name, &memory)?;
        Ok(entry)
    }

    fn load(&self, name: &str, set_aside: &mut Vec<PathBuf>) -> Result<Memory> {
        match self.files.load(name).map_err(|source| file_error(name, source))? {
            Loaded::Missing => Ok(Memory::default()),
            Loaded::Found(m) => Ok(m),
            Loaded::SetAside(path) => {
                tracing::warn!(file = name, aside = %path.display(), "memory file unreadable, set aside");
                set_aside.push(path);
                Ok(Memory::default())
            }
        }
    }

    fn save(&self, name: &str, memory: &Memory) -> Result<()> {
        self.files.save(name, memory).map_err(|source| file_error(name, source))
    }

    fn stamp(&self, session: &str) -> Stamp {
        Stamp {
            at: chrono::Utc::now(),
            session: session.to_owned(),
            max_chars: self.max_chars,
        }
    }

    fn hold(&self) -> std::sync::MutexGuard<'_, ()> {
        self.lock.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn file_of(key: &str, scope: Scope) -> &str {
    match scope {
        Scope::Chat => key,
        Scope::Global => GLOBAL,
    }
}

fn file_error(name: &str, source: std::io::Error) -> MemoryError {
    MemoryError::File {
        name: name.to_owned(),
        source,
    }
}

/// The memory key of an A2A caller named `name`: `a2a-` and the name with every character other
/// than ASCII letters, digits, `-` and `_` replaced by `_` (a file name; never a chat's key,
/// which is digits or `g` and digits).
pub fn caller_key(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("a2a-{safe}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
#[path = "store_tests.rs"]
pub(crate) mod tests;
