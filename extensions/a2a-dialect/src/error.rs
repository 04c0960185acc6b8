//! What a translation refuses: the caller wraps it in its own error (the client shows it to the
//! model as the `a2a` tool's error result).

/// A value that cannot be written in a dialect, or a peer's value that is not that dialect's shape.
#[derive(Debug, thiserror::Error)]
pub enum DialectError {
    /// A value of ours could not be written as JSON; the message says which.
    #[error("{0}")]
    Invalid(String),
    /// A peer's value is not the shape A2A specifies; the message says what and why.
    #[error("{0}")]
    Malformed(String),
}

/// The crate's result.
pub type Result<T, E = DialectError> = std::result::Result<T, E>;
