//! Recall: a full-text index of every past session of a chat, and the `recall` tool that searches
//! it (the user's side is in `docs/memory.md`, "Recall").
//!
//! # What is indexed
//!
//! Every line of every session file under `<sessions root>/<chat key>/**/*.jsonl` (pi's v3 JSONL,
//! `volcanic_abstractions::sessions`): all `/new` sessions, every branch, and the entries a
//! compaction took out of the model's context (the file keeps them; a compaction's own summary is
//! not indexed, it only repeats them). One row per entry that carries words: a user's prompt (its
//! sender's name read from the prompt's envelope in groups), an assistant's text, a tool's result,
//! a `!command` and its output, an extension's message, a branch summary ([`extract`]).
//!
//! # Where and how
//!
//! One SQLite database per chat key, `<index root>/<chat key>.sqlite` (the bot's index root is
//! `state_dir/recall`, never a workspace), with an FTS5 table (`unicode61`, diacritics folded,
//! contentless: the words are indexed, the text stays in the session file and a hit's snippet is
//! read from there) ranked by BM25 over the words each entry has (`rank.rs`). One file per chat makes the chat boundary physical: a search
//! opens its own chat's file and no other, so no query can reach another chat's rows.
//!
//! # Invariants
//!
//! - The session files are the truth. A missing index is built from them; an index SQLite cannot
//!   read is set aside (`<file>.corrupt-<unix time>`), logged and rebuilt; neither fails a search.
//! - Crash-safe: the rows of new lines and the file's new indexed offset commit in one
//!   transaction, so a `kill -9` mid-indexing loses nothing and indexes nothing twice.
//! - Only whole lines are indexed (up to the last newline); a file that shrank (a torn tail cut
//!   off by the store) is indexed again from its start.
//! - Off the request path: [`Recall::spawn_indexer`] catches up every chat on an interval on a
//!   thread of its own at nice 19, a few chats at a time, keeping no index open it did not find
//!   open; a search first catches up its own chat, so it always sees every line written.

mod background;
mod error;
pub mod extract;
mod index;
mod query;
mod rank;
mod search;
mod seen;
mod status;
mod store;
mod tool;

pub use background::Pace;
pub use error::{RecallError, Result};
pub use index::Caught;
pub use query::{Query, Terms};
pub use search::{Hit, SearchTimes};
pub use status::ChatStatus;
pub use store::{ChatKey, Recall};
pub use tool::{RecallArgs, RecallExtension, RecallTool};
