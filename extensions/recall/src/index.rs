//! Catching an index up with its chat's session files: the new whole lines of each file, their
//! rows and the file's new offset in one transaction.

use crate::error::{RecallError, Result};
use crate::extract::said;
use crate::seen::manifest_of;
use crate::store::{ChatKey, Open, Recall, file_id};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};
use volcanic_abstractions::sessions::{SessionEntry, SessionHeader};

/// At most this many bytes of one file per transaction: bounds memory on a first indexing, and
/// how long the index is locked against another process's reader (`doctor`) while it is written.
const CHUNK: u64 = 1 << 20;

/// What one catch-up did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caught {
    /// Session files that had new bytes.
    pub files: usize,
    /// Rows added.
    pub rows: u64,
    /// Bytes of session files read.
    pub bytes: u64,
}

impl Recall {
    /// Indexes what `chat`'s session files gained since the last time (everything, for a chat
    /// without an index). Errors: the sessions folder or the index cannot be read or written.
    pub fn catch_up(&self, chat: &ChatKey) -> Result<Caught> {
        self.with_index(chat, |c| self.catch_up_in(c, chat))
    }

    /// [`Recall::catch_up`] for every chat with sessions whose files grew (or whose index is
    /// missing), on up to two threads (a full rebuild is mostly parsing and tokenizing), until
    /// `stop` is cancelled (checked between chats); a chat that fails is logged and the others go
    /// on. Returns the sum.
    pub fn catch_up_all(&self, stop: &tokio_util::sync::CancellationToken) -> Caught {
        let due = self.due_chats();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 2);
        let one = |chats: &[ChatKey]| {
            let mut sum = Caught::default();
            for chat in chats.iter().take_while(|_| !stop.is_cancelled()) {
                match self.catch_up(chat) {
                    Ok(c) => {
                        sum.files += c.files;
                        sum.rows += c.rows;
                        sum.bytes += c.bytes;
                    }
                    Err(e) => tracing::warn!(chat = %chat, error = %e, "recall: indexing failed"),
                }
            }
            sum
        };
        if threads == 1 || due.len() < 2 {
            return one(&due);
        }
        let (a, b) = due.split_at(due.len() / 2);
        let (x, y) = std::thread::scope(|s| {
            let other = s.spawn(|| one(b));
            let mine = one(a);
            (mine, other.join().unwrap_or_default())
        });
        Caught {
            files: x.files + y.files,
            rows: x.rows + y.rows,
            bytes: x.bytes + y.bytes,
        }
    }

    /// The chats a pass would catch up, sorted: those without an index file, or with a session
    /// file whose length is not the one last seen indexed (in memory, else in the chat's
    /// manifest), learned without opening an index.
    pub fn due_chats(&self) -> Vec<ChatKey> {
        self.chats().into_iter().filter(|c| self.needs_catch_up(c)).collect()
    }

    /// Every chat key with a sessions folder, sorted.
    pub fn chats(&self) -> Vec<ChatKey> {
        let Ok(dir) = std::fs::read_dir(&self.sessions) else {
            return Vec::new();
        };
        let mut keys: Vec<ChatKey> = dir
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().to_str().and_then(|n| ChatKey::new(n).ok()))
            .collect();
        keys.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        keys
    }

    /// Whether `chat` may have lines not indexed yet: it has no index file, or a session file
    /// whose length is not the one last seen indexed (in memory, else in its manifest). Reads
    /// only file metadata and the manifest, never the index.
    pub(crate) fn needs_catch_up(&self, chat: &ChatKey) -> bool {
        let index = self.index_file(chat);
        let Some(id) = file_id(&index) else {
            return true;
        };
        let root = self.chat_sessions(chat);
        let now: Vec<(String, u64)> = session_files(&root)
            .into_iter()
            .map(|(path, len)| (relative(&root, &path), len))
            .collect();
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        !seen
            .get_or_load(chat, &manifest_of(&index))
            .is_some_and(|s| s.covers(id, &now))
    }

    /// Indexes the new whole lines of `chat`'s session files into `index`: the files whose
    /// length differs from the offset its `files` table holds (the truth; the manifest is only
    /// the background pass's hint), and records what is indexed now for the manifest.
    pub(crate) fn catch_up_in(&self, index: &mut Open, chat: &ChatKey) -> Result<Caught> {
        let root = self.chat_sessions(chat);
        let c = &mut index.conn;
        let known = indexed_offsets(c)?;
        let mut seen = BTreeMap::new();
        let mut caught = Caught::default();
        for (path, len) in session_files(&root) {
            let rel = relative(&root, &path);
            if known.get(&rel) == Some(&len) {
                seen.insert(rel, len);
                continue;
            }
            caught.files += 1;
            loop {
                let (rows, bytes, indexed, len) = index_chunk(c, &path, &rel)?;
                caught.rows += rows;
                caught.bytes += bytes;
                if bytes == 0 || indexed >= len {
                    // A torn last line counts as seen until the file changes again.
                    seen.insert(rel, indexed.max(len));
                    break;
                }
            }
        }
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .record(chat, index.id, seen);
        Ok(caught)
    }
}

/// `path` under `root` as the index stores it.
fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).to_string_lossy().into_owned()
}

/// Every session file the index knows, with the bytes indexed.
fn indexed_offsets(c: &Connection) -> Result<BTreeMap<String, u64>> {
    let sql = |source| RecallError::Sqlite {
        path: c.path().map(PathBuf::from).unwrap_or_default(),
        source,
    };
    let mut stmt = c.prepare_cached("SELECT path, indexed FROM files").map_err(sql)?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).map_err(sql)?;
    rows.collect::<std::result::Result<_, _>>().map_err(sql)
}

/// Every `*.jsonl` under `root` (a chat's topics and callers' contexts are sub-folders) with its
/// length, sorted by path.
pub(crate) fn session_files(root: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            let Ok(meta) = e.metadata() else { continue };
            let path = e.path();
            if meta.is_dir() {
                dirs.push(path);
            } else if meta.is_file() && path.extension().is_some_and(|x| x == "jsonl") {
                out.push((path, meta.len()));
            }
        }
    }
    out.sort();
    out
}

/// Indexes the next chunk of whole lines of `path` (stored as `rel`) in one transaction. Returns
/// (rows added, bytes consumed, offset now indexed, file length).
fn index_chunk(c: &mut Connection, path: &Path, rel: &str) -> Result<(u64, u64, u64, u64)> {
    let index_path = c.path().map(PathBuf::from).unwrap_or_default();
    let sql = |source| RecallError::Sqlite {
        path: index_path.clone(),
        source,
    };
    let io = |action, source| RecallError::Io {
        action,
        path: path.to_path_buf(),
        source,
    };
    // IMMEDIATE: the offset read here is the one this transaction moves on.
    let tx = c
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql)?;
    let known: Option<(i64, u64)> = tx
        .query_row("SELECT id, indexed FROM files WHERE path = ?1", [rel], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()
        .map_err(sql)?;
    let mut file = std::fs::File::open(path).map_err(|e| io("open", e))?;
    let len = file.metadata().map_err(|e| io("read", e))?.len();
    let (file_id, mut from) = match known {
        Some((id, indexed)) if indexed <= len => (id, indexed),
        Some((id, _)) => {
            // Shorter than indexed: the store cut a torn tail off; index it again from the start.
            tx.execute(
                "DELETE FROM words WHERE rowid IN (SELECT id FROM said WHERE file = ?1)",
                [id],
            )
            .map_err(sql)?;
            tx.execute("DELETE FROM said WHERE file = ?1", [id]).map_err(sql)?;
            (id, 0)
        }
        None => {
            tx.execute(
                "INSERT INTO files(path, session, indexed) VALUES (?1, ?2, 0)",
                params![rel, session_id(path)],
            )
            .map_err(sql)?;
            (tx.last_insert_rowid(), 0)
        }
    };
    if from >= len {
        tx.commit().map_err(sql)?;
        return Ok((0, 0, from, len));
    }
    let want = (len - from).min(CHUNK);
    let mut buf = Vec::with_capacity(usize::try_from(want).unwrap_or(0));
    file.seek(SeekFrom::Start(from)).map_err(|e| io("read", e))?;
    let mut rest = std::io::BufReader::new(file.take(len - from));
    (&mut rest)
        .take(want)
        .read_to_end(&mut buf)
        .map_err(|e| io("read", e))?;
    if memchr_last(&buf).is_none() {
        // One line longer than a chunk: read on to its end (if it has one yet).
        std::io::BufRead::read_until(&mut rest, b'\n', &mut buf).map_err(|e| io("read", e))?;
    }
    // Whole lines only: a line still being written waits for its newline.
    let Some(last_nl) = memchr_last(&buf) else {
        tx.commit().map_err(sql)?;
        return Ok((0, 0, from, len));
    };
    let start = from;
    let mut rows = 0;
    {
        let mut put_said = tx
            .prepare_cached("INSERT INTO said(file, off, len, at, entry, who) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
            .map_err(sql)?;
        let mut put_words = tx
            .prepare_cached("INSERT INTO words(rowid, text) VALUES (?1, ?2)")
            .map_err(sql)?;
        let mut pos = 0;
        for line in buf[..=last_nl].split(|b| *b == b'\n') {
            let off = from + pos as u64;
            pos += line.len() + 1;
            if pos > last_nl + 1 {
                break;
            }
            let Some(s) = SessionEntry::from_json(line).ok().as_ref().and_then(said) else {
                continue;
            };
            put_said
                .execute(params![file_id, off, line.len() as u64, s.at_ms, s.entry, s.who])
                .map_err(sql)?;
            put_words
                .execute(params![tx.last_insert_rowid(), s.text])
                .map_err(sql)?;
            rows += 1;
        }
    }
    from += last_nl as u64 + 1;
    tx.execute("UPDATE files SET indexed = ?1 WHERE id = ?2", params![from, file_id])
        .map_err(sql)?;
    if rows > 0 {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        tx.execute(
            "INSERT INTO meta(key, value) VALUES ('last_indexed_ms', ?1)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [now.to_string()],
        )
        .map_err(sql)?;
    }
    tx.commit().map_err(sql)?;
    Ok((rows, from - start, from, len))
}

fn memchr_last(buf: &[u8]) -> Option<usize> {
    buf.iter().rposition(|b| *b == b'\n')
}

/// The session id in the file's header line; the file's name when the header is unreadable.
fn session_id(path: &Path) -> String {
    let header = std::fs::File::open(path).ok().and_then(|f| {
        let mut first = Vec::new();
        let mut r = std::io::BufReader::new(f.take(64 << 10));
        std::io::BufRead::read_until(&mut r, b'\n', &mut first).ok()?;
        serde_json::from_slice::<SessionHeader>(first.trim_ascii_end()).ok()
    });
    header.map(|h| h.id).unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    })
}
