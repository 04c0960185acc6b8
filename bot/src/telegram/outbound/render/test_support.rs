//! A strict checker of Telegram HTML for the render tests, written apart from the splitter's
//! tokenizer: only Telegram's tags, properly nested and closed, attributes double-quoted, every
//! `&` an entity Telegram knows, no bare `<`.

/// Tags Telegram's HTML style accepts.
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

/// Parses `html` as Telegram would; returns the visible text or what is wrong.
pub(super) fn check_html(html: &str) -> Result<String, String> {
    let mut text = String::new();
    let mut stack: Vec<String> = Vec::new();
    let mut rest = html;
    while let Some(c) = rest.chars().next() {
        match c {
            '<' => {
                let end = rest.find('>').ok_or_else(|| format!("unclosed tag in {rest:?}"))?;
                let tag = &rest[1..end];
                rest = &rest[end + 1..];
                if let Some(name) = tag.strip_prefix('/') {
                    match stack.pop() {
                        Some(open) if open == name => {}
                        other => return Err(format!("</{name}> closes {other:?}")),
                    }
                    continue;
                }
                let (name, attributes) = tag.split_once(' ').unwrap_or((tag, ""));
                if !SUPPORTED.contains(&name) {
                    return Err(format!("unsupported tag <{name}>"));
                }
                check_attributes(name, attributes)?;
                if name == "blockquote" && stack.iter().any(|open| open == "blockquote") {
                    return Err("nested <blockquote>".into());
                }
                if stack.last().is_some_and(|open| open == "code") {
                    return Err(format!("<{name}> inside <code>"));
                }
                stack.push(name.to_owned());
            }
            '&' => {
                let end = rest.find(';').ok_or_else(|| format!("bare & in {rest:?}"))?;
                let decoded = match &rest[1..end] {
                    "lt" => '<',
                    "gt" => '>',
                    "amp" => '&',
                    "quot" => '"',
                    other => other
                        .strip_prefix('#')
                        .and_then(|n| n.parse::<u32>().ok())
                        .and_then(char::from_u32)
                        .ok_or_else(|| format!("unknown entity &{other};"))?,
                };
                text.push(decoded);
                rest = &rest[end + 1..];
            }
            _ => {
                text.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    match stack.last() {
        Some(open) => Err(format!("<{open}> never closed")),
        None => Ok(text),
    }
}

fn check_attributes(name: &str, attributes: &str) -> Result<(), String> {
    if attributes.is_empty() {
        return Ok(());
    }
    let (key, value) = attributes
        .split_once('=')
        .ok_or_else(|| format!("attribute without value in <{name} {attributes}>"))?;
    let inner = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .ok_or_else(|| format!("unquoted attribute in <{name} {attributes}>"))?;
    if inner.contains(['"', '<', '>']) {
        return Err(format!("unescaped character in <{name} {attributes}>"));
    }
    match (name, key) {
        ("a", "href") => Ok(()),
        ("code", "class") if inner.starts_with("language-") => Ok(()),
        _ => Err(format!("unexpected attribute in <{name} {attributes}>")),
    }
}

/// UTF-16 length, counted independently of the module's helper.
pub(super) fn units(text: &str) -> usize {
    text.encode_utf16().count()
}

/// Checks every chunk (valid HTML, at most `limit` visible units) and returns their visible
/// texts joined.
pub(super) fn check_chunks(chunks: &[String], limit: usize) -> String {
    let mut joined = String::new();
    for (index, chunk) in chunks.iter().enumerate() {
        let visible = match check_html(chunk) {
            Ok(visible) => visible,
            Err(problem) => panic!("chunk {index} is not valid HTML ({problem}): {chunk:?}"),
        };
        assert!(
            units(&visible) <= limit,
            "chunk {index} has {} units (limit {limit}): {chunk:?}",
            units(&visible)
        );
        assert!(!visible.trim().is_empty(), "chunk {index} is blank: {chunk:?}");
        joined.push_str(&visible);
    }
    joined
}

/// Whether `needle`'s characters appear in `haystack` in order (not necessarily adjacent).
pub(super) fn is_subsequence(needle: &str, haystack: &str) -> bool {
    let mut rest = haystack.chars();
    needle.chars().all(|c| rest.any(|h| h == c))
}
