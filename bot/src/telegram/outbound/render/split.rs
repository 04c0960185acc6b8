//! Cutting Telegram HTML into chunks that each fit one message.
//!
//! The HTML is read as tokens: start tags, end tags and visible characters (an entity such as
//! `&lt;` is one character). A chunk grows one character at a time until the next one would
//! pass the limit; it then ends at the best break seen so far, ranked:
//!
//! 1. after a blank line outside a `<pre>` block (between paragraphs, list items of a loose
//!    list, blocks);
//! 2. after a line break outside `<pre>`, or a blank line inside one;
//! 3. after a line break inside `<pre>` (between lines of code);
//! 4. after a space or tab;
//! 5. after any character, though not inside an emoji sequence or before a combining mark.
//!
//! The latest break of the best rank wins; a break only counts once the chunk holds something
//! besides whitespace. End tags right after the break stay in the chunk. Tags still open at the
//! break are closed at the chunk's end and opened again, verbatim, at the start of the next
//! chunk. A chunk whose visible text is only whitespace is dropped (Telegram refuses an empty
//! message).

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `<name ...>`.
    Open,
    /// `</name>`.
    Close,
    /// `<name ... />`: no content, nothing to balance.
    Void,
    /// One visible character (literal or a decoded entity).
    Char(char),
}

/// One token and its byte range in the HTML.
#[derive(Debug, Clone, Copy)]
pub(super) struct Token {
    pub(super) kind: Kind,
    pub(super) start: usize,
    pub(super) end: usize,
}

/// One chunk cut out of the HTML.
#[derive(Debug)]
pub(super) struct Piece {
    /// Balanced HTML: re-opened tags, the slice, closing tags.
    pub(super) html: String,
    /// The visible text.
    pub(super) visible: String,
    /// Byte offset of the slice in the whole HTML.
    pub(super) start: usize,
    /// Language (possibly empty) of the code block open at the start, if any.
    pub(super) code_at_start: Option<String>,
    /// Language (possibly empty) of the code block still open at the end, if any.
    pub(super) code_at_end: Option<String>,
}

#[cfg(test)]
/// Splits Telegram HTML into chunks of at most `limit` UTF-16 units of visible text each.
///
/// A cut never falls inside a tag, an entity or a surrogate pair. It prefers a paragraph break,
/// then a line break, then a space, then any character, and a break outside a code block to one
/// inside. Tags open at a cut are closed at the end of the chunk and re-opened with the same
/// attributes at the start of the next, so each chunk is balanced HTML and a code block goes on
/// as a code block (`<pre><code class="language-rust">` included). Chunks with only whitespace
/// are left out; an empty or blank input gives no chunk. `limit` is taken as at least 2 (one
/// character may need two units).
pub fn split_html(html: &str, limit: usize) -> Vec<String> {
    let tokens = tokenize(html);
    let cuts = cut(html, &tokens, limit, 0, &mut |_, _| true);
    pieces(html, &tokens, &cuts)
        .into_iter()
        .filter(|piece| !piece.visible.trim().is_empty())
        .map(|piece| piece.html)
        .collect()
}

#[cfg(test)]
/// The text Telegram shows for `html`: tags removed, entities decoded.
pub fn visible_text(html: &str) -> String {
    tokenize(html)
        .iter()
        .filter_map(|token| match token.kind {
            Kind::Char(c) => Some(c),
            Kind::Open | Kind::Close | Kind::Void => None,
        })
        .collect()
}

/// Reads `html` into tokens covering every byte. A `<` or `&` that does not start a tag or a
/// known entity is an ordinary character.
pub(super) fn tokenize(html: &str) -> Vec<Token> {
    let bytes = html.as_bytes();
    let mut tokens = Vec::with_capacity(html.len());
    let mut at = 0;
    while let Some(c) = html.get(at..).and_then(|rest| rest.chars().next()) {
        let parsed = match c {
            '<' => parse_tag(bytes, at),
            '&' => parse_entity(html, at).map(|(end, decoded)| (end, Kind::Char(decoded))),
            _ => None,
        };
        let (end, kind) = parsed.unwrap_or((at + c.len_utf8(), Kind::Char(c)));
        tokens.push(Token { kind, start: at, end });
        at = end;
    }
    tokens
}

fn parse_tag(bytes: &[u8], at: usize) -> Option<(usize, Kind)> {
    let mut i = at + 1;
    let closing = bytes.get(i) == Some(&b'/');
    if closing {
        i += 1;
    }
    let name_start = i;
    while bytes.get(i).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'-') {
        i += 1;
    }
    if i == name_start {
        return None;
    }
    let mut quote = None;
    while let Some(&b) = bytes.get(i) {
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None if b == b'<' => return None,
            None if b == b'>' => {
                let kind = if closing {
                    Kind::Close
                } else if bytes.get(i - 1) == Some(&b'/') {
                    Kind::Void
                } else {
                    Kind::Open
                };
                return Some((i + 1, kind));
            }
            None => {}
        }
        i += 1;
    }
    None
}

fn parse_entity(html: &str, at: usize) -> Option<(usize, char)> {
    let rest = html.get(at + 1..)?;
    let semicolon = rest.bytes().take(12).position(|b| b == b';')?;
    let name = rest.get(..semicolon)?;
    let decoded = match name {
        "lt" => '<',
        "gt" => '>',
        "amp" => '&',
        "quot" => '"',
        _ => {
            let number = name.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            char::from_u32(code).filter(|c| *c != '\0')?
        }
    };
    Some((at + 1 + semicolon + 1, decoded))
}

/// Lowercase-insensitive name of a tag token.
pub(super) fn tag_name<'h>(html: &'h str, token: &Token) -> &'h str {
    let raw = html.get(token.start..token.end).unwrap_or("");
    let inner = raw.trim_start_matches('<').trim_start_matches('/');
    let end = inner
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .unwrap_or(inner.len());
    &inner[..end]
}

/// Open tags (token indices), replayed token by token; an end tag closes the innermost open tag
/// of its name, or nothing.
#[derive(Debug, Default, Clone)]
struct Stack(Vec<usize>);

impl Stack {
    fn apply(&mut self, html: &str, tokens: &[Token], index: usize) {
        let Some(token) = tokens.get(index) else {
            return;
        };
        match token.kind {
            Kind::Open => self.0.push(index),
            Kind::Close => {
                let name = tag_name(html, token);
                if let Some(at) = self.0.iter().rposition(|&open| {
                    tokens
                        .get(open)
                        .is_some_and(|t| tag_name(html, t).eq_ignore_ascii_case(name))
                }) {
                    self.0.truncate(at);
                }
            }
            Kind::Void | Kind::Char(_) => {}
        }
    }

    fn is_open(&self, html: &str, tokens: &[Token], name: &str) -> bool {
        self.0.iter().any(|&open| {
            tokens
                .get(open)
                .is_some_and(|t| tag_name(html, t).eq_ignore_ascii_case(name))
        })
    }

    /// The language of an open `<pre><code ...>` block (empty without a class).
    fn code_block(&self, html: &str, tokens: &[Token]) -> Option<String> {
        let pre = self.0.iter().position(|&open| {
            tokens
                .get(open)
                .is_some_and(|t| tag_name(html, t).eq_ignore_ascii_case("pre"))
        })?;
        let code = self.0.get(pre..)?.iter().find_map(|&open| {
            let token = tokens.get(open)?;
            tag_name(html, token)
                .eq_ignore_ascii_case("code")
                .then(|| html.get(token.start..token.end).unwrap_or(""))
        })?;
        let language = code
            .split_once("language-")
            .map(|(_, rest)| {
                rest.chars()
                    .take_while(|c| !matches!(c, '"' | '\'' | ' ' | '>'))
                    .collect()
            })
            .unwrap_or_default();
        Some(language)
    }
}

/// Chooses the cuts: the token index each chunk ends before (the last is `tokens.len()`).
///
/// `accept(start, end)` judges a candidate chunk by its byte range; breaks it accepts, and
/// that leave at least `min_fill` units in the chunk, are preferred over the others.
pub(super) fn cut(
    html: &str,
    tokens: &[Token],
    limit: usize,
    min_fill: usize,
    accept: &mut dyn FnMut(usize, usize) -> bool,
) -> Vec<usize> {
    let limit = limit.max(2);
    let mut in_pre = Vec::with_capacity(tokens.len());
    let mut stack = Stack::default();
    for index in 0..tokens.len() {
        stack.apply(html, tokens, index);
        in_pre.push(stack.is_open(html, tokens, "pre"));
    }
    let mut cuts = Vec::new();
    let mut start = 0;
    while start < tokens.len() {
        let start_byte = tokens.get(start).map_or(html.len(), |t| t.start);
        let mut visible = 0;
        let mut content = false;
        let mut prev: Option<(char, usize, bool)> = None;
        let mut before_prev: Option<char> = None;
        let mut accepted: [Option<usize>; RANKS] = [None; RANKS];
        let mut any: [Option<usize>; RANKS] = [None; RANKS];
        let mut last_fit = None;
        let mut overflow_at = None;
        for (index, token) in tokens.iter().enumerate().skip(start) {
            let Kind::Char(c) = token.kind else {
                continue;
            };
            if let Some((p, p_index, p_content)) = prev
                && p_content
            {
                let rank = rank(before_prev, p, c, in_pre.get(p_index) == Some(&true));
                if rank > 0 {
                    let at = p_index + 1;
                    any[rank] = Some(at);
                    let end_byte = tokens.get(at).map_or(html.len(), |t| t.start);
                    if visible >= min_fill && accept(start_byte, end_byte) {
                        accepted[rank] = Some(at);
                    }
                }
            }
            let units = c.len_utf16();
            if visible + units > limit {
                overflow_at = Some(index);
                break;
            }
            visible += units;
            content |= !c.is_whitespace();
            before_prev = prev.map(|(p, _, _)| p);
            prev = Some((c, index, content));
            last_fit = Some(index + 1);
        }
        let best = |ranks: &[Option<usize>; RANKS]| ranks.iter().rev().find_map(|at| *at);
        let mut end = match overflow_at {
            Some(overflow_at) => best(&accepted)
                .or_else(|| best(&any))
                .or(last_fit)
                .unwrap_or(overflow_at + 1),
            // The rest fits; if `accept` refuses it whole, it is still cut where it accepts.
            None => match best(&accepted) {
                Some(at) if !accept(start_byte, html.len()) => at,
                _ => {
                    cuts.push(tokens.len());
                    break;
                }
            },
        };
        while tokens
            .get(end)
            .is_some_and(|t| matches!(t.kind, Kind::Close | Kind::Void))
        {
            end += 1;
        }
        cuts.push(end);
        start = end;
    }
    cuts
}

/// Number of break ranks (index 0: no break allowed).
const RANKS: usize = 6;

/// How good a break between `prev` and `next` is (higher is better, 0 forbids it).
fn rank(before_prev: Option<char>, prev: char, next: char, in_pre: bool) -> usize {
    match prev {
        '\n' if before_prev == Some('\n') => {
            if in_pre {
                4
            } else {
                5
            }
        }
        '\n' => {
            if in_pre {
                3
            } else {
                4
            }
        }
        ' ' | '\t' => 2,
        _ if joins(prev, next) => 0,
        _ => 1,
    }
}

/// Whether `prev` and `next` belong to one user-perceived character.
fn joins(prev: char, next: char) -> bool {
    let extends = |c: char| {
        matches!(u32::from(c),
            0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x200D | 0x20D0..=0x20FF
            | 0xFE00..=0xFE0F | 0xFE20..=0xFE2F | 0x1F3FB..=0x1F3FF | 0xE0020..=0xE007F
            | 0xE0100..=0xE01EF)
    };
    let regional = |c: char| matches!(u32::from(c), 0x1F1E6..=0x1F1FF);
    extends(next) || prev == '\u{200D}' || (regional(prev) && regional(next))
}

/// Builds the chunks between `cuts`.
pub(super) fn pieces(html: &str, tokens: &[Token], cuts: &[usize]) -> Vec<Piece> {
    let mut stack = Stack::default();
    let mut pieces = Vec::with_capacity(cuts.len());
    let mut start = 0;
    for &end in cuts {
        let start_byte = tokens.get(start).map_or(html.len(), |t| t.start);
        let end_byte = tokens.get(end).map_or(html.len(), |t| t.start);
        let mut out = String::new();
        for &open in &stack.0 {
            if let Some(token) = tokens.get(open) {
                out.push_str(html.get(token.start..token.end).unwrap_or(""));
            }
        }
        let code_at_start = stack.code_block(html, tokens);
        out.push_str(html.get(start_byte..end_byte).unwrap_or(""));
        let mut visible = String::new();
        for index in start..end {
            if let Some(Token {
                kind: Kind::Char(c), ..
            }) = tokens.get(index)
            {
                visible.push(*c);
            }
            stack.apply(html, tokens, index);
        }
        for &open in stack.0.iter().rev() {
            if let Some(token) = tokens.get(open) {
                out.push_str("</");
                out.push_str(tag_name(html, token));
                out.push('>');
            }
        }
        let code_at_end = stack.code_block(html, tokens);
        pieces.push(Piece {
            html: out,
            visible,
            start: start_byte,
            code_at_start,
            code_at_end,
        });
        start = end;
    }
    pieces
}
