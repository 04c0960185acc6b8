//! [`FileSessionStore`]: pi's JSONL session files under a root directory.

use super::paths::{scope_dir, session_file_name};
use super::reader::read_mapped;
use super::scan::{Tail, scan, trim_end};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use volcanic_abstractions::messages::Message;
use volcanic_abstractions::sessions::{
    EntryPos, EntryTag, RoleTag, SessionEntry, SessionHeader, SessionIndex, SessionLocation, SessionLog, SessionStore,
    SessionStoreError, SessionSummary, SyncJob,
};

/// Where one line is in the file (without its newline).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) offset: u64,
    pub(crate) len: u32,
}

impl Span {
    pub(crate) fn end(self) -> u64 {
        self.offset + u64::from(self.len)
    }
}

/// Session files in pi's v3 JSONL format under `root/<scope>/`.
///
/// One file per session, named by [`session_file_name`]; the current session of a scope is
/// the most recently modified file with a readable header (ties broken by name, which starts
/// with the creation time). [`SessionStore::open`] also takes any other path.
#[derive(Debug, Clone)]
pub struct FileSessionStore {
    root: PathBuf,
}

impl FileSessionStore {
    /// A store rooted at `root` (created on the first `create`).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FileSessionStore { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of `scope`.
    pub fn scope_dir(&self, scope: &str) -> Result<PathBuf, SessionStoreError> {
        scope_dir(&self.root, scope)
    }

    /// Opens a session file (read-only until the first append).
    pub fn open_file(path: &Path) -> Result<FileSessionLog, SessionStoreError> {
        let file = File::open(path).map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => SessionStoreError::NotFound {
                location: SessionLocation::File(path.to_path_buf()),
            },
            _ => SessionStoreError::Io {
                action: "open",
                path: path.to_path_buf(),
                source,
            },
        })?;
        let scanned = scan(&file, path)?;
        let (end, file_len) = match scanned.tail {
            Tail::Torn { from } => (from, scanned.len),
            Tail::Clean | Tail::MissingNewline => (scanned.len, scanned.len),
        };
        Ok(FileSessionLog {
            location: SessionLocation::File(path.to_path_buf()),
            path: path.to_path_buf(),
            reader: file,
            writer: None,
            header: scanned.header,
            index: scanned.index,
            spans: scanned.spans,
            end,
            file_len,
            tail: scanned.tail,
            unsynced: Unsynced::Nothing,
        })
    }

    /// Creates a session file holding only `header`; fails if `path` exists. Nothing is synced
    /// yet: the file, and the directories that name it, are synced by the log's first synced
    /// append or `sync` (a new session on the way to its first prompt waits for no disk).
    pub fn create_file(path: &Path, header: &SessionHeader) -> Result<FileSessionLog, SessionStoreError> {
        let io = |action, path: &Path| {
            let path = path.to_path_buf();
            move |source| SessionStoreError::Io { action, path, source }
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut dirs_to_sync = create_dirs(dir)?;
        let mut line = serde_json::to_vec(header).map_err(|source| SessionStoreError::Encode {
            id: header.id.clone(),
            source,
        })?;
        line.push(b'\n');
        // One `write(2)` of one line: a killed process leaves the whole header or an empty file
        // (passed over, with a warning, when the current session is looked for).
        // Private whatever the umask: a transcript holds the whole conversation.
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(io("create", path))?;
        if let Err(e) = f.write_all(&line) {
            let _ = fs::remove_file(path);
            return Err(io("write", path)(e));
        }
        dirs_to_sync.push(dir.to_path_buf());
        let mut log = FileSessionStore::open_file(path)?;
        log.unsynced = Unsynced::NewFile { dirs: dirs_to_sync };
        Ok(log)
    }
}

impl SessionStore for FileSessionStore {
    fn create(&self, scope: &str, header: &SessionHeader) -> Result<Box<dyn SessionLog>, SessionStoreError> {
        let path = self.scope_dir(scope)?.join(session_file_name(header));
        Ok(Box::new(FileSessionStore::create_file(&path, header)?))
    }

    fn create_at(
        &self,
        location: &SessionLocation,
        header: &SessionHeader,
    ) -> Result<Box<dyn SessionLog>, SessionStoreError> {
        match location {
            SessionLocation::File(path) => Ok(Box::new(FileSessionStore::create_file(path, header)?)),
            SessionLocation::Key(_) => Err(SessionStoreError::ForeignLocation {
                location: location.clone(),
            }),
        }
    }

    fn open(&self, location: &SessionLocation) -> Result<Box<dyn SessionLog>, SessionStoreError> {
        match location {
            SessionLocation::File(path) => Ok(Box::new(FileSessionStore::open_file(path)?)),
            SessionLocation::Key(_) => Err(SessionStoreError::ForeignLocation {
                location: location.clone(),
            }),
        }
    }

    fn latest(&self, scope: &str) -> Result<Option<SessionLocation>, SessionStoreError> {
        for (path, _, _) in self.candidates(scope)? {
            match read_header_only(&path) {
                Ok(_) => return Ok(Some(SessionLocation::File(path))),
                Err(error) => {
                    tracing::warn!(%error, "passing over a session file without a readable header")
                }
            }
        }
        Ok(None)
    }

    /// As [`latest`](SessionStore::latest) then [`open`](SessionStore::open), reading the
    /// chosen file once (a chat's first message after a restart waits for this).
    fn open_latest(&self, scope: &str) -> Result<Option<Box<dyn SessionLog>>, SessionStoreError> {
        for (path, _, _) in self.candidates(scope)? {
            match FileSessionStore::open_file(&path) {
                Ok(log) => return Ok(Some(Box::new(log))),
                // As `latest` does: a file whose header cannot be read is passed over.
                Err(error @ (SessionStoreError::BadHeader { .. } | SessionStoreError::Io { .. })) => {
                    tracing::warn!(%error, "passing over a session file without a readable header")
                }
                // Removed since it was listed.
                Err(SessionStoreError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    fn list(&self, scope: &str) -> Result<Vec<SessionSummary>, SessionStoreError> {
        let mut out = Vec::new();
        for (path, modified, size) in self.candidates(scope)? {
            match read_header_only(&path) {
                Ok(header) => out.push(SessionSummary {
                    location: SessionLocation::File(path),
                    header,
                    modified,
                    size,
                }),
                Err(error) => {
                    tracing::warn!(%error, "passing over a session file without a readable header")
                }
            }
        }
        Ok(out)
    }
}

impl FileSessionStore {
    /// `*.jsonl` files of a scope, newest first.
    fn candidates(&self, scope: &str) -> Result<Vec<(PathBuf, SystemTime, u64)>, SessionStoreError> {
        let dir = self.scope_dir(scope)?;
        let io = |source| SessionStoreError::Io {
            action: "list",
            path: dir.clone(),
            source,
        };
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(e)),
        };
        let mut files = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io)?;
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_file() {
                files.push((path, meta.modified().unwrap_or(UNIX_EPOCH), meta.len()));
            }
        }
        files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        Ok(files)
    }
}

/// The header of a session file, reading only its first line.
fn read_header_only(path: &Path) -> Result<SessionHeader, SessionStoreError> {
    let bad = |reason: String| SessionStoreError::BadHeader {
        path: path.to_path_buf(),
        reason,
    };
    let file = File::open(path).map_err(|source| SessionStoreError::Io {
        action: "open",
        path: path.to_path_buf(),
        source,
    })?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut n = 0;
    loop {
        let read = file
            .read_at(&mut buf[n..], n as u64)
            .map_err(|source| SessionStoreError::Io {
                action: "read",
                path: path.to_path_buf(),
                source,
            })?;
        n += read;
        let start = buf[..n].iter().position(|b| !b.is_ascii_whitespace());
        if let Some(s) = start
            && let Some(nl) = memchr::memchr(b'\n', &buf[s..n])
        {
            let header: SessionHeader =
                serde_json::from_slice(trim_end(&buf[s..s + nl])).map_err(|e| bad(e.to_string()))?;
            if header.entry_type != "session" {
                return Err(bad(format!(
                    "the first line is a `{}` entry, not a session header",
                    header.entry_type
                )));
            }
            return Ok(header);
        }
        if read == 0 {
            let s = start.ok_or_else(|| bad("the file is empty".to_owned()))?;
            return serde_json::from_slice(trim_end(&buf[s..n])).map_err(|e| bad(e.to_string()));
        }
        if n == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
    }
}

/// `create_dir_all`, each new directory private (0700, whatever the umask); returns the parent
/// of every directory it created, outermost first: syncing them makes the new session file's
/// directory survive a power failure as well as the file.
fn create_dirs(dir: &Path) -> Result<Vec<PathBuf>, SessionStoreError> {
    let missing: Vec<&Path> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .collect();
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| SessionStoreError::Io {
            action: "create directory",
            path: dir.to_path_buf(),
            source,
        })?;
    Ok(missing
        .iter()
        .rev()
        .filter_map(|created| created.parent().filter(|p| !p.as_os_str().is_empty()))
        .map(Path::to_path_buf)
        .collect())
}

fn sync_dir(dir: &Path) -> Result<(), SessionStoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| SessionStoreError::Io {
            action: "sync directory",
            path: dir.to_path_buf(),
            source,
        })
}

/// What of a session file is not on stable storage yet.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Unsynced {
    /// Nothing.
    Nothing,
    /// Lines appended since the last sync.
    Lines,
    /// The whole file is new: its data, its inode and the directories naming it (`dirs`).
    NewFile { dirs: Vec<PathBuf> },
}

/// One open session file: its header, index and line offsets. Reads use `pread` on a read-only
/// handle; the file is opened for appending on the first append. Each append is written at once;
/// [`SessionLog::append`] also syncs it (and what came before), [`SessionLog::append_unsynced`]
/// leaves that to the next sync.
#[derive(Debug)]
pub struct FileSessionLog {
    location: SessionLocation,
    path: PathBuf,
    reader: File,
    /// Shared with sync jobs running on other threads.
    writer: Option<Arc<File>>,
    header: SessionHeader,
    index: SessionIndex,
    spans: Vec<Span>,
    /// Where the next line goes: after the last complete line.
    end: u64,
    /// The length the file must have (`end` plus a torn tail); anything else means another writer.
    file_len: u64,
    tail: Tail,
    unsynced: Unsynced,
}

impl FileSessionLog {
    /// The session file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, action: &'static str) -> impl FnOnce(io::Error) -> SessionStoreError + use<> {
        let path = self.path.clone();
        move |source| SessionStoreError::Io { action, path, source }
    }

    /// Copies the torn tail to `<file>.torn-<unix time>` (synced), then cuts it off.
    fn repair_torn_tail(&mut self, writer: &File, from: u64) -> Result<(), SessionStoreError> {
        let mut torn = vec![0u8; usize::try_from(self.file_len - from).unwrap_or(0)];
        writer
            .read_exact_at(&mut torn, from)
            .map_err(self.io("read the torn tail of"))?;
        let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let base = format!("{}.torn-{secs}", self.path.display());
        let mut aside = PathBuf::from(&base);
        let mut n = 1;
        let mut f = loop {
            match OpenOptions::new().write(true).create_new(true).open(&aside) {
                Ok(f) => break f,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => {
                    aside = PathBuf::from(format!("{base}-{n}"));
                    n += 1;
                }
                Err(source) => {
                    return Err(SessionStoreError::Io {
                        action: "create",
                        path: aside,
                        source,
                    });
                }
            }
        };
        let aside_err = |source| SessionStoreError::Io {
            action: "write",
            path: aside.clone(),
            source,
        };
        f.write_all(&torn).and_then(|()| f.sync_all()).map_err(aside_err)?;
        if let Some(dir) = aside.parent() {
            sync_dir(dir)?;
        }
        writer.set_len(from).map_err(self.io("truncate the torn tail of"))?;
        writer.sync_all().map_err(self.io("sync"))?;
        tracing::warn!(
            file = %self.path.display(),
            saved = %aside.display(),
            bytes = torn.len(),
            "cut a torn last line off the session file (saved aside)"
        );
        self.file_len = from;
        self.end = from;
        self.tail = Tail::Clean;
        Ok(())
    }
}

impl SessionLog for FileSessionLog {
    fn location(&self) -> &SessionLocation {
        &self.location
    }

    fn header(&self) -> &SessionHeader {
        &self.header
    }

    fn index(&self) -> &SessionIndex {
        &self.index
    }

    fn read(&self, positions: &[EntryPos]) -> Result<Vec<Option<SessionEntry>>, SessionStoreError> {
        let mut out = Vec::new();
        read_mapped(&self.reader, &self.path, &self.spans, positions, &mut out, Some)?;
        Ok(out)
    }

    fn read_messages(
        &self,
        positions: &[EntryPos],
        convert: fn(SessionEntry) -> Option<Message>,
        out: &mut Vec<Message>,
    ) -> Result<(), SessionStoreError> {
        read_mapped(&self.reader, &self.path, &self.spans, positions, out, |e| {
            e.and_then(convert)
        })
    }

    fn append(&mut self, entry: &SessionEntry) -> Result<EntryPos, SessionStoreError> {
        self.append_entry(entry, true)
    }

    fn append_unsynced(&mut self, entry: &SessionEntry) -> Result<EntryPos, SessionStoreError> {
        self.append_entry(entry, false)
    }

    fn sync(&mut self) -> Result<(), SessionStoreError> {
        self.sync_pending()
    }

    fn sync_job(&mut self) -> Result<Option<SyncJob>, SessionStoreError> {
        let file = match &self.writer {
            Some(w) => w.clone(),
            None if self.unsynced == Unsynced::Nothing => return Ok(None),
            None => Arc::new(self.reader.try_clone().map_err(self.io("open"))?),
        };
        let path = self.path.clone();
        let io = move |source| SessionStoreError::Io {
            action: "sync",
            path,
            source,
        };
        Ok(match std::mem::replace(&mut self.unsynced, Unsynced::Nothing) {
            Unsynced::Nothing => None,
            Unsynced::Lines => Some(Box::new(move || file.sync_data().map_err(io))),
            Unsynced::NewFile { dirs } => Some(Box::new(move || {
                file.sync_all().map_err(io)?;
                dirs.iter().try_for_each(|d| sync_dir(d))
            })),
        })
    }
}

impl FileSessionLog {
    /// Writes `entry` at the end and, with `sync`, syncs it and everything before it. A failed
    /// sync leaves the line as a torn tail (cut off before the next append) and the log as it was.
    fn append_entry(&mut self, entry: &SessionEntry, sync: bool) -> Result<EntryPos, SessionStoreError> {
        let mut line = serde_json::to_vec(entry).map_err(|source| SessionStoreError::Encode {
            id: entry.id.clone(),
            source,
        })?;
        line.push(b'\n');
        let writer = match self.writer.take() {
            Some(w) => w,
            None => Arc::new(
                OpenOptions::new()
                    .read(true)
                    .append(true)
                    .open(&self.path)
                    .map_err(self.io("open for appending"))?,
            ),
        };
        let result = self.append_line(&writer, &line);
        self.writer = Some(writer);
        result?;
        if self.unsynced == Unsynced::Nothing {
            self.unsynced = Unsynced::Lines;
        }
        if sync && let Err(e) = self.sync_pending() {
            self.file_len = self.end + line.len() as u64;
            self.tail = Tail::Torn { from: self.end };
            return Err(e);
        }
        let span = Span {
            offset: self.end,
            len: (line.len() - 1) as u32,
        };
        self.spans.push(span);
        self.end += line.len() as u64;
        self.file_len = self.end;
        Ok(self.index.push(
            &entry.id,
            entry.parent_id.as_deref(),
            EntryTag::of(&entry.kind),
            RoleTag::of_entry(&entry.kind),
        ))
    }

    /// Whether everything written is on stable storage (as far as this log knows).
    #[cfg(test)]
    pub(crate) fn is_synced(&self) -> bool {
        self.unsynced == Unsynced::Nothing
    }

    /// Syncs what is not on stable storage yet: `fdatasync` (a new file: `fsync`, then its
    /// directories). The wait moves off the async worker threads ([`crate::blocking::run`]).
    fn sync_pending(&mut self) -> Result<(), SessionStoreError> {
        let file: &File = self.writer.as_deref().unwrap_or(&self.reader);
        match &self.unsynced {
            Unsynced::Nothing => return Ok(()),
            Unsynced::Lines => crate::blocking::run(|| file.sync_data()).map_err(self.io("sync"))?,
            Unsynced::NewFile { dirs } => crate::blocking::run(|| {
                file.sync_all().map_err(self.io("sync"))?;
                dirs.iter().try_for_each(|d| sync_dir(d))
            })?,
        }
        self.unsynced = Unsynced::Nothing;
        Ok(())
    }

    /// Writes `line` at the end (not synced); repairs the tail first. On failure the written
    /// bytes (if any) become a torn tail, cut off before the next append.
    fn append_line(&mut self, writer: &File, line: &[u8]) -> Result<(), SessionStoreError> {
        let actual = writer.metadata().map_err(self.io("stat"))?.len();
        if actual != self.file_len {
            return Err(SessionStoreError::ChangedOnDisk {
                path: self.path.clone(),
            });
        }
        match self.tail {
            Tail::Clean => {}
            Tail::Torn { from } => self.repair_torn_tail(writer, from)?,
            Tail::MissingNewline => {
                (&*writer).write_all(b"\n").map_err(self.io("append to"))?;
                self.end += 1;
                self.file_len = self.end;
                self.tail = Tail::Clean;
            }
        }
        let written = (&*writer).write_all(line);
        if let Err(source) = written {
            let now = writer.metadata().map_or(self.end + line.len() as u64, |m| m.len());
            if now > self.end {
                self.file_len = now;
                self.tail = Tail::Torn { from: self.end };
            }
            return Err(SessionStoreError::Io {
                action: "append to",
                path: self.path.clone(),
                source,
            });
        }
        Ok(())
    }
}
