//! Telegram's HTML parse mode, as the server parses it (tdlib's `parse_html`): supported tags
//! only, balanced and properly nested, attributes in tdlib's syntax, entities decoded; the
//! result is the visible text and its `MessageEntity` list with UTF-16 offsets.
//!
//! One rule is stricter than the live server and follows the Bot API documentation instead:
//! every `&` must start `&lt;`, `&gt;`, `&amp;`, `&quot;` or a numeric reference ending in `;`
//! (the server keeps a bare `&` as text). A bare `>` is text, as on the server.

use serde_json::{Value, json};

/// Text with its markup parsed away.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Parsed {
    /// The visible text.
    pub(crate) text: String,
    /// `MessageEntity` objects, sorted by offset, longer first on ties.
    pub(crate) entities: Vec<Value>,
}

/// Tags Telegram accepts (lowercased names).
const SUPPORTED: &[&str] = &[
    "a",
    "b",
    "strong",
    "i",
    "em",
    "u",
    "ins",
    "s",
    "strike",
    "del",
    "span",
    "tg-spoiler",
    "tg-emoji",
    "code",
    "pre",
    "blockquote",
];

/// A tag opened and not yet closed.
#[derive(Debug)]
struct Open {
    /// Lowercased name.
    tag: String,
    /// `href`, the code language, the span class without `tg-`, the emoji id.
    argument: Option<String>,
    /// `<blockquote expandable>`.
    expandable: bool,
    /// Language of a `<pre>` taken from its inner `<code class="language-x">`.
    language: Option<String>,
    /// UTF-16 offset of its content in the visible text.
    start: usize,
}

/// Parses `input`; the error is the part after `Bad Request: can't parse entities: `.
pub(crate) fn parse(input: &str) -> Result<Parsed, String> {
    Parser {
        input,
        bytes: input.as_bytes(),
        pos: 0,
        text: String::with_capacity(input.len()),
        utf16: 0,
        stack: Vec::new(),
        entities: Vec::new(),
    }
    .run()
}

/// Number of UTF-16 code units in `text` (Telegram's length unit).
pub(crate) fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

struct Parser<'a> {
    input: &'a str,
    bytes: &'a [u8],
    pos: usize,
    text: String,
    utf16: usize,
    stack: Vec<Open>,
    entities: Vec<Value>,
}

impl Parser<'_> {
    fn run(mut self) -> Result<Parsed, String> {
        while self.pos < self.bytes.len() {
            match self.bytes[self.pos] {
                b'&' => {
                    let (decoded, next) = decode_entity(self.input, self.pos)?;
                    self.push_char(decoded);
                    self.pos = next;
                }
                b'<' if self.bytes.get(self.pos + 1) == Some(&b'/') => self.end_tag()?,
                b'<' => self.start_tag()?,
                _ => {
                    let Some(c) = self.input[self.pos..].chars().next() else {
                        break;
                    };
                    self.push_char(c);
                    self.pos += c.len_utf8();
                }
            }
        }
        if let Some(open) = self.stack.last() {
            return Err(format!(
                "Can't find end tag corresponding to start tag \"{}\"",
                open.tag
            ));
        }
        let mut entities = self.entities;
        entities.sort_by_key(|entity| {
            let number = |key: &str| entity[key].as_u64().unwrap_or(0);
            (number("offset"), std::cmp::Reverse(number("length")))
        });
        Ok(Parsed {
            text: self.text,
            entities,
        })
    }

    fn push_char(&mut self, c: char) {
        self.text.push(c);
        self.utf16 += c.len_utf16();
    }

    fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    fn is_space_at(&self) -> bool {
        self.bytes.get(self.pos).is_some_and(|byte| byte.is_ascii_whitespace())
    }

    fn skip_spaces(&mut self) {
        while self.is_space_at() {
            self.pos += 1;
        }
    }

    /// Advances while the byte is not a space and not one of `stops`; returns the text passed.
    fn take_until(&mut self, stops: &[u8]) -> &str {
        let start = self.pos;
        while let Some(byte) = self.bytes.get(self.pos)
            && !byte.is_ascii_whitespace()
            && !stops.contains(byte)
        {
            self.pos += 1;
        }
        // Stops are ASCII, so both ends are on character boundaries.
        self.input.get(start..self.pos).unwrap_or("")
    }

    fn start_tag(&mut self) -> Result<(), String> {
        let begin = self.pos;
        self.pos += 1;
        let tag = self.take_until(b">").to_ascii_lowercase();
        if self.at_end() {
            return Err(format!("Unclosed start tag at byte offset {begin}"));
        }
        if !SUPPORTED.contains(&tag.as_str()) {
            return Err(format!("Unsupported start tag \"{tag}\" at byte offset {begin}"));
        }
        let mut argument = None;
        let mut expandable = false;
        loop {
            self.skip_spaces();
            if self.at_end() {
                return Err(format!("Unclosed start tag \"{tag}\" at byte offset {begin}"));
            }
            if self.bytes[self.pos] == b'>' {
                self.pos += 1;
                break;
            }
            let name = self.take_until(b"=>").to_owned();
            if name.is_empty() {
                return Err(format!(
                    "Empty attribute name in the tag \"{tag}\" at byte offset {begin}"
                ));
            }
            self.skip_spaces();
            if self.bytes.get(self.pos) != Some(&b'=') {
                if tag == "blockquote" && name == "expandable" {
                    expandable = true;
                    continue;
                }
                return Err(format!(
                    "Expected equal sign in declaration of an attribute of the tag \"{tag}\" at \
                     byte offset {begin}"
                ));
            }
            self.pos += 1;
            self.skip_spaces();
            let value = self.attribute_value(&tag, begin)?;
            match (tag.as_str(), name.as_str()) {
                ("a", "href") | ("tg-emoji", "emoji-id") => argument = Some(value),
                ("code", "class") => {
                    if let Some(language) = value.strip_prefix("language-") {
                        argument = Some(language.to_owned());
                    }
                }
                ("span", "class") => {
                    if let Some(class) = value.strip_prefix("tg-") {
                        argument = Some(class.to_owned());
                    }
                }
                _ => {}
            }
        }
        if tag == "span" && argument.as_deref() != Some("spoiler") {
            return Err(format!(
                "Tag \"span\" must have class \"tg-spoiler\" at byte offset {begin}"
            ));
        }
        self.stack.push(Open {
            tag,
            argument,
            expandable,
            language: None,
            start: self.utf16,
        });
        Ok(())
    }

    /// A quoted string (entities decoded) or a name token (lowercased).
    fn attribute_value(&mut self, tag: &str, begin: usize) -> Result<String, String> {
        let unclosed = || format!("Unclosed start tag \"{tag}\" at byte offset {begin}");
        let Some(&quote) = self.bytes.get(self.pos) else {
            return Err(unclosed());
        };
        if quote != b'"' && quote != b'\'' {
            let token_start = self.pos;
            while self
                .bytes
                .get(self.pos)
                .is_some_and(|byte| byte.is_ascii_alphanumeric() || *byte == b'.' || *byte == b'-')
            {
                self.pos += 1;
            }
            if !self.is_space_at() && self.bytes.get(self.pos) != Some(&b'>') {
                return Err(format!("Unexpected end of name token at byte offset {token_start}"));
            }
            return Ok(self.input[token_start..self.pos].to_ascii_lowercase());
        }
        self.pos += 1;
        let mut value = String::new();
        loop {
            match self.bytes.get(self.pos) {
                None => return Err(unclosed()),
                Some(&byte) if byte == quote => {
                    self.pos += 1;
                    return Ok(value);
                }
                Some(b'&') => {
                    let (decoded, next) = decode_entity(self.input, self.pos)?;
                    value.push(decoded);
                    self.pos = next;
                }
                Some(_) => {
                    let Some(c) = self.input[self.pos..].chars().next() else {
                        return Err(unclosed());
                    };
                    value.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
    }

    fn end_tag(&mut self) -> Result<(), String> {
        let begin = self.pos;
        if self.stack.is_empty() {
            return Err(format!("Unexpected end tag at byte offset {begin}"));
        }
        self.pos += 2;
        let name = self.take_until(b">").to_owned();
        self.skip_spaces();
        if self.bytes.get(self.pos) != Some(&b'>') {
            return Err(format!("Unclosed end tag at byte offset {begin}"));
        }
        self.pos += 1;
        let Some(open) = self.stack.pop() else {
            return Err(format!("Unexpected end tag at byte offset {begin}"));
        };
        if !name.is_empty() && name != open.tag {
            return Err(format!(
                "Unmatched end tag at byte offset {begin}, expected \"</{}>\", found \"</{name}>\"",
                open.tag
            ));
        }
        self.close(open);
        Ok(())
    }

    /// Turns a closed tag into its entity (none for empty content).
    fn close(&mut self, open: Open) {
        if self.utf16 <= open.start {
            return;
        }
        if open.tag == "code"
            && let Some(parent) = self.stack.last_mut()
            && parent.tag == "pre"
            && parent.start == open.start
        {
            // `<pre><code class="language-x">` is one pre entity with a language.
            parent.language = open.argument;
            return;
        }
        let offset = open.start;
        let length = self.utf16 - open.start;
        let mut entity = json!({"offset": offset, "length": length});
        let kind = match open.tag.as_str() {
            "b" | "strong" => "bold",
            "i" | "em" => "italic",
            "u" | "ins" => "underline",
            "s" | "strike" | "del" => "strikethrough",
            "span" | "tg-spoiler" => "spoiler",
            "code" => "code",
            "pre" => {
                if let Some(language) = open.language {
                    entity["language"] = language.into();
                }
                "pre"
            }
            "blockquote" if open.expandable => "expandable_blockquote",
            "blockquote" => "blockquote",
            "a" => match open.argument {
                Some(url) if !url.is_empty() => {
                    entity["url"] = url.into();
                    "text_link"
                }
                _ => return,
            },
            "tg-emoji" => match open.argument {
                Some(id) if !id.is_empty() => {
                    entity["custom_emoji_id"] = id.into();
                    "custom_emoji"
                }
                _ => return,
            },
            _ => return,
        };
        entity["type"] = kind.into();
        self.entities.push(entity);
    }
}

/// Decodes the entity at `pos` (which holds `&`): `&lt;`, `&gt;`, `&amp;`, `&quot;`, `&#N;`,
/// `&#xH;`. Returns the character and the position after the `;`.
fn decode_entity(input: &str, pos: usize) -> Result<(char, usize), String> {
    let rest = &input[pos + 1..];
    let (decoded, used) = if let Some(numeric) = rest.strip_prefix('#') {
        let (radix, digits_from) = match numeric.as_bytes().first() {
            Some(b'x' | b'X') => (16, 2),
            _ => (10, 1),
        };
        let digits: &str = {
            let tail = &rest[digits_from..];
            let end = tail.find(|c: char| !c.is_digit(radix)).unwrap_or(tail.len());
            &tail[..end]
        };
        let code = u32::from_str_radix(digits, radix)
            .ok()
            .filter(|code| *code != 0)
            .and_then(char::from_u32);
        (code, digits_from + digits.len())
    } else {
        let end = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
        let decoded = match &rest[..end] {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            "quot" => Some('"'),
            _ => None,
        };
        (decoded, end)
    };
    let terminated = rest[used..].starts_with(';');
    match decoded {
        Some(c) if terminated => Ok((c, pos + 1 + used + 1)),
        _ if terminated && used > 0 => Err(format!(
            "Unsupported HTML entity \"&{};\" at byte offset {pos}",
            &rest[..used]
        )),
        _ => Err(format!(
            "Character \"&\" at byte offset {pos} must start an HTML entity; escape it as \"&amp;\""
        )),
    }
}
