//! The spend gate: what a host checks before each model request and records after it
//! (allowances, issue 30). The runtime asks the session's [`SpendGate`] before every provider
//! request it makes — a turn, a compaction summary, a nested call through
//! [`ModelCatalog::complete`](crate::extensions::ModelCatalog::complete) such as memory curation —
//! and settles what the provider reported afterwards. A session without a gate spends freely.
//!
//! Order per request: [`SpendGate::admit`] (the estimate is held, or the request is refused and
//! not made), the request, [`SpendGate::settle`] (exactly once per admitted request, with the
//! usage the final message reports: zero for a request that failed before any usage, what was
//! reported for an aborted one).

use crate::messages::Usage;
use crate::model::Model;
use async_trait::async_trait;

/// What a model request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpendPurpose {
    /// A turn of a run (chat message, scheduled job, watcher, A2A task).
    Turn,
    /// A compaction's summary.
    Compaction,
    /// A nested call an extension makes through the session's model catalog (memory curation).
    Extension,
}

/// A model request about to be made, with its estimated cost.
#[derive(Debug, Clone, PartialEq)]
pub struct SpendRequest {
    /// Idempotency key, unique per model request: `<session id>:<uuid v7>`.
    pub id: String,
    /// What it is for.
    pub purpose: SpendPurpose,
    /// `provider/id` of the model.
    pub model: String,
    /// Input tokens: the provider's count of the context so far plus an estimate of what was
    /// added since (about 4 characters per token), or all estimated when no count is known.
    pub input_tokens: u64,
    /// The most output tokens the request may produce (its `max_tokens`, else the model's).
    pub max_output_tokens: u64,
    /// [`estimate_usd`] of the above at the model's catalogue price, in USD.
    pub estimate_usd: f64,
}

/// The estimated cost of a request in USD: `input_tokens` at the model's input price plus
/// `max_output_tokens` at its output price (prices are per million tokens, `Model::cost`).
/// Cache discounts are not assumed, so the estimate bounds the cost from above for a request
/// that stays within its token counts.
pub fn estimate_usd(model: &Model, input_tokens: u64, max_output_tokens: u64) -> f64 {
    (input_tokens as f64 * model.cost.input + max_output_tokens as f64 * model.cost.output) / 1_000_000.0
}

/// A request the gate did not admit: it would cross an allowance. The run ends with this
/// (`SessionError::Allowance` in the runtime), not with a provider error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SpendRefused {
    /// One sentence for the person who asked: what was reached and when it resets.
    pub message: String,
}

/// The host's check before each model request (see the module docs for the order). Implemented
/// by the host with its counters (the bot's allowances); set on a session through its options.
#[async_trait]
pub trait SpendGate: Send + Sync {
    /// Holds `request.estimate_usd` against the allowances that apply, or refuses. Must be
    /// cheap: it runs before every request.
    async fn admit(&self, request: &SpendRequest) -> Result<(), SpendRefused>;

    /// Records what admitted request `id` cost (`usage.cost.total`, USD, as the provider reported
    /// it or the catalogue price computed it) and releases its hold.
    async fn settle(&self, id: &str, usage: &Usage);
}
