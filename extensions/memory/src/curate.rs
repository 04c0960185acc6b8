//! Automatic curation: when a session's messages are left behind (compaction, `/new`), one short
//! model call reads them with the current memory and proposes changes, which are applied with the
//! tool's rules and summed up in one line ("Remembered: …").
//!
//! The call goes through the session's model catalog ([`ModelCatalog::complete`]), the path every
//! nested model call takes, so whatever the host checks before a provider request (allowances,
//! when they come) applies to curation as well.

use crate::entry::Scope;
use crate::store::{Memories, View};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::ModelCatalog;
use volcanic_abstractions::messages::{Message, StopReason};
use volcanic_abstractions::model::{Model, ThinkingLevel};
use volcanic_abstractions::provider::{ProviderContext, StreamOptions};

/// At most this many characters of the transcript go into the call (the most recent ones).
pub const TRANSCRIPT_CHARS: usize = 24_000;

/// Fewer user prompts than this left behind are not curated: a greeting or a single question
/// holds nothing the model did not keep with its tool already, and is not worth a model call.
pub const MIN_PROMPTS: usize = 2;

/// The answer's length cap, in tokens: a handful of short facts.
pub const MAX_TOKENS: u64 = 800;

/// The curation call's instructions.
pub const SYSTEM_PROMPT: &str = "You curate the long-term memory of a chat assistant. You get the \
memory's entries and a conversation that is being left behind. Propose only lasting facts worth \
keeping for later sessions: the user's preferences, people, standing decisions. Never keep \
passing details, secrets or credentials. Each fact is one short sentence. Answer with JSON only: \
{\"add\": [\"fact\", ...], \"replace\": [{\"id\": \"3\", \"text\": \"fact\"}], \"remove\": [\"5\"]}. \
Use replace to correct or merge entries, remove for outdated ones. Answer {} when nothing is worth \
keeping.";

/// What the model proposed.
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Proposal {
    /// New facts.
    pub add: Vec<String>,
    /// Rewritten entries.
    pub replace: Vec<Rewrite>,
    /// Entries to forget, by id.
    pub remove: Vec<String>,
}

/// One rewritten entry.
#[derive(Debug, Default, Deserialize, PartialEq)]
pub struct Rewrite {
    /// Its id.
    pub id: String,
    /// Its new text.
    pub text: String,
}

/// The curation request for `messages` with the memory `view`.
pub fn request(view: &View, max_chars: usize, messages: &[Message]) -> ProviderContext {
    let memory = crate::prompt::block(view, max_chars);
    let text = format!(
        "Current memory:\n{memory}\n\nConversation being left behind:\n{}",
        transcript(messages)
    );
    ProviderContext {
        system_prompt: SYSTEM_PROMPT.to_owned(),
        messages: vec![Message::user_text(text, chrono::Utc::now().timestamp_millis())],
        tools: Vec::new(),
    }
}

/// The conversation as `user:` / `assistant:` lines, its last [`TRANSCRIPT_CHARS`] characters.
pub fn transcript(messages: &[Message]) -> String {
    let mut lines = Vec::new();
    for m in messages {
        let line = match m {
            Message::User(u) => format!("user: {}", u.content.text()),
            Message::Assistant(a) => format!("assistant: {}", a.text()),
            Message::CompactionSummary(s) | Message::BranchSummary(s) => format!("earlier (summary): {}", s.summary),
            Message::ToolResult(_) | Message::Custom(_) | Message::BashExecution(_) => continue,
        };
        if !line.trim_end().ends_with(':') {
            lines.push(line);
        }
    }
    let all = lines.join("\n");
    let skip = all.chars().count().saturating_sub(TRANSCRIPT_CHARS);
    all.chars().skip(skip).collect()
}

/// The proposal in `answer`: the JSON object in it (the model may wrap it in prose or a code
/// fence). `None` when there is none that parses.
pub fn parse(answer: &str) -> Option<Proposal> {
    let start = answer.find('{')?;
    let end = answer.rfind('}')?;
    serde_json::from_str(answer.get(start..=end)?).ok()
}

/// Applies `proposal` to the memory `key` with the tool's rules (a refused change is skipped and
/// logged); returns the line to show, `None` when nothing changed.
pub fn apply(memories: &Memories, key: &str, session: &str, proposal: &Proposal) -> Option<String> {
    let mut kept = Vec::new();
    let mut forgot = 0;
    for r in &proposal.replace {
        match r
            .id
            .trim()
            .parse()
            .map(|id| memories.replace(key, id, &r.text, session))
        {
            Ok(Ok(e)) => kept.push(e.text),
            Ok(Err(e)) => tracing::info!(key, id = %r.id, "curation: replace refused: {e}"),
            Err(_) => tracing::info!(key, id = %r.id, "curation: not an entry id"),
        }
    }
    for id in &proposal.remove {
        match id.trim().parse().map(|id| memories.remove(key, Scope::Chat, id)) {
            Ok(Ok(_)) => forgot += 1,
            Ok(Err(e)) => tracing::info!(key, %id, "curation: remove refused: {e}"),
            Err(_) => tracing::info!(key, %id, "curation: not an entry id"),
        }
    }
    for text in &proposal.add {
        match memories.add(key, text, Scope::Chat, session) {
            Ok(e) => kept.push(e.text),
            Err(e) => tracing::info!(key, "curation: add refused: {e}"),
        }
    }
    let mut line = match kept.is_empty() {
        true if forgot == 0 => return None,
        true => String::from("Memory tidied"),
        false => format!("Remembered: {}", kept.join("; ")),
    };
    if forgot > 0 {
        line.push_str(&format!(" (forgot {forgot} outdated)"));
    }
    Some(line)
}

/// The model call curation makes: the session's catalog, model and id.
#[derive(Clone, Copy)]
pub struct Call<'a> {
    /// The session's model catalog.
    pub catalog: &'a dyn ModelCatalog,
    /// The session's model.
    pub model: &'a Model,
    /// The session's id (entries learned now record it).
    pub session: &'a str,
}

/// Runs one curation of `messages` for the memory `key` whose session sees `view`; returns the
/// line to show. A failed call, an answer without a proposal or an empty proposal change nothing.
pub async fn run(
    memories: &Memories,
    key: &str,
    view: View,
    call: Call<'_>,
    messages: &[Message],
    cancel: CancellationToken,
) -> Option<String> {
    let prompts = messages.iter().filter(|m| matches!(m, Message::User(_))).count();
    if prompts < MIN_PROMPTS {
        return None;
    }
    let options = StreamOptions {
        thinking_level: ThinkingLevel::Off,
        max_tokens: Some(MAX_TOKENS),
        cancel,
        session_id: Some(call.session.to_owned()),
        ..Default::default()
    };
    let request = request(&view, memories.max_chars(), messages);
    let reply = call.catalog.complete(call.model, request, options).await;
    match reply.stop_reason {
        StopReason::Stop | StopReason::Length | StopReason::ToolUse => {}
        StopReason::Error | StopReason::Aborted => {
            tracing::warn!(key, "curation call failed: {}", reply.error_message.unwrap_or_default());
            return None;
        }
    }
    apply(memories, key, call.session, &parse(&reply.text())?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::store::tests::MapFiles;
    use pretty_assertions::assert_eq;
    use std::sync::Arc;

    #[test]
    fn proposals_are_found_in_prose_and_fences() {
        let p = parse("Sure:\n```json\n{\"add\": [\"Likes tea\"], \"remove\": [\"2\"]}\n```").unwrap();
        assert_eq!(p.add, vec!["Likes tea".to_owned()]);
        assert_eq!(p.remove, vec!["2".to_owned()]);
        assert_eq!(parse("{}"), Some(Proposal::default()));
        assert_eq!(parse("nothing to keep"), None);
    }

    #[test]
    fn applying_follows_the_tool_rules_and_sums_up_in_one_line() {
        let m = Memories::new(Arc::new(MapFiles::default()), 30);
        m.add("7", "Lives in Porto", Scope::Chat, "s0").unwrap();
        m.add("7", "Old fact", Scope::Chat, "s0").unwrap();
        let p = Proposal {
            add: vec!["Likes tea".into(), "This one is far too long to fit".into()],
            replace: vec![Rewrite {
                id: "1".into(),
                text: "Lives in Lisbon".into(),
            }],
            remove: vec!["2".into(), "g1".into()],
        };
        assert_eq!(
            apply(&m, "7", "s1", &p).as_deref(),
            Some("Remembered: Lives in Lisbon; Likes tea (forgot 1 outdated)")
        );
        assert_eq!(m.view("7").unwrap().used, "Lives in Lisbon".len() + "Likes tea".len());
        assert_eq!(apply(&m, "7", "s1", &Proposal::default()), None);
    }

    #[test]
    fn the_transcript_keeps_the_conversation_and_its_end() {
        let messages = vec![
            Message::user_text("I am Ada", 0),
            Message::user_text("x".repeat(TRANSCRIPT_CHARS), 1),
        ];
        let t = transcript(&messages);
        assert_eq!(t.chars().count(), TRANSCRIPT_CHARS);
        assert!(t.ends_with('x'));
        assert!(transcript(&messages[..1]).starts_with("user: I am Ada"));
    }
}
