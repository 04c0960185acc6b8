//! Markdown replies as chunks: limits, nothing lost, fallback sources.

use super::chunks::described_chunks;
use super::test_support::{check_chunks, check_html, is_subsequence, units};
use super::{CHUNK_LIMIT, Chunk, markdown_chunks, markdown_to_html, split_html, visible_text};
use pretty_assertions::assert_eq;
use proptest::prelude::*;

/// A reply of well over 10,000 characters: headings, paragraphs with links, emoji and CJK,
/// lists, quotes, tables, and one code block longer than a message.
pub(super) fn long_reply() -> String {
    let mut md = String::from("# Report\n\nHere is the analysis, with <think> tags, a<b comparisons & more.\n\n");
    let filler = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(3);
    for section in 1..=6 {
        md.push_str(&format!("## Section {section}\n\n"));
        for paragraph in 0..3 {
            md.push_str(&format!(
                "Paragraph {paragraph} of section {section}: **bold**, *italic*, `code`, a \
                 [link](https://example.com/{section}/{paragraph}?a=1&b=2), emoji 😀 and 漢字. \
                 {filler}\n\n"
            ));
        }
        md.push_str("- first item\n- second with `x < y`\n  - nested item\n  - another\n- third\n\n");
        md.push_str("1. one\n2. two\n3. three\n\n");
        if section == 3 {
            md.push_str("```rust\n");
            for line in 0..150 {
                md.push_str(&format!(
                    "let value_{line} = compute({line}) < limit && flag; // line {line}\n"
                ));
            }
            md.push_str("```\n\n");
        }
        md.push_str("> A quote with **bold** inside.\n\n");
        md.push_str("| Key | Value |\n|-----|------:|\n| alpha | 1 |\n| beta | 22 |\n\n");
    }
    md
}

fn sources(chunks: &[(Chunk, bool)]) -> String {
    chunks.iter().map(|(chunk, _)| chunk.source.as_str()).collect()
}

fn htmls(chunks: &[(Chunk, bool)]) -> Vec<String> {
    chunks.iter().map(|(chunk, _)| chunk.html.clone()).collect()
}

#[test]
fn long_reply_fits_and_keeps_everything() {
    let md = long_reply();
    assert!(md.chars().count() > 10_000, "{} characters", md.chars().count());
    let chunks = described_chunks(&md, CHUNK_LIMIT);
    assert!(chunks.len() >= 3, "{} chunks", chunks.len());
    let joined = check_chunks(&htmls(&chunks), CHUNK_LIMIT);
    assert_eq!(joined, visible_text(&markdown_to_html(&md)));
    for (index, (chunk, exact)) in chunks.iter().enumerate() {
        assert!(*exact, "chunk {index} fell back to its visible text");
        assert!(units(&chunk.source) <= CHUNK_LIMIT, "chunk {index} source too long");
    }
    assert!(is_subsequence(&md, &sources(&chunks)));
}

#[test]
fn long_code_block_continues_in_the_next_chunk() {
    let md = long_reply();
    let chunks = described_chunks(&md, CHUNK_LIMIT);
    let open = "<pre><code class=\"language-rust\">";
    let continued: Vec<usize> = (1..chunks.len())
        .filter(|&index| chunks[index].0.html.starts_with(open) && chunks[index - 1].0.html.ends_with("</code></pre>"))
        .collect();
    assert!(!continued.is_empty(), "the code block was not split");
    for index in continued {
        let (before, after) = (&chunks[index - 1].0, &chunks[index].0);
        assert!(before.html.ends_with("</code></pre>"), "{:?}", before.html);
        assert!(before.source.ends_with("\n```\n"), "{:?}", before.source);
        assert!(after.source.starts_with("```rust\n"), "{:?}", after.source);
        // Cut between lines of code, not inside one.
        let code = visible_text(&before.html);
        assert!(code.ends_with('\n'), "{code:?}");
    }
}

#[test]
fn sources_partition_a_reply_without_code() {
    let md = (0..80)
        .map(|n| format!("Paragraph {n} with **bold** and [a link](https://e.org/{n}) in it. It goes on for a while."))
        .collect::<Vec<_>>()
        .join("\n\n");
    let chunks = described_chunks(&md, 1000);
    assert!(chunks.len() > 4);
    check_chunks(&htmls(&chunks), 1000);
    assert_eq!(sources(&chunks), md);
    for (chunk, exact) in &chunks {
        assert!(*exact);
        assert!(units(&chunk.source) <= 1000);
        // Cut at paragraph breaks: each source is whole paragraphs.
        assert!(chunk.source.starts_with("Paragraph"), "{:?}", chunk.source);
    }
}

#[test]
fn emoji_at_the_boundary_is_not_broken() {
    let md = format!("{}😀😀 tail", "a".repeat(3999));
    let chunks = split_html(&markdown_to_html(&md), 4000);
    assert_eq!(chunks.len(), 2);
    assert_eq!(units(&visible_text(&chunks[0])), 3999);
    assert_eq!(chunks[1], "😀😀 tail");
}

#[test]
fn emoji_and_cjk_runs_split_on_characters() {
    for md in [
        "😀".repeat(3000),
        "漢字".repeat(3000),
        format!("b{}", "👍🏽".repeat(1500)),
    ] {
        let chunks = described_chunks(&md, CHUNK_LIMIT);
        let joined = check_chunks(&htmls(&chunks), CHUNK_LIMIT);
        assert_eq!(joined, md);
        for (chunk, exact) in &chunks {
            assert!(units(&chunk.source) <= CHUNK_LIMIT);
            assert!(*exact);
        }
        assert_eq!(sources(&chunks), md);
    }
}

#[test]
fn huge_link_target_falls_back_to_visible_text() {
    let md = format!("[see](https://e.org/{}) and more", "x".repeat(5000));
    let chunks = described_chunks(&md, CHUNK_LIMIT);
    assert_eq!(chunks.len(), 1);
    let (chunk, exact) = &chunks[0];
    assert!(!exact);
    assert_eq!(chunk.source, "see and more");
}

#[test]
fn short_replies() {
    assert_eq!(markdown_chunks(""), vec![]);
    assert_eq!(markdown_chunks(" \n\n"), vec![]);
    assert_eq!(
        markdown_chunks("**hi** <think>"),
        vec![Chunk {
            html: "<b>hi</b> &lt;think&gt;".into(),
            source: "**hi** <think>".into(),
        }]
    );
}

#[test]
fn small_limits_snapshot() {
    let md = "# Plan\n\n1. Read `config.toml`\n2. Fix the *bug* in a<b\n\n```py\nfor i in range(3):\n    print(i)\n```\n\nDone.";
    let rendered: Vec<String> = super::markdown_chunks_with_limit(md, 60)
        .into_iter()
        .map(|chunk| format!("{}\n--- source ---\n{}", chunk.html, chunk.source))
        .collect();
    insta::with_settings!({ prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("small_limit_chunks", rendered.join("\n=== next ===\n"));
    });
}

/// Markdown-ish text: words and the syntax the renderer and splitter have to survive.
pub(super) fn markdownish() -> impl Strategy<Value = String> {
    const PIECES: &[&str] = &[
        " ",
        " ",
        "\n",
        "\n\n",
        "**",
        "*",
        "_",
        "~~",
        "`",
        "```rust\n",
        "```\n",
        "\n```\n",
        "- ",
        "1. ",
        "  - ",
        "> ",
        "# ",
        "<think>",
        "a<b",
        "&",
        "&amp;",
        "\"",
        "😀",
        "👨‍👩‍👧",
        "漢字",
        "[x](https://e.org/?a=1&b=\"2\")",
        "![i](https://e.org/i.png)",
        "<https://e.org>",
        "| a | b |\n|---|:-:|\n| 1 | 2 |\n",
        "---\n",
        "    ",
        "\t",
        "\\",
        "<b>",
        "</b>",
        "[ ] ",
        "> ```\n",
        "\n> ",
        "1) ",
        "+ ",
        "***",
        "<!-- c -->",
        "&#128512;",
        "\\*",
        "|",
        "[r]: https://r.org\n",
        "[r]",
        "~~~\n",
        "<pre>",
        "\r\n",
        "\u{301}",
        "\u{200D}",
    ];
    let piece = prop_oneof![
        3 => "[a-zA-Z0-9]{1,10}",
        2 => proptest::sample::select(PIECES).prop_map(str::to_owned),
    ];
    proptest::collection::vec(piece, 0..150).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn chunks_hold_their_invariants(md in markdownish(), limit in 20usize..400) {
        let whole = match check_html(&markdown_to_html(&md)) {
            Ok(visible) => visible,
            Err(problem) => panic!("rendering is invalid: {problem}"),
        };
        let chunks = described_chunks(&md, limit);
        let joined = check_chunks(&htmls(&chunks), limit);
        let squeeze = |s: &str| s.split_whitespace().collect::<String>();
        prop_assert_eq!(squeeze(&joined), squeeze(&whole));
        for (chunk, _) in &chunks {
            prop_assert!(units(&chunk.source) <= limit);
            prop_assert!(!chunk.source.trim().is_empty());
        }
        if chunks.is_empty() {
            prop_assert!(whole.trim().is_empty());
        } else if chunks.iter().all(|(_, exact)| *exact) {
            prop_assert!(is_subsequence(&md, &sources(&chunks)));
        }
    }
}
