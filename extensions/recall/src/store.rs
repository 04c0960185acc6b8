//! [`Recall`]: the process-wide entry type: where the sessions and the indexes are, one lock per
//! chat, and opening a chat's index (made when missing, set aside and remade when unreadable).

use crate::error::{RecallError, Result};
use crate::seen::{SeenMap, manifest_of};
use rusqlite::{Connection, OptionalExtension};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// The index's schema version (`meta.schema`); an index of another version is rebuilt.
const SCHEMA: &str = "1";

/// The tables. `said` holds one row per indexed entry (where its line is, when, who); `words` is
/// the contentless FTS5 index of its text under the same rowid (`contentless_delete` lets a file
/// that shrank be indexed again; `detail=column`: no word positions, as no search asks for a
/// phrase, which halves the index); `files` remembers per session file the byte offset indexed.
const TABLES: &str = "
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(
    id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, session TEXT NOT NULL, indexed INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS said(
    id INTEGER PRIMARY KEY, file INTEGER NOT NULL, off INTEGER NOT NULL, len INTEGER NOT NULL,
    at INTEGER NOT NULL, entry TEXT NOT NULL, who TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS words USING fts5(
    text, content='', contentless_delete=1, detail=column, tokenize='unicode61 remove_diacritics 2');
";

/// A chat's key: the folder of its sessions under the sessions root (`123`, `g456` for a group
/// and all its forum topics, `a2a-<caller>` for an A2A caller), and the name of its index file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChatKey(String);

impl ChatKey {
    /// Checks `key` is one folder name. Errors: [`RecallError::BadChatKey`].
    pub fn new(key: impl Into<String>) -> Result<ChatKey> {
        let key = key.into();
        let bad = key.is_empty() || key == "." || key == ".." || key.contains(['/', '\\', '\0']);
        if bad {
            Err(RecallError::BadChatKey(key))
        } else {
            Ok(ChatKey(key))
        }
    }

    /// The key as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ChatKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Every chat's recall index (see the crate docs). Its methods block on files and SQLite: call
/// them from a blocking thread (`tokio::task::spawn_blocking`), as the tool does (the background
/// pass has a thread of its own, [`Recall::spawn_indexer`]).
#[derive(Debug)]
pub struct Recall {
    pub(crate) sessions: PathBuf,
    pub(crate) indexes: PathBuf,
    /// One lock per chat: one writer of a chat's index at a time in this process.
    locks: Mutex<HashMap<ChatKey, Arc<Mutex<()>>>>,
    /// Connections kept open between uses, least recently used first (opening an index reads
    /// its header and schema, closing it drops its page cache), at most [`KEEP_OPEN`].
    open: Mutex<Vec<(ChatKey, Open)>>,
    /// Per chat, what is indexed as last seen, kept in its manifest (lets the periodic pass
    /// skip a chat without opening its index when none of its files grew: `seen.rs`).
    pub(crate) seen: Mutex<SeenMap>,
    /// When a run last started or ended (the background pass holds back meanwhile).
    pub(crate) activity: crate::background::Activity,
}

impl Recall {
    /// Recall over the session files under `sessions` (`<chat key>/**/*.jsonl`) with the indexes
    /// in `indexes` (created when first needed).
    pub fn new(sessions: impl Into<PathBuf>, indexes: impl Into<PathBuf>) -> Recall {
        Recall {
            sessions: sessions.into(),
            indexes: indexes.into(),
            locks: Mutex::default(),
            open: Mutex::default(),
            seen: Mutex::default(),
            activity: crate::background::Activity::default(),
        }
    }

    /// The folder of the indexes.
    pub fn index_dir(&self) -> &Path {
        &self.indexes
    }

    /// The index file of `chat`.
    pub fn index_file(&self, chat: &ChatKey) -> PathBuf {
        self.indexes.join(format!("{}.sqlite", chat.0))
    }

    /// Every file of `chat`'s index on disk: the index, SQLite's companions of it and its
    /// manifest (what moves with a chat whose key changes).
    pub fn chat_index_files(&self, chat: &ChatKey) -> Vec<PathBuf> {
        let index = self.index_file(chat);
        let manifest = manifest_of(&index);
        index_files(&index).into_iter().chain([manifest]).collect()
    }

    /// The folder of `chat`'s sessions.
    pub(crate) fn chat_sessions(&self, chat: &ChatKey) -> PathBuf {
        self.sessions.join(&chat.0)
    }

    /// Runs `f` on `chat`'s index under the chat's lock. An index that is missing is made; one
    /// SQLite cannot read (at opening or inside `f`) is set aside, logged, made anew and `f` runs
    /// again on it (it fills from the session files as `f` catches up).
    pub(crate) fn with_index<T>(&self, chat: &ChatKey, f: impl FnMut(&mut Open) -> Result<T>) -> Result<T> {
        self.with_index_kept(chat, true, f)
    }

    /// [`Recall::catch_up`] for the background pass: an index that was not kept open is closed
    /// again afterwards (a pass over every chat must not fill memory with connections).
    pub(crate) fn catch_up_quietly(&self, chat: &ChatKey) -> Result<crate::Caught> {
        let was_open = self.lru().iter().any(|(c, _)| c == chat);
        self.with_index_kept(chat, was_open, |c| self.catch_up_in(c, chat))
    }

    /// [`Recall::with_index`], keeping the connection open afterwards only when `keep`.
    fn with_index_kept<T>(&self, chat: &ChatKey, keep: bool, mut f: impl FnMut(&mut Open) -> Result<T>) -> Result<T> {
        let lock = self.lock(chat);
        let _held = lock.lock().unwrap_or_else(|e| e.into_inner());
        let path = self.index_file(chat);
        let mut done = |mut c: Open| {
            let out = f(&mut c);
            if out.is_ok() && keep {
                self.keep(chat, c);
            }
            out
        };
        match self.connection(chat, &path).and_then(&mut done) {
            Err(e) if e.is_corrupt() => {
                self.set_aside(&path, &e)?;
                done(Open::new(&path)?)
            }
            other => other,
        }
    }

    /// `chat`'s kept connection if its file is still the one it opened (a file deleted or
    /// replaced is opened anew), else a new one.
    fn connection(&self, chat: &ChatKey, path: &Path) -> Result<Open> {
        match self.take_kept(chat) {
            Some(c) if file_id(path) == Some(c.id) => Ok(c),
            Some(_) | None => Open::new(path),
        }
    }

    /// Keeps `c` as the most recently used index; past [`KEEP_OPEN`] the least recently used
    /// one is closed (outside the list's lock). Its manifest is written by the next background
    /// pass, off the path of the search that evicted it.
    fn keep(&self, chat: &ChatKey, c: Open) {
        let evicted = {
            let mut open = self.lru();
            open.push((chat.clone(), c));
            (open.len() > KEEP_OPEN).then(|| open.remove(0))
        };
        drop(evicted);
    }

    /// `chat`'s connection, out of the kept ones.
    fn take_kept(&self, chat: &ChatKey) -> Option<Open> {
        let mut open = self.lru();
        let at = open.iter().position(|(c, _)| c == chat);
        at.map(|i| open.remove(i).1)
    }

    fn lru(&self) -> std::sync::MutexGuard<'_, Vec<(ChatKey, Open)>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes the manifest of every chat whose indexed offsets changed since its last one (a
    /// failure is logged: that chat is then caught up once more than needed). Called by the
    /// background pass after each pass and when `Recall` is dropped.
    pub(crate) fn save_manifests(&self) {
        let dirty = self.seen.lock().unwrap_or_else(|e| e.into_inner()).take_dirty();
        for (chat, seen) in dirty {
            let path = manifest_of(&self.index_file(&chat));
            if let Err(e) = crate::seen::write(&path, &seen) {
                tracing::debug!(manifest = %path.display(), error = %e, "recall: manifest not written");
            }
        }
    }

    /// Deletes `chat`'s index (and its manifest) so the next use builds it again from the
    /// session files.
    pub fn forget_index(&self, chat: &ChatKey) -> Result<()> {
        let lock = self.lock(chat);
        let _held = lock.lock().unwrap_or_else(|e| e.into_inner());
        drop(self.take_kept(chat));
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).forget(chat);
        for p in &self.chat_index_files(chat) {
            match std::fs::remove_file(p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(RecallError::Io {
                        action: "delete",
                        path: p.clone(),
                        source,
                    });
                }
            }
        }
        Ok(())
    }

    fn lock(&self, chat: &ChatKey) -> Arc<Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        locks.entry(chat.clone()).or_default().clone()
    }

    /// Moves an unreadable index (and its non-empty companions) to `<file>.corrupt-<unix time>`.
    fn set_aside(&self, path: &Path, why: &RecallError) -> Result<()> {
        let stamp = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        tracing::warn!(index = %path.display(), error = %why, "recall index unreadable: set aside and rebuilt from the session files");
        for p in index_files(path) {
            let aside = with_suffix(&p, &format!(".corrupt-{stamp}"));
            // An empty journal tells nothing: removed, not kept.
            let empty = p != path && std::fs::metadata(&p).is_ok_and(|m| m.len() == 0);
            let moved = if empty {
                std::fs::remove_file(&p)
            } else {
                std::fs::rename(&p, &aside)
            };
            match moved {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(RecallError::Io {
                        action: "set aside",
                        path: p,
                        source,
                    });
                }
            }
        }
        // The manifest names the old file's inode: stale without being touched.
        Ok(())
    }
}

impl Drop for Recall {
    /// Writes the manifests of the chats whose indexes stayed open (a killed process loses
    /// them: those chats are caught up once more than needed at the next start).
    fn drop(&mut self) {
        self.save_manifests();
    }
}

/// How many indexes stay open between uses (each holds at most 256 KiB of page cache).
const KEEP_OPEN: usize = 16;

/// An open index and the identity (device, inode) of the file it opened.
pub(crate) struct Open {
    pub conn: Connection,
    pub id: (u64, u64),
}

impl std::fmt::Debug for Open {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Open").field("id", &self.id).finish_non_exhaustive()
    }
}

impl Open {
    fn new(path: &Path) -> Result<Open> {
        let conn = open(path)?;
        let id = file_id(path).ok_or_else(|| RecallError::Io {
            action: "read",
            path: path.to_path_buf(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        })?;
        Ok(Open { conn, id })
    }
}

/// The (device, inode) of `path`, `None` when it is gone.
pub(crate) fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The index file and SQLite's companions of it (`-wal` and `-shm` of indexes made before the
/// rollback journal).
fn index_files(path: &Path) -> [PathBuf; 4] {
    let with = |suffix| with_suffix(path, suffix);
    [path.to_path_buf(), with("-journal"), with("-wal"), with("-shm")]
}

/// `path` with `suffix` appended to its file name (`a.sqlite` + `-wal` → `a.sqlite-wal`): how
/// SQLite names its companions of a database, and the names of what is set aside or written
/// beside one.
pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.to_path_buf().into_os_string();
    p.push(suffix);
    PathBuf::from(p)
}

/// Opens (making when missing) the index at `path` with its tables; an index of another schema
/// version counts as unreadable.
pub(crate) fn open(path: &Path) -> Result<Connection> {
    let sql = |source| RecallError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| RecallError::Io {
            action: "create",
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let c = Connection::open(path).map_err(sql)?;
    // A rollback journal, truncated at each commit, not WAL: every use of most chats opens and
    // closes their index, and WAL's open (the log and its shared-memory index made) and close
    // (a checkpoint, the log deleted) cost more than the journal's truncation; readers and
    // writers of one chat take turns under its lock anyway. No fsync (`synchronous=OFF`): a
    // killed process loses nothing (the journal and the pages are in the page cache, a hot
    // journal rolls an unfinished transaction back at the next open), and what a power cut may
    // lose or damage is derived data, given back by the session files (a damaged index is
    // rebuilt). An fsync per commit was most of the cost of indexing one new message.
    c.busy_timeout(std::time::Duration::from_secs(10)).map_err(sql)?;
    // The same plan whatever is bound: without it SQLite marks statements whose plan might
    // depend on a bound value (FTS5's own term lookup, run once per segment and word of every
    // search, and the search's `MATCH ?`) to be compiled again at each new binding, which was
    // an eighth of a search's time. No index here has statistics a binding could change a plan
    // by.
    c.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(sql)?;
    c.execute_batch(PRAGMAS).map_err(sql)?;
    let user_version: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(sql)?;
    match user_version {
        // Made by this version: nothing to create or check.
        VERSION => return Ok(c),
        // New, or made before the version was in the header: the tables and `meta.schema`.
        0 => {}
        _ => return Err(other_schema(path)),
    }
    c.execute_batch(TABLES).map_err(sql)?;
    let version: Option<String> = c
        .query_row("SELECT value FROM meta WHERE key = 'schema'", [], |r| r.get(0))
        .optional()
        .map_err(sql)?;
    match version.as_deref() {
        Some(SCHEMA) => {}
        None => {
            c.execute("INSERT INTO meta(key, value) VALUES ('schema', ?1)", [SCHEMA])
                .map_err(sql)?;
        }
        Some(_) => return Err(other_schema(path)),
    }
    c.pragma_update(None, "user_version", VERSION).map_err(sql)?;
    Ok(c)
}

/// The connection's settings (see [`open`]); `cache_size`: 256 KiB of page cache (SQLite's
/// default is 2 MiB), as one chat's index is small and up to [`KEEP_OPEN`] stay open.
const PRAGMAS: &str = "PRAGMA journal_mode = TRUNCATE; PRAGMA synchronous = OFF; \
    PRAGMA journal_size_limit = 1048576; PRAGMA cache_size = -256;";

/// `PRAGMA user_version` of an index of schema [`SCHEMA`] (in the file's header: read without
/// parsing the schema, so opening a made index runs no `CREATE`).
const VERSION: i64 = 1;

/// An index of another schema version: unreadable for this build (set aside and rebuilt).
fn other_schema(path: &Path) -> RecallError {
    RecallError::Sqlite {
        path: path.to_path_buf(),
        source: rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
            Some("another schema version".into()),
        ),
    }
}
