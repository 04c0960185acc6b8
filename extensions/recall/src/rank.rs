//! Ranking a chat's entries for a search: BM25 over which of the words each entry has.
//!
//! The index is contentless with `detail=column` (no text, no word positions or counts: half
//! the size), and for such a table FTS5's own `bm25()` scores every row 0: its per-row word
//! counts come from the text or the positions, and it has neither, so `ORDER BY rank` gave the
//! oldest matches first. Here each word is looked up on its own (FTS5 walks one list of rows
//! per word; no per-row function, no per-search statement of FTS5's own, no sort of every
//! match), and an entry scores the sum of the inverse document frequencies of the words it
//! has: BM25 with a word counted once per entry and no length normalisation (`b = 0`), with
//! the IDF that stays positive for common words (Lucene's `ln(1 + (N - n + 0.5) / (n + 0.5))`).
//! Equal scores: the later said first (when more are equal than the limit takes, the later
//! indexed are taken).

use crate::error::{RecallError, Result};
use crate::query::Query;
use rusqlite::{Connection, OptionalExtension};
use std::collections::HashMap;
use std::path::PathBuf;

/// A ranked row before its snippet is read.
pub(crate) struct Row {
    pub at_ms: i64,
    pub session: String,
    pub entry: String,
    pub who: String,
    pub path: String,
    pub off: u64,
    pub len: usize,
}

/// The entries with one word (its quoted FTS5 form).
const MATCHING: &str = "SELECT rowid FROM words WHERE words MATCH ?1";

/// Where an entry is, when and by whom.
const PLACE: &str = "SELECT s.at, f.session, s.entry, s.who, f.path, s.off, s.len
    FROM said s JOIN files f ON f.id = s.file WHERE s.id = ?1";

/// The best `limit` entries for `query` (in its window), best first. Errors: the index cannot
/// be read.
pub(crate) fn ranked(c: &Connection, query: &Query, limit: usize) -> Result<Vec<Row>> {
    let sql = |source| RecallError::Sqlite {
        path: c.path().map(PathBuf::from).unwrap_or_default(),
        source,
    };
    let mut best = scores(c, query).map_err(sql)?;
    // Only the best `limit` are sorted (a common word matches most of a chat); the rest only
    // when a window passed over some of them.
    let head = limit.min(best.len());
    if head < best.len() {
        best.select_nth_unstable_by(head, better);
    }
    let (top, rest) = best.split_at_mut(head);
    top.sort_unstable_by(better);
    let mut place = c.prepare_cached(PLACE).map_err(sql)?;
    let window = query.since_ms.unwrap_or(i64::MIN)..query.until_ms.unwrap_or(i64::MAX);
    let mut placed = |(id, score): (i64, f64)| -> Result<Option<(f64, Row)>> {
        let row = place.query_row([id], row).optional().map_err(sql)?;
        Ok(row.filter(|r| window.contains(&r.at_ms)).map(|r| (score, r)))
    };
    let mut out = Vec::with_capacity(limit);
    for &b in top.iter() {
        out.extend(placed(b)?);
    }
    if out.len() < limit {
        rest.sort_unstable_by(better);
        for &b in rest.iter() {
            if out.len() == limit {
                break;
            }
            out.extend(placed(b)?);
        }
    }
    out.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.at_ms.cmp(&a.1.at_ms)));
    Ok(out.into_iter().map(|(_, r)| r).collect())
}

/// Every entry with any of `query`'s words and its score, as (rowid, score).
fn scores(c: &Connection, query: &Query) -> rusqlite::Result<Vec<(i64, f64)>> {
    let entries: i64 = c
        .prepare_cached("SELECT count(*) FROM said")?
        .query_row([], |r| r.get(0))?;
    let mut score: HashMap<i64, f64> = HashMap::new();
    let mut matching = c.prepare_cached(MATCHING)?;
    for word in query.terms.fts_each() {
        let ids = matching
            .query_map([word], |r| r.get::<_, i64>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let idf = idf(entries, ids.len());
        for id in ids {
            *score.entry(id).or_default() += idf;
        }
    }
    Ok(score.into_iter().collect())
}

/// The better of two (rowid, score) first: the higher score, then the later indexed.
fn better(a: &(i64, f64), b: &(i64, f64)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(b.0.cmp(&a.0))
}

/// The inverse document frequency of a word found in `with` of `entries` entries.
fn idf(entries: i64, with: usize) -> f64 {
    let (n, with) = (entries.max(0) as f64, with as f64);
    (1.0 + (n - with + 0.5) / (with + 0.5)).ln()
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok(Row {
        at_ms: r.get(0)?,
        session: r.get(1)?,
        entry: r.get(2)?,
        who: r.get(3)?,
        path: r.get(4)?,
        off: r.get(5)?,
        len: r.get(6)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::Terms;
    use pretty_assertions::assert_eq;

    /// An index whose entries `e1`, `e2`, … have `texts`, said at 1, 2, … ms.
    fn index(dir: &tempfile::TempDir, texts: &[&str]) -> Connection {
        let c = crate::store::open(&dir.path().join("1.sqlite")).unwrap_or_else(|e| panic!("{e}"));
        let mut batch = "INSERT INTO files(id, path, session, indexed) VALUES (1, 'a.jsonl', 's', 0);".to_owned();
        for (i, text) in texts.iter().enumerate().map(|(i, t)| (i + 1, t)) {
            batch += &format!(
                "INSERT INTO said(id, file, off, len, at, entry, who) VALUES ({i}, 1, {i}, 1, {i}, 'e{i}', 'user');
                 INSERT INTO words(rowid, text) VALUES ({i}, '{text}');"
            );
        }
        c.execute_batch(&batch).unwrap_or_else(|e| panic!("{e}"));
        c
    }

    fn entries(c: &Connection, words: &str, window: (Option<i64>, Option<i64>), limit: usize) -> Vec<String> {
        let query = Query {
            terms: Terms::parse(words).unwrap_or_else(|e| panic!("{e}")),
            since_ms: window.0,
            until_ms: window.1,
            limit,
            skip: None,
        };
        let rows = ranked(c, &query, limit).unwrap_or_else(|e| panic!("{e}"));
        rows.into_iter().map(|r| r.entry).collect()
    }

    #[test]
    fn more_of_the_words_and_rarer_ones_rank_first_then_the_later_entry() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let c = index(
            &dir,
            &[
                "the plan for monday",
                "the zebra",
                "the zebra plan",
                "the plan",
                "nothing of either",
                "the zebra again",
            ],
        );
        // "zebra" is in 3 of 6 entries, "plan" in 3, "the" in 5: both rarer words first, then
        // "zebra" or "plan" with "the" (later first), "the" alone last; e5 has none.
        assert_eq!(
            entries(&c, "the zebra plan", (None, None), 10),
            ["e3", "e6", "e4", "e2", "e1"]
        );
        assert_eq!(entries(&c, "zebra", (None, None), 2), ["e6", "e3"]);
        assert_eq!(entries(&c, "zeb*", (None, None), 10), ["e6", "e3", "e2"]);
    }

    #[test]
    fn a_window_keeps_the_best_within_it_and_still_fills_the_limit() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let c = index(&dir, &["okapi", "okapi kiwi", "okapi", "okapi", "okapi kiwi"]);
        // The best two (e5, e2, with both words) are outside [3, 5): the limit is filled from
        // the rest.
        assert_eq!(entries(&c, "okapi kiwi", (None, None), 2), ["e5", "e2"]);
        assert_eq!(entries(&c, "okapi kiwi", (Some(3), Some(5)), 2), ["e4", "e3"]);
        assert_eq!(entries(&c, "okapi kiwi", (Some(3), None), 10), ["e5", "e4", "e3"]);
        assert_eq!(entries(&c, "okapi kiwi", (None, Some(2)), 10), ["e1"]);
    }

    #[test]
    fn a_words_statement_is_compiled_once_whatever_the_words() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let c = index(&dir, &["zebra plan", "deploy friday"]);
        assert_eq!(entries(&c, "zebra", (None, None), 10), ["e1"]);
        assert_eq!(entries(&c, "friday", (None, None), 10), ["e2"]);
        assert_eq!(entries(&c, "plan deploy", (None, None), 10).len(), 2);
        let stmt = c.prepare_cached(MATCHING).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stmt.get_status(rusqlite::StatementStatus::RePrepare), 0);
    }
}
