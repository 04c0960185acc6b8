//! Splitting HTML into chunks: one row per rule, then invariants over rendered replies.

use super::split::{cut, pieces, tokenize};
use super::test_support::{check_chunks, check_html, units};
use super::{markdown_to_html, split_html, utf16_len, visible_text};
use pretty_assertions::assert_eq;
use proptest::prelude::*;

/// (what, HTML, limit, expected chunks)
const CASES: &[(&str, &str, usize, &[&str])] = &[
    ("empty", "", 10, &[]),
    ("blank", " \n\n ", 10, &[]),
    ("only tags", "<b></b>", 10, &[]),
    ("fits", "<b>hello</b> world", 11, &["<b>hello</b> world"]),
    ("exactly the limit", "abcd", 4, &["abcd"]),
    ("anywhere when no break", "abcdefghij", 4, &["abcd", "efgh", "ij"]),
    ("space", "aaa bbb ccc", 9, &["aaa bbb ", "ccc"]),
    ("line break over space", "aa bb\ncc dd", 10, &["aa bb\n", "cc dd"]),
    (
        "paragraph break over line break",
        "aa\n\nbb\ncc dd",
        11,
        &["aa\n\n", "bb\ncc dd"],
    ),
    (
        "the latest break of the best rank",
        "a\n\nb\n\nc d e f",
        8,
        &["a\n\nb\n\n", "c d e f"],
    ),
    (
        "entities count as one character",
        "&lt;&lt;&lt;&lt;&amp;",
        2,
        &["&lt;&lt;", "&lt;&lt;", "&amp;"],
    ),
    ("numeric entities", "&#65;&#x42;C", 2, &["&#65;&#x42;", "C"]),
    ("surrogate pairs stay whole", "😀😀😀", 3, &["😀", "😀", "😀"]),
    ("surrogate pair at the limit", "ab😀c", 3, &["ab", "😀c"]),
    ("emoji sequence kept together", "ab👍🏽cd", 5, &["ab", "👍🏽c", "d"]),
    ("flag kept together", "a🇫🇷b", 4, &["a", "🇫🇷", "b"]),
    (
        "open tags closed and re-opened",
        "<b>aaaa <i>bbbb cccc</i></b>",
        6,
        &["<b>aaaa </b>", "<b><i>bbbb </i></b>", "<b><i>cccc</i></b>"],
    ),
    (
        "link attributes re-opened",
        "<a href=\"https://a.org/?x=&quot;1&quot;\">one two</a>",
        4,
        &[
            "<a href=\"https://a.org/?x=&quot;1&quot;\">one </a>",
            "<a href=\"https://a.org/?x=&quot;1&quot;\">two</a>",
        ],
    ),
    (
        "code block continues as a code block",
        "<pre><code class=\"language-rust\">let a;\nlet b;\nlet c;</code></pre>",
        14,
        &[
            "<pre><code class=\"language-rust\">let a;\nlet b;\n</code></pre>",
            "<pre><code class=\"language-rust\">let c;</code></pre>",
        ],
    ),
    (
        "a break before a code block beats one inside it",
        "intro\n\n<pre><code>a\n\nb\nc</code></pre>",
        12,
        &["intro\n\n", "<pre><code>a\n\nb\nc</code></pre>"],
    ),
    (
        "of equal ranks, the later break",
        "<pre><code>a\n\nb</code></pre>\nc d",
        7,
        &["<pre><code>a\n\nb</code></pre>\n", "c d"],
    ),
    (
        "end tags stay with their text",
        "<b>abc</b>\n\n<i>def</i>",
        5,
        &["<b>abc</b>\n\n", "<i>def</i>"],
    ),
    (
        "leading whitespace is not a chunk of its own",
        "\n\n\nabcdefgh",
        5,
        &["\n\n\nab", "cdefg", "h"],
    ),
    (
        "blank chunks are dropped",
        "<pre><code>a\n\n\n\n\n\nb</code></pre>",
        2,
        &["<pre><code>a\n</code></pre>", "<pre><code>\nb</code></pre>"],
    ),
    ("stray characters are text", "a < b & c > d", 8, &["a < b & ", "c > d"]),
    ("tiny limit still makes progress", "😀a", 1, &["😀", "a"]),
];

#[test]
fn splits_by_each_rule() {
    for (what, html, limit, expected) in CASES {
        assert_eq!(split_html(html, *limit), *expected, "{what}");
    }
}

#[test]
fn chunks_of_valid_html_are_valid() {
    for (what, html, limit, _) in CASES {
        if check_html(html).is_err() {
            continue;
        }
        let chunks = split_html(html, *limit);
        for chunk in &chunks {
            if let Err(problem) = check_html(chunk) {
                panic!("{what}: {problem} in {chunk:?}");
            }
        }
    }
}

#[test]
fn visible_text_decodes_and_strips() {
    assert_eq!(
        visible_text("<b>a &lt;b&gt;</b> &amp; <a href=\"x&quot;\">l</a>&#128512;"),
        "a <b> & l😀"
    );
    assert_eq!(utf16_len("a😀漢"), 4);
}

#[test]
fn long_rendered_reply_keeps_everything() {
    let md = super::chunks_tests::long_reply();
    let html = markdown_to_html(&md);
    let chunks = split_html(&html, 4000);
    assert!(chunks.len() >= 3, "{} chunks", chunks.len());
    let joined = check_chunks(&chunks, 4000);
    assert_eq!(joined, visible_text(&html));
}

/// Every piece between the cuts, blank or not: together exactly the whole visible text.
fn all_pieces_visible(html: &str, limit: usize) -> Vec<String> {
    let tokens = tokenize(html);
    let cuts = cut(html, &tokens, limit, 0, &mut |_, _| true);
    pieces(html, &tokens, &cuts)
        .into_iter()
        .map(|piece| piece.visible)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn split_rendered_markdown(md in super::chunks_tests::markdownish(), limit in 2usize..300) {
        let html = markdown_to_html(&md);
        let whole = match check_html(&html) {
            Ok(visible) => visible,
            Err(problem) => panic!("rendering is invalid ({problem}): {html:?}"),
        };
        let chunks = split_html(&html, limit);
        let joined = check_chunks(&chunks, limit.max(2));
        let squeeze = |s: &str| s.split_whitespace().collect::<String>();
        prop_assert_eq!(squeeze(&joined), squeeze(&whole));
        let pieces = all_pieces_visible(&html, limit);
        prop_assert_eq!(pieces.concat(), whole);
        for piece in &pieces {
            prop_assert!(units(piece) <= limit.max(2));
            prop_assert_eq!(utf16_len(piece), units(piece));
        }
    }
}
