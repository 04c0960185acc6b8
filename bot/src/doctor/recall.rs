//! The doctor's recall line: the chats' search indexes in `state_dir/recall` as found on disk
//! (nothing is built, caught up or set aside here).

use super::Check;
use std::path::Path;

/// `recall`: how many chat indexes, rows and bytes, and when rows were last added; a note for
/// none yet and for an index SQLite cannot read (the bot rebuilds it from the session files at
/// its next use, so neither is a failure).
pub(super) fn check(state_dir: &Path) -> Check {
    let recall = crate::features::recall::recall_of(state_dir);
    let status = recall.status();
    if status.is_empty() {
        return Check::note(
            "recall",
            format!(
                "no index yet in {}: built from the session files as chats talk",
                recall.index_dir().display()
            ),
        );
    }
    let bytes: u64 = status.iter().map(|s| s.bytes).sum();
    let rows: u64 = status
        .iter()
        .filter_map(|s| s.counts.as_ref().ok())
        .map(|(rows, _)| rows)
        .sum();
    let last = status
        .iter()
        .filter_map(|s| s.last_indexed_ms)
        .max()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map_or_else(|| "never".to_owned(), |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string());
    let summary = format!(
        "{} chat index(es) in {}, {rows} rows, {:.1} MB, last indexed {last}",
        status.len(),
        recall.index_dir().display(),
        bytes as f64 / 1e6
    );
    let bad: Vec<String> = status
        .iter()
        .filter_map(|s| s.counts.as_ref().err().map(|e| format!("{} ({e})", s.chat)))
        .collect();
    if bad.is_empty() {
        Check::ok("recall", summary)
    } else {
        Check::note(
            "recall",
            format!(
                "{summary}; unreadable, rebuilt at their next search: {}",
                bad.join(", ")
            ),
        )
    }
}
