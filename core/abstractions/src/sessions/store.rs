//! The store contract: where sessions live and how one is read and appended to.

use super::{EntryPos, SessionEntry, SessionHeader, SessionIndex};
use crate::messages::Message;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Where one session is stored.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SessionLocation {
    /// A JSONL file (`FileSessionStore`; any path, e.g. the console's `--session FILE`).
    File(PathBuf),
    /// A key in a non-file store (`<scope>/<session id>` in the in-memory store).
    Key(String),
}

impl SessionLocation {
    /// The file, for file-backed sessions.
    pub fn path(&self) -> Option<&Path> {
        match self {
            SessionLocation::File(p) => Some(p),
            SessionLocation::Key(_) => None,
        }
    }
}

impl fmt::Display for SessionLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionLocation::File(p) => write!(f, "{}", p.display()),
            SessionLocation::Key(k) => f.write_str(k),
        }
    }
}

impl From<PathBuf> for SessionLocation {
    fn from(path: PathBuf) -> Self {
        SessionLocation::File(path)
    }
}

/// One session of a scope, as [`SessionStore::list`] reports it (read from its header only).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    /// Where it is stored.
    pub location: SessionLocation,
    /// Its header.
    pub header: SessionHeader,
    /// Last modification (file mtime, or last append).
    pub modified: SystemTime,
    /// Stored size in bytes (0 where the store does not know).
    pub size: u64,
}

/// Failures of a [`SessionStore`] or [`SessionLog`]. Each names the file or location.
#[derive(Debug, thiserror::Error)]
pub enum SessionStoreError {
    /// A file system operation failed.
    #[error("session store: cannot {action} {}: {source}", path.display())]
    Io {
        /// What was attempted (`open`, `read`, `append to`, ...).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The first line is missing or is not a session header: the file is not a session.
    #[error("session file {}: the header (first line) cannot be read: {reason}", path.display())]
    BadHeader {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A format version this store cannot read without rewriting the file.
    #[error(
        "session file {}: format version {version} is not supported (2 and 3 are); \
         open it once with pi to migrate it",
        path.display()
    )]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// Its version.
        version: u32,
    },
    /// No session at this location.
    #[error("no session at {location}")]
    NotFound {
        /// The location asked for.
        location: SessionLocation,
    },
    /// A location this store cannot serve (e.g. a file path given to a non-file store).
    #[error("session location {location} does not belong to this store")]
    ForeignLocation {
        /// The location asked for.
        location: SessionLocation,
    },
    /// A scope that is not a relative path of normal components.
    #[error("invalid session scope `{scope}`: {reason}")]
    InvalidScope {
        /// The scope given.
        scope: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The file grew or shrank since it was opened: another process writes to it. Appending
    /// now would corrupt the index; reopen the session.
    #[error(
        "session file {} changed on disk since it was opened (another writer?); reopen the session",
        path.display()
    )]
    ChangedOnDisk {
        /// The file.
        path: PathBuf,
    },
    /// An entry could not be encoded as JSON.
    #[error("cannot encode session entry {id}: {source}")]
    Encode {
        /// The entry id.
        id: String,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// A failure of another backend (e.g. a database).
    #[error("session store backend: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Where sessions live: many sessions per scope, "the newest is current".
///
/// A scope is a relative path of normal components (`123/main`, `--home-dev-project--`). A store
/// never rewrites stored data: sessions only grow by [`SessionLog::append`].
pub trait SessionStore: Send + Sync + fmt::Debug {
    /// Creates a session in `scope` whose first record is `header` and opens it. The header is
    /// written when this returns (a killed process keeps it); it is on stable storage, with the
    /// new session's place in the store, once the first [`SessionLog::append`] or
    /// [`SessionLog::sync`] returns: a session that never got an entry has nothing to lose.
    fn create(&self, scope: &str, header: &SessionHeader) -> Result<Box<dyn SessionLog>, SessionStoreError>;

    /// Creates a session at an explicit location (e.g. the console's `--session FILE` when the
    /// file does not exist yet). Fails if something is already there. Durable as
    /// [`create`](Self::create) is.
    fn create_at(
        &self,
        location: &SessionLocation,
        header: &SessionHeader,
    ) -> Result<Box<dyn SessionLog>, SessionStoreError>;

    /// Opens a stored session: reads its header and indexes its entries.
    fn open(&self, location: &SessionLocation) -> Result<Box<dyn SessionLog>, SessionStoreError>;

    /// The current (most recently modified) session of `scope`, if any. Sessions whose header
    /// cannot be read are passed over with a warning.
    fn latest(&self, scope: &str) -> Result<Option<SessionLocation>, SessionStoreError>;

    /// Every session of `scope` with a readable header, newest first.
    fn list(&self, scope: &str) -> Result<Vec<SessionSummary>, SessionStoreError>;

    /// Opens the current session of `scope`, if any.
    fn open_latest(&self, scope: &str) -> Result<Option<Box<dyn SessionLog>>, SessionStoreError> {
        match self.latest(scope)? {
            Some(location) => self.open(&location).map(Some),
            None => Ok(None),
        }
    }
}

/// The waiting part of a sync ([`SessionLog::sync_job`]).
pub type SyncJob = Box<dyn FnOnce() -> Result<(), SessionStoreError> + Send>;

/// One open session: header, index, reads by position and durable appends.
///
/// Reads are positional ([`EntryPos`] from [`SessionLog::index`]); a store may read and parse in
/// parallel. A stored record that cannot be parsed reads as `None` and is logged with
/// `tracing::warn!`; it stays where it is.
pub trait SessionLog: Send + Sync + fmt::Debug {
    /// Where the session is stored.
    fn location(&self) -> &SessionLocation;

    /// The header (first record).
    fn header(&self) -> &SessionHeader;

    /// Every readable entry's id, parent, type and role, in stored order.
    fn index(&self) -> &SessionIndex;

    /// The entries at `positions`, in the order asked. `None` for a record that cannot be parsed
    /// (or a position out of range).
    fn read(&self, positions: &[EntryPos]) -> Result<Vec<Option<SessionEntry>>, SessionStoreError>;

    /// Reads the entries at `positions` and appends to `out`, in order, what `convert` makes of
    /// each one that reads (unreadable ones and `None` results are left out). This is how a
    /// context is read: a store that parses in parallel also converts there, without holding
    /// the entries and the messages at once.
    fn read_messages(
        &self,
        positions: &[EntryPos],
        convert: fn(SessionEntry) -> Option<Message>,
        out: &mut Vec<Message>,
    ) -> Result<(), SessionStoreError> {
        out.extend(self.read(positions)?.into_iter().flatten().filter_map(convert));
        Ok(())
    }

    /// Appends `entry` (its parent and id are the caller's business; the id must be new) and
    /// returns its position. When this returns `Ok` the entry is on stable storage (written and
    /// `fdatasync`'d, or the backend's equivalent), and so is everything appended before it; on
    /// `Err` the session is unchanged as far as readers of this log can tell.
    fn append(&mut self, entry: &SessionEntry) -> Result<EntryPos, SessionStoreError>;

    /// Appends `entry` like [`append`](Self::append) without waiting for stable storage: the entry
    /// is written (a killed process keeps it; a power failure may not) and reaches stable storage
    /// with the next `append` or [`sync`](Self::sync). For entries a host can recover otherwise,
    /// e.g. a prompt it keeps in its own synced journal. The default is [`append`](Self::append).
    fn append_unsynced(&mut self, entry: &SessionEntry) -> Result<EntryPos, SessionStoreError> {
        self.append(entry)
    }

    /// Puts everything written so far (the header of a new session included) on stable storage.
    /// Nothing to do when it is there already.
    fn sync(&mut self) -> Result<(), SessionStoreError> {
        Ok(())
    }

    /// Like [`sync`](Self::sync), but returns the waiting part to run elsewhere (another thread,
    /// so an async caller does not hold its worker while the disk syncs): `None` when there is
    /// nothing to wait for. The log counts everything written so far as synced once the job is
    /// handed out; a job that fails reports it to whoever runs it. The default syncs here.
    fn sync_job(&mut self) -> Result<Option<SyncJob>, SessionStoreError> {
        self.sync().map(|()| None)
    }
}
