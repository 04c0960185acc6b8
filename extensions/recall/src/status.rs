//! The state of the indexes, for `doctor`: nothing is made, caught up or set aside. The index
//! is opened for writing (never created) so that a journal a killed bot left behind is rolled
//! back, as the bot's next use would (a read-only connection cannot read past a hot journal).

use crate::store::{ChatKey, Recall, with_suffix};
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use std::path::Path;

/// One chat's index as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatStatus {
    /// Its chat.
    pub chat: ChatKey,
    /// Bytes on disk (the database and its journal, or the write-ahead log of an index made
    /// before the rollback journal).
    pub bytes: u64,
    /// Rows (indexed entries) and session files, or why the index could not be read (it is
    /// rebuilt at its next use).
    pub counts: Result<(u64, u64), String>,
    /// When rows were last added, epoch ms (`None`: never).
    pub last_indexed_ms: Option<i64>,
}

impl Recall {
    /// Every index in the index folder, by chat key; empty when the folder is missing.
    pub fn status(&self) -> Vec<ChatStatus> {
        let Ok(dir) = std::fs::read_dir(&self.indexes) else {
            return Vec::new();
        };
        let mut out: Vec<ChatStatus> = dir
            .flatten()
            .filter_map(|e| {
                let path = e.path();
                let stem = path.file_name()?.to_str()?.strip_suffix(".sqlite")?;
                let chat = ChatKey::new(stem).ok()?;
                Some(one(chat, &path))
            })
            .collect();
        out.sort_by(|a, b| a.chat.as_str().cmp(b.chat.as_str()));
        out
    }
}

fn one(chat: ChatKey, path: &Path) -> ChatStatus {
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let companion = |suffix| size(&with_suffix(path, suffix));
    let bytes = size(path) + companion("-journal") + companion("-wal");
    let writable = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE);
    let read = writable.or_else(|_| Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY));
    let read = read.and_then(|c| {
        // The bot may be writing it: wait for its transaction rather than report it unreadable.
        c.busy_timeout(std::time::Duration::from_secs(2))?;
        let rows: u64 = c.query_row("SELECT count(*) FROM said", [], |r| r.get(0))?;
        let files: u64 = c.query_row("SELECT count(*) FROM files", [], |r| r.get(0))?;
        let last: Option<String> = c
            .query_row("SELECT value FROM meta WHERE key = 'last_indexed_ms'", [], |r| r.get(0))
            .optional()?;
        Ok(((rows, files), last.and_then(|v| v.parse().ok())))
    });
    match read {
        Ok((counts, last_indexed_ms)) => ChatStatus {
            chat,
            bytes,
            counts: Ok(counts),
            last_indexed_ms,
        },
        Err(e) => ChatStatus {
            chat,
            bytes,
            counts: Err(e.to_string()),
            last_indexed_ms: None,
        },
    }
}
