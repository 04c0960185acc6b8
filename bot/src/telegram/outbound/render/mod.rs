//! The model's Markdown as Telegram messages: pure functions, no I/O.
//!
//! - `markdown_to_html` renders CommonMark (plus GFM tables, strikethrough and task lists) to
//!   the Bot API's HTML subset. Everything that is not markup is escaped: `<think>` or `a<b` in
//!   the reply, and raw HTML in the Markdown, show up literally.
//! - `split_html` cuts rendered HTML into chunks whose visible text (what Telegram counts:
//!   tags removed, entities decoded) is at most `limit` UTF-16 units. A cut never falls inside a
//!   tag, an entity or a surrogate pair; it prefers a paragraph break, then a line break, then a
//!   space, then any character (breaks outside code blocks before those inside). Tags open at a
//!   cut are closed at the end of the chunk and re-opened, attributes and all, at the start of
//!   the next, so every chunk is balanced HTML and a code block goes on as a code block.
//! - [`markdown_chunks`] does both and pairs each HTML chunk with the slice of the Markdown
//!   source it came from, the plain-text fallback for a chunk Telegram refuses.
//!
//! # How the fallback slices are found
//! The renderer records *marks*: points where the HTML written so far renders exactly a prefix
//! of the source (each block's first line, each line break, each character of text or code
//! that is verbatim source, the end of each element). The HTML is then cut once, by the same
//! splitter as `split_html`, with one more rule: a break where the source between the marks
//! at the chunk's ends also fits the limit (less room for two code fences) is preferred to a
//! better-ranked one where it does not, unless that would leave the chunk under an eighth of
//! the limit. A chunk's source runs from the last mark at or before its start to the last mark
//! at or before its end, so the slices partition the source, in order. A chunk that starts or
//! ends inside a code block gets the fence re-opened (with the language) or closed in its
//! slice. When a slice still does not fit (a link target of thousands of characters) or holds
//! nothing but whitespace, the fallback is the chunk's visible text, which always fits.
//!
//! This does what the block-grouping approach (group top-level blocks whose HTML fits, split a
//! huge block by lines) does, without rendering any part of the reply out of context: reference
//! links, list numbers, nesting and tables come out as in the whole reply, and one splitter
//! serves both functions.

mod chunks;
mod html;
mod split;
mod table;
mod writer;

#[cfg(test)]
mod chunks_tests;
#[cfg(test)]
mod html_tests;
#[cfg(test)]
mod split_tests;
#[cfg(test)]
mod test_support;

pub use chunks::{Chunk, markdown_chunks, markdown_chunks_ending};
// The pieces the chunker is built from, exercised directly by the tests.
#[cfg(test)]
pub use chunks::markdown_chunks_with_limit;
#[cfg(test)]
pub use html::markdown_to_html;
#[cfg(test)]
pub use split::{split_html, visible_text};

/// Default chunk size in UTF-16 units of visible text: Telegram allows 4096 per message; the
/// margin leaves room for a continuation marker or a later edit.
pub const CHUNK_LIMIT: usize = 4000;
const _: () = assert!(CHUNK_LIMIT <= 4096, "Telegram's message limit");

/// Number of UTF-16 code units in `text` (Telegram's unit of length).
pub fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}
