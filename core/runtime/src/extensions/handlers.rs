//! The table of event handlers, ordered by extension load order, then registration order.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// One registered handler (`handler` is a `Handler<E>` for the entry's event type).
#[derive(Clone)]
pub(crate) struct HandlerEntry {
    pub id: u64,
    pub ext_index: usize,
    pub extension: String,
    pub handler: Arc<dyn Any + Send + Sync>,
    /// Registered during an activation that has not committed yet.
    pub pending: bool,
}

/// Handlers per event type.
#[derive(Default)]
pub(crate) struct HandlerTable {
    entries: RwLock<HashMap<TypeId, Vec<HandlerEntry>>>,
    next: AtomicU64,
}

impl HandlerTable {
    pub fn add(
        &self,
        event: TypeId,
        _name: &'static str,
        ext_index: usize,
        extension: &str,
        handler: Arc<dyn Any + Send + Sync>,
        pending: bool,
    ) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut map = self.entries.write().unwrap_or_else(|e| e.into_inner());
        let list = map.entry(event).or_default();
        // Stable: after every entry of an extension loaded earlier or equal, in registration order.
        let at = list.iter().position(|s| s.ext_index > ext_index).unwrap_or(list.len());
        list.insert(
            at,
            HandlerEntry {
                id,
                ext_index,
                extension: extension.to_owned(),
                handler,
                pending,
            },
        );
        id
    }

    pub fn remove(&self, id: u64) {
        let mut map = self.entries.write().unwrap_or_else(|e| e.into_inner());
        for list in map.values_mut() {
            list.retain(|s| s.id != id);
        }
    }

    /// Makes an extension's pending handlers live (`commit`) or drops them.
    pub fn settle(&self, ext_index: usize, commit: bool) {
        let mut map = self.entries.write().unwrap_or_else(|e| e.into_inner());
        for list in map.values_mut() {
            if commit {
                for s in list.iter_mut().filter(|s| s.ext_index == ext_index) {
                    s.pending = false;
                }
            } else {
                list.retain(|s| !(s.ext_index == ext_index && s.pending));
            }
        }
    }

    /// Live handlers of an event type, in dispatch order.
    pub fn snapshot(&self, event: TypeId) -> Vec<HandlerEntry> {
        let map = self.entries.read().unwrap_or_else(|e| e.into_inner());
        map.get(&event)
            .map(|l| l.iter().filter(|s| !s.pending).cloned().collect())
            .unwrap_or_default()
    }

    pub fn has(&self, event: TypeId) -> bool {
        let map = self.entries.read().unwrap_or_else(|e| e.into_inner());
        map.get(&event).is_some_and(|l| l.iter().any(|s| !s.pending))
    }

    pub fn clear(&self) {
        self.entries.write().unwrap_or_else(|e| e.into_inner()).clear();
    }
}
