//! The crate's one error type: what went wrong talking to an agent, worded for the model (it is
//! shown as the `a2a` tool's error result).

use volcanic_a2a_dialect::DialectError;

/// A failure of the A2A client.
#[derive(Debug, thiserror::Error)]
pub enum A2aError {
    /// `agents.json` or a tool argument is wrong; the message says what to fix.
    #[error("{0}")]
    Invalid(String),
    /// No agent of that name in `.volcanic/a2a/agents.json`.
    #[error("no agent named `{name}` in .volcanic/a2a/agents.json (known: {known})")]
    UnknownAgent {
        /// The name asked for.
        name: String,
        /// The names listed, comma-separated.
        known: String,
    },
    /// The agent's card could not be fetched or used.
    #[error("agent card of {url}: {reason}")]
    Card {
        /// Where the card was asked for.
        url: String,
        /// Why it is not used.
        reason: String,
    },
    /// Connecting, sending or reading failed (including timeouts).
    #[error("{url}: {reason}")]
    Transport {
        /// The request's URL.
        url: String,
        /// What happened.
        reason: String,
    },
    /// The agent answered with an HTTP error status.
    #[error("{url}: HTTP {status}{hint}")]
    Status {
        /// The request's URL.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// A hint for the model (e.g. credentials for a 401), may be empty.
        hint: String,
    },
    /// The agent answered with a JSON-RPC error object.
    #[error("the agent answered with JSON-RPC error {code} ({name}): {message}")]
    Rpc {
        /// JSON-RPC error code (A2A: -32001 TaskNotFound … -32009 VersionNotSupported).
        code: i64,
        /// The code's A2A name, or "error".
        name: &'static str,
        /// The agent's message (capped).
        message: String,
    },
    /// The agent's body was too big, not JSON, or not the shape A2A specifies.
    #[error("the agent's answer was refused: {0}")]
    Malformed(String),
    /// The message would go beyond `max_hops` agents.
    #[error(
        "refused: this message would be hop {hop} of an agent-to-agent chain, beyond max_hops = {max} (no agent loops)"
    )]
    TooManyHops {
        /// The hop it would be.
        hop: u32,
        /// The configured limit.
        max: u32,
    },
    /// A workspace file could not be read or written.
    #[error("{path}: {reason}")]
    File {
        /// The path, as given or as written.
        path: String,
        /// What happened.
        reason: String,
    },
}

/// A dialect's refusal keeps its words: a value of ours that cannot be written is
/// [`A2aError::Invalid`], a peer's value that is not A2A's shape [`A2aError::Malformed`].
impl From<DialectError> for A2aError {
    fn from(e: DialectError) -> Self {
        match e {
            DialectError::Invalid(reason) => A2aError::Invalid(reason),
            DialectError::Malformed(reason) => A2aError::Malformed(reason),
        }
    }
}

/// The crate's result.
pub type Result<T, E = A2aError> = std::result::Result<T, E>;

/// The A2A name of a JSON-RPC error code (A2A 1.0 spec, section "Error codes").
pub fn rpc_code_name(code: i64) -> &'static str {
    match code {
        -32001 => "TaskNotFound",
        -32002 => "TaskNotCancelable",
        -32003 => "PushNotificationNotSupported",
        -32004 => "UnsupportedOperation",
        -32005 => "ContentTypeNotSupported",
        -32006 => "InvalidAgentResponse",
        -32007 => "ExtendedAgentCardNotConfigured",
        -32008 => "ExtensionSupportRequired",
        -32009 => "VersionNotSupported",
        -32700 => "ParseError",
        -32600 => "InvalidRequest",
        -32601 => "MethodNotFound",
        -32602 => "InvalidParams",
        -32603 => "InternalError",
        _ => "error",
    }
}
