//! [`SessionManager`]: one open session, its leaf, labels and name.

use super::context::{SessionContext, build_context};
use super::error::{ManagerError, Result};
use super::memory::InMemorySessionStore;
use super::paths::iso;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use volcanic_abstractions::messages::{Message, UserBody};
use volcanic_abstractions::model::ThinkingLevel;
use volcanic_abstractions::sessions::{
    CompactionEntry, EntryKind, EntryPos, EntryTag, SessionEntry, SessionHeader, SessionIndex, SessionLocation,
    SessionLog, SessionStore,
};

/// The time source for entry and header timestamps.
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// One open session: appends entries as children of the leaf, moves the leaf (`branch`), and
/// builds the model context of the current branch.
///
/// Every `append_*` is durable when it returns `Ok` (inside [`SessionManager::unsynced`]: written,
/// durable with the next synced append or [`SessionManager::sync`]) and returns the new entry's
/// id; the new entry becomes the leaf. Reads (`build_context`, `branch_entries`, `entry`) go to the store; only the
/// index, labels and session name are kept in memory. Not internally synchronised: share it
/// behind a `Mutex`.
pub struct SessionManager {
    store: Arc<dyn SessionStore>,
    log: Box<dyn SessionLog>,
    leaf: Option<EntryPos>,
    labels: HashMap<String, String>,
    name: Option<String>,
    clock: Clock,
    /// Appends do not wait for stable storage (inside [`SessionManager::unsynced`]).
    unsynced: bool,
}

impl fmt::Debug for SessionManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionManager")
            .field("location", self.log.location())
            .field("session_id", &self.log.header().id)
            .field("entries", &self.log.index().len())
            .field("leaf", &self.leaf_id())
            .finish_non_exhaustive()
    }
}

impl SessionManager {
    /// Creates a new session in `scope` (its header is on disk when this returns).
    pub fn create(store: Arc<dyn SessionStore>, scope: &str, cwd: impl AsRef<Path>) -> Result<Self> {
        let header = new_header(cwd.as_ref(), Utc::now());
        let log = store.create(scope, &header)?;
        SessionManager::from_log(store, log)
    }

    /// Creates a new session at an explicit location (e.g. `--session FILE` for a file that does
    /// not exist yet).
    pub fn create_at(store: Arc<dyn SessionStore>, location: &SessionLocation, cwd: impl AsRef<Path>) -> Result<Self> {
        let header = new_header(cwd.as_ref(), Utc::now());
        let log = store.create_at(location, &header)?;
        SessionManager::from_log(store, log)
    }

    /// Opens a stored session; the leaf is its last entry.
    pub fn open(store: Arc<dyn SessionStore>, location: &SessionLocation) -> Result<Self> {
        let log = store.open(location)?;
        SessionManager::from_log(store, log)
    }

    /// Opens the current (most recently modified) session of `scope`, or creates one.
    pub fn continue_recent(store: Arc<dyn SessionStore>, scope: &str, cwd: impl AsRef<Path>) -> Result<Self> {
        match store.open_latest(scope)? {
            Some(log) => SessionManager::from_log(store, log),
            None => SessionManager::create(store, scope, cwd),
        }
    }

    /// A session that is not kept (a fresh [`InMemorySessionStore`]).
    pub fn in_memory(cwd: impl AsRef<Path>) -> Result<Self> {
        SessionManager::create(Arc::new(InMemorySessionStore::new()), "", cwd)
    }

    /// Wraps an open log: leaf = last entry; labels and name from every `label` and
    /// `session_info` entry in stored order.
    pub fn from_log(store: Arc<dyn SessionStore>, log: Box<dyn SessionLog>) -> Result<Self> {
        let index = log.index();
        let mut meta: Vec<EntryPos> = index.positions_of(EntryTag::Label).collect();
        meta.extend(index.positions_of(EntryTag::SessionInfo));
        meta.sort_unstable();
        let mut labels = HashMap::new();
        let mut name = None;
        for entry in log.read(&meta)?.into_iter().flatten() {
            match entry.kind {
                EntryKind::Label {
                    target_id,
                    label: Some(label),
                } if !label.is_empty() => {
                    labels.insert(target_id, label);
                }
                EntryKind::Label { target_id, .. } => {
                    labels.remove(&target_id);
                }
                EntryKind::SessionInfo { name: Some(n) } if !n.trim().is_empty() => name = Some(n.trim().to_owned()),
                EntryKind::SessionInfo { .. }
                | EntryKind::Message(_)
                | EntryKind::ModelChange { .. }
                | EntryKind::ThinkingLevelChange { .. }
                | EntryKind::Compaction(_)
                | EntryKind::BranchSummary { .. }
                | EntryKind::Custom { .. }
                | EntryKind::CustomMessage { .. }
                | EntryKind::Unknown { .. } => {}
            }
        }
        let leaf = log.index().last();
        Ok(SessionManager {
            store,
            log,
            leaf,
            labels,
            name,
            clock: Arc::new(Utc::now),
            unsynced: false,
        })
    }

    /// Runs `f` with appends that do not wait for stable storage: they are written at once (a
    /// killed process keeps them) and become durable with the next synced append or
    /// [`sync`](Self::sync) ([`SessionLog::append_unsynced`]). For entries that are cheap to lose
    /// in a power failure or that the host keeps durable elsewhere: a new session's opening
    /// entries, a prompt the host has in its own synced journal.
    pub fn unsynced<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let outer = std::mem::replace(&mut self.unsynced, true);
        let result = f(self);
        self.unsynced = outer;
        result
    }

    /// Puts every entry appended so far on stable storage.
    pub fn sync(&mut self) -> Result<()> {
        Ok(self.log.sync()?)
    }

    /// [`sync`](Self::sync) to run on another thread ([`SessionLog::sync_job`]): `None` when
    /// there is nothing to wait for.
    pub fn sync_job(&mut self) -> Result<Option<volcanic_abstractions::sessions::SyncJob>> {
        Ok(self.log.sync_job()?)
    }

    /// Uses `clock` for the timestamps of later entries.
    pub fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
    }

    /// The store this session lives in (to create the next session of a scope, e.g. `/new`).
    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.store
    }

    /// Session id (the header's).
    pub fn session_id(&self) -> &str {
        &self.log.header().id
    }

    /// The session file, for file-backed sessions.
    pub fn session_file(&self) -> Option<PathBuf> {
        self.log.location().path().map(Path::to_path_buf)
    }

    /// Where the session is stored.
    pub fn location(&self) -> &SessionLocation {
        self.log.location()
    }

    /// The header.
    pub fn header(&self) -> &SessionHeader {
        self.log.header()
    }

    /// The working directory recorded in the header.
    pub fn cwd(&self) -> &str {
        &self.log.header().cwd
    }

    /// The compact index of every entry (ids, parents, types, roles).
    pub fn index(&self) -> &SessionIndex {
        self.log.index()
    }

    /// The leaf: parent of the next entry. `None` before the first entry (or after `reset_leaf`).
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.map(|p| self.log.index().id(p))
    }

    /// Moves the leaf to `entry_id`; the next append forks there. Nothing is written.
    pub fn branch(&mut self, entry_id: &str) -> Result<()> {
        self.leaf = Some(self.position(entry_id)?);
        Ok(())
    }

    /// Moves the leaf before the first entry: the next append is a new root.
    pub fn reset_leaf(&mut self) {
        self.leaf = None;
    }

    /// Appends a message. Summary messages are refused: they are stored as `compaction` and
    /// `branch_summary` entries.
    pub fn append_message(&mut self, message: Message) -> Result<String> {
        match &message {
            Message::BranchSummary(_) | Message::CompactionSummary(_) => {
                return Err(ManagerError::SummaryMessage { role: message.role() });
            }
            Message::User(_)
            | Message::Assistant(_)
            | Message::ToolResult(_)
            | Message::Custom(_)
            | Message::BashExecution(_) => {}
        }
        self.append(EntryKind::Message(message))
    }

    /// Appends a `model_change`.
    pub fn append_model_change(&mut self, provider: impl Into<String>, model_id: impl Into<String>) -> Result<String> {
        self.append(EntryKind::ModelChange {
            provider: provider.into(),
            model_id: model_id.into(),
        })
    }

    /// Appends a `thinking_level_change`.
    pub fn append_thinking_level_change(&mut self, thinking_level: ThinkingLevel) -> Result<String> {
        self.append(EntryKind::ThinkingLevelChange { thinking_level })
    }

    /// Appends a `compaction`.
    pub fn append_compaction(&mut self, compaction: CompactionEntry) -> Result<String> {
        self.append(EntryKind::Compaction(compaction))
    }

    /// pi's `branchWithSummary`: moves the leaf to `from_id` (`None`: before the first entry) and
    /// appends there a `branch_summary` of the branch being left (`fromId` is `from_id`, or
    /// `"root"`).
    pub fn append_branch_summary(
        &mut self,
        from_id: Option<&str>,
        summary: impl Into<String>,
        details: Option<Value>,
        from_hook: Option<bool>,
    ) -> Result<String> {
        self.leaf = from_id.map(|id| self.position(id)).transpose()?;
        let from_id = from_id.unwrap_or("root").to_owned();
        self.append(EntryKind::BranchSummary {
            from_id,
            summary: summary.into(),
            details,
            from_hook,
        })
    }

    /// Appends a `custom` entry: extension state, never in the model context.
    pub fn append_custom(&mut self, custom_type: impl Into<String>, data: Option<Value>) -> Result<String> {
        self.append(EntryKind::Custom {
            custom_type: custom_type.into(),
            data,
        })
    }

    /// Appends a `custom_message` entry: an extension message the model sees as a user message.
    pub fn append_custom_message(
        &mut self,
        custom_type: impl Into<String>,
        content: UserBody,
        display: bool,
        details: Option<Value>,
    ) -> Result<String> {
        self.append(EntryKind::CustomMessage {
            custom_type: custom_type.into(),
            content,
            display,
            details,
        })
    }

    /// Sets (or, with `None` or an empty label, clears) the label of `target_id`.
    pub fn append_label(&mut self, target_id: &str, label: Option<String>) -> Result<String> {
        self.position(target_id)?;
        let id = self.append(EntryKind::Label {
            target_id: target_id.to_owned(),
            label: label.clone(),
        })?;
        match label.filter(|l| !l.is_empty()) {
            Some(l) => self.labels.insert(target_id.to_owned(), l),
            None => self.labels.remove(target_id),
        };
        Ok(id)
    }

    /// Appends a `session_info` entry with the display name (trimmed). `None` or a blank name
    /// is written but does not clear an earlier name (as in pi).
    pub fn append_session_info(&mut self, name: Option<String>) -> Result<String> {
        let name = name.map(|n| n.trim().to_owned());
        let id = self.append(EntryKind::SessionInfo { name: name.clone() })?;
        if let Some(n) = name.filter(|n| !n.is_empty()) {
            self.name = Some(n);
        }
        Ok(id)
    }

    /// The model context of the current branch (see the module docs). A read failure of the
    /// store is logged and yields an empty context; use [`SessionManager::try_build_context`]
    /// to handle it.
    pub fn build_context(&self) -> SessionContext {
        self.try_build_context().unwrap_or_else(|error| {
            tracing::error!(%error, "cannot read the session context");
            SessionContext::default()
        })
    }

    /// The model context of the current branch, or the store's read error.
    pub fn try_build_context(&self) -> Result<SessionContext> {
        Ok(build_context(self.log.as_ref(), self.leaf)?)
    }

    /// The entries from the root to the leaf (read from the store; unreadable ones left out).
    pub fn branch_entries(&self) -> Vec<SessionEntry> {
        self.try_branch_entries().unwrap_or_else(|error| {
            tracing::error!(%error, "cannot read the session branch");
            Vec::new()
        })
    }

    /// The entries from the root to the leaf, or the store's read error.
    pub fn try_branch_entries(&self) -> Result<Vec<SessionEntry>> {
        let path = self.leaf.map(|leaf| self.log.index().path_to(leaf)).unwrap_or_default();
        Ok(self.log.read(&path)?.into_iter().flatten().collect())
    }

    /// Every entry in stored order (all branches), or the store's read error.
    pub fn entries(&self) -> Result<Vec<SessionEntry>> {
        let all: Vec<EntryPos> = (0..self.log.index().len() as EntryPos).collect();
        Ok(self.log.read(&all)?.into_iter().flatten().collect())
    }

    /// One entry, read from the store (`None` if unknown or unreadable).
    pub fn entry(&self, id: &str) -> Option<SessionEntry> {
        let pos = self.log.index().position(id)?;
        match self.log.read(&[pos]) {
            Ok(mut entries) => entries.pop().flatten(),
            Err(error) => {
                tracing::error!(%error, id, "cannot read a session entry");
                None
            }
        }
    }

    /// The label of an entry.
    pub fn label(&self, id: &str) -> Option<&str> {
        self.labels.get(id).map(String::as_str)
    }

    /// The display name: the last non-blank `session_info` name.
    pub fn session_name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    fn position(&self, id: &str) -> Result<EntryPos> {
        self.log
            .index()
            .position(id)
            .ok_or_else(|| ManagerError::UnknownEntry { id: id.to_owned() })
    }

    /// A fresh 8-hex-character id (pi's), a UUID after 100 collisions.
    fn new_id(&self) -> String {
        let index = self.log.index();
        for _ in 0..100 {
            let id = format!("{:08x}", rand::random::<u32>());
            if !index.contains(&id) {
                return id;
            }
        }
        uuid::Uuid::new_v4().to_string()
    }

    fn append(&mut self, kind: EntryKind) -> Result<String> {
        let entry = SessionEntry {
            id: self.new_id(),
            parent_id: self.leaf.map(|p| self.log.index().id(p).to_owned()),
            timestamp: iso((self.clock)()),
            kind,
        };
        let pos = if self.unsynced {
            self.log.append_unsynced(&entry)?
        } else {
            self.log.append(&entry)?
        };
        self.leaf = Some(pos);
        Ok(entry.id)
    }
}

fn new_header(cwd: &Path, now: DateTime<Utc>) -> SessionHeader {
    SessionHeader::new(uuid::Uuid::now_v7().to_string(), iso(now), cwd.to_string_lossy())
}
