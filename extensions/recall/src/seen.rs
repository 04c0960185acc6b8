//! What is known indexed of each chat's session files without opening its index: in memory,
//! and kept beside the index as a small manifest (`<index root>/<chat key>.seen`, JSON) so that
//! after a restart the background pass learns which chats grew from `stat` alone, instead of
//! opening every chat's SQLite file once.
//!
//! The manifest is a hint, never the truth: the index's own `files` table is what a catch-up
//! reads. A manifest that says less than the index holds (the process was killed before writing
//! it) costs one needless catch-up; one that says more (a power cut took index pages it
//! recorded) delays the background pass for that chat until a file grows, while a search still
//! catches its chat up from the `files` table. It names the index file it describes by (device,
//! inode), so a replaced index makes it stale.

use crate::store::{ChatKey, with_suffix};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// One chat's indexed offsets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Seen {
    /// (device, inode) of the index file the offsets were read from.
    pub index: (u64, u64),
    /// Per session file (its path under the chat's sessions folder), the bytes indexed.
    pub files: BTreeMap<String, u64>,
    /// Changed since the manifest was last written.
    #[serde(skip)]
    pub dirty: bool,
}

impl Seen {
    /// Whether every file in `now` ((path under the chat's folder, length)) is indexed to its
    /// length according to this, for the index file `index`.
    pub fn covers(&self, index: (u64, u64), now: &[(String, u64)]) -> bool {
        self.index == index && now.iter().all(|(path, len)| self.files.get(path) == Some(len))
    }
}

/// Every chat's [`Seen`] known in this process.
#[derive(Debug, Default)]
pub(crate) struct SeenMap(HashMap<ChatKey, Seen>);

impl SeenMap {
    /// `chat`'s offsets: from memory, else from its manifest at `manifest` (`None`: neither).
    pub fn get_or_load(&mut self, chat: &ChatKey, manifest: &Path) -> Option<&Seen> {
        if !self.0.contains_key(chat) {
            let loaded = read(manifest)?;
            self.0.insert(chat.clone(), loaded);
        }
        self.0.get(chat)
    }

    /// Records what a catch-up found in `chat`'s index `index`.
    pub fn record(&mut self, chat: &ChatKey, index: (u64, u64), files: BTreeMap<String, u64>) {
        let seen = self.0.entry(chat.clone()).or_default();
        if seen.index != index || seen.files != files {
            *seen = Seen {
                index,
                files,
                dirty: true,
            };
        }
    }

    /// The offsets of every chat whose offsets changed since its manifest was written (marked
    /// written).
    pub fn take_dirty(&mut self) -> Vec<(ChatKey, Seen)> {
        let mut out = Vec::new();
        for (chat, seen) in self.0.iter_mut().filter(|(_, s)| s.dirty) {
            seen.dirty = false;
            out.push((chat.clone(), seen.clone()));
        }
        out
    }

    /// Drops `chat`'s offsets (its index was deleted).
    pub fn forget(&mut self, chat: &ChatKey) {
        self.0.remove(chat);
    }
}

/// The manifest of the index file `index` (`<chat key>.sqlite` → `<chat key>.seen`).
pub(crate) fn manifest_of(index: &Path) -> PathBuf {
    index.with_extension("seen")
}

/// Reads a manifest; `None` when it is missing or unreadable (the chat is then caught up once).
fn read(path: &Path) -> Option<Seen> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Writes `seen` to `path` atomically (a temporary file renamed over it; no fsync: a manifest
/// lost or older is only a needless catch-up). Errors: the folder cannot be written.
pub(crate) fn write(path: &Path, seen: &Seen) -> std::io::Result<()> {
    let tmp = with_suffix(path, ".tmp");
    std::fs::write(&tmp, serde_json::to_vec(seen).map_err(std::io::Error::other)?)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn key(k: &str) -> ChatKey {
        match ChatKey::new(k) {
            Ok(k) => k,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_manifest_round_trips_and_covers_only_its_own_index_and_lengths() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = manifest_of(&dir.path().join("42.sqlite"));
        assert_eq!(path, dir.path().join("42.seen"));
        let mut map = SeenMap::default();
        map.record(&key("42"), (1, 7), BTreeMap::from([("main/a.jsonl".to_owned(), 120)]));
        let Some((_, seen)) = map.take_dirty().pop() else {
            panic!("a recorded change is dirty");
        };
        assert_eq!(map.take_dirty(), vec![], "written once");
        write(&path, &seen).unwrap_or_else(|e| panic!("{e}"));

        let mut after_restart = SeenMap::default();
        let loaded = after_restart.get_or_load(&key("42"), &path).cloned();
        assert_eq!(
            loaded.as_ref().map(|s| (&s.index, &s.files)),
            Some((&seen.index, &seen.files))
        );
        let loaded = loaded.unwrap_or_default();
        let now = |len| vec![("main/a.jsonl".to_owned(), len)];
        assert!(loaded.covers((1, 7), &now(120)));
        assert!(!loaded.covers((1, 7), &now(180)), "the file grew");
        assert!(!loaded.covers((1, 8), &now(120)), "another index file");
        let new_file = vec![("main/a.jsonl".to_owned(), 120), ("main/b.jsonl".to_owned(), 9)];
        assert!(!loaded.covers((1, 7), &new_file), "a new session file");
    }

    #[test]
    fn a_missing_or_garbled_manifest_is_no_knowledge() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("1.seen");
        let mut map = SeenMap::default();
        assert_eq!(map.get_or_load(&key("1"), &path), None);
        std::fs::write(&path, b"{not json").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(map.get_or_load(&key("1"), &path), None);
    }
}
