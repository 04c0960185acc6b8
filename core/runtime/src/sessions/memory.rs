//! [`InMemorySessionStore`]: sessions kept in memory, for tests and sessions that are not kept.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;
use volcanic_abstractions::sessions::{
    EntryPos, EntryTag, RoleTag, SessionEntry, SessionHeader, SessionIndex, SessionLocation, SessionLog, SessionStore,
    SessionStoreError, SessionSummary,
};

/// Sessions in memory, addressed as [`SessionLocation::Key`] `"<scope>/<session id>"`. The
/// current session of a scope is the one created or appended to last. Appends are "durable" for
/// as long as the store lives.
#[derive(Debug, Default)]
pub struct InMemorySessionStore {
    sessions: Mutex<BTreeMap<String, Arc<MemSession>>>,
    tick: Arc<AtomicU64>,
}

#[derive(Debug)]
struct MemSession {
    scope: String,
    header: SessionHeader,
    state: Mutex<MemState>,
}

#[derive(Debug)]
struct MemState {
    entries: Vec<SessionEntry>,
    modified: SystemTime,
    /// Store-wide order of the last change.
    tick: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl InMemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        InMemorySessionStore::default()
    }

    fn insert(
        &self,
        key: String,
        scope: String,
        header: &SessionHeader,
    ) -> Result<Box<dyn SessionLog>, SessionStoreError> {
        let mut sessions = lock(&self.sessions);
        if sessions.contains_key(&key) {
            return Err(SessionStoreError::Backend(
                format!("a session already exists at {key}").into(),
            ));
        }
        let session = Arc::new(MemSession {
            scope,
            header: header.clone(),
            state: Mutex::new(MemState {
                entries: Vec::new(),
                modified: SystemTime::now(),
                tick: self.tick.fetch_add(1, Ordering::Relaxed),
            }),
        });
        sessions.insert(key.clone(), session.clone());
        Ok(Box::new(MemLog {
            location: SessionLocation::Key(key),
            session,
            index: SessionIndex::new(),
            tick: self.tick.clone(),
        }))
    }
}

impl SessionStore for InMemorySessionStore {
    fn create(&self, scope: &str, header: &SessionHeader) -> Result<Box<dyn SessionLog>, SessionStoreError> {
        self.insert(format!("{scope}/{}", header.id), scope.to_owned(), header)
    }

    fn create_at(
        &self,
        location: &SessionLocation,
        header: &SessionHeader,
    ) -> Result<Box<dyn SessionLog>, SessionStoreError> {
        match location {
            SessionLocation::Key(key) => {
                let scope = key.rsplit_once('/').map_or("", |(s, _)| s).to_owned();
                self.insert(key.clone(), scope, header)
            }
            SessionLocation::File(_) => Err(SessionStoreError::ForeignLocation {
                location: location.clone(),
            }),
        }
    }

    fn open(&self, location: &SessionLocation) -> Result<Box<dyn SessionLog>, SessionStoreError> {
        let SessionLocation::Key(key) = location else {
            return Err(SessionStoreError::ForeignLocation {
                location: location.clone(),
            });
        };
        let session = lock(&self.sessions)
            .get(key)
            .cloned()
            .ok_or_else(|| SessionStoreError::NotFound {
                location: location.clone(),
            })?;
        let mut index = SessionIndex::new();
        for e in &lock(&session.state).entries {
            index.push(
                &e.id,
                e.parent_id.as_deref(),
                EntryTag::of(&e.kind),
                RoleTag::of_entry(&e.kind),
            );
        }
        index.finish();
        Ok(Box::new(MemLog {
            location: location.clone(),
            session,
            index,
            tick: self.tick.clone(),
        }))
    }

    fn latest(&self, scope: &str) -> Result<Option<SessionLocation>, SessionStoreError> {
        Ok(self.list(scope)?.into_iter().next().map(|s| s.location))
    }

    fn list(&self, scope: &str) -> Result<Vec<SessionSummary>, SessionStoreError> {
        let mut found: Vec<(u64, SessionSummary)> = lock(&self.sessions)
            .iter()
            .filter(|(_, s)| s.scope == scope)
            .map(|(key, s)| {
                let state = lock(&s.state);
                let summary = SessionSummary {
                    location: SessionLocation::Key(key.clone()),
                    header: s.header.clone(),
                    modified: state.modified,
                    size: 0,
                };
                (state.tick, summary)
            })
            .collect();
        found.sort_by_key(|f| std::cmp::Reverse(f.0));
        Ok(found.into_iter().map(|(_, s)| s).collect())
    }
}

/// One open in-memory session.
#[derive(Debug)]
struct MemLog {
    location: SessionLocation,
    session: Arc<MemSession>,
    index: SessionIndex,
    tick: Arc<AtomicU64>,
}

impl SessionLog for MemLog {
    fn location(&self) -> &SessionLocation {
        &self.location
    }

    fn header(&self) -> &SessionHeader {
        &self.session.header
    }

    fn index(&self) -> &SessionIndex {
        &self.index
    }

    fn read(&self, positions: &[EntryPos]) -> Result<Vec<Option<SessionEntry>>, SessionStoreError> {
        let state = lock(&self.session.state);
        Ok(positions
            .iter()
            .map(|&p| state.entries.get(p as usize).cloned())
            .collect())
    }

    fn append(&mut self, entry: &SessionEntry) -> Result<EntryPos, SessionStoreError> {
        let mut state = lock(&self.session.state);
        if state.entries.len() != self.index.len() {
            return Err(SessionStoreError::Backend(
                format!("session {} was appended to by another handle; reopen it", self.location).into(),
            ));
        }
        state.entries.push(entry.clone());
        state.modified = SystemTime::now();
        state.tick = self.tick.fetch_add(1, Ordering::Relaxed);
        Ok(self.index.push(
            &entry.id,
            entry.parent_id.as_deref(),
            EntryTag::of(&entry.kind),
            RoleTag::of_entry(&entry.kind),
        ))
    }
}
