//! Session entries (pi's session format, version 3) and the store contract.
//!
//! A session is a tree of entries linked by `id`/`parentId`; the leaf is the last appended
//! entry unless a branch moved it. Entry `timestamp` is ISO-8601 UTC with milliseconds
//! (`2026-01-15T09:00:00.000Z`); message timestamps inside are epoch ms.
//!
//! # Wire format
//!
//! One JSON object per line (JSONL). The first line is the [`SessionHeader`]
//! `{"type":"session","version":3,"id":…,"timestamp":…,"cwd":…}`; every other line is a
//! [`SessionEntry`], written with pi's key order: `type, id, parentId, timestamp`, then the
//! type's fields, except `custom` and `custom_message`, which pi writes as
//! `type, customType, data|content,display,details, id, parentId, timestamp`. `parentId` is
//! `null` for a root; optional fields are omitted, never `null`. Reading tolerates any key
//! order and unknown fields; an unknown entry type (or a known type whose payload this version
//! cannot represent, e.g. a message with a newer role) is kept as [`EntryKind::Unknown`],
//! never an error. [`SessionEntry::from_json`] is the fast reader for one line;
//! [`SessionEntry`]'s `Serialize` writes one line (without the newline).
//!
//! # Stores
//!
//! A [`SessionStore`] holds many sessions grouped by *scope* (a relative path such as
//! `123/main`); [`SessionLog`] is one open session: its header, a compact [`SessionIndex`] of
//! every entry (id, parent, type, message role, no payload) and positional reads of entries.
//! An acknowledged [`SessionLog::append`] is durable: the line is written and flushed to stable
//! storage (`fdatasync`) before it returns. [`SessionLog::append_unsynced`] only writes, for a
//! later [`SessionLog::sync`] (or a [`SessionLog::sync_job`] run on another thread). A store never
//! rewrites what it stored.

mod index;
mod store;
mod wire;

#[cfg(test)]
mod index_tests;
#[cfg(test)]
mod wire_tests;

pub use index::{EntryMeta, EntryPos, EntryTag, RoleTag, SessionIndex};
pub use store::{SessionLocation, SessionLog, SessionStore, SessionStoreError, SessionSummary, SyncJob};

use crate::messages::{Message, UserBody};
use crate::model::ThinkingLevel;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The session format version written and read.
pub const SESSION_VERSION: u32 = 3;

/// First line of a session file: `{"type":"session","version":3,"id","timestamp","cwd"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    /// Always `"session"`.
    #[serde(rename = "type")]
    pub entry_type: String,
    /// Format version (3); absent in pi's version 1 files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// Session id (a UUID).
    pub id: String,
    /// ISO time of creation.
    #[serde(default)]
    pub timestamp: String,
    /// Working directory of the session.
    #[serde(default)]
    pub cwd: String,
    /// The session this one was forked from (a file path in pi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
}

impl SessionHeader {
    /// A version-3 header.
    pub fn new(id: impl Into<String>, timestamp: impl Into<String>, cwd: impl Into<String>) -> Self {
        SessionHeader {
            entry_type: "session".to_owned(),
            version: Some(SESSION_VERSION),
            id: id.into(),
            timestamp: timestamp.into(),
            cwd: cwd.into(),
            parent_session: None,
        }
    }
}

/// One entry of the tree, with what its type carries.
///
/// `Serialize` writes pi's line (key order above); `Deserialize` accepts any key order and
/// keeps what it does not know as [`EntryKind::Unknown`]. For speed prefer
/// [`SessionEntry::from_json`] when reading a stored line.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEntry {
    /// 8 hex chars in pi's files; unique in the file.
    pub id: String,
    /// Parent entry id; `None` for the root (written as `null`).
    pub parent_id: Option<String>,
    /// ISO-8601 UTC with milliseconds.
    pub timestamp: String,
    /// The type-specific payload.
    pub kind: EntryKind,
}

/// Type-specific payload of an entry. `type` names are pi's.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryKind {
    /// `message`: a transcript message.
    Message(Message),
    /// `model_change`: `{provider, modelId}`.
    ModelChange {
        /// Provider name.
        provider: String,
        /// Model id.
        model_id: String,
    },
    /// `thinking_level_change`: `{thinkingLevel}`.
    ThinkingLevelChange {
        /// New level.
        thinking_level: ThinkingLevel,
    },
    /// `compaction`: older history replaced by a summary.
    Compaction(CompactionEntry),
    /// `branch_summary`: `{fromId, summary, details?, fromHook?}`.
    BranchSummary {
        /// Entry the abandoned branch left from.
        from_id: String,
        /// Summary text.
        summary: String,
        /// Extension details.
        details: Option<Value>,
        /// Whether an extension wrote it.
        from_hook: Option<bool>,
    },
    /// `custom`: extension state, never in the model context. `{customType, data?}`.
    Custom {
        /// Extension's type tag.
        custom_type: String,
        /// State.
        data: Option<Value>,
    },
    /// `custom_message`: an extension message that enters the context as a user message.
    CustomMessage {
        /// Extension's type tag.
        custom_type: String,
        /// Content.
        content: UserBody,
        /// Whether hosts show it.
        display: bool,
        /// Extension details.
        details: Option<Value>,
    },
    /// `label`: `{targetId, label?}`; no label clears it.
    Label {
        /// Labelled entry.
        target_id: String,
        /// The label; `None` clears.
        label: Option<String>,
    },
    /// `session_info`: `{name?}`, the display name.
    SessionInfo {
        /// Display name.
        name: Option<String>,
    },
    /// A type this version does not know, or a known type whose payload it cannot represent
    /// (a message with a newer role, a thinking level it does not know); kept as written and
    /// left out of the model context.
    Unknown {
        /// Its `type`.
        entry_type: String,
        /// The whole line as a JSON value (object keys in sorted order).
        raw: Value,
    },
}

impl EntryKind {
    /// pi's `type` name of the entry.
    pub fn type_name(&self) -> &str {
        match self {
            EntryKind::Message(_) => "message",
            EntryKind::ModelChange { .. } => "model_change",
            EntryKind::ThinkingLevelChange { .. } => "thinking_level_change",
            EntryKind::Compaction(_) => "compaction",
            EntryKind::BranchSummary { .. } => "branch_summary",
            EntryKind::Custom { .. } => "custom",
            EntryKind::CustomMessage { .. } => "custom_message",
            EntryKind::Label { .. } => "label",
            EntryKind::SessionInfo { .. } => "session_info",
            EntryKind::Unknown { entry_type, .. } => entry_type,
        }
    }
}

/// `compaction` entry: `{summary, firstKeptEntryId, tokensBefore, details?, fromHook?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionEntry {
    /// Summary of everything before `first_kept_entry_id`.
    pub summary: String,
    /// First entry kept verbatim after the summary.
    pub first_kept_entry_id: String,
    /// Context tokens before compaction.
    pub tokens_before: u64,
    /// E.g. `{readFiles, modifiedFiles}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Whether an extension supplied the summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_hook: Option<bool>,
}
