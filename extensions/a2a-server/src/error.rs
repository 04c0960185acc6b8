//! Errors: [`ServerError`] for building the server; JSON-RPC errors are `a2a::A2AError` values made
//! by the helpers here (codes and names from the A2A 1.0 spec, section 5.4 / 9).

use a2a::{A2AError, error_code};

/// Why the server could not be built or its state not loaded.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// A caller's name cannot name a folder.
    #[error("A2A caller name {0:?} is not allowed: use 1-64 letters, digits, '_' or '-' (not starting with '-')")]
    CallerName(String),
    /// Two callers share a name or a token.
    #[error("A2A callers must have distinct names and tokens: {0}")]
    Duplicate(String),
    /// A caller's token is empty or too short to be a secret.
    #[error("A2A caller {0:?} has a token shorter than 16 characters: use a long random token")]
    WeakToken(String),
    /// The state folder could not be read or written.
    #[error("A2A task store at {path}: {source}")]
    Io {
        /// The file or folder.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// -32602 invalid params, with what was wrong.
pub fn invalid_params(msg: impl Into<String>) -> A2AError {
    A2AError::invalid_params(msg)
}

/// -32001 `TaskNotFound` (also for another caller's task: never "forbidden").
pub fn task_not_found(id: &str) -> A2AError {
    A2AError::new(error_code::TASK_NOT_FOUND, format!("Task not found: {id}"))
}

/// -32004 `UnsupportedOperation` with the reason.
pub fn unsupported(msg: impl Into<String>) -> A2AError {
    A2AError::new(error_code::UNSUPPORTED_OPERATION, msg)
}
