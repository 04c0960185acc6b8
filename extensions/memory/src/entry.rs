//! One memory file's content: its entries and the rules every change follows (one short fact
//! per entry, the character cap, ids never reused).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The longest single entry, in characters: an entry is one short fact, not a document.
pub const MAX_ENTRY_CHARS: usize = 500;

/// The cap when `[memory] max_chars` is not set (issue 28: "default 4,000").
pub const DEFAULT_MAX_CHARS: usize = 4_000;

/// Where an entry is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// In its own chat's sessions only.
    Chat,
    /// In every chat's sessions (an owner promoted it).
    Global,
}

/// One remembered fact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Its number in its file (never reused there; global entries are shown as `g<id>`).
    pub id: u32,
    /// The fact, one short line.
    pub text: String,
    /// When it was learned (or last replaced).
    pub learned_at: DateTime<Utc>,
    /// The session it was learned in (its id).
    pub session: String,
    /// Its scope.
    pub scope: Scope,
}

impl Entry {
    /// The id as the model and `/memory` name it: `7` for a chat's entry, `g7` for a global one.
    pub fn label(&self) -> String {
        match self.scope {
            Scope::Chat => self.id.to_string(),
            Scope::Global => format!("g{}", self.id),
        }
    }
}

/// Why a change was refused. Its `Display` is the sentence the model (or the user) reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChangeError {
    /// The text is empty.
    #[error("the fact is empty: give one short sentence to remember")]
    Empty,
    /// The text is longer than [`MAX_ENTRY_CHARS`].
    #[error("the fact has {chars} characters, more than {MAX_ENTRY_CHARS}: keep each entry one short fact")]
    TooLong {
        /// Its length in characters.
        chars: usize,
    },
    /// The change would pass the cap; nothing was changed.
    #[error(
        "memory is full: {used} of {max} characters are used and this needs {needed} more. \
         Consolidate first: merge related entries with `replace` or drop outdated ones with \
         `remove`, then try again"
    )]
    Full {
        /// Characters in use.
        used: usize,
        /// The cap (`[memory] max_chars`).
        max: usize,
        /// Characters the change adds.
        needed: usize,
    },
    /// No entry has this id.
    #[error("no memory entry {0}: use an id shown in the memory list")]
    NoEntry(String),
    /// The same fact is already kept.
    #[error("this fact is already remembered as entry {0}")]
    Duplicate(String),
}

/// The content of one memory file: a chat's entries, or the global ones.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    /// The next entry's id.
    pub next_id: u32,
    /// Entries, oldest first.
    pub entries: Vec<Entry>,
}

/// What a change needs besides the text: when, in which session, under which cap.
#[derive(Debug, Clone)]
pub struct Stamp {
    /// Now.
    pub at: DateTime<Utc>,
    /// The session making the change.
    pub session: String,
    /// The cap in characters.
    pub max_chars: usize,
}

impl Memory {
    /// Characters the entries' texts use (the cap counts these).
    pub fn used(&self) -> usize {
        self.entries.iter().map(|e| e.text.chars().count()).sum()
    }

    /// The entry with `id`.
    pub fn get(&self, id: u32) -> Option<&Entry> {
        self.entries.iter().find(|e| e.id == id)
    }

    /// Adds `text` as a new entry of `scope`. Errors: empty, too long, a duplicate, or past the cap.
    pub fn add(&mut self, text: &str, scope: Scope, stamp: &Stamp) -> Result<Entry, ChangeError> {
        let text = checked(text)?;
        if let Some(same) = self.entries.iter().find(|e| e.text.eq_ignore_ascii_case(&text)) {
            return Err(ChangeError::Duplicate(same.label()));
        }
        self.fits(text.chars().count(), 0, stamp.max_chars)?;
        self.next_id = self.next_id.max(self.entries.iter().map(|e| e.id).max().unwrap_or(0)) + 1;
        let entry = Entry {
            id: self.next_id,
            text,
            learned_at: stamp.at,
            session: stamp.session.clone(),
            scope,
        };
        self.entries.push(entry.clone());
        Ok(entry)
    }

    /// Replaces entry `id`'s text (a new learned-at and session). Errors: no such entry, empty,
    /// too long, or past the cap.
    pub fn replace(&mut self, id: u32, text: &str, stamp: &Stamp) -> Result<Entry, ChangeError> {
        let text = checked(text)?;
        let old = self.get(id).ok_or_else(|| ChangeError::NoEntry(id.to_string()))?;
        self.fits(text.chars().count(), old.text.chars().count(), stamp.max_chars)?;
        let entry = self
            .entries
            .iter_mut()
            .find(|e| e.id == id)
            .ok_or_else(|| ChangeError::NoEntry(id.to_string()))?;
        entry.text = text;
        entry.learned_at = stamp.at;
        entry.session.clone_from(&stamp.session);
        Ok(entry.clone())
    }

    /// Removes entry `id`. Errors: no such entry.
    pub fn remove(&mut self, id: u32) -> Result<Entry, ChangeError> {
        let at = self
            .entries
            .iter()
            .position(|e| e.id == id)
            .ok_or_else(|| ChangeError::NoEntry(id.to_string()))?;
        Ok(self.entries.remove(at))
    }

    /// Whether `adding` characters in place of `freeing` stay within `max`.
    fn fits(&self, adding: usize, freeing: usize, max: usize) -> Result<(), ChangeError> {
        let used = self.used();
        let after = used.saturating_sub(freeing) + adding;
        if after > max {
            return Err(ChangeError::Full {
                used,
                max,
                needed: adding.saturating_sub(freeing),
            });
        }
        Ok(())
    }
}

/// `text` trimmed to one line, or why it cannot be an entry.
fn checked(text: &str) -> Result<String, ChangeError> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let chars = text.chars().count();
    if chars == 0 {
        return Err(ChangeError::Empty);
    }
    if chars > MAX_ENTRY_CHARS {
        return Err(ChangeError::TooLong { chars });
    }
    Ok(text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn stamp(max_chars: usize) -> Stamp {
        Stamp {
            at: DateTime::from_timestamp(1_780_000_000, 0).unwrap_or_default(),
            session: "s1".into(),
            max_chars,
        }
    }

    #[test]
    fn adds_replaces_and_removes_with_ids_never_reused() {
        let mut m = Memory::default();
        let a = m.add("  Prefers  metric\nunits ", Scope::Chat, &stamp(100)).unwrap();
        assert_eq!((a.id, a.text.as_str()), (1, "Prefers metric units"));
        let b = m.add("Lives in Lisbon", Scope::Chat, &stamp(100)).unwrap();
        assert_eq!(b.id, 2);
        assert_eq!(m.remove(2).unwrap().text, "Lives in Lisbon");
        assert_eq!(m.add("Works at night", Scope::Chat, &stamp(100)).unwrap().id, 3);
        assert_eq!(
            m.replace(1, "Prefers imperial units", &stamp(100)).unwrap().text,
            "Prefers imperial units"
        );
        assert_eq!(m.remove(9), Err(ChangeError::NoEntry("9".into())));
        assert_eq!(m.used(), "Prefers imperial units".len() + "Works at night".len());
    }

    #[test]
    fn the_cap_refuses_and_changes_nothing() {
        let mut m = Memory::default();
        m.add("0123456789", Scope::Chat, &stamp(15)).unwrap();
        let before = m.clone();
        let err = m.add("abcdef", Scope::Chat, &stamp(15)).unwrap_err();
        assert_eq!(
            err,
            ChangeError::Full {
                used: 10,
                max: 15,
                needed: 6
            }
        );
        assert!(err.to_string().contains("Consolidate first"), "{err}");
        assert_eq!(m, before);
        // A shorter replacement frees room.
        m.replace(1, "01234", &stamp(15)).unwrap();
        m.add("abcdef", Scope::Chat, &stamp(15)).unwrap();
        assert_eq!(m.used(), 11);
    }

    #[test]
    fn empty_long_and_duplicate_facts_are_refused() {
        let mut m = Memory::default();
        assert_eq!(m.add(" \n ", Scope::Chat, &stamp(5000)), Err(ChangeError::Empty));
        let long = "x".repeat(MAX_ENTRY_CHARS + 1);
        assert_eq!(
            m.add(&long, Scope::Chat, &stamp(5000)),
            Err(ChangeError::TooLong {
                chars: MAX_ENTRY_CHARS + 1
            })
        );
        m.add("Likes tea", Scope::Global, &stamp(5000)).unwrap();
        assert_eq!(
            m.add("likes TEA", Scope::Global, &stamp(5000)),
            Err(ChangeError::Duplicate("g1".into()))
        );
    }
}
