//! Markdown for a terminal: the console shows an answer's Markdown with ANSI styles (bold,
//! italics, inline code, code blocks, headings, lists, quotes) when stdout is a terminal, line by
//! line as the answer streams in (a line is shown once it is complete). Inline Markdown is parsed
//! with pulldown-cmark; block structure is read per line (fences are tracked across lines).

use pulldown_cmark::{Event, Parser, Tag, TagEnd};

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
}
