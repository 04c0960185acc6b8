use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n")
}

#[test]
fn short_text_is_untouched() {
    let t = truncate_head("a\nb", 10, 100);
    assert!(!t.truncated);
    assert_eq!((t.content.as_str(), t.total_lines, t.output_bytes), ("a\nb", 2, 3));
    assert_eq!(t.truncated_by, None);
}

#[test]
fn head_by_lines_keeps_the_first_lines() {
    let t = truncate_head(&numbered(10), 3, 1000);
    assert_eq!(t.content, "line 1\nline 2\nline 3");
    assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
    assert_eq!((t.total_lines, t.output_lines, t.output_bytes), (10, 3, 20));
}

#[test]
fn head_by_bytes_keeps_whole_lines_only() {
    // "line 1\nline 2" is 13 bytes; the third line would need 7 more.
    let t = truncate_head(&numbered(10), 100, 15);
    assert_eq!(t.content, "line 1\nline 2");
    assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
    assert_eq!(t.output_bytes, 13);
}

#[test]
fn head_first_line_over_the_byte_limit_keeps_nothing() {
    let t = truncate_head("0123456789\nshort", 100, 5);
    assert!(t.first_line_exceeds_limit);
    assert_eq!((t.content.as_str(), t.output_lines), ("", 0));
}

#[test]
fn tail_by_lines_keeps_the_last_lines() {
    let t = truncate_tail(&numbered(10), 2, 1000);
    assert_eq!(t.content, "line 9\nline 10");
    assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
    assert_eq!((t.total_lines, t.output_lines), (10, 2));
}

#[test]
fn tail_by_bytes_keeps_whole_lines() {
    let t = truncate_tail(&numbered(10), 100, 16);
    assert_eq!(t.content, "line 9\nline 10");
    assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
    assert!(!t.last_line_partial);
}

#[test]
fn tail_of_one_long_line_is_partial_and_never_splits_a_character() {
    // "é" is 2 bytes: 5 bytes from the end would start inside one.
    let t = truncate_tail("x\néééééé", 100, 5);
    assert!(t.last_line_partial);
    assert_eq!(t.content, "éé");
    assert_eq!((t.output_bytes, t.output_lines), (4, 1));
    assert!(std::str::from_utf8(t.content.as_bytes()).is_ok());
}

#[test]
fn head_never_splits_a_character() {
    let t = truncate_head("日本\n語語語", 100, 8);
    assert_eq!(t.content, "日本");
}

#[test]
fn details_have_pi_shape() {
    let t = truncate_tail(&numbered(5), 2, 1000);
    assert_eq!(
        t.to_details(),
        json!({
            "truncated": true, "truncatedBy": "lines", "totalLines": 5, "totalBytes": 34,
            "outputLines": 2, "outputBytes": 13, "lastLinePartial": false,
            "firstLineExceedsLimit": false, "maxLines": 2, "maxBytes": 1000
        })
    );
}

#[test]
fn sizes_read_like_pi() {
    assert_eq!(format_size(512), "512B");
    assert_eq!(format_size(DEFAULT_MAX_BYTES), "50.0KB");
    assert_eq!(format_size(3 * 1024 * 1024 / 2), "1.5MB");
}
