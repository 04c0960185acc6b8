//! [`SessionError`]: what `AgentSession` calls fail with, one variant per meaning, each cause
//! typed so a host can tell its user what to do (a full disk, a damaged session file, a missing
//! key, a failing extension).
//!
//! A model's failure during a run is not among them: providers never fail out of band, so it is
//! the run's last assistant message (`StopReason::Error`, shown by the `turn_end` event), and
//! [`ProviderFailure::of`](volcanic_abstractions::provider::ProviderFailure::of) tells its kind.

use crate::compaction::CompactionError;
use crate::models::ModelError;
use crate::sessions::ManagerError;
use volcanic_abstractions::extensions::BoxError;
use volcanic_abstractions::sessions::SessionStoreError;

/// Errors of session operations ([`AgentSession`](super::AgentSession) and its factory).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A prompt arrived during a run without saying how to queue it.
    #[error("the agent is busy: queue the message as steer or follow-up")]
    Busy,
    /// The prompt has no text and no image (APIs refuse an empty user message).
    #[error("empty message: nothing to send to the model")]
    EmptyPrompt,
    /// No model is selected or available.
    #[error("no model selected: set `model = \"provider/id\"` in the config or use /model")]
    NoModel,
    /// The model cannot be used: unknown, or its provider has no key (the models slice's error).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The session file could not be opened, read, written or synced (the store's error, naming
    /// the file; an I/O error keeps its `std::io::Error`, e.g. `StorageFull`).
    #[error(transparent)]
    Store(#[from] SessionStoreError),
    /// The session's entry tree refused an entry (an unknown entry id, a summary given as a
    /// message): a caller's mistake, not the store's.
    #[error(transparent)]
    Entry(ManagerError),
    /// An extension cancelled the switch (`session_before_switch`).
    #[error("cancelled by an extension")]
    Cancelled,
    /// A compaction failed or was cancelled.
    #[error("compaction: {0}")]
    Compaction(#[from] CompactionError),
    /// A command's handler failed (the extension's error).
    #[error("command /{name} failed: {source}")]
    Command {
        /// Command name.
        name: String,
        /// What the handler returned.
        #[source]
        source: BoxError,
    },
    /// The host's spend gate refused a model request (an allowance is reached): the request
    /// was not made. The refusal's text is the sentence for the user.
    #[error(transparent)]
    Allowance(#[from] volcanic_abstractions::spend::SpendRefused),
    /// A run's task was cancelled before the run ended (the async runtime is shutting down).
    #[error("the run was cut off: the program is shutting down")]
    RunCancelled,
    /// The session was closed ([`AgentSession::dispose`](super::AgentSession::dispose): evicted
    /// or shut down): it starts no run and writes nothing more to its file, so a stale handle
    /// cannot write a second copy of the transcript beside the one a fresh session loads. Open
    /// the session again (the host's loader) and hand the prompt to that one.
    #[error("the session was closed (evicted or shut down): open it again and retry")]
    Closed,
}

impl From<ManagerError> for SessionError {
    fn from(e: ManagerError) -> Self {
        match e {
            ManagerError::Store(e) => SessionError::Store(e),
            e @ (ManagerError::UnknownEntry { .. } | ManagerError::SummaryMessage { .. }) => SessionError::Entry(e),
        }
    }
}

impl SessionError {
    /// The session store's error behind this one, directly or through a compaction.
    pub fn store_error(&self) -> Option<&SessionStoreError> {
        match self {
            SessionError::Store(e) | SessionError::Compaction(CompactionError::Store(ManagerError::Store(e))) => {
                Some(e)
            }
            SessionError::Busy
            | SessionError::EmptyPrompt
            | SessionError::NoModel
            | SessionError::Model(_)
            | SessionError::Entry(_)
            | SessionError::Cancelled
            | SessionError::Compaction(_)
            | SessionError::Command { .. }
            | SessionError::Allowance(_)
            | SessionError::RunCancelled
            | SessionError::Closed => None,
        }
    }
}
