//! Curated memory per chat (issue 28): short facts the model keeps with the `memory` tool, shown
//! in the system prompt of every new session of the chat, each with the day it was learned.
//!
//! - [`entry`]: one file's entries and the rules of every change (one short fact per entry, the
//!   `max_chars` cap, which refuses an `add` with a request to consolidate, never dropping one);
//! - [`store`]: every chat's memory and the global one behind one lock ([`Memories`]); the host
//!   reads and writes the files ([`MemoryFiles`]: atomic, mode 0600, in `state_dir/memory/`, a
//!   corrupt file set aside and reported);
//! - [`tool`]: the `memory` tool (`add`, `replace`, `remove`); `scope: "global"` asks the owners
//!   through the host's [`Consent`] and waits;
//! - [`prompt`]: the system prompt block;
//! - [`curate`]: automatic curation of what a compaction or `/new` leaves behind;
//! - [`extension`]: the per-session extension tying them together ([`MemoryExtension`]).
//!
//! Memory is per key: a chat's key (a forum topic shares its group's), an A2A caller's own
//! ([`caller_key`]), and [`GLOBAL`] for the facts an owner shared with every chat.

pub mod curate;
pub mod entry;
pub mod extension;
pub mod prompt;
pub mod store;
pub mod tool;

pub use entry::{ChangeError, DEFAULT_MAX_CHARS, Entry, MAX_ENTRY_CHARS, Memory, Scope};
pub use extension::{MemoryExtension, Setup};
pub use store::{GLOBAL, Loaded, Memories, MemoryError, MemoryFiles, View, caller_key};
pub use tool::{Answer, Consent};
