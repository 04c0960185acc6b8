//! The HTML output of the renderer: escaping, owed whitespace, lazily opened tags, indentation
//! and the marks that tie the output to the source.
//!
//! Nothing is written for whitespace until a visible character follows it: line breaks between
//! blocks, spaces in text and the space after a list marker are owed, and dropped at the end of
//! a line or of the reply, so no line ends in whitespace. Tags are owed too, until their first
//! visible character: a construct with no text leaves no empty tag behind.

/// A point where the HTML written so far, `html[..html]`, renders exactly `source[..source]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Mark {
    /// Byte offset in the HTML.
    pub(super) html: usize,
    /// Byte offset in the Markdown source.
    pub(super) source: usize,
}

/// Whitespace owed before the next visible character.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Gap {
    #[default]
    None,
    Line,
    Blank,
}

/// A tag waiting for its first visible character.
#[derive(Debug)]
struct PendingTag {
    html: String,
    /// Written before the line's indentation (`<blockquote>`), not after it.
    block: bool,
}

/// Renderer output under construction.
#[derive(Debug, Default)]
pub(super) struct Writer {
    out: String,
    /// Increasing in both offsets.
    marks: Vec<Mark>,
    gap: Gap,
    /// Source offset the owed line breaks end at (a line start), recorded as a mark.
    gap_mark: Option<usize>,
    /// The output is at the start of a line (indentation not yet written).
    line_start: bool,
    /// Spaces of the text not yet written.
    spaces: String,
    /// Source offset after `spaces`, when the text was verbatim source.
    spaces_mark: Option<usize>,
    /// The space after a list marker is owed.
    marker_space: bool,
    /// A list marker was just written: the item's first block continues its line.
    fresh_item: bool,
    pending: Vec<PendingTag>,
    /// Visible characters written so far (tells an empty link).
    visible: usize,
    /// Indentation of each open list item's content.
    indents: Vec<usize>,
}

impl Writer {
    pub(super) fn new(capacity: usize) -> Self {
        Writer {
            out: String::with_capacity(capacity),
            line_start: true,
            ..Writer::default()
        }
    }

    /// The HTML and its marks, ending with (end of HTML, `source_len`).
    pub(super) fn finish(mut self, source_len: usize) -> (String, Vec<Mark>) {
        self.push_mark(source_len);
        (self.out, self.marks)
    }

    /// Visible characters written so far.
    pub(super) fn visible(&self) -> usize {
        self.visible
    }

    /// A block starts on the source line starting at `line`: it goes on a line of its own.
    pub(super) fn start_block(&mut self, line: usize) {
        if !self.out.is_empty() && !self.line_start && !self.fresh_item {
            self.request(Gap::Line);
        }
        self.gap_mark = Some(line);
    }

    /// Owes at least `gap` before the next visible character; owed spaces are dropped.
    pub(super) fn request(&mut self, gap: Gap) {
        self.gap = self.gap.max(gap);
        self.spaces.clear();
        self.spaces_mark = None;
    }

    /// A line break; the next line starts at `source_after` in the source.
    pub(super) fn line_break(&mut self, source_after: Option<usize>) {
        self.request(Gap::Line);
        if source_after.is_some() {
            self.gap_mark = source_after;
        }
    }

    /// Starts a list item with `marker` (`•`, `3.`); its lines are indented under its text.
    pub(super) fn start_item(&mut self, marker: &str) {
        self.put_str(marker);
        self.marker_space = true;
        self.fresh_item = true;
        self.indents.push(marker.chars().count() + 1);
    }

    /// A marker inside the item's first line (a task box): the item's text follows it.
    pub(super) fn item_marker(&mut self, marker: &str) {
        self.put_str(marker);
        self.marker_space = true;
        self.fresh_item = true;
    }

    pub(super) fn end_item(&mut self) {
        self.indents.pop();
        self.fresh_item = false;
        self.marker_space = false;
        self.request(Gap::Line);
    }

    /// Text: escaped, spaces and line breaks owed, marked character by character when it is
    /// verbatim source starting at `source`.
    pub(super) fn text(&mut self, text: &str, source: Option<usize>) {
        for (i, c) in text.char_indices() {
            let after = source.map(|start| start + i + c.len_utf8());
            match c {
                '\r' => {}
                '\n' => {
                    // A second line break in a row makes a blank line.
                    if self.gap >= Gap::Line {
                        self.request(Gap::Blank);
                    }
                    self.line_break(after);
                }
                ' ' | '\t' => {
                    self.spaces.push(c);
                    self.spaces_mark = after;
                }
                _ => {
                    self.put_char(c);
                    if let Some(after) = after {
                        self.push_mark(after);
                    }
                }
            }
        }
    }

    /// Owes `html` as an opening tag; `block` ones go before the line's indentation.
    pub(super) fn open_tag(&mut self, html: String, block: bool) {
        self.pending.push(PendingTag { html, block });
    }

    /// Closes the innermost open tag: written if it was opened, forgotten if it never was.
    pub(super) fn close_tag(&mut self, html: &str) {
        if self.pending.pop().is_none() {
            self.out.push_str(html);
        }
    }

    /// Writes owed line breaks (and their mark) and owed block-level tags, for a block that
    /// writes its own markup next (`<pre>`).
    pub(super) fn flush_block(&mut self) {
        if self.gap > Gap::None && !self.out.is_empty() {
            let breaks = if self.gap == Gap::Blank { "\n\n" } else { "\n" };
            self.out.push_str(breaks);
            self.line_start = true;
            if let Some(source) = self.gap_mark {
                self.push_mark(source);
            }
        }
        self.gap = Gap::None;
        self.gap_mark = None;
        self.fresh_item = false;
        while self.pending.first().is_some_and(|tag| tag.block) {
            let tag = self.pending.remove(0);
            self.out.push_str(&tag.html);
        }
    }

    /// Everything owed before a visible character of inline content.
    fn flush_inline(&mut self) {
        self.flush_block();
        if self.line_start {
            let indent: usize = self.indents.iter().sum();
            self.out.extend(std::iter::repeat_n(' ', indent));
            self.visible += indent;
            self.line_start = false;
        }
        if self.marker_space {
            self.out.push(' ');
            self.visible += 1;
            self.marker_space = false;
        }
        if !self.spaces.is_empty() {
            self.visible += self.spaces.len();
            self.out.push_str(&self.spaces);
            self.spaces.clear();
            if let Some(source) = self.spaces_mark.take() {
                self.push_mark(source);
            }
        }
        for tag in self.pending.drain(..) {
            self.out.push_str(&tag.html);
        }
    }

    /// One visible character of inline content.
    pub(super) fn put_char(&mut self, c: char) {
        self.flush_inline();
        self.put_raw_char(c);
    }

    pub(super) fn put_str(&mut self, text: &str) {
        for c in text.chars() {
            self.put_char(c);
        }
    }

    /// One visible character, escaped, with nothing owed written first (inside `<pre>`).
    pub(super) fn put_raw_char(&mut self, c: char) {
        push_escaped(&mut self.out, c, false);
        self.visible += 1;
    }

    /// Markup written as is, after [`Self::flush_block`].
    pub(super) fn put_markup(&mut self, html: &str) {
        self.out.push_str(html);
        self.line_start = false;
    }

    /// Records that the output so far renders the source up to `source`.
    pub(super) fn push_mark(&mut self, source: usize) {
        let html = self.out.len();
        if let Some(last) = self.marks.last_mut() {
            if source < last.source {
                return;
            }
            if last.html == html {
                last.source = source;
                return;
            }
        }
        self.marks.push(Mark { html, source });
    }
}

/// Appends `text` escaped for Telegram HTML (`"` too when `attribute`).
pub(super) fn escape_into(out: &mut String, text: &str, attribute: bool) {
    for c in text.chars() {
        push_escaped(out, c, attribute);
    }
}

fn push_escaped(out: &mut String, c: char, attribute: bool) {
    match c {
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        '&' => out.push_str("&amp;"),
        '"' if attribute => out.push_str("&quot;"),
        _ => out.push(c),
    }
}
