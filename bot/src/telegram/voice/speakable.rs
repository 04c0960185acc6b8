//! Which answers are spoken, and what of them: the words of the Markdown, without its marks.
//! Code blocks and tables stay text only (read aloud they are noise, and a listener cannot copy
//! them), as do answers longer than `[voice] tts_max_chars` (a long voice message is skipped,
//! not heard) and answers with nothing to say.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// Why an answer stays text only; `Display` says it for the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextOnly {
    /// It holds a code block.
    #[error("it holds a code block")]
    Code,
    /// It holds a table.
    #[error("it holds a table")]
    Table,
    /// Its words are `chars` characters, over `max` (`[voice] tts_max_chars`).
    #[error("{chars} characters, over [voice] tts_max_chars ({max})")]
    TooLong {
        /// Characters of the words to speak.
        chars: usize,
        /// `[voice] tts_max_chars`.
        max: usize,
    },
    /// No words in it.
    #[error("no words in it")]
    Empty,
}

/// The words of the Markdown answer `md` to speak (paragraphs, headings and list items on their
/// own lines, inline code read as text, links by their text), or why it stays text only.
pub fn spoken(md: &str, max_chars: usize) -> Result<String, TextOnly> {
    let mut out = String::new();
    for event in Parser::new_ext(md, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Start(Tag::CodeBlock(_)) => return Err(TextOnly::Code),
            Event::Start(Tag::Table(_)) => return Err(TextOnly::Table),
            Event::Text(t) | Event::Code(t) => out.push_str(&t),
            Event::SoftBreak => out.push(' '),
            Event::HardBreak
            | Event::Rule
            | Event::End(TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::Item | TagEnd::BlockQuote(_)) => {
                out.push('\n')
            }
            // Marks, HTML and the rest carry no words.
            _ => {}
        }
    }
    let lines: Vec<&str> = out.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let words = lines.join("\n");
    match words.chars().count() {
        0 => Err(TextOnly::Empty),
        chars if chars > max_chars => Err(TextOnly::TooLong { chars, max: max_chars }),
        _ => Ok(words),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_words_are_spoken_without_the_marks() {
        let md = "# Weather\n\nIt is **sunny** in [Lisbon](https://x.example), `21°C`.\nTake a hat.\n\n- one\n- two\n";
        assert_eq!(
            spoken(md, 1500),
            Ok("Weather\nIt is sunny in Lisbon, 21°C. Take a hat.\none\ntwo".to_owned())
        );
    }

    #[test]
    fn code_tables_long_and_empty_answers_stay_text() {
        assert_eq!(spoken("Run:\n\n```sh\nls -la\n```\n", 1500), Err(TextOnly::Code));
        assert_eq!(spoken("Run:\n\n    ls -la\n", 1500), Err(TextOnly::Code));
        assert_eq!(spoken("| a | b |\n|---|---|\n| 1 | 2 |\n", 1500), Err(TextOnly::Table));
        assert_eq!(
            spoken(&"word ".repeat(40), 100),
            Err(TextOnly::TooLong { chars: 199, max: 100 })
        );
        assert_eq!(spoken("  \n***\n", 100), Err(TextOnly::Empty));
    }
}
