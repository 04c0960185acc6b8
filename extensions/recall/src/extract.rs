//! What one session entry gives the index: who said what, and when.

use chrono::DateTime;
use volcanic_abstractions::messages::{AssistantContent, Message, join_text};
use volcanic_abstractions::sessions::{EntryKind, SessionEntry};

/// The searchable part of one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    /// The entry's id (8 hex characters in pi's files).
    pub entry: String,
    /// When, epoch milliseconds (the entry's `timestamp`; 0 when unreadable).
    pub at_ms: i64,
    /// Who said it: `user` (`user Ann Lee` when the prompt's envelope names its sender, as in
    /// groups), `assistant`, `tool <name>`, `bash`, `extension <type>`, `branch summary`.
    pub who: String,
    /// Its words.
    pub text: String,
}

/// The tool's name, whose results are not indexed.
pub const RECALL: &str = "recall";

/// The searchable part of `entry`; `None` for an entry without words for a reader (settings
/// changes, labels, extension state, compaction summaries, which only repeat what they replace,
/// and the `recall` tool's results, which repeat what was found).
pub fn said(entry: &SessionEntry) -> Option<Said> {
    let (who, text) = match &entry.kind {
        EntryKind::Message(m) => message(m)?,
        EntryKind::CustomMessage {
            custom_type, content, ..
        } => (format!("extension {custom_type}"), content.text()),
        EntryKind::BranchSummary { summary, .. } => ("branch summary".to_owned(), summary.clone()),
        EntryKind::ModelChange { .. }
        | EntryKind::ThinkingLevelChange { .. }
        | EntryKind::Compaction(_)
        | EntryKind::Custom { .. }
        | EntryKind::Label { .. }
        | EntryKind::SessionInfo { .. }
        | EntryKind::Unknown { .. } => return None,
    };
    if text.trim().is_empty() {
        return None;
    }
    Some(Said {
        entry: entry.id.clone(),
        at_ms: DateTime::parse_from_rfc3339(&entry.timestamp).map_or(0, |t| t.timestamp_millis()),
        who,
        text,
    })
}

fn message(m: &Message) -> Option<(String, String)> {
    Some(match m {
        Message::User(u) => {
            let text = u.content.text();
            let who = sender(&text).map_or_else(|| "user".to_owned(), |name| format!("user {name}"));
            // The envelope's time and sender are the row's `at` and `who`; its words are not said.
            let said = match envelope(&text) {
                Some(_) => text.split_once('\n').map_or("", |(_, rest)| rest).to_owned(),
                None => text,
            };
            (who, said)
        }
        Message::Assistant(a) => {
            let mut text = String::new();
            for c in &a.content {
                match c {
                    AssistantContent::Text(t) => {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(&t.text);
                    }
                    // Thinking is the model's scratch, tool calls are arguments: neither was said.
                    AssistantContent::Thinking(_)
                    | AssistantContent::ToolCall(_)
                    | AssistantContent::ProviderToolCall(_) => {}
                }
            }
            ("assistant".to_owned(), text)
        }
        // Recall's own answers only repeat what is indexed already.
        Message::ToolResult(t) if t.tool_name == RECALL => return None,
        Message::ToolResult(t) => (format!("tool {}", t.tool_name), join_text(&t.content)),
        Message::Custom(c) => (format!("extension {}", c.custom_type), c.content.text()),
        Message::BashExecution(b) => ("bash".to_owned(), format!("{}\n{}", b.command, b.output)),
        Message::BranchSummary(s) => ("branch summary".to_owned(), s.summary.clone()),
        Message::CompactionSummary(_) => return None,
    })
}

/// The sender the Telegram host's prompt envelope names: its first line is
/// `[Sun 2026-12-06 14:03] Ann Lee` in groups (optionally followed by ` (replying to)`), just
/// `[Sun 2026-12-06 14:03]` in private chats (`bot/src/telegram/outbound/texts.rs`, `envelope`).
fn sender(text: &str) -> Option<&str> {
    let after = envelope(text)?.strip_prefix(' ')?;
    let name = after.strip_suffix(" (replying to)").unwrap_or(after).trim();
    (!name.is_empty() && name != "(replying to)").then_some(name)
}

/// What follows the time of an envelope's first line (`[Sun 2026-12-06 14:03]`: a weekday, a
/// date and a time); `None` when the text does not open with an envelope.
fn envelope(text: &str) -> Option<&str> {
    let first = text.lines().next()?;
    let (stamp, after) = first.strip_prefix('[')?.split_once(']')?;
    let looks_like_time =
        stamp.len() <= 24 && stamp.chars().any(|c| c == ':') && stamp.chars().any(|c| c.is_ascii_digit());
    looks_like_time.then_some(after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn entry(line: &str) -> SessionEntry {
        match SessionEntry::from_json(line.as_bytes()) {
            Ok(e) => e,
            Err(e) => panic!("bad test line {line}: {e}"),
        }
    }

    #[test]
    fn a_group_prompt_names_its_sender() {
        let e = entry(
            r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-15T09:00:00.000Z","message":{"role":"user","content":"[Thu 2026-01-15 10:00] Ann Lee (replying to)\n> hi\nthe zebra plan","timestamp":1}}"#,
        );
        let s = said(&e).map(|s| (s.who, s.at_ms, s.text));
        assert_eq!(
            s,
            Some((
                "user Ann Lee".to_owned(),
                1_768_467_600_000,
                "> hi\nthe zebra plan".to_owned()
            ))
        );
    }

    #[test]
    fn a_private_prompt_is_the_user() {
        let e = entry(
            r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-15T09:00:00.000Z","message":{"role":"user","content":"[Thu 2026-01-15 10:00]\nhello","timestamp":1}}"#,
        );
        assert_eq!(said(&e).map(|s| s.who), Some("user".to_owned()));
    }

    #[test]
    fn thinking_and_tool_calls_are_not_said_and_compactions_are_skipped() {
        let e = entry(
            r#"{"type":"message","id":"b2","parentId":"a1","timestamp":"2026-01-15T09:00:01.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"secret plan"},{"type":"text","text":"Done."},{"type":"toolCall","id":"c","name":"bash","arguments":{"command":"ls"}}],"api":"anthropic-messages","provider":"anthropic","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":2}}"#,
        );
        assert_eq!(said(&e).map(|s| s.text), Some("Done.".to_owned()));
        let c = entry(
            r#"{"type":"compaction","id":"c3","parentId":"b2","timestamp":"2026-01-15T09:00:02.000Z","summary":"zebra","firstKeptEntryId":"b2","tokensBefore":9}"#,
        );
        assert_eq!(said(&c), None);
    }

    #[test]
    fn tool_results_carry_the_tool_name() {
        let e = entry(
            r#"{"type":"message","id":"d4","parentId":"b2","timestamp":"2026-01-15T09:00:03.000Z","message":{"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{"type":"text","text":"file.txt"}],"isError":false,"timestamp":3}}"#,
        );
        assert_eq!(
            said(&e).map(|s| (s.who, s.text)),
            Some(("tool bash".to_owned(), "file.txt".to_owned()))
        );
    }
}
