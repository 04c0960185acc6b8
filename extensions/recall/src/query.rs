//! A search: its words (as FTS5 reads them), its time window and its size.

use crate::error::{RecallError, Result};

/// Hits answered when no limit is given.
pub const DEFAULT_LIMIT: usize = 10;
/// The most hits one search answers.
pub const MAX_LIMIT: usize = 50;

/// The words of a search, lower-cased, as the index's tokenizer (`unicode61`) splits text: runs
/// of letters and digits; a word written with a trailing `*` matches as a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terms(Vec<(String, bool)>);

impl Terms {
    /// Reads `query`. Errors: [`RecallError::BadQuery`] when it has no word.
    pub fn parse(query: &str) -> Result<Terms> {
        let mut terms: Vec<(String, bool)> = Vec::new();
        let mut word = String::new();
        for ch in query.chars() {
            if ch.is_alphanumeric() {
                word.extend(ch.to_lowercase());
                continue;
            }
            if !word.is_empty() {
                let prefix = ch == '*';
                let w = std::mem::take(&mut word);
                if !terms.iter().any(|(t, _)| *t == w) {
                    terms.push((w, prefix));
                }
            }
        }
        if !word.is_empty() && !terms.iter().any(|(t, _)| *t == word) {
            terms.push((word, false));
        }
        if terms.is_empty() {
            return Err(RecallError::BadQuery(format!(
                "the query {query:?} has no word to search for; give one or more words"
            )));
        }
        // More than a handful of words is a sentence, not a search: keep the first 16.
        terms.truncate(16);
        Ok(Terms(terms))
    }

    /// Each word as an FTS5 query of its own: quoted (no operator of the caller's reaches
    /// FTS5), a prefix word with its `*`.
    pub fn fts_each(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|(w, prefix)| format!("\"{w}\"{}", if *prefix { "*" } else { "" }))
            .collect()
    }

    /// Whether `word` (lower-cased) is one of the terms, or starts with a prefix term.
    pub fn matches(&self, word: &str) -> bool {
        self.0.iter().any(|(t, prefix)| {
            if *prefix {
                word.starts_with(t.as_str())
            } else {
                word == t
            }
        })
    }
}

/// One search of a chat's index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// What to look for.
    pub terms: Terms,
    /// Entries at or after this instant, epoch ms.
    pub since_ms: Option<i64>,
    /// Entries before this instant, epoch ms.
    pub until_ms: Option<i64>,
    /// At most this many hits (1 to 50).
    pub limit: usize,
    /// Entries left out: the run being answered (its prompt holds the very words searched
    /// for), as `(session id, entry ids)`.
    pub skip: Option<(String, Vec<String>)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn operators_and_quotes_never_reach_fts5() {
        let t = Terms::parse(r#"Zebra" AND NEAR(x) deploy* zebra"#)
            .map(|t| t.fts_each())
            .ok();
        let each = [r#""zebra""#, r#""and""#, r#""near""#, r#""x""#, r#""deploy"*"#];
        assert_eq!(t, Some(each.map(str::to_owned).to_vec()));
    }

    #[test]
    fn a_query_without_words_is_refused_with_what_to_do() {
        let e = Terms::parse(" ?! ").err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("recall: the query \" ?! \" has no word to search for; give one or more words")
        );
    }

    #[test]
    fn prefix_terms_match_longer_words() {
        let t = Terms::parse("deploy* cat").ok();
        let m = |w: &str| t.as_ref().is_some_and(|t| t.matches(w));
        assert_eq!((m("deploying"), m("cat"), m("cats")), (true, true, false));
    }
}
