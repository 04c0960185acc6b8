//! Errors of the sessions slice.

use volcanic_abstractions::sessions::SessionStoreError;

/// What [`SessionManager`](super::SessionManager) calls can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// The store failed (I/O, unreadable header, another writer, ...); the message names the file.
    #[error(transparent)]
    Store(#[from] SessionStoreError),
    /// `branch`, `append_label` or `append_branch_summary` named an entry the session does not have.
    #[error("session entry `{id}` not found")]
    UnknownEntry {
        /// The id given.
        id: String,
    },
    /// `append_message` was given a summary message; those are stored as their own entry types.
    #[error("a `{role}` message is not appended as a message: use append_compaction or append_branch_summary")]
    SummaryMessage {
        /// The message's role.
        role: &'static str,
    },
}

/// Result of the sessions slice.
pub type Result<T, E = ManagerError> = std::result::Result<T, E>;
