//! Shortages on this machine ([`Lack`]): how a failure shows one ([`lack_of`], [`lack_in_text`],
//! [`lack_of_errno`]), and how a chat may be told of it without the OS error's text ([`plain`],
//! [`plain_text`], [`Lack::plainly`]).
//!
//! Running short of descriptors, memory or disk (`EMFILE`, `ENFILE`, `ENOMEM`, `ENOBUFS`,
//! `ENOSPC`, `EDQUOT`) is the machine's state, not a fault of what was being done: whoever
//! meets one (a model call, a message's handling, a scheduled job) may wait it out or say so in
//! plain words, and a chat never sees the raw OS error (issue 25: "no message is lost ... the chat
//! never sees a raw OS error"). How long to wait is each caller's own policy.

use std::io::ErrorKind;

/// What the machine ran short of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lack {
    /// File descriptors, the process's or the system's (`EMFILE`, `ENFILE`).
    Descriptors,
    /// Memory or kernel buffers (`ENOMEM`, `ENOBUFS`).
    Memory,
    /// Disk space or the user's disk quota (`ENOSPC`, `EDQUOT`).
    Disk,
}

impl Lack {
    /// What ran short, in words a chat may be shown.
    pub fn words(self) -> &'static str {
        match self {
            Lack::Descriptors => "open files",
            Lack::Memory => "memory",
            Lack::Disk => "disk space",
        }
    }

    /// The clause a chat may be shown for a failure that met this shortage, in place of the OS
    /// error's text ("the bot's machine is short of open files").
    pub fn plainly(self) -> String {
        format!("the bot's machine is short of {}", self.words())
    }
}

/// What `e` says the machine is short of, by its OS error number or its kind; `None` when it is
/// not a shortage.
pub fn lack(e: &std::io::Error) -> Option<Lack> {
    match e.raw_os_error() {
        Some(n) => lack_of_errno(n),
        None => match e.kind() {
            ErrorKind::OutOfMemory => Some(Lack::Memory),
            ErrorKind::StorageFull | ErrorKind::QuotaExceeded => Some(Lack::Disk),
            _ => None,
        },
    }
}

/// What `e` or one of its sources says the machine is short of: an `std::io::Error` by
/// [`lack`], or a level that carries the OS error only in its text ([`lack_in_text`]); `None`
/// for any other failure.
pub fn lack_of(e: &(dyn std::error::Error + 'static)) -> Option<Lack> {
    lack_in_chain(std::iter::successors(Some(e), |e| e.source()))
}

/// [`lack_of`] for the levels of an error chain given one by one (e.g. `anyhow`'s `chain()`).
pub fn lack_in_chain<'a>(mut levels: impl Iterator<Item = &'a (dyn std::error::Error + 'static)>) -> Option<Lack> {
    levels.find_map(|level| match level.downcast_ref::<std::io::Error>() {
        Some(io) => lack(io),
        None => lack_in_text(&level.to_string()),
    })
}

/// The shortage an error's text reports, for failures that reach here only as text (a model
/// call's `error_message`, a port error): the `(os error N)` that Rust's `std::io::Error`
/// writes, the last one in the text. Words alone ("Too many open files") are not a cause.
pub fn lack_in_text(text: &str) -> Option<Lack> {
    text.rmatch_indices("(os error ").find_map(|(at, m)| {
        let rest = &text[at + m.len()..];
        let digits = rest.split_once(')')?.0;
        lack_of_errno(digits.parse().ok()?)
    })
}

/// `e`'s text as a chat may be shown it: a shortage ([`lack_of`]) as [`Lack::plainly`] says it,
/// without the OS error's text; any other failure by its own `Display`.
pub fn plain(e: &(dyn std::error::Error + 'static)) -> String {
    lack_of(e).map_or_else(|| e.to_string(), Lack::plainly)
}

/// [`plain`] for a failure known only by its text: a text reporting a shortage
/// ([`lack_in_text`]) becomes [`Lack::plainly`]'s clause, any other is returned as it was.
pub fn plain_text(text: String) -> String {
    lack_in_text(&text).map_or(text, Lack::plainly)
}

/// The shortage OS error number `n` means; `None` when it is not one.
pub fn lack_of_errno(n: i32) -> Option<Lack> {
    match n {
        libc::EMFILE | libc::ENFILE => Some(Lack::Descriptors),
        libc::ENOMEM | libc::ENOBUFS => Some(Lack::Memory),
        libc::ENOSPC | libc::EDQUOT => Some(Lack::Disk),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that wraps another, as the HTTP client's layers do.
    #[derive(Debug, thiserror::Error)]
    #[error("connect failed")]
    struct Wrapped(#[source] std::io::Error);

    #[test]
    fn lacks_by_number_kind_and_text() {
        let of = |n| lack(&std::io::Error::from_raw_os_error(n));
        assert_eq!(of(libc::ENFILE), Some(Lack::Descriptors));
        assert_eq!(of(libc::ENOBUFS), Some(Lack::Memory));
        assert_eq!(of(libc::ENOSPC), Some(Lack::Disk));
        assert_eq!(of(libc::ECONNREFUSED), None);
        assert_eq!(lack(&std::io::Error::from(ErrorKind::StorageFull)), Some(Lack::Disk));
        assert_eq!(lack(&std::io::Error::from(ErrorKind::NotFound)), None);
        let emfile = std::io::Error::from_raw_os_error(libc::EMFILE).to_string();
        let model = format!("request to http://127.0.0.1:9/v1 failed: tcp connect error: {emfile}");
        assert_eq!(lack_in_text(&model), Some(Lack::Descriptors));
        assert_eq!(lack_in_text("connection refused (os error 111)"), None);
        assert_eq!(lack_in_text("(os error 28) then (os error 1"), Some(Lack::Disk));
        assert_eq!(lack_in_text("no number (os error x)"), None);
    }

    #[test]
    fn a_shortage_is_told_plainly_and_other_failures_by_their_own_words() {
        let store = crate::sessions::SessionStoreError::Io {
            action: "open for appending",
            path: "/data/sessions/1/s.jsonl".into(),
            source: std::io::Error::from_raw_os_error(libc::EMFILE),
        };
        assert!(store.to_string().contains("(os error 24)"), "{store}");
        assert_eq!(plain(&store), "the bot's machine is short of open files");
        assert_eq!(
            plain_text(store.to_string()),
            "the bot's machine is short of open files"
        );
        let other = Wrapped(std::io::Error::from_raw_os_error(libc::EACCES));
        assert_eq!(plain(&other), "connect failed");
        let refused = "session store: cannot open /x: Permission denied (os error 13)".to_owned();
        assert_eq!(plain_text(refused.clone()), refused);
        assert_eq!(plain_text("Too many open files".into()), "Too many open files");
    }
}
