//! The session's spend gate around each provider request (`volcanic_abstractions::spend`): a
//! [`Hold`] from [`admit`] before the request, settled with the final message after it. Turns
//! (`stream`), compaction summaries (`compact`) and nested calls through the model catalog
//! (`context`, e.g. memory curation) all pass here.

use crate::compaction::{estimate_text_tokens, estimate_tokens};
use std::sync::Arc;
use volcanic_abstractions::messages::AssistantMessage;
use volcanic_abstractions::model::Model;
use volcanic_abstractions::provider::{ProviderContext, ProviderStream, StreamOptions};
use volcanic_abstractions::spend::{SpendGate, SpendPurpose, SpendRefused, SpendRequest, estimate_usd};

/// An admitted request's hold: settle it with the request's final message.
#[must_use = "an admitted request must be settled, or its estimate stays held"]
pub(crate) struct Hold {
    gate: Arc<dyn SpendGate>,
    id: String,
    model: Model,
}

/// Asks `gate` (none: nothing to ask) to admit a request of `model` for `purpose` with
/// `input_tokens` in and at most `max_output` out (`None`: the model's limit). The id is the
/// session's plus a fresh UUID v7, unique per request.
pub(crate) async fn admit(
    gate: Option<&Arc<dyn SpendGate>>,
    session_id: &str,
    purpose: SpendPurpose,
    model: &Model,
    input_tokens: u64,
    max_output: Option<u64>,
) -> Result<Option<Hold>, SpendRefused> {
    let Some(gate) = gate else { return Ok(None) };
    let max_output_tokens = max_output.unwrap_or(model.max_tokens);
    let request = SpendRequest {
        id: format!("{session_id}:{}", uuid::Uuid::now_v7()),
        purpose,
        model: model.key(),
        input_tokens,
        max_output_tokens,
        estimate_usd: estimate_usd(model, input_tokens, max_output_tokens),
    };
    gate.admit(&request).await?;
    Ok(Some(Hold {
        gate: gate.clone(),
        id: request.id,
        model: model.clone(),
    }))
}

impl Hold {
    /// Records what the request cost: the final message's usage, priced from the catalogue when
    /// the provider gave no cost (an aborted or failed request settles at what it reported).
    pub async fn settle(self, message: &AssistantMessage) {
        let mut usage = message.usage;
        if usage.cost.total == 0.0 {
            usage.cost = self.model.cost_of(&usage);
        }
        self.gate.settle(&self.id, &usage).await;
    }
}

/// One request built outside the turn (a compaction summary, a nested call through the model
/// catalog) through `gate`: admitted on its estimate ([`request_tokens`] in, `options.max_tokens`
/// out), opened with `open`, read to its final message (`compact::final_message`, cut off by
/// `options.cancel`) and settled with it.
///
/// # Errors
/// The gate's refusal: the request was not made.
pub(crate) async fn complete(
    gate: Option<&Arc<dyn SpendGate>>,
    session_id: &str,
    purpose: SpendPurpose,
    model: &Model,
    context: ProviderContext,
    options: StreamOptions,
    open: impl FnOnce(ProviderContext, StreamOptions) -> ProviderStream,
) -> Result<AssistantMessage, SpendRefused> {
    let input_tokens = request_tokens(&context);
    let hold = admit(gate, session_id, purpose, model, input_tokens, options.max_tokens).await?;
    let cancel = options.cancel.clone();
    let reply = super::compact::final_message(open(context, options), &cancel).await;
    if let Some(hold) = hold {
        hold.settle(&reply).await;
    }
    Ok(reply)
}

/// Estimated input tokens of a request built outside the turn: its system prompt, messages and
/// tool definitions, about 4 characters per token (no provider count applies to it).
fn request_tokens(context: &ProviderContext) -> u64 {
    let tools: u64 = context
        .tools
        .iter()
        .map(|t| estimate_text_tokens(&serde_json::to_string(t).unwrap_or_default()))
        .sum();
    let messages: u64 = context.messages.iter().map(estimate_tokens).sum();
    estimate_text_tokens(&context.system_prompt) + tools + messages
}
