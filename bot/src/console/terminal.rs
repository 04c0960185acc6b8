//! Markdown for a terminal: the console shows an answer's Markdown with ANSI styles (bold,
//! italics, inline code, code blocks, headings, lists, quotes) when stdout is a terminal, as the
//! answer streams in: the line being written shows as it comes, raw, and is redrawn styled once
//! complete ([`LiveAnswer`]). Inline Markdown is parsed with pulldown-cmark; block structure is
//! read per line (fences are tracked across lines).

use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use unicode_width::UnicodeWidthStr;

const BOLD: &str = "\x1b[1m";
const ITALIC: &str = "\x1b[3m";
const UNDERLINE: &str = "\x1b[4m";
const DIM: &str = "\x1b[2m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

/// Streams Markdown text in, styled complete lines out.
#[derive(Debug, Default)]
pub struct MarkdownLines {
    /// The incomplete last line.
    pending: String,
    /// Inside a fenced code block.
    in_code: bool,
}

impl MarkdownLines {
    /// Takes a piece of the answer; returns the lines it completed, styled, each ending in `\n`.
    pub fn push(&mut self, delta: &str) -> String {
        self.pending.push_str(delta);
        let Some(end) = self.pending.rfind('\n') else {
            return String::new();
        };
        let complete: String = self.pending.drain(..=end).collect();
        let mut out = String::new();
        for line in complete.lines() {
            out.push_str(&self.line(line));
            out.push('\n');
        }
        out
    }

    /// The rest of the answer (its last line, without a newline), styled; resets the state.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        let out = if rest.is_empty() {
            String::new()
        } else {
            self.line(&rest)
        };
        self.in_code = false;
        out
    }

    /// The incomplete last line, as written so far.
    pub fn pending(&self) -> &str {
        &self.pending
    }

    fn line(&mut self, line: &str) -> String {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            self.in_code = !self.in_code;
            return format!("{DIM}{line}{RESET}");
        }
        if self.in_code {
            return format!("{CYAN}{line}{RESET}");
        }
        let hashes = trimmed.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
            return format!("{BOLD}{UNDERLINE}{}{RESET}", inline(trimmed[hashes..].trim()));
        }
        for marker in ["- ", "* ", "+ "] {
            if let Some(item) = trimmed.strip_prefix(marker) {
                return format!("{indent}• {}", inline(item));
            }
        }
        if let Some(quote) = trimmed.strip_prefix('>') {
            return format!("{indent}{DIM}│{RESET} {}", inline(quote.trim_start()));
        }
        let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && trimmed[digits..].starts_with(". ") {
            let (number, item) = trimmed.split_at(digits + 2);
            return format!("{indent}{number}{}", inline(item));
        }
        format!("{indent}{}", inline(trimmed))
    }
}

/// The answer on a terminal: complete lines styled ([`MarkdownLines`]), the line being written
/// shown raw meanwhile and erased when it is complete, to be drawn again styled.
#[derive(Debug, Default)]
pub struct LiveAnswer {
    md: MarkdownLines,
    /// Columns the raw line takes on screen (it starts at the left edge: the answer and every
    /// line the console prints before it end in a newline).
    shown: usize,
}

impl LiveAnswer {
    /// Takes a piece of the answer; returns what to write. `columns`: the terminal's width.
    pub fn push(&mut self, delta: &str, columns: usize) -> String {
        let done = self.md.push(delta);
        if done.is_empty() {
            let raw = raw_text(delta);
            self.shown += raw.width();
            return raw;
        }
        let mut out = self.erase(columns);
        out.push_str(&done);
        let raw = raw_text(self.md.pending());
        self.shown = raw.width();
        out.push_str(&raw);
        out
    }

    /// Ends the answer (or its part before a tool call): the last line, styled; resets.
    pub fn finish(&mut self, columns: usize) -> String {
        let mut out = self.erase(columns);
        out.push_str(&self.md.finish());
        out
    }

    /// Moves back to where the raw line began and clears from there on.
    fn erase(&mut self, columns: usize) -> String {
        let shown = std::mem::take(&mut self.shown);
        if shown == 0 {
            return String::new();
        }
        // A line exactly filling its last row leaves the cursor on that row (pending wrap).
        let rows_up = (shown - 1) / columns.max(1);
        if rows_up == 0 {
            "\r\x1b[J".to_owned()
        } else {
            format!("\r\x1b[{rows_up}A\x1b[J")
        }
    }
}

/// A raw piece of the line being written, safe to count: tabs as four spaces, no control
/// characters (a stray one would move the cursor where the count does not expect it).
fn raw_text(text: &str) -> String {
    text.chars()
        .filter(|c| *c == '\t' || !c.is_control())
        .collect::<String>()
        .replace('\t', "    ")
}

/// One line's inline Markdown, styled.
fn inline(text: &str) -> String {
    let mut out = String::new();
    // Styles open at this point, re-applied after a reset.
    let mut open: Vec<&str> = Vec::new();
    let reapply = |open: &[&str], out: &mut String| {
        out.push_str(RESET);
        for s in open {
            out.push_str(s);
        }
    };
    let mut link: Option<String> = None;
    for event in Parser::new(text) {
        match event {
            Event::Start(Tag::Strong) => {
                open.push(BOLD);
                out.push_str(BOLD);
            }
            Event::Start(Tag::Emphasis) => {
                open.push(ITALIC);
                out.push_str(ITALIC);
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                open.push(UNDERLINE);
                out.push_str(UNDERLINE);
                link = Some(dest_url.into_string());
            }
            Event::End(TagEnd::Strong | TagEnd::Emphasis) => {
                open.pop();
                reapply(&open, &mut out);
            }
            Event::End(TagEnd::Link) => {
                open.pop();
                reapply(&open, &mut out);
                if let Some(url) = link.take() {
                    out.push_str(&format!(" ({url})"));
                }
            }
            Event::Code(code) => {
                out.push_str(CYAN);
                out.push_str(&code);
                reapply(&open, &mut out);
            }
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => out.push_str(&t),
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            _ => {}
        }
    }
    if !open.is_empty() {
        out.push_str(RESET);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(s: &str) -> String {
        let mut out = String::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                for c in chars.by_ref() {
                    if c == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn lines_come_out_styled_once_complete() {
        let mut md = MarkdownLines::default();
        assert_eq!(md.push("Some **bo"), "");
        let first = md.push("ld** and `code`\n- one\n");
        assert!(first.contains(&format!("{BOLD}bold{RESET}")), "{first:?}");
        assert!(first.contains(&format!("{CYAN}code{RESET}")), "{first:?}");
        assert_eq!(plain(&first), "Some bold and code\n• one\n");
        let code = md.push("```rust\nlet **x** = 1;\n```\n");
        assert!(code.contains(&format!("{CYAN}let **x** = 1;{RESET}")), "{code:?}");
        let rest = md.push("# Title\n> quoted *it*\n2. second [site](https://e.x)");
        assert_eq!(plain(&rest), "Title\n│ quoted it\n");
        assert_eq!(plain(&md.finish()), "2. second site (https://e.x)");
        assert_eq!(md.finish(), "");
    }

    #[test]
    fn the_line_being_written_shows_raw_then_is_redrawn_styled() {
        let mut live = LiveAnswer::default();
        assert_eq!(live.push("Some **bo", 80), "Some **bo");
        assert_eq!(live.push("ld**\tx", 80), "ld**    x");
        // Complete: back to the line's start, cleared, drawn styled; the next one raw.
        let out = live.push(" end\nNext", 80);
        assert!(out.starts_with("\r\x1b[J"), "{out:?}");
        assert_eq!(plain(&out[4..]), "Some bold\tx end\nNext");
        assert!(out.contains(&format!("{BOLD}bold{RESET}")), "{out:?}");
        // 25 columns on a 10-column terminal: three rows, two up.
        assert_eq!(live.push(&"x".repeat(21), 10), "x".repeat(21));
        assert_eq!(live.finish(10), format!("\r\x1b[2A\x1b[JNext{}", "x".repeat(21)));
        // Exactly two rows: the cursor stays on the second.
        live.push(&"日".repeat(10), 10);
        assert_eq!(live.finish(10), format!("\r\x1b[1A\x1b[J{}", "日".repeat(10)));
        assert_eq!(live.finish(10), "");
    }
}
