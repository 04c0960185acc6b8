//! What `/memory` and `/forget` show, and what their buttons carry. Button data (after the
//! feature's prefix) is untrusted input: [`Action::parse`] accepts only its own grammar.

use super::PREFIX;
use crate::features::port::PressButton;
use volcanic_memory::{Entry, View};

/// What a button of the feature asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// `d:<id>`: delete the chat's entry.
    Delete(u32),
    /// `x:<id>`: delete a global entry (owners).
    DeleteGlobal(u32),
    /// `s:<id>`: share the chat's entry with every chat (owners).
    Share(u32),
    /// `f:y` / `f:n`: `/forget` confirmed or called off.
    Forget(bool),
    /// `q:<n>:y` / `q:<n>:n`: an owner's answer to the tool's question `n`.
    Consent(u64, bool),
}

impl Action {
    /// The action `data` (after the prefix) names; `None` for anything else.
    pub fn parse(data: &str) -> Option<Action> {
        let yes_no = |s: &str| match s {
            "y" => Some(true),
            "n" => Some(false),
            _ => None,
        };
        let (kind, rest) = data.split_once(':')?;
        match kind {
            "d" => rest.parse().ok().map(Action::Delete),
            "x" => rest.parse().ok().map(Action::DeleteGlobal),
            "s" => rest.parse().ok().map(Action::Share),
            "f" => yes_no(rest).map(Action::Forget),
            "q" => {
                let (n, answer) = rest.split_once(':')?;
                Some(Action::Consent(n.parse().ok()?, yes_no(answer)?))
            }
            _ => None,
        }
    }
}

fn button(text: String, data: String) -> PressButton {
    PressButton {
        text,
        data: format!("{PREFIX}{data}"),
    }
}

fn line(e: &Entry) -> String {
    format!("{}. {} — {}", e.label(), e.learned_at.format("%Y-%m-%d"), e.text)
}

/// `/memory`: the chat's entries (and the global ones), with a delete button per entry and, for
/// an owner, "share everywhere" per chat entry and delete per global entry.
pub fn listing(view: &View, max_chars: usize, owner: bool) -> (String, Vec<Vec<PressButton>>) {
    let mut text = format!("Memory of this chat ({} of {max_chars} characters):", view.used);
    let mut rows = Vec::new();
    if view.chat.is_empty() {
        text.push_str("\n(nothing yet)");
    }
    for e in &view.chat {
        text.push('\n');
        text.push_str(&line(e));
        let mut row = vec![button(format!("Delete {}", e.label()), format!("d:{}", e.id))];
        if owner {
            row.push(button(format!("Share everywhere {}", e.label()), format!("s:{}", e.id)));
        }
        rows.push(row);
    }
    if !view.global.is_empty() {
        text.push_str("\nShared with every chat:");
    }
    for e in &view.global {
        text.push('\n');
        text.push_str(&line(e));
        if owner {
            rows.push(vec![button(format!("Delete {}", e.label()), format!("x:{}", e.id))]);
        }
    }
    (text, rows)
}

/// `/forget`'s question and its buttons; `None` when there is nothing to forget.
pub fn forget_question(view: &View) -> Option<(String, Vec<Vec<PressButton>>)> {
    let n = view.chat.len();
    (n > 0).then(|| {
        (
            format!("Forget all {n} entries of this chat's memory? Facts shared with every chat stay."),
            vec![vec![
                button("Forget all".into(), "f:y".into()),
                button("Keep".into(), "f:n".into()),
            ]],
        )
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use volcanic_memory::Scope;

    #[test]
    fn button_data_is_parsed_by_its_own_grammar_only() {
        assert_eq!(Action::parse("d:3"), Some(Action::Delete(3)));
        assert_eq!(Action::parse("x:1"), Some(Action::DeleteGlobal(1)));
        assert_eq!(Action::parse("s:12"), Some(Action::Share(12)));
        assert_eq!(Action::parse("f:y"), Some(Action::Forget(true)));
        assert_eq!(Action::parse("q:7:n"), Some(Action::Consent(7, false)));
        for bad in ["", "d:", "d:-1", "f:maybe", "q:7", "q:x:y", "z:1", "d:1:2"] {
            assert_eq!(Action::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn owners_get_share_buttons_and_everyone_delete_buttons() {
        let entry = |id, scope| Entry {
            id,
            text: "Likes tea".into(),
            learned_at: chrono::DateTime::from_timestamp(1_796_000_000, 0).unwrap(),
            session: "s".into(),
            scope,
        };
        let view = View {
            chat: vec![entry(2, Scope::Chat)],
            global: vec![entry(1, Scope::Global)],
            used: 9,
            set_aside: Vec::new(),
        };
        let (text, rows) = listing(&view, 4000, true);
        assert_eq!(
            text,
            "Memory of this chat (9 of 4000 characters):\n2. 2026-11-30 — Likes tea\n\
             Shared with every chat:\ng1. 2026-11-30 — Likes tea"
        );
        let labels: Vec<Vec<&str>> = rows
            .iter()
            .map(|r| r.iter().map(|b| b.text.as_str()).collect())
            .collect();
        assert_eq!(labels, vec![vec!["Delete 2", "Share everywhere 2"], vec!["Delete g1"]]);
        let (_, rows) = listing(&view, 4000, false);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].len(), 1);
        assert!(forget_question(&View::default()).is_none());
    }
}
