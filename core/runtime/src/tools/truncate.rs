//! Output truncation by lines and bytes (whichever limit is hit first), in pi's
//! `details.truncation` shape. Never splits a UTF-8 character.

use serde::Serialize;
use serde_json::Value;

/// Default line limit of tool output (lines).
pub const DEFAULT_MAX_LINES: usize = 2000;
/// Default byte limit of tool output (bytes; 50 KiB).
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;

/// Which limit cut the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncatedBy {
    /// The line limit.
    Lines,
    /// The byte limit.
    Bytes,
}

/// A truncated text and what was cut. Serialises (without `content`) to pi's
/// `{truncated, truncatedBy, totalLines, totalBytes, outputLines, outputBytes, lastLinePartial,
/// firstLineExceedsLimit, maxLines, maxBytes}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    /// The kept text.
    #[serde(skip)]
    pub content: String,
    /// Whether anything was cut.
    pub truncated: bool,
    /// Which limit cut it (`None` when nothing was cut).
    pub truncated_by: Option<TruncatedBy>,
    /// Lines in the whole text (`\n`-separated, so a trailing newline ends an empty last line).
    pub total_lines: usize,
    /// Bytes in the whole text.
    pub total_bytes: usize,
    /// Lines kept (a partial line counts as one).
    pub output_lines: usize,
    /// Bytes kept.
    pub output_bytes: usize,
    /// Tail truncation only: the kept text is the end of one line longer than the byte limit.
    pub last_line_partial: bool,
    /// Head truncation only: the first line alone exceeds the byte limit, nothing was kept.
    pub first_line_exceeds_limit: bool,
    /// Line limit applied (lines).
    pub max_lines: usize,
    /// Byte limit applied (bytes).
    pub max_bytes: usize,
}

impl Truncation {
    /// The metadata as JSON (pi's `details.truncation`).
    pub fn to_details(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    fn untouched(text: &str, total_lines: usize, max_lines: usize, max_bytes: usize) -> Self {
        Truncation {
            content: text.to_owned(),
            truncated: false,
            truncated_by: None,
            total_lines,
            total_bytes: text.len(),
            output_lines: total_lines,
            output_bytes: text.len(),
            last_line_partial: false,
            first_line_exceeds_limit: false,
            max_lines,
            max_bytes,
        }
    }
}

/// Keeps the first `max_lines` lines / `max_bytes` bytes of `text`, whole lines only (for `read`).
/// When the first line alone exceeds `max_bytes`, nothing is kept and `first_line_exceeds_limit`
/// is set.
pub fn truncate_head(text: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let total_lines = text.split('\n').count();
    if total_lines <= max_lines && text.len() <= max_bytes {
        return Truncation::untouched(text, total_lines, max_lines, max_bytes);
    }
    let mut result = Truncation::untouched("", total_lines, max_lines, max_bytes);
    result.total_bytes = text.len();
    result.truncated = true;
    let first_line_len = text.split('\n').next().map_or(0, str::len);
    if first_line_len > max_bytes {
        result.truncated_by = Some(TruncatedBy::Bytes);
        result.output_lines = 0;
        result.output_bytes = 0;
        result.first_line_exceeds_limit = true;
        return result;
    }
    let mut kept_bytes = 0;
    let mut kept_lines = 0;
    let mut by = TruncatedBy::Lines;
    for line in text.split('\n').take(max_lines) {
        let cost = line.len() + usize::from(kept_lines > 0);
        if kept_bytes + cost > max_bytes {
            by = TruncatedBy::Bytes;
            break;
        }
        kept_bytes += cost;
        kept_lines += 1;
    }
    result.content = text[..kept_bytes].to_owned();
    result.truncated_by = Some(by);
    result.output_lines = kept_lines;
    result.output_bytes = kept_bytes;
    result
}

/// Keeps the last `max_lines` lines / `max_bytes` bytes of `text` (for `bash`). Whole lines,
/// except when the last line alone exceeds `max_bytes`: then its end is kept
/// (`last_line_partial`), starting at a character boundary.
pub fn truncate_tail(text: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let total_lines = text.split('\n').count();
    if total_lines <= max_lines && text.len() <= max_bytes {
        return Truncation::untouched(text, total_lines, max_lines, max_bytes);
    }
    let mut result = Truncation::untouched("", total_lines, max_lines, max_bytes);
    result.total_bytes = text.len();
    result.truncated = true;
    let mut kept_bytes = 0;
    let mut kept_lines = 0;
    let mut by = TruncatedBy::Lines;
    for line in text.rsplit('\n').take(max_lines) {
        let cost = line.len() + usize::from(kept_lines > 0);
        if kept_bytes + cost > max_bytes {
            by = TruncatedBy::Bytes;
            if kept_lines == 0 {
                let start = ceil_char_boundary(line, line.len() - max_bytes);
                kept_bytes = line.len() - start;
                kept_lines = 1;
                result.last_line_partial = true;
            }
            break;
        }
        kept_bytes += cost;
        kept_lines += 1;
    }
    result.content = text[text.len() - kept_bytes..].to_owned();
    result.truncated_by = Some(by);
    result.output_lines = kept_lines;
    result.output_bytes = kept_bytes;
    result
}

/// The first character boundary of `s` at or after byte `index` (bytes).
pub(crate) fn ceil_char_boundary(s: &str, mut index: usize) -> usize {
    while index < s.len() && !s.is_char_boundary(index) {
        index += 1;
    }
    index.min(s.len())
}

/// A byte count for people: `512B`, `50.0KB`, `1.5MB`.
pub fn format_size(bytes: usize) -> String {
    const KIB: f64 = 1024.0;
    // Precision loss is irrelevant for a display size.
    #[allow(clippy::cast_precision_loss)]
    let b = bytes as f64;
    if b < KIB {
        format!("{bytes}B")
    } else if b < KIB * KIB {
        format!("{:.1}KB", b / KIB)
    } else {
        format!("{:.1}MB", b / (KIB * KIB))
    }
}
