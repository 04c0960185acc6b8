//! Searching a chat's index: BM25-ranked rows, each with its snippet read back from its session
//! file (the index keeps no text).

use crate::error::Result;
use crate::extract::said;
use crate::query::{Query, Terms};
use crate::rank::{Row, ranked};
use crate::store::{ChatKey, Recall};
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};
use volcanic_abstractions::sessions::SessionEntry;

/// Words of context a snippet keeps before its first matched word.
const BEFORE: usize = 10;
/// Words a snippet keeps in all.
const WORDS: usize = 36;

/// One hit of a search.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Hit {
    /// When it was said, epoch ms.
    pub at_ms: i64,
    /// The session's id.
    pub session: String,
    /// The entry's id in it.
    pub entry: String,
    /// Who said it (see [`crate::extract::Said::who`]).
    pub who: String,
    /// Up to 36 words around the first match, matched words marked `**word**`, `…` where cut.
    pub snippet: String,
}

/// Where one search's time went (`Recall::search_timed`): logged by the tool, split by the
/// benchmark (docs/benchmarks.md "Recall").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SearchTimes {
    /// The chat's lock and its index's connection (kept open, or opened).
    pub open: Duration,
    /// The catch-up: the session files listed and compared with what is indexed, new lines
    /// indexed.
    pub catch_up: Duration,
    /// The ranking (one FTS5 lookup per word) and the best rows' places.
    pub query: Duration,
    /// The hits' snippets read back from their session files.
    pub snippets: Duration,
}

impl Recall {
    /// The best hits for `query` in `chat`'s sessions, best first (entries with any of the
    /// words, ranked as `rank.rs` says), after catching the index up; `query.skip` left out. Errors: the index cannot
    /// be made or read even after a rebuild, or the session folder cannot be read.
    pub fn search(&self, chat: &ChatKey, query: &Query) -> Result<Vec<Hit>> {
        self.search_timed(chat, query).map(|(hits, _)| hits)
    }

    /// [`Recall::search`], with where its time went (of the last attempt, when an unreadable
    /// index was set aside and rebuilt).
    pub fn search_timed(&self, chat: &ChatKey, query: &Query) -> Result<(Vec<Hit>, SearchTimes)> {
        let dir = self.chat_sessions(chat);
        let mut lap = Instant::now();
        let mut split = move || {
            let now = Instant::now();
            now - std::mem::replace(&mut lap, now)
        };
        self.with_index(chat, |index| {
            let mut times = SearchTimes {
                open: split(),
                ..SearchTimes::default()
            };
            self.catch_up_in(index, chat)?;
            times.catch_up = split();
            let skipped = |r: &Row| {
                query
                    .skip
                    .as_ref()
                    .is_some_and(|(session, entries)| r.session == *session && entries.contains(&r.entry))
            };
            let extra = query.skip.as_ref().map_or(0, |(_, e)| e.len());
            let rows = ranked(&index.conn, query, query.limit + extra)?;
            times.query = split();
            // Each session file opened once: a search's hits are mostly in a few of them.
            let mut files: HashMap<String, Option<File>> = HashMap::new();
            let hits = rows
                .into_iter()
                .filter(|r| !skipped(r))
                .take(query.limit)
                .map(|r| Hit {
                    snippet: {
                        let file = files
                            .entry(r.path.clone())
                            .or_insert_with(|| File::open(dir.join(&r.path)).ok());
                        read_snippet(file.as_ref(), r.off, r.len, &query.terms)
                    },
                    at_ms: r.at_ms,
                    session: r.session,
                    entry: r.entry,
                    who: r.who,
                })
                .collect();
            times.snippets = split();
            Ok((hits, times))
        })
    }
}

/// The snippet of the entry at `off` (`len` bytes) of `file`; a note when the file (`None`: it
/// could not be opened) no longer has it (a session file deleted by hand).
fn read_snippet(file: Option<&File>, off: u64, len: usize, terms: &Terms) -> String {
    let mut line = vec![0; len];
    let read = file.is_some_and(|f| f.read_exact_at(&mut line, off).is_ok());
    let text = read
        .then(|| SessionEntry::from_json(&line).ok())
        .flatten()
        .as_ref()
        .and_then(said)
        .map(|s| s.text);
    match text {
        Some(t) => snippet(&t, terms),
        None => "(its session file no longer has this entry)".to_owned(),
    }
}

/// Up to [`WORDS`] words of `text` around its first word matching `terms`, matched words marked
/// `**word**`, whitespace runs as one space, `…` where cut.
pub(crate) fn snippet(text: &str, terms: &Terms) -> String {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, ch) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (ch.is_alphanumeric() && i < text.len(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                spans.push((s, i));
                start = None;
            }
            (true, Some(_)) | (false, None) => {}
        }
    }
    let hit = |&(s, e): &(usize, usize)| terms.matches(&text[s..e].to_lowercase());
    let first = spans.iter().position(hit).unwrap_or(0);
    let from = first.saturating_sub(BEFORE);
    let to = (from + WORDS).min(spans.len());
    let Some((&(head, _), &(_, tail))) = spans.get(from).zip(spans.get(to.saturating_sub(1))) else {
        return String::new();
    };
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    let mut at = head;
    for span in &spans[from..to] {
        out.push_str(&text[at..span.0]);
        if hit(span) {
            out.push_str("**");
            out.push_str(&text[span.0..span.1]);
            out.push_str("**");
        } else {
            out.push_str(&text[span.0..span.1]);
        }
        at = span.1;
    }
    debug_assert_eq!(at, tail);
    if to < spans.len() {
        out.push('…');
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn terms(q: &str) -> Terms {
        match Terms::parse(q) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_snippet_marks_matched_words_in_any_case() {
        let s = snippet("We chose the Zebra plan.\nDeploy on Friday.", &terms("zebra deploy"));
        assert_eq!(s, "We chose the **Zebra** plan. **Deploy** on Friday");
    }

    #[test]
    fn a_long_text_is_cut_around_the_first_match() {
        let words: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
        let s = snippet(&words.join(" "), &terms("w50"));
        let expected = format!(
            "…{}…",
            (40..76)
                .map(|i| if i == 50 { "**w50**".to_owned() } else { format!("w{i}") })
                .collect::<Vec<_>>()
                .join(" ")
        );
        assert_eq!(s, expected);
    }
}
