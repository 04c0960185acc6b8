//! Session entries (pi's session format, version 3) and the store contract.
//!
//! A session is a tree of entries linked by `id`/`parentId`; the leaf is the last appended
//! entry unless a branch moved it. Entry `timestamp` is ISO-8601 UTC with milliseconds
//! (`2026-01-15T09:00:00.000Z`); message timestamps inside are epoch ms.

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
    /// Format version (3).
    #[serde(default)]
    pub version: Option<u32>,
    /// Session id (a UUID).
    pub id: String,
    /// ISO time of creation.
    pub timestamp: String,
    /// Working directory of the session.
    #[serde(default)]
    pub cwd: String,
    /// The session this one was forked from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
}

/// One entry of the tree, with what its type carries.
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
    /// A type this version does not know; kept as written.
    Unknown {
        /// Its `type`.
        entry_type: String,
        /// The whole line.
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
