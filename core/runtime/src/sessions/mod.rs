//! Sessions: the entry tree of one conversation, its context for the model, and where it is stored.
//!
//! [`SessionManager`] is the entry type. It holds one open session (a [`SessionLog`] from an
//! `Arc<dyn SessionStore>`), the leaf pointer, the labels and the session name; everything else is
//! read from the store when asked for. Stores:
//!
//! - [`FileSessionStore`]: pi's v3 JSONL files under a root directory, one directory per scope
//!   (the bot: `<state_dir>/sessions/<chat key>/<topic id or main>/`; the console:
//!   `~/.volcanic/agent/sessions/<encoded cwd>/`, see [`cwd_scope`]), one file per session named
//!   `<ISO time with : and . as ->_<session id>.jsonl`. The current session of a scope is the most
//!   recently modified one.
//! - [`InMemorySessionStore`]: for tests and sessions that are not kept.
//!
//! # Invariants
//!
//! - Append-only. A session file is never rewritten: entries are appended; a `branch` only moves
//!   the leaf, so the next append forks. Appending to a file pi wrote keeps every existing byte.
//! - Durable. An append returns once its line is written and `fdatasync`'d, with every line
//!   before it. Two things are written at once but synced later, by the next synced append or
//!   [`SessionManager::sync`]: appends inside [`SessionManager::unsynced`] (a new session's
//!   opening entries, a prompt on its way to the model), and a new file itself (its header and the
//!   directories naming it). A killed process loses none of them (they are in the file); a power
//!   failure before that sync may (a session with no synced entry has nothing else to lose). The
//!   waits for the disk leave the async worker threads ([`crate::blocking::run`]).
//! - Damage is contained. A torn last line (a crash mid-write: no newline, or not parsable) is
//!   copied to `<file>.torn-<unix time>` and cut off before the next append, never before (a
//!   reader changes nothing). A bad line elsewhere is skipped with a warning naming its line and
//!   left in place, byte for byte; an entry whose parent was on it (its parent id is on no line
//!   of the file) continues from the last readable entry before that line, logged with both
//!   lines, so the context loses that one entry, not everything before it. Lines are indexed by
//!   a prefix scan, so a line whose body is damaged keeps its place in the tree and is skipped,
//!   with a warning, when it is read. A header that cannot be read is an error naming the file.
//! - Opening is cheap. Opening indexes each line's type, id, parent and role and keeps only that
//!   and the line's offset; entries are parsed when read, and [`SessionManager::build_context`]
//!   parses only the context path, in parallel.
//!
//! # Context
//!
//! [`SessionManager::build_context`] follows pi's `buildSessionContext`: walk from the leaf to the
//! root; the newest compaction on that path contributes its summary (a `compactionSummary`
//! message), then the entries from its `firstKeptEntryId` up to it, then everything after it.
//! Messages come from `message` entries, `custom_message` entries ([`Message::Custom`]) and
//! non-empty `branch_summary` entries ([`Message::BranchSummary`]). The model is the last
//! `model_change` or assistant message on the path, the thinking level the last
//! `thinking_level_change` (default `off`).
//!
//! [`Message::Custom`]: volcanic_abstractions::Message::Custom
//! [`Message::BranchSummary`]: volcanic_abstractions::Message::BranchSummary
//! [`SessionLog`]: volcanic_abstractions::sessions::SessionLog

mod context;
mod error;
mod file_store;
mod manager;
mod memory;
mod paths;
mod reader;
mod scan;

pub use context::SessionContext;
pub use error::{ManagerError, Result};
pub use file_store::{FileSessionLog, FileSessionStore};
pub use manager::{Clock, SessionManager};
pub use memory::InMemorySessionStore;
pub use paths::{cwd_scope, session_file_name};

#[cfg(test)]
mod context_tests;
#[cfg(test)]
mod file_store_tests;
#[cfg(test)]
mod manager_tests;
#[cfg(test)]
mod scan_tests;
