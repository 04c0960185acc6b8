//! Markdown → Telegram HTML: one row per construct, then snapshots of whole replies.

use super::markdown_to_html;
use super::test_support::check_html;
use pretty_assertions::assert_eq;

/// (what, Markdown, expected HTML)
const CASES: &[(&str, &str, &str)] = &[
    // Inline styles.
    ("bold", "**b** and __b__", "<b>b</b> and <b>b</b>"),
    ("italic", "*i* and _i_", "<i>i</i> and <i>i</i>"),
    ("strike", "~~gone~~", "<s>gone</s>"),
    ("inline code", "`a < b`", "<code>a &lt; b</code>"),
    (
        "nested emphasis",
        "**bold *both* bold** *it **both***",
        "<b>bold <i>both</i> bold</b> <i>it <b>both</b></i>",
    ),
    ("bold inside bold is not doubled", "**a __b__ c**", "<b>a b c</b>"),
    ("bold italic", "***x***", "<i><b>x</b></i>"),
    ("strike around code", "~~`x`~~", "<s><code>x</code></s>"),
    // Escaping.
    ("think tag", "<think>", "&lt;think&gt;"),
    ("less than", "a<b", "a&lt;b"),
    ("ampersand", "Tom & Jerry &amp; co", "Tom &amp; Jerry &amp; co"),
    ("quotes stay in text", "say \"hi\"", "say \"hi\""),
    ("backslash escapes", "\\*not italic\\*", "*not italic*"),
    ("inline html is text", "x <b>bold</b> y", "x &lt;b&gt;bold&lt;/b&gt; y"),
    (
        "html block is text",
        "<div>\n*raw*\n</div>",
        "&lt;div&gt;\n*raw*\n&lt;/div&gt;",
    ),
    (
        "think block",
        "<think>\nreasoning\n</think>\n\nAnswer.",
        "&lt;think&gt;\nreasoning\n&lt;/think&gt;\n\nAnswer.",
    ),
    // Links and images.
    (
        "link",
        "[site](https://example.com/a?b=1&c=2)",
        "<a href=\"https://example.com/a?b=1&amp;c=2\">site</a>",
    ),
    (
        "quote in href",
        "[q](<https://x.org/\"a\">)",
        "<a href=\"https://x.org/&quot;a&quot;\">q</a>",
    ),
    ("tg link", "[me](tg://user?id=1)", "<a href=\"tg://user?id=1\">me</a>"),
    (
        "mailto link",
        "[mail](mailto:a@b.org)",
        "<a href=\"mailto:a@b.org\">mail</a>",
    ),
    (
        "autolink",
        "<https://a.org>",
        "<a href=\"https://a.org\">https://a.org</a>",
    ),
    ("email autolink", "<a@b.org>", "<a href=\"mailto:a@b.org\">a@b.org</a>"),
    ("javascript link is text", "[x](javascript:alert(1))", "x"),
    ("relative link is text", "[notes](./notes.md)", "notes"),
    (
        "empty link text shows the url",
        "[](https://a.org)",
        "<a href=\"https://a.org\">https://a.org</a>",
    ),
    (
        "formatted link text",
        "[**b** `c`](https://a.org)",
        "<a href=\"https://a.org\"><b>b</b> c</a>",
    ),
    (
        "reference link",
        "see [docs][d]\n\n[d]: https://d.org",
        "see <a href=\"https://d.org\">docs</a>",
    ),
    (
        "image",
        "![a cat](https://c.org/cat.png)",
        "<a href=\"https://c.org/cat.png\">a cat</a>",
    ),
    (
        "image without alt",
        "![](https://c.org/c.png)",
        "<a href=\"https://c.org/c.png\">https://c.org/c.png</a>",
    ),
    ("local image", "![chart](out/chart.png)", "chart"),
    ("local image without alt", "![](out/chart.png)", "out/chart.png"),
    (
        "image in a link",
        "[![logo](https://i.org/l.png)](https://a.org)",
        "<a href=\"https://a.org\">logo</a>",
    ),
    // Code blocks.
    (
        "fenced code with language",
        "```rust\nif a < b && c > d {}\n```",
        "<pre><code class=\"language-rust\">if a &lt; b &amp;&amp; c &gt; d {}</code></pre>",
    ),
    (
        "fenced code without language",
        "```\n<b>x</b>\n```",
        "<pre><code>&lt;b&gt;x&lt;/b&gt;</code></pre>",
    ),
    (
        "info string beyond the language",
        "```python title=\"x\"\nprint(1)\n```",
        "<pre><code class=\"language-python\">print(1)</code></pre>",
    ),
    (
        "unsafe language characters",
        "```c\"><script>\nx\n```",
        "<pre><code class=\"language-cscript\">x</code></pre>",
    ),
    (
        "indented code",
        "para\n\n    let x = 1;\n    x < 2",
        "para\n\n<pre><code>let x = 1;\nx &lt; 2</code></pre>",
    ),
    (
        "code keeps inner blank lines, drops trailing ones",
        "```\na\n\n  b\n\n\n```",
        "<pre><code>a\n\n  b</code></pre>",
    ),
    ("empty code block", "```\n```\n\ntext", "text"),
    // Block quotes.
    ("quote", "> wise\n> words", "<blockquote>wise\nwords</blockquote>"),
    (
        "quote with paragraphs",
        "> one\n>\n> two",
        "<blockquote>one\n\ntwo</blockquote>",
    ),
    (
        "nested quote is flattened",
        "> outer\n> > inner",
        "<blockquote>outer\n\ninner</blockquote>",
    ),
    ("empty quote", ">\n\ntext", "text"),
    // Headings.
    ("heading", "# Title\n\nBody", "<b>Title</b>\n\nBody"),
    ("setext heading", "Title\n=====", "<b>Title</b>"),
    ("heading with bold", "## A **b** c", "<b>A b c</b>"),
    ("empty heading", "#\n\ntext", "text"),
    // Lists.
    ("bullets", "- a\n- b\n* c", "• a\n• b\n\n• c"),
    ("numbers", "1. a\n2. b", "1. a\n2. b"),
    ("list start kept", "7. a\n8. b", "7. a\n8. b"),
    (
        "nested lists indented",
        "- a\n  - b\n    1. c\n- d",
        "• a\n  • b\n    1. c\n• d",
    ),
    (
        "continuation lines indented",
        "10. first\n    line two",
        "10. first\n    line two",
    ),
    ("loose list", "- a\n\n- b", "• a\n\n• b"),
    ("task list", "- [ ] todo\n- [x] done", "• ☐ todo\n• ☑ done"),
    ("empty item", "- \n- b", "•\n• b"),
    ("list then paragraph", "- a\n- b\n\nafter", "• a\n• b\n\nafter"),
    (
        "code in a list",
        "- run:\n\n  ```sh\n  ls\n  ```\n- done",
        "• run:\n\n<pre><code class=\"language-sh\">ls</code></pre>\n\n• done",
    ),
    // Tables.
    (
        "table",
        "| Name | Qty |\n|------|----:|\n| apple | 3 |\n| kiwi | 12 |",
        "<pre>Name  | Qty\n------+----\napple |   3\nkiwi  |  12</pre>",
    ),
    (
        "table with markup and escapes",
        "| a | b |\n|:-:|---|\n| **x** `<y>` | [l](https://l.org) |",
        "<pre>  a   | b\n------+--\nx &lt;y&gt; | l</pre>",
    ),
    // Other blocks.
    ("rule", "a\n\n---\n\nb", "a\n\n———\n\nb"),
    ("paragraphs", "one\n\n\n\ntwo", "one\n\ntwo"),
    ("soft break kept as a line break", "one\ntwo", "one\ntwo"),
    ("hard break", "one  \ntwo\\\nthree", "one\ntwo\nthree"),
    ("trailing spaces dropped", "a   \nb  ", "a\nb"),
    ("empty input", "", ""),
    ("blank input", "  \n\n ", ""),
];

#[test]
fn renders_each_construct() {
    for (what, md, expected) in CASES {
        assert_eq!(markdown_to_html(md), *expected, "{what}");
    }
}

#[test]
fn every_case_is_valid_telegram_html() {
    for (what, md, _) in CASES {
        let html = markdown_to_html(md);
        if let Err(problem) = check_html(&html) {
            panic!("{what}: {problem} in {html:?}");
        }
    }
}

#[test]
fn no_line_ends_in_whitespace_outside_code() {
    for (what, md, _) in CASES {
        let html = markdown_to_html(md);
        for line in html.lines() {
            if !line.contains("<pre>") {
                assert_eq!(line, line.trim_end(), "{what}: {html:?}");
            }
        }
        assert_eq!(html, html.trim(), "{what}");
    }
}

#[test]
fn wide_characters_align_in_tables() {
    let html = markdown_to_html("| k | v |\n|---|---|\n| 香蕉 | 1 |\n| ab | 2 |");
    assert_eq!(html, "<pre>k    | v\n-----+--\n香蕉 | 1\nab   | 2</pre>");
}

const KITCHEN_SINK: &str = r#"# Release notes for `v2`

Some **bold**, *italic*, ~~struck~~ and `code` with <angle> & "quotes".
A [link](https://example.com/?q=a&b=c) and a [local one](docs/x.md).

> **Note:** quoted
> > deeper
> - item in quote

1. First
2. Second
   - nested *one*
   - nested two
     ```bash
     echo "<hi>"
     ```
3. Third

- [x] shipped
- [ ] pending

| Feature | Status | Notes |
|:--------|:------:|------:|
| Tables  | ✅ | aligned |
| Emoji 🎉 | ok | wide |

---

```rust
fn main() {
    println!("a < b && c > d");
}
```

<details><summary>raw html</summary>hidden</details>

![diagram](https://example.com/d.png)
"#;

#[test]
fn kitchen_sink_snapshot() {
    let html = markdown_to_html(KITCHEN_SINK);
    if let Err(problem) = check_html(&html) {
        panic!("{problem}");
    }
    snapshot("kitchen_sink", &html);
}

#[test]
fn model_reply_snapshot() {
    let md = "Sure! Here's how:\n\n## Steps\n\n1. Install with `cargo add x`.\n2. Run:\n\n   ```sh\n   cargo run -- --flag <value>\n   ```\n\n3. Check the output — it should say **ok**.\n\nThat's it. Let me know if `x<y` fails.";
    snapshot("model_reply", &markdown_to_html(md));
}

/// A snapshot named without the crate and module path.
fn snapshot(name: &str, value: &str) {
    insta::with_settings!({ prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(name, value);
    });
}
