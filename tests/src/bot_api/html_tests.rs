//! Telegram HTML parsing: visible text, entities with UTF-16 offsets, and the errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::html::{parse, utf16_len};

fn parsed(input: &str) -> (String, Value) {
    let parsed = parse(input).unwrap_or_else(|error| panic!("{input:?} refused: {error}"));
    (parsed.text, Value::Array(parsed.entities))
}

#[test]
fn nested_tags_become_entities_sorted_by_offset() {
    let (text, entities) = parsed("<b>bold <i>both</i></b> <a href=\"https://x.test/?a=1&amp;b=2\">link</a>");
    assert_eq!(text, "bold both link");
    assert_eq!(
        entities,
        json!([
            {"type": "bold", "offset": 0, "length": 9},
            {"type": "italic", "offset": 5, "length": 4},
            {"type": "text_link", "offset": 10, "length": 4, "url": "https://x.test/?a=1&b=2"},
        ])
    );
}

#[test]
fn every_supported_tag_maps_to_its_entity() {
    let cases = [
        ("<strong>x</strong>", json!({"type": "bold", "offset": 0, "length": 1})),
        ("<em>x</em>", json!({"type": "italic", "offset": 0, "length": 1})),
        ("<u>x</u>", json!({"type": "underline", "offset": 0, "length": 1})),
        ("<ins>x</ins>", json!({"type": "underline", "offset": 0, "length": 1})),
        ("<s>x</s>", json!({"type": "strikethrough", "offset": 0, "length": 1})),
        (
            "<strike>x</strike>",
            json!({"type": "strikethrough", "offset": 0, "length": 1}),
        ),
        (
            "<del>x</del>",
            json!({"type": "strikethrough", "offset": 0, "length": 1}),
        ),
        (
            "<tg-spoiler>x</tg-spoiler>",
            json!({"type": "spoiler", "offset": 0, "length": 1}),
        ),
        (
            "<span class=\"tg-spoiler\">x</span>",
            json!({"type": "spoiler", "offset": 0, "length": 1}),
        ),
        ("<code>x</code>", json!({"type": "code", "offset": 0, "length": 1})),
        ("<pre>x</pre>", json!({"type": "pre", "offset": 0, "length": 1})),
        (
            "<pre><code class=\"language-rust\">x</code></pre>",
            json!({"type": "pre", "offset": 0, "length": 1, "language": "rust"}),
        ),
        (
            "<blockquote>x</blockquote>",
            json!({"type": "blockquote", "offset": 0, "length": 1}),
        ),
        (
            "<blockquote expandable>x</blockquote>",
            json!({"type": "expandable_blockquote", "offset": 0, "length": 1}),
        ),
        (
            "<tg-emoji emoji-id=\"5368324170671202286\">👍</tg-emoji>",
            json!({"type": "custom_emoji", "offset": 0, "length": 2, "custom_emoji_id": "5368324170671202286"}),
        ),
        ("<B>x</>", json!({"type": "bold", "offset": 0, "length": 1})),
    ];
    for (input, entity) in cases {
        assert_eq!(parsed(input).1, json!([entity]), "{input}");
    }
}

#[test]
fn entities_are_decoded_and_offsets_count_utf16_units() {
    let (text, entities) = parsed("😀 &lt;tag&gt; &quot;q&quot; &amp; &#65;&#x42; <b>é😀</b>");
    assert_eq!(text, "😀 <tag> \"q\" & AB é😀");
    assert_eq!(entities, json!([{"type": "bold", "offset": 18, "length": 3}]));
    assert_eq!(utf16_len("😀a"), 3);
}

#[test]
fn plain_text_and_bare_greater_than_pass_and_empty_tags_leave_no_entity() {
    assert_eq!(parsed("2 > 1").0, "2 > 1");
    assert_eq!(parsed("a<b></b>c"), ("ac".to_owned(), json!([])));
}

#[test]
fn malformed_html_is_refused_with_telegrams_wording() {
    let cases = [
        ("a<b", "Unclosed start tag at byte offset 1"),
        ("<think>hmm</think>", "Unsupported start tag \"think\" at byte offset 0"),
        ("x < y", "Unsupported start tag \"\" at byte offset 2"),
        ("<b>bold", "Can't find end tag corresponding to start tag \"b\""),
        (
            "<b><i>x</b></i>",
            "Unmatched end tag at byte offset 7, expected \"</i>\", found \"</b>\"",
        ),
        ("x</b>", "Unexpected end tag at byte offset 1"),
        ("<b>x</b", "Unclosed end tag at byte offset 4"),
        (
            "<span>x</span>",
            "Tag \"span\" must have class \"tg-spoiler\" at byte offset 0",
        ),
        ("<a href=\"x>y", "Unclosed start tag \"a\" at byte offset 0"),
        (
            "<a href>x</a>",
            "Expected equal sign in declaration of an attribute of the tag \"a\" at byte offset 0",
        ),
        (
            "AT&T",
            "Character \"&\" at byte offset 2 must start an HTML entity; escape it as \"&amp;\"",
        ),
        (
            "a &amp b",
            "Character \"&\" at byte offset 2 must start an HTML entity; escape it as \"&amp;\"",
        ),
        ("&nbsp;", "Unsupported HTML entity \"&nbsp;\" at byte offset 0"),
        ("&#0;", "Unsupported HTML entity \"&#0;\" at byte offset 0"),
        (
            "<a href=\"https://x.test/?a=1&b=2\">x</a>",
            "Character \"&\" at byte offset 28 must start an HTML entity; escape it as \"&amp;\"",
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(parse(input).map(|_| ()), Err(expected.to_owned()), "{input}");
    }
}
