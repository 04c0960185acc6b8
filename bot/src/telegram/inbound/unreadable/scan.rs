//! Reading a few numbers out of an update that does not decode, from its raw bytes: the first
//! `"key": <integer>`, or the first `"outer": {"inner": <integer>`. Telegram writes `update_id`
//! first in an update, a message's `from` and `chat` before any nested message, and `id` first
//! in a `User` or `Chat`. A match is never inside a text: a `"` inside a JSON string is always
//! escaped, so `"chat"` (with its unescaped quotes) is a key.

/// The bytes after each `"key"` followed by `:` (JSON whitespace allowed around it).
fn after_key<'a>(raw: &'a [u8], key: &str) -> Option<&'a [u8]> {
    let quoted = format!("\"{key}\"");
    let at = raw.windows(quoted.len()).position(|w| w == quoted.as_bytes())?;
    skip_ws(&raw[at + quoted.len()..]).strip_prefix(b":").map(skip_ws)
}

fn skip_ws(s: &[u8]) -> &[u8] {
    let n = s
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .count();
    &s[n..]
}

/// A JSON integer at the start of `s` (not the start of a fraction or exponent).
fn int(s: &[u8]) -> Option<i64> {
    let sign = usize::from(s.first() == Some(&b'-'));
    let digits = s[sign..].iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || matches!(s.get(sign + digits), Some(b'.' | b'e' | b'E')) {
        return None;
    }
    std::str::from_utf8(&s[..sign + digits]).ok()?.parse().ok()
}

/// The integer of the first `"key"` (`None` if that is not an integer).
pub fn int_field(raw: &[u8], key: &str) -> Option<i64> {
    after_key(raw, key).and_then(int)
}

/// The integer `inner` when it is the first key of the first object `"outer"`.
pub fn nested_int(raw: &[u8], outer: &str, inner: &str) -> Option<i64> {
    let object = skip_ws(after_key(raw, outer)?.strip_prefix(b"{")?);
    let key = format!("\"{inner}\"");
    let rest = skip_ws(object.strip_prefix(key.as_bytes())?).strip_prefix(b":")?;
    int(skip_ws(rest))
}

/// Whether `@username` occurs (in any case, as Telegram usernames are case-insensitive) and is
/// not the start of a longer name.
pub fn mentions(raw: &[u8], username: &str) -> bool {
    if username.is_empty() {
        return false;
    }
    let mention = format!("@{username}");
    let m = mention.as_bytes();
    raw.windows(m.len()).enumerate().any(|(i, w)| {
        w.eq_ignore_ascii_case(m)
            && !raw
                .get(i + m.len())
                .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
    })
}

/// Whether `"key": true` occurs.
pub fn is_true(raw: &[u8], key: &str) -> bool {
    after_key(raw, key).is_some_and(|rest| rest.starts_with(b"true"))
}
