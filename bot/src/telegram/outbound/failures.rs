//! What a chat is told when its message fails, by cause: a sentence saying what happened and
//! what to do ([`texts`] holds them). Causes are the session's typed errors ([`SessionError`],
//! down to the store's `std::io::Error`) and the kind of a model call's failure
//! ([`ProviderFailure`]); anything else is shown as its own text says.

use crate::telegram::inbound::shortage::lack_of_any;
use crate::telegram::outbound::texts;
use std::io::ErrorKind;
use volcanic_abstractions::provider::ProviderFailure;
use volcanic_abstractions::sessions::SessionStoreError;
use volcanic_abstractions::shortage::{lack, lack_in_text, lack_of};
use volcanic_core::agent::SessionError;

/// The notice for a session operation that failed (a prompt refused, a run cut short).
pub fn session(e: &SessionError) -> String {
    if matches!(e, SessionError::Closed) {
        return texts::SESSION_CLOSED.to_owned();
    }
    e.store_error().and_then(store_failure).unwrap_or_else(|| shown(e))
}

/// The notice for a chat whose session could not be opened (a [`SessionError`] from the factory,
/// or the workspace folder).
pub fn open(e: &anyhow::Error) -> String {
    match e.downcast_ref::<SessionError>() {
        Some(e) => session(e),
        None => lack_of_any(e).map_or_else(|| texts::failed(&format!("{e:#}")), texts::short_of),
    }
}

/// The notice for any other failure: what the machine is short of ([`texts::short_of`]), never
/// the OS error's text, else the error as its own text says.
pub fn shown(e: &(dyn std::error::Error + 'static)) -> String {
    lack_of(e).map_or_else(|| texts::failed(&e.to_string()), texts::short_of)
}

/// The notice for a state file (`file`, e.g. `access.json`) that could not be saved: a
/// shortage as [`texts::short_of`] says it, any other failure with its cause.
pub fn not_saved(file: &str, e: &std::io::Error) -> String {
    lack(e).map_or_else(|| texts::failed(&format!("cannot save {file}: {e}")), texts::short_of)
}

/// The notice for a model call that ended in an error: `error_message` of the turn's final
/// assistant message. A shortage met on the bot's side (no descriptor for the connection)
/// is told as such, without the OS text.
pub fn model(error_message: &str) -> String {
    if let Some(lack) = lack_in_text(error_message) {
        return texts::short_of(lack);
    }
    match ProviderFailure::of(error_message) {
        ProviderFailure::Unauthorized { .. } => texts::provider_unauthorized(error_message),
        ProviderFailure::Rejected { .. } => texts::provider_rejected(error_message),
        ProviderFailure::Refused => texts::model_refused(error_message),
        ProviderFailure::Unavailable => texts::provider_unavailable(error_message),
        ProviderFailure::Unreachable => texts::provider_unreachable(error_message),
        // The loop's own text says what to do (compact, a shorter message, /new).
        ProviderFailure::ContextOverflow | ProviderFailure::Other => texts::failed(error_message),
    }
}

/// The sentence for a store failure the user can act on; `None` for the others.
fn store_failure(e: &SessionStoreError) -> Option<String> {
    match e {
        SessionStoreError::Io { path, source, .. } => {
            let file = path.display().to_string();
            match source.kind() {
                ErrorKind::StorageFull | ErrorKind::QuotaExceeded => Some(texts::disk_full(&file)),
                ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => {
                    Some(texts::session_file_unwritable(&file, &source.to_string()))
                }
                _ => None,
            }
        }
        SessionStoreError::BadHeader { path, reason } => {
            Some(texts::session_file_damaged(&path.display().to_string(), reason))
        }
        SessionStoreError::ChangedOnDisk { path } => Some(texts::session_file_changed(&path.display().to_string())),
        // Their own texts say what to do (migrate with pi) or point at a bug.
        SessionStoreError::UnsupportedVersion { .. }
        | SessionStoreError::NotFound { .. }
        | SessionStoreError::ForeignLocation { .. }
        | SessionStoreError::InvalidScope { .. }
        | SessionStoreError::Encode { .. }
        | SessionStoreError::Backend(_) => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::path::PathBuf;
    use volcanic_abstractions::shortage::Lack;
    use volcanic_core::compaction::CompactionError;
    use volcanic_core::sessions::ManagerError;

    const FILE: &str = "/data/sessions/1/main/s.jsonl";

    fn io(kind: ErrorKind) -> SessionStoreError {
        SessionStoreError::Io {
            action: "append to",
            path: PathBuf::from(FILE),
            source: std::io::Error::from(kind),
        }
    }

    #[test]
    fn store_causes_get_what_to_do() {
        let full = SessionError::Store(io(ErrorKind::StorageFull));
        assert_eq!(session(&full), texts::disk_full(FILE));
        let over_quota = SessionError::Store(io(ErrorKind::QuotaExceeded));
        assert_eq!(session(&over_quota), texts::disk_full(FILE));
        // Through a compaction too.
        let compacting =
            SessionError::Compaction(CompactionError::Store(ManagerError::Store(io(ErrorKind::StorageFull))));
        assert_eq!(session(&compacting), texts::disk_full(FILE));
        let denied = SessionError::Store(io(ErrorKind::PermissionDenied));
        let text = session(&denied);
        assert!(
            text.starts_with("⚠️ I may not write this chat's conversation file ("),
            "{text}"
        );
        assert!(text.contains(FILE), "{text}");
        let damaged = SessionError::Store(SessionStoreError::BadHeader {
            path: PathBuf::from(FILE),
            reason: "not JSON".into(),
        });
        assert_eq!(session(&damaged), texts::session_file_damaged(FILE, "not JSON"));
        let changed = SessionError::Store(SessionStoreError::ChangedOnDisk {
            path: PathBuf::from(FILE),
        });
        assert_eq!(session(&changed), texts::session_file_changed(FILE));
        // Not the error's own text ("open it again and retry" is for the host, not the user).
        assert_eq!(session(&SessionError::Closed), texts::SESSION_CLOSED);
    }

    #[test]
    fn other_errors_say_what_they_are() {
        assert_eq!(session(&SessionError::Busy), format!("⚠️ {}", SessionError::Busy));
        let other = SessionError::Store(io(ErrorKind::Other));
        assert_eq!(session(&other), format!("⚠️ {other}"));
        let opened = anyhow::Error::from(SessionError::Store(io(ErrorKind::StorageFull)));
        assert_eq!(open(&opened), texts::disk_full(FILE));
        let folder = anyhow::anyhow!("cannot create the workspace");
        assert_eq!(open(&folder), "⚠️ cannot create the workspace");
    }

    #[test]
    fn shortages_are_told_without_the_os_text() {
        let emfile = || std::io::Error::from_raw_os_error(libc::EMFILE);
        let store = SessionError::Store(SessionStoreError::Io {
            action: "list",
            path: PathBuf::from(FILE),
            source: emfile(),
        });
        assert_eq!(session(&store), texts::short_of(Lack::Descriptors));
        let folder = anyhow::Error::from(std::io::Error::from_raw_os_error(libc::ENOMEM)).context("the workspace");
        assert_eq!(open(&folder), texts::short_of(Lack::Memory));
        assert_eq!(shown(&emfile()), texts::short_of(Lack::Descriptors));
        let model_text = format!("request to http://127.0.0.1:9/v1 failed: {}", emfile());
        assert_eq!(model(&model_text), texts::short_of(Lack::Descriptors));
        for text in [session(&store), open(&folder), model(&model_text)] {
            assert!(!text.contains("os error") && !text.contains("Too many"), "{text}");
        }
    }

    #[test]
    fn model_failures_by_kind() {
        type Sentence = fn(&str) -> String;
        let cases: [(&str, Sentence); 7] = [
            (
                "401 authentication_error: invalid x-api-key",
                texts::provider_unauthorized,
            ),
            ("404 not_found_error: model: nope", texts::provider_rejected),
            ("the model stopped with stop_reason `refusal`", texts::model_refused),
            (
                "529 overloaded_error: Overloaded (gave up after 4 attempts)",
                texts::provider_unavailable,
            ),
            (
                "request to http://127.0.0.1:9/v1 failed: connection refused",
                texts::provider_unreachable,
            ),
            ("prompt is too long (start a new session with /new)", texts::failed),
            ("something odd", texts::failed),
        ];
        for (message, want) in cases {
            assert_eq!(model(message), want(message), "{message}");
        }
    }
}
