//! The memory block of the system prompt: what the chat remembers, each entry with its id and
//! date, global ones marked, and how full the memory is.

use crate::entry::Scope;
use crate::store::View;

/// The system prompt section's title.
pub const TITLE: &str = "Memory";

/// The section's body for `view` under a cap of `max_chars` characters. Dates are UTC days
/// (`YYYY-MM-DD`).
pub fn block(view: &View, max_chars: usize) -> String {
    let mut out = String::from(
        "Facts kept from earlier sessions of this chat. Keep them current with the `memory` tool \
         (one short fact per entry; `replace` or `remove` what is outdated):\n",
    );
    if view.chat.is_empty() && view.global.is_empty() {
        out.push_str("(nothing remembered yet)\n");
    }
    for e in view.global.iter().chain(&view.chat) {
        let mark = match e.scope {
            Scope::Global => " (global, every chat)",
            Scope::Chat => "",
        };
        let day = e.learned_at.format("%Y-%m-%d");
        out.push_str(&format!("- [{}] {day}{mark}: {}\n", e.label(), e.text));
    }
    out.push_str(&format!("Memory used: {} of {max_chars} characters.", view.used));
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::entry::Entry;
    use chrono::DateTime;
    use pretty_assertions::assert_eq;

    fn entry(id: u32, text: &str, scope: Scope) -> Entry {
        Entry {
            id,
            text: text.into(),
            learned_at: DateTime::from_timestamp(1_796_000_000, 0).unwrap_or_default(),
            session: "s".into(),
            scope,
        }
    }

    #[test]
    fn entries_show_their_ids_dates_and_scope() {
        let view = View {
            chat: vec![entry(3, "Prefers metric units", Scope::Chat)],
            global: vec![entry(1, "The owner is Ada", Scope::Global)],
            used: 20,
            set_aside: Vec::new(),
        };
        let text = block(&view, 4000);
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            lines,
            vec![
                "- [g1] 2026-11-30 (global, every chat): The owner is Ada",
                "- [3] 2026-11-30: Prefers metric units",
                "Memory used: 20 of 4000 characters.",
            ]
        );
        assert!(block(&View::default(), 10).contains("(nothing remembered yet)"));
    }
}
