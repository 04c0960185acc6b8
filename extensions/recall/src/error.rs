//! The crate's errors.

use std::path::PathBuf;

/// What can go wrong in recall.
#[derive(Debug, thiserror::Error)]
pub enum RecallError {
    /// A chat key that is not one folder name (empty, `.`, `..`, or with `/` or NUL).
    #[error("recall: `{0}` is not a chat key (one folder name under the sessions folder)")]
    BadChatKey(String),
    /// The search words could not be read.
    #[error("recall: {0}")]
    BadQuery(String),
    /// A file or folder could not be read or written.
    #[error("recall: cannot {action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// SQLite failed on the chat's index.
    #[error("recall: the index {path} failed: {source}")]
    Sqlite {
        /// The index file.
        path: PathBuf,
        /// The cause.
        source: rusqlite::Error,
    },
}

impl RecallError {
    /// Whether the index file itself is unreadable (corrupt, or not a database): set it aside and
    /// rebuild.
    pub fn is_corrupt(&self) -> bool {
        match self {
            RecallError::Sqlite { source, .. } => matches!(
                source.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
            ),
            RecallError::BadChatKey(_) | RecallError::BadQuery(_) | RecallError::Io { .. } => false,
        }
    }
}

/// The crate's result.
pub type Result<T, E = RecallError> = std::result::Result<T, E>;
