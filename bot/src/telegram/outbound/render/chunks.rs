//! A Markdown reply as messages: HTML chunks, each with its slice of the Markdown source.
//!
//! See the module docs of `render` for how the source slices are found.

use super::html::{MAX_LANGUAGE, render};
use super::split::{Piece, cut, pieces, tokenize};
use super::writer::Mark;
use super::{CHUNK_LIMIT, utf16_len};

/// One message of a rendered reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Telegram HTML, balanced, with at most the limit of visible UTF-16 units.
    pub html: String,
    /// Plain text to send instead when Telegram refuses `html` ("can't parse entities"): the
    /// chunk's slice of the Markdown source (a code fence re-opened or closed where the chunk
    /// starts or ends inside a code block), or the chunk's visible text when that slice would
    /// not fit. At most the limit of UTF-16 units, never blank.
    pub source: String,
}

/// Room kept in a source slice for a re-opened fence (` ```lang\n`) and a closing one
/// (`\n```\n`).
const FENCE_ROOM: usize = MAX_LANGUAGE + 9;

/// Renders `md` and splits it into chunks of at most [`CHUNK_LIMIT`] UTF-16
/// units (visible HTML text, and fallback text alike).
pub fn markdown_chunks(md: &str) -> Vec<Chunk> {
    markdown_chunks_with_limit(md, CHUNK_LIMIT)
}

/// [`markdown_chunks`] with another limit (at least 2).
///
/// The HTML chunks are `split_html`'s cuts of
/// `markdown_to_html`, except that a break where the source slice
/// fits too is preferred to a better-ranked one where it does not. Nothing is lost: the HTML
/// chunks' visible texts make up the whole rendering (blank chunks aside), and the source
/// slices the whole source, in order.
pub fn markdown_chunks_with_limit(md: &str, limit: usize) -> Vec<Chunk> {
    described_chunks(md, limit)
        .into_iter()
        .map(|(chunk, _)| chunk)
        .collect()
}

/// [`markdown_chunks`], each chunk with the byte offset in `md` where its source slice ends (the
/// next chunk's starts there; the last one's is `md.len()`): what a live answer sent chunk by
/// chunk continues from.
pub fn markdown_chunks_ending(md: &str) -> Vec<(Chunk, usize)> {
    sliced_chunks(md, CHUNK_LIMIT)
        .into_iter()
        .map(|s| (s.chunk, s.end))
        .collect()
}

/// The chunks, each flagged `true` when its `source` is the Markdown slice (not the visible
/// text standing in for it).
pub(super) fn described_chunks(md: &str, limit: usize) -> Vec<(Chunk, bool)> {
    sliced_chunks(md, limit)
        .into_iter()
        .map(|s| (s.chunk, s.exact))
        .collect()
}

/// A chunk with where its slice of the source ends.
struct Sliced {
    chunk: Chunk,
    /// `source` is the Markdown slice (not the visible text standing in for it).
    exact: bool,
    /// Byte offset in the source after the chunk's slice.
    end: usize,
}

fn sliced_chunks(md: &str, limit: usize) -> Vec<Sliced> {
    let limit = limit.max(2);
    let rendered = render(md);
    let html = &rendered.html;
    let tokens = tokenize(html);
    let map = SourceMap::new(md, &rendered.marks);
    let source_limit = limit.saturating_sub(FENCE_ROOM).max(limit / 2);
    let mut accept = |start: usize, end: usize| map.units_at(end).saturating_sub(map.units_at(start)) <= source_limit;
    let cuts = cut(html, &tokens, limit, limit / 8, &mut accept);
    let kept: Vec<Piece> = pieces(html, &tokens, &cuts)
        .into_iter()
        .filter(|piece| !piece.visible.trim().is_empty())
        .collect();
    let count = kept.len();
    let mut chunks = Vec::with_capacity(count);
    for (index, piece) in kept.iter().enumerate() {
        let next = kept.get(index + 1);
        let from = if index == 0 { 0 } else { map.offset_at(piece.start) };
        let to = next.map_or(md.len(), |next| map.offset_at(next.start)).max(from);
        let mut source = String::new();
        if index > 0
            && let Some(language) = &piece.code_at_start
        {
            source.push_str("```");
            source.push_str(language);
            source.push('\n');
        }
        let slice = md.get(from..to).unwrap_or("");
        source.push_str(slice);
        if next.is_some_and(|next| next.code_at_start.is_some()) && piece.code_at_end.is_some() {
            if !source.ends_with('\n') {
                source.push('\n');
            }
            source.push_str("```\n");
        }
        let exact = !slice.trim().is_empty() && utf16_len(&source) <= limit;
        if !exact {
            source.clone_from(&piece.visible);
        }
        chunks.push(Sliced {
            chunk: Chunk {
                html: piece.html.clone(),
                source,
            },
            exact,
            end: to,
        });
    }
    chunks
}

/// Looks up the source position of an HTML position: the last mark at or before it.
struct SourceMap<'a> {
    marks: &'a [Mark],
    /// UTF-16 offset of each mark's source offset.
    units: Vec<usize>,
}

impl<'a> SourceMap<'a> {
    fn new(md: &str, marks: &'a [Mark]) -> Self {
        let mut units = Vec::with_capacity(marks.len());
        let (mut offset, mut total) = (0, 0);
        for mark in marks {
            total += utf16_len(md.get(offset..mark.source).unwrap_or(""));
            offset = offset.max(mark.source);
            units.push(total);
        }
        SourceMap { marks, units }
    }

    fn index_at(&self, html: usize) -> Option<usize> {
        self.marks.partition_point(|mark| mark.html <= html).checked_sub(1)
    }

    /// Source byte offset rendered by `html[..html]`.
    fn offset_at(&self, html: usize) -> usize {
        self.index_at(html)
            .and_then(|index| self.marks.get(index))
            .map_or(0, |mark| mark.source)
    }

    /// [`Self::offset_at`] in UTF-16 units.
    fn units_at(&self, html: usize) -> usize {
        self.index_at(html)
            .and_then(|index| self.units.get(index).copied())
            .unwrap_or(0)
    }
}
