//! The numbered line diff shown for `edit` results (pi's format: `+N new`, `-N old`, ` N context`,
//! ` ...` between hunks).

use similar::{ChangeTag, DiffOp, TextDiff};
use std::time::Duration;

/// Context lines around each change (lines).
pub const CONTEXT_LINES: usize = 4;

/// Longest time the diff may take before it falls back to a coarser result (ms).
const DIFF_TIMEOUT_MS: u64 = 2000;

/// A rendered diff and the first changed line of the new text (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineDiff {
    /// One line per shown line: `+` added, `-` removed, ` ` context, with line numbers.
    pub diff: String,
    /// The first changed line in the new text (1-based), if anything changed.
    pub first_changed_line: Option<usize>,
}

/// Diffs `old` against `new` line by line with [`CONTEXT_LINES`] of context.
pub fn line_diff(old: &str, new: &str) -> LineDiff {
    let diff = TextDiff::configure()
        .timeout(Duration::from_millis(DIFF_TIMEOUT_MS))
        .diff_lines(old, new);
    let width = old.lines().count().max(new.lines().count()).max(1).to_string().len();
    let mut out: Vec<String> = Vec::new();
    let mut first_changed_line = None;
    for (index, group) in diff.grouped_ops(CONTEXT_LINES).iter().enumerate() {
        if index > 0 {
            out.push(format!(" {:width$} ...", ""));
        }
        for op in group {
            if first_changed_line.is_none() && !matches!(op, DiffOp::Equal { .. }) {
                first_changed_line = Some(op.new_range().start + 1);
            }
            for change in diff.iter_changes(op) {
                let text = change.value().trim_end_matches(['\n', '\r']);
                let (sign, number) = match change.tag() {
                    ChangeTag::Equal => (' ', change.old_index()),
                    ChangeTag::Delete => ('-', change.old_index()),
                    ChangeTag::Insert => ('+', change.new_index()),
                };
                let number = number.map_or(0, |n| n + 1);
                out.push(format!("{sign}{number:>width$} {text}"));
            }
        }
    }
    LineDiff {
        diff: out.join("\n"),
        first_changed_line,
    }
}
