//! Markdown to Telegram HTML, recording where the output lines up with the source.
//!
//! Layout: blocks are separated by a blank line, list items by a line break (a blank line in a
//! loose list); nested lists and an item's continuation lines are indented under the item's
//! text; a soft line break stays a line break (chat text is not reflowed). Code blocks and
//! tables are not indented (they are blocks of their own in Telegram). Nested quotes are
//! flattened into one `<blockquote>` (Telegram does not nest them), and a `<b>` is never opened
//! inside another. Links inside a link, and formatting inside a table, become plain text.
//! Whitespace and tag handling live in the writer.

use super::table::Table;
use super::writer::{Gap, Mark, Writer, escape_into};
use pulldown_cmark::{CodeBlockKind, Event, LinkType, Options, Parser, Tag, TagEnd};
use std::ops::Range;

/// The rendering of a Markdown text and its marks, in increasing order of both offsets.
#[derive(Debug)]
pub(super) struct Rendered {
    /// Telegram HTML.
    pub(super) html: String,
    /// Alignment points between `html` and the source; the last is (end, end).
    pub(super) marks: Vec<Mark>,
}

/// Longest code block language kept in the `class` attribute.
pub(super) const MAX_LANGUAGE: usize = 32;

/// What a horizontal rule becomes.
const RULE: &str = "———";

#[cfg(test)]
/// Renders the model's Markdown (CommonMark, GFM tables, strikethrough and task lists) as
/// Telegram's HTML subset ("HTML style" of the Bot API).
///
/// `**b**` → `<b>`, `*i*` → `<i>`, `~~s~~` → `<s>`, `` `c` `` → `<code>`, fenced code →
/// `<pre><code class="language-x">` (no class without a language), `[t](url)` → `<a href>` for
/// `http(s)`, `tg` and `mailto` targets (any other link shows its text), `>` → `<blockquote>`,
/// headings → bold lines, lists → `•` or `N.` lines with nested lists indented, tables → an
/// aligned monospace `<pre>` block, rules → `———`, images → a link named by the alt text.
/// Raw HTML in the Markdown is shown as text; every `<`, `>` and `&` of the text is escaped.
pub fn markdown_to_html(md: &str) -> String {
    render(md).html
}

/// Renders `md` and records the marks [`super::markdown_chunks`] maps chunks back with.
pub(super) fn render(md: &str) -> Rendered {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut renderer = Renderer::new(md);
    for (event, range) in Parser::new_ext(md, options).into_offset_iter() {
        renderer.event(event, range);
    }
    let (html, marks) = renderer.out.finish(md.len());
    Rendered { html, marks }
}

/// An open link or image.
#[derive(Debug)]
struct OpenLink {
    /// Whether an `<a>` tag was opened for it.
    tag: bool,
    /// What to show when it has no text of its own.
    fallback: String,
    /// `progress()` when it started: unchanged at its end means it had no text.
    progress_at_start: usize,
}

/// A fenced or indented code block being collected.
#[derive(Debug)]
struct CodeBuffer {
    language: Option<String>,
    text: String,
    /// (offset in `text`, source offset) alignment points.
    marks: Vec<(usize, usize)>,
}

/// Bold, italic and strikethrough nesting depths (a nested `<b>` inside `<b>` is not written).
#[derive(Debug, Default)]
struct Styles {
    bold: usize,
    italic: usize,
    strike: usize,
}

#[derive(Debug, Clone, Copy)]
enum Style {
    Bold,
    Italic,
    Strike,
}

struct Renderer<'a> {
    src: &'a str,
    out: Writer,
    /// Next number of each open list (`None`: bullets).
    lists: Vec<Option<u64>>,
    quote_depth: usize,
    styles: Styles,
    links: Vec<OpenLink>,
    code: Option<CodeBuffer>,
    table: Option<Table>,
}

impl<'a> Renderer<'a> {
    fn new(src: &'a str) -> Self {
        Renderer {
            src,
            out: Writer::new(src.len() + src.len() / 4),
            lists: Vec::new(),
            quote_depth: 0,
            styles: Styles::default(),
            links: Vec::new(),
            code: None,
            table: None,
        }
    }

    fn event(&mut self, event: Event<'_>, range: Range<usize>) {
        match event {
            Event::Start(tag) => self.start(tag, range),
            Event::End(tag) => {
                self.end(tag);
                // What is written so far renders the source up to the element's end.
                if self.table.is_none() && self.code.is_none() {
                    self.out.push_mark(range.end);
                }
            }
            Event::Text(text) | Event::Html(text) | Event::InlineHtml(text) => {
                let exact = self.src.get(range.clone()) == Some(&*text);
                self.text(&text, exact.then_some(range.start));
            }
            Event::Code(code) => {
                self.inline_code(&code, range.clone());
                if self.table.is_none() {
                    self.out.push_mark(range.end);
                }
            }
            Event::InlineMath(math) => self.text(&format!("${math}$"), None),
            Event::DisplayMath(math) => self.text(&format!("$${math}$$"), None),
            Event::FootnoteReference(label) => self.text(&format!("[^{label}]"), None),
            Event::SoftBreak | Event::HardBreak => self.line_break(range.end),
            Event::Rule => {
                self.start_block(&range);
                self.out.put_str(RULE);
                self.out.request(Gap::Blank);
            }
            Event::TaskListMarker(done) => {
                self.out.item_marker(if done { "☑" } else { "☐" });
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>, range: Range<usize>) {
        match tag {
            Tag::Paragraph
            | Tag::HtmlBlock
            | Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::MetadataBlock(_) => self.start_block(&range),
            Tag::Heading { .. } => {
                self.start_block(&range);
                self.open_style(Style::Bold);
            }
            Tag::BlockQuote(_) => {
                self.start_block(&range);
                if self.quote_depth == 0 {
                    self.out.open_tag("<blockquote>".into(), true);
                }
                self.quote_depth += 1;
            }
            Tag::CodeBlock(kind) => {
                self.start_block(&range);
                let language = match kind {
                    CodeBlockKind::Fenced(info) => language_of(&info),
                    CodeBlockKind::Indented => None,
                };
                self.code = Some(CodeBuffer {
                    language,
                    text: String::new(),
                    marks: Vec::new(),
                });
            }
            Tag::List(first) => {
                self.start_block(&range);
                self.lists.push(first);
            }
            Tag::Item => self.start_item(&range),
            Tag::Table(alignments) => {
                self.start_block(&range);
                self.table = Some(Table::new(alignments));
            }
            Tag::TableHead | Tag::TableRow => {
                let line = self.line_start_of(range.start);
                if let Some(table) = &mut self.table {
                    table.start_row(line);
                }
            }
            Tag::TableCell => {
                if let Some(table) = &mut self.table {
                    table.start_cell();
                }
            }
            Tag::Emphasis => self.open_style(Style::Italic),
            Tag::Strong => self.open_style(Style::Bold),
            Tag::Strikethrough => self.open_style(Style::Strike),
            Tag::Superscript | Tag::Subscript => {}
            Tag::Link {
                link_type, dest_url, ..
            } => {
                let href = match link_type {
                    LinkType::Email => format!("mailto:{dest_url}"),
                    _ => dest_url.to_string(),
                };
                self.open_link(href, dest_url.to_string());
            }
            Tag::Image { dest_url, .. } => {
                let shown = if dest_url.trim_start().to_ascii_lowercase().starts_with("data:") {
                    "image".to_owned()
                } else {
                    dest_url.to_string()
                };
                self.open_link(dest_url.to_string(), shown);
            }
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph
            | TagEnd::HtmlBlock
            | TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListDefinition
            | TagEnd::MetadataBlock(_) => self.out.request(Gap::Blank),
            TagEnd::DefinitionListTitle => self.out.request(Gap::Line),
            TagEnd::Heading(_) => {
                self.close_style(Style::Bold);
                self.out.request(Gap::Blank);
            }
            TagEnd::BlockQuote(_) => {
                self.quote_depth = self.quote_depth.saturating_sub(1);
                if self.quote_depth == 0 {
                    self.out.close_tag("</blockquote>");
                }
                self.out.request(Gap::Blank);
            }
            TagEnd::CodeBlock => {
                if let Some(code) = self.code.take() {
                    self.write_code_block(code);
                }
                self.out.request(Gap::Blank);
            }
            TagEnd::List(_) => {
                self.lists.pop();
                self.out
                    .request(if self.lists.is_empty() { Gap::Blank } else { Gap::Line });
            }
            TagEnd::Item => {
                self.out.end_item();
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.write_table(&table);
                }
                self.out.request(Gap::Blank);
            }
            TagEnd::TableHead | TagEnd::TableRow | TagEnd::TableCell => {}
            TagEnd::Emphasis => self.close_style(Style::Italic),
            TagEnd::Strong => self.close_style(Style::Bold),
            TagEnd::Strikethrough => self.close_style(Style::Strike),
            TagEnd::Superscript | TagEnd::Subscript => {}
            TagEnd::Link | TagEnd::Image => self.close_link(),
        }
    }

    // ---- blocks ----

    /// A block starts at `range`: it goes on a line of its own.
    fn start_block(&mut self, range: &Range<usize>) {
        self.out.start_block(self.line_start_of(range.start));
    }

    fn start_item(&mut self, range: &Range<usize>) {
        self.start_block(range);
        let marker = match self.lists.last_mut() {
            Some(Some(number)) => {
                let marker = format!("{number}.");
                *number += 1;
                marker
            }
            _ => "•".to_owned(),
        };
        self.out.start_item(&marker);
    }

    fn line_break(&mut self, source_after: usize) {
        match &mut self.table {
            Some(table) => table.push(" "),
            None => self.out.line_break(Some(source_after)),
        }
    }

    fn write_code_block(&mut self, code: CodeBuffer) {
        let body = code.text.trim_end();
        if body.is_empty() {
            return;
        }
        self.out.flush_block();
        match &code.language {
            Some(language) => {
                let mut open = String::from("<pre><code class=\"language-");
                escape_into(&mut open, language, true);
                open.push_str("\">");
                self.out.put_markup(&open);
            }
            None => self.out.put_markup("<pre><code>"),
        }
        let mut marks = code.marks.iter().peekable();
        for (offset, c) in body.char_indices() {
            while let Some(&&(at, source)) = marks.peek() {
                if at > offset {
                    break;
                }
                self.out.push_mark(source);
                marks.next();
            }
            self.out.put_raw_char(c);
        }
        for &(at, source) in marks {
            if at <= body.len() {
                self.out.push_mark(source);
            }
        }
        self.out.put_markup("</code></pre>");
    }

    fn write_table(&mut self, table: &Table) {
        self.out.flush_block();
        self.out.put_markup("<pre>");
        for (index, (line, source)) in table.lines().into_iter().enumerate() {
            if index > 0 {
                self.out.put_raw_char('\n');
                if let Some(source) = source {
                    self.out.push_mark(source);
                }
            }
            for c in line.chars() {
                self.out.put_raw_char(c);
            }
        }
        self.out.put_markup("</pre>");
    }

    // ---- inline ----

    fn text(&mut self, text: &str, source: Option<usize>) {
        if let Some(table) = &mut self.table {
            table.push(text);
            return;
        }
        if let Some(code) = &mut self.code {
            if let Some(start) = source {
                code.marks.push((code.text.len(), line_start(self.src, start)));
                for (i, c) in text.char_indices() {
                    let after = i + c.len_utf8();
                    code.marks.push((code.text.len() + after, start + after));
                }
            }
            code.text.push_str(text);
            return;
        }
        self.out.text(text, source);
    }

    /// Inline code; `range` is the whole span in the source, backticks included.
    fn inline_code(&mut self, code: &str, range: Range<usize>) {
        if let Some(table) = &mut self.table {
            table.push(code);
            return;
        }
        let in_link = self.links.iter().any(|link| link.tag);
        if !in_link {
            self.out.open_tag("<code>".into(), false);
        }
        // Walk the source along the code to mark each character's end there: the code is the
        // span minus its backticks, with one space maybe trimmed and line ends as spaces.
        let span = self.src.get(range.clone()).unwrap_or("");
        let mut at = span.len() - span.trim_start_matches('`').len();
        for c in code.chars() {
            self.out.put_char(c);
            let found = span.get(at..).and_then(|rest| {
                rest.char_indices()
                    .find(|&(_, s)| s == c || (c == ' ' && matches!(s, '\n' | '\r')))
                    .map(|(i, s)| at + i + s.len_utf8())
            });
            match found {
                Some(end) => {
                    at = end;
                    self.out.push_mark(range.start + end);
                }
                None => at = span.len(),
            }
        }
        if !in_link {
            self.out.close_tag("</code>");
        }
    }

    fn open_style(&mut self, style: Style) {
        if self.table.is_some() {
            return;
        }
        let (depth, tag) = match style {
            Style::Bold => (&mut self.styles.bold, "<b>"),
            Style::Italic => (&mut self.styles.italic, "<i>"),
            Style::Strike => (&mut self.styles.strike, "<s>"),
        };
        *depth += 1;
        if *depth == 1 {
            self.out.open_tag(tag.into(), false);
        }
    }

    fn close_style(&mut self, style: Style) {
        if self.table.is_some() {
            return;
        }
        let (depth, tag) = match style {
            Style::Bold => (&mut self.styles.bold, "</b>"),
            Style::Italic => (&mut self.styles.italic, "</i>"),
            Style::Strike => (&mut self.styles.strike, "</s>"),
        };
        *depth = depth.saturating_sub(1);
        if *depth == 0 {
            self.out.close_tag(tag);
        }
    }

    fn open_link(&mut self, href: String, fallback: String) {
        let tag = self.table.is_none() && !self.links.iter().any(|link| link.tag) && is_allowed_link(&href);
        if tag {
            let mut html = String::from("<a href=\"");
            escape_into(&mut html, href.trim(), true);
            html.push_str("\">");
            self.out.open_tag(html, false);
        }
        self.links.push(OpenLink {
            tag,
            fallback,
            progress_at_start: self.progress(),
        });
    }

    fn close_link(&mut self) {
        let Some(link) = self.links.pop() else {
            return;
        };
        if self.progress() == link.progress_at_start {
            self.text(&link.fallback, None);
        }
        if link.tag {
            self.out.close_tag("</a>");
        }
    }

    /// Characters of text rendered so far (in the table being collected too).
    fn progress(&self) -> usize {
        self.out.visible() + self.table.as_ref().map_or(0, Table::pushed)
    }

    fn line_start_of(&self, offset: usize) -> usize {
        line_start(self.src, offset)
    }
}

/// Start of the source line holding `offset`.
fn line_start(src: &str, offset: usize) -> usize {
    src.get(..offset)
        .and_then(|before| before.rfind('\n'))
        .map_or(0, |newline| newline + 1)
}

/// The language of a fence's info string: its first word, reduced to safe characters.
fn language_of(info: &str) -> Option<String> {
    let word = info.split([' ', '\t', ',', '{']).next().unwrap_or("");
    let language: String = word
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '#' | '.'))
        .take(MAX_LANGUAGE)
        .collect();
    (!language.is_empty()).then_some(language)
}

/// Whether Telegram should get `href` as a link: `http(s)`, `tg` and `mailto` only.
fn is_allowed_link(href: &str) -> bool {
    let lower = href.trim().to_ascii_lowercase();
    ["http://", "https://", "tg://", "mailto:"]
        .iter()
        .any(|scheme| lower.len() > scheme.len() && lower.starts_with(scheme))
}
