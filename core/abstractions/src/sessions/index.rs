//! [`SessionIndex`]: what a store knows of every entry without keeping the entry.
//!
//! Per entry it holds the id, the parent's position, the entry type and (for `message`
//! entries) the role, about 20 bytes. Positions ([`EntryPos`]) count entries in stored order
//! from 0 (the header is not an entry). A parent always precedes its child in a well-formed
//! file; a parent id seen only later is linked by [`SessionIndex::finish`], one that never
//! appears leaves the entry a root (pi's reading: the walk to the root stops there).

use super::EntryKind;
use crate::messages::Message;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Position of an entry in its session: 0 for the first entry after the header.
pub type EntryPos = u32;

/// An entry's `type`, as a small tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryTag {
    /// `message`
    Message,
    /// `model_change`
    ModelChange,
    /// `thinking_level_change`
    ThinkingLevelChange,
    /// `compaction`
    Compaction,
    /// `branch_summary`
    BranchSummary,
    /// `custom`
    Custom,
    /// `custom_message`
    CustomMessage,
    /// `label`
    Label,
    /// `session_info`
    SessionInfo,
    /// Any other type.
    Other,
}

impl EntryTag {
    /// The tag of a `type` name.
    pub fn from_type_name(name: &[u8]) -> EntryTag {
        match name {
            b"message" => EntryTag::Message,
            b"model_change" => EntryTag::ModelChange,
            b"thinking_level_change" => EntryTag::ThinkingLevelChange,
            b"compaction" => EntryTag::Compaction,
            b"branch_summary" => EntryTag::BranchSummary,
            b"custom" => EntryTag::Custom,
            b"custom_message" => EntryTag::CustomMessage,
            b"label" => EntryTag::Label,
            b"session_info" => EntryTag::SessionInfo,
            _ => EntryTag::Other,
        }
    }

    /// The tag of an entry (an `Unknown` entry by its `type` name).
    pub fn of(kind: &EntryKind) -> EntryTag {
        match kind {
            EntryKind::Message(_) => EntryTag::Message,
            EntryKind::ModelChange { .. } => EntryTag::ModelChange,
            EntryKind::ThinkingLevelChange { .. } => EntryTag::ThinkingLevelChange,
            EntryKind::Compaction(_) => EntryTag::Compaction,
            EntryKind::BranchSummary { .. } => EntryTag::BranchSummary,
            EntryKind::Custom { .. } => EntryTag::Custom,
            EntryKind::CustomMessage { .. } => EntryTag::CustomMessage,
            EntryKind::Label { .. } => EntryTag::Label,
            EntryKind::SessionInfo { .. } => EntryTag::SessionInfo,
            EntryKind::Unknown { entry_type, .. } => EntryTag::from_type_name(entry_type.as_bytes()),
        }
    }
}

/// The `role` of a `message` entry, as a small tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RoleTag {
    /// `user`
    User,
    /// `assistant`
    Assistant,
    /// `toolResult`
    ToolResult,
    /// `custom` (and pi's version-2 name `hookMessage`)
    Custom,
    /// `bashExecution`
    BashExecution,
    /// `branchSummary`
    BranchSummary,
    /// `compactionSummary`
    CompactionSummary,
    /// Any other role, or none.
    Other,
}

impl RoleTag {
    /// The tag of a `role` name.
    pub fn from_role_name(name: &[u8]) -> RoleTag {
        match name {
            b"user" => RoleTag::User,
            b"assistant" => RoleTag::Assistant,
            b"toolResult" => RoleTag::ToolResult,
            b"custom" | b"hookMessage" => RoleTag::Custom,
            b"bashExecution" => RoleTag::BashExecution,
            b"branchSummary" => RoleTag::BranchSummary,
            b"compactionSummary" => RoleTag::CompactionSummary,
            _ => RoleTag::Other,
        }
    }

    /// The tag of a message.
    pub fn of(message: &Message) -> RoleTag {
        RoleTag::from_role_name(message.role().as_bytes())
    }

    /// The role of an entry: `Some` for `message` entries (`Other` when unreadable).
    pub fn of_entry(kind: &EntryKind) -> Option<RoleTag> {
        match kind {
            EntryKind::Message(m) => Some(RoleTag::of(m)),
            EntryKind::Unknown { entry_type, raw } if entry_type == "message" => Some(
                raw.pointer("/message/role")
                    .and_then(serde_json::Value::as_str)
                    .map_or(RoleTag::Other, |r| RoleTag::from_role_name(r.as_bytes())),
            ),
            EntryKind::ModelChange { .. }
            | EntryKind::ThinkingLevelChange { .. }
            | EntryKind::Compaction(_)
            | EntryKind::BranchSummary { .. }
            | EntryKind::Custom { .. }
            | EntryKind::CustomMessage { .. }
            | EntryKind::Label { .. }
            | EntryKind::SessionInfo { .. }
            | EntryKind::Unknown { .. } => None,
        }
    }
}

/// What the index holds for one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryMeta {
    /// Entry type.
    pub tag: EntryTag,
    /// Message role, for `message` entries.
    pub role: Option<RoleTag>,
    /// Position of the parent; `None` for a root (or a parent that is not in the session).
    pub parent: Option<EntryPos>,
}

const NO_PARENT: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Packed {
    parent: u32,
    tag: EntryTag,
    role: Option<RoleTag>,
}

/// Ids, parent links, types and roles of every entry of a session, in stored order.
///
/// Ids of 8 bytes (pi's 8 hex characters) are looked up as integers; longer ones through a
/// string map. With duplicate ids (pi generates collision-checked ids, so only a hand-edited
/// file has them) the later entry wins a lookup by id, as in pi, while a child stays linked to
/// the entry that had its parent id when the child was indexed.
#[derive(Debug, Clone, Default)]
pub struct SessionIndex {
    metas: Vec<Packed>,
    id_ends: Vec<u32>,
    ids: String,
    short: HashMap<u64, EntryPos, BuildHasherDefault<IdHasher>>,
    long: HashMap<Box<str>, EntryPos>,
    forward: Vec<(EntryPos, Box<str>)>,
}

impl SessionIndex {
    /// An empty index.
    pub fn new() -> Self {
        SessionIndex::default()
    }

    /// An empty index with room for `entries` entries of 8-byte ids.
    pub fn with_capacity(entries: usize) -> Self {
        SessionIndex {
            metas: Vec::with_capacity(entries),
            id_ends: Vec::with_capacity(entries),
            ids: String::with_capacity(entries * 8),
            short: HashMap::with_capacity_and_hasher(entries, BuildHasherDefault::default()),
            long: HashMap::new(),
            forward: Vec::new(),
        }
    }

    /// Adds the next entry and returns its position. A `parent_id` not (yet) in the index is
    /// remembered for [`SessionIndex::finish`].
    pub fn push(&mut self, id: &str, parent_id: Option<&str>, tag: EntryTag, role: Option<RoleTag>) -> EntryPos {
        let pos = self.metas.len() as EntryPos;
        let parent = match parent_id {
            None => NO_PARENT,
            // Most entries continue the previous one, which owns its id (it was inserted last).
            Some(p) if pos > 0 && self.id(pos - 1) == p => pos - 1,
            Some(p) => match self.position(p) {
                Some(p) => p,
                None => {
                    self.forward.push((pos, p.into()));
                    NO_PARENT
                }
            },
        };
        self.metas.push(Packed { parent, tag, role });
        self.ids.push_str(id);
        self.id_ends.push(self.ids.len() as u32);
        match short_key(id) {
            Some(k) => self.short.insert(k, pos),
            None => self.long.insert(id.into(), pos),
        };
        pos
    }

    /// Links entries whose parent came later in the file (only in hand-made files). Parent ids
    /// that never appear leave their entry a root.
    pub fn finish(&mut self) {
        for (pos, parent_id) in std::mem::take(&mut self.forward) {
            if let Some(p) = self.position(&parent_id)
                && let Some(meta) = self.metas.get_mut(pos as usize)
            {
                meta.parent = p;
            }
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.metas.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.metas.is_empty()
    }

    /// Position of the last entry in stored order (pi's leaf on open).
    pub fn last(&self) -> Option<EntryPos> {
        self.metas.len().checked_sub(1).map(|p| p as EntryPos)
    }

    /// The id at `pos` (empty if out of range).
    pub fn id(&self, pos: EntryPos) -> &str {
        let i = pos as usize;
        let end = self.id_ends.get(i).copied().unwrap_or(0) as usize;
        let start = if i == 0 {
            0
        } else {
            self.id_ends.get(i - 1).copied().unwrap_or(0) as usize
        };
        self.ids.get(start..end).unwrap_or_default()
    }

    /// What the index knows of the entry at `pos`.
    pub fn meta(&self, pos: EntryPos) -> Option<EntryMeta> {
        self.metas.get(pos as usize).map(|p| EntryMeta {
            tag: p.tag,
            role: p.role,
            parent: (p.parent != NO_PARENT).then_some(p.parent),
        })
    }

    /// The parent's position.
    pub fn parent(&self, pos: EntryPos) -> Option<EntryPos> {
        self.metas
            .get(pos as usize)
            .and_then(|p| (p.parent != NO_PARENT).then_some(p.parent))
    }

    /// Position of the entry with this id.
    pub fn position(&self, id: &str) -> Option<EntryPos> {
        match short_key(id) {
            Some(k) => self.short.get(&k).copied(),
            None => self.long.get(id).copied(),
        }
    }

    /// Whether an entry has this id.
    pub fn contains(&self, id: &str) -> bool {
        self.position(id).is_some()
    }

    /// Positions from the root to `pos`, following parents (a cycle in a broken file ends the
    /// walk).
    pub fn path_to(&self, pos: EntryPos) -> Vec<EntryPos> {
        let mut path = Vec::new();
        let mut current = Some(pos).filter(|p| (*p as usize) < self.metas.len());
        while let Some(p) = current {
            if path.len() > self.metas.len() {
                break;
            }
            path.push(p);
            current = self.parent(p);
        }
        path.reverse();
        path
    }

    /// Positions of every entry with this tag, in stored order.
    pub fn positions_of(&self, tag: EntryTag) -> impl Iterator<Item = EntryPos> + '_ {
        self.metas
            .iter()
            .enumerate()
            .filter(move |(_, m)| m.tag == tag)
            .map(|(i, _)| i as EntryPos)
    }

    /// Positions whose parent is `pos`, in stored order.
    pub fn children(&self, pos: EntryPos) -> impl Iterator<Item = EntryPos> + '_ {
        self.metas
            .iter()
            .enumerate()
            .filter(move |(_, m)| m.parent == pos)
            .map(|(i, _)| i as EntryPos)
    }
}

fn short_key(id: &str) -> Option<u64> {
    <[u8; 8]>::try_from(id.as_bytes()).ok().map(u64::from_le_bytes)
}

/// Hasher for 8-byte id keys: a 64-bit finaliser (murmur3's fmix64), so every bit of the id
/// reaches the bucket index.
#[derive(Debug, Default, Clone, Copy)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        let mut h = self.0 ^ n;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^= h >> 33;
        self.0 = h;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
