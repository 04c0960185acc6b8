//! Failover (docs/providers.md, "Failover"): a model call that failed in a way another provider
//! could answer goes on, in the same turn, with the session's next fallback model
//! (`fallback_models`, `provider/id` keys in order).
//!
//! - What fails over ([`fails_over`]): an error, after the provider's own retries, of the kinds
//!   [`ProviderFailure::Unavailable`] (overloaded, 429, 5xx), [`ProviderFailure::Unauthorized`]
//!   (a refused key or account) and [`ProviderFailure::Unreachable`]. Never an abort or a stop,
//!   a context overflow (compaction's business), a refusal or a rejected request (another model
//!   would be asked the same thing).
//! - The failed message stays in the transcript (normalisation leaves errors out of every
//!   request, so the fallback sees the conversation as on a `/model` switch) and the host hears
//!   [`AgentSessionEvent::ModelFallback`] before the fallback is asked.
//! - The fallback answers the rest of the run (`State::answering`; a tool loop does not pay the
//!   failed provider's retries on every step); the session's model is not changed, and the next
//!   run asks it first again ([`reset`]).

use super::error::SessionError;
use super::inner::Inner;
use super::stream::stream_turn;
use crate::models::{ModelError, ModelRegistry};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::messages::{AssistantMessage, StopReason};
use volcanic_abstractions::model::Model;
use volcanic_abstractions::provider::ProviderFailure;

/// One model call ([`stream_turn`]), going on with the next fallback model while the answer
/// [`fails_over`]. Returns the last answer: a fallback's, or the failure when no model is left.
pub(crate) async fn stream_with_failover(
    inner: &Arc<Inner>,
    system_prompt: &str,
    cancel: &CancellationToken,
    after_overflow: bool,
) -> Result<AssistantMessage, SessionError> {
    // The models asked in this call, in order: the last one gave the answer at hand.
    let mut tried: Vec<String> = asked_now(inner).into_iter().collect();
    let mut answer = stream_turn(inner, system_prompt, cancel, after_overflow).await?;
    while fails_over(&answer, cancel) {
        let Some(next) = next_model(inner, &tried) else { break };
        let to = next.key();
        let from = tried.last().cloned().unwrap_or_default();
        let error_message = answer.error_message.clone().unwrap_or_default();
        tracing::warn!(%from, %to, "model call failed ({error_message}); failing over");
        tried.push(to.clone());
        inner.lock_state().answering = Some(next);
        inner.emit(AgentSessionEvent::ModelFallback {
            from,
            to,
            error_message,
        });
        answer = stream_turn(inner, system_prompt, cancel, after_overflow).await?;
    }
    Ok(answer)
}

/// Ends a run's failover: the next run asks the session's model first.
pub(crate) fn reset(inner: &Inner) {
    inner.lock_state().answering = None;
}

/// Whether another model may answer in place of `a`: an error of a kind another provider could
/// answer (see the module docs), on a call no one stopped.
pub(crate) fn fails_over(a: &AssistantMessage, cancel: &CancellationToken) -> bool {
    if a.stop_reason != StopReason::Error || cancel.is_cancelled() {
        return false;
    }
    let error = a.error_message.as_deref().unwrap_or_default();
    match ProviderFailure::of(error) {
        ProviderFailure::Unavailable | ProviderFailure::Unauthorized { .. } | ProviderFailure::Unreachable => true,
        ProviderFailure::Rejected { .. }
        | ProviderFailure::Refused
        | ProviderFailure::ContextOverflow
        | ProviderFailure::Other => false,
    }
}

/// The next model to ask: the first of the session's fallback models neither tried in this call
/// nor the session's own (it failed already, or answers when the fallback does not), known to
/// the registry and with a key. A fallback that cannot be used is logged and skipped.
fn next_model(inner: &Inner, tried: &[String]) -> Option<Model> {
    let (chain, primary) = {
        let st = inner.lock_state();
        (st.fallback_models.clone(), st.model.as_ref().map(Model::key))
    };
    let models = inner.models.read().unwrap_or_else(|e| e.into_inner());
    let mut skip: Vec<&str> = tried.iter().map(String::as_str).collect();
    skip.extend(primary.as_deref());
    for key in untried(&chain, &skip) {
        match usable(&models, key) {
            Ok(model) => return Some(model),
            Err(e) => tracing::warn!(fallback = %key, "skipping a fallback model: {e}"),
        }
    }
    None
}

/// The model `key` names when a call can be made to it: known to `models` and its provider's
/// key set where it needs one. Errors: [`ModelError::UnknownModel`], or the key's error.
pub(crate) fn usable(models: &ModelRegistry, key: &str) -> Result<Model, ModelError> {
    let model = models.require(key)?;
    models.api_key(&model.provider)?;
    Ok(model)
}

/// `chain`'s keys not in `skip`, in order, each once.
fn untried<'a>(chain: &'a [String], skip: &[&str]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for key in chain {
        if !skip.contains(&key.as_str()) && !out.contains(&key.as_str()) {
            out.push(key);
        }
    }
    out
}

/// `provider/id` of the model the next call asks (as `stream` picks it; the message's own
/// `model` may be the provider's dated name for it).
fn asked_now(inner: &Inner) -> Option<String> {
    let st = inner.lock_state();
    st.answering.as_ref().or(st.model.as_ref()).map(Model::key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(stop: StopReason, error: &str) -> AssistantMessage {
        let mut a = AssistantMessage::empty("anthropic-messages", "anthropic", "claude", 0);
        a.stop_reason = stop;
        a.error_message = Some(error.to_owned());
        a
    }

    #[test]
    fn only_failures_another_provider_could_answer_fail_over() {
        let cases = [
            (
                StopReason::Error,
                "529 overloaded_error: Overloaded (gave up after 4 attempts)",
                true,
            ),
            (StopReason::Error, "500 api_error: internal", true),
            (StopReason::Error, "429 rate_limit_error: slow down", true),
            (StopReason::Error, "401 authentication_error: invalid x-api-key", true),
            (
                StopReason::Error,
                "request to http://127.0.0.1:1/v1 failed: connection refused",
                true,
            ),
            (
                StopReason::Error,
                "no data from the provider for 120 s (idle timeout)",
                true,
            ),
            (
                StopReason::Error,
                "400 invalid_request_error: prompt is too long: 250000 tokens",
                false,
            ),
            (StopReason::Error, "400 invalid_request_error: bad image", false),
            (StopReason::Error, "the model stopped with stop_reason `refusal`", false),
            (StopReason::Error, "something else", false),
            (StopReason::Aborted, "Request was aborted", false),
            (StopReason::Stop, "", false),
        ];
        let live = CancellationToken::new();
        for (stop, error, want) in cases {
            assert_eq!(fails_over(&failed(stop, error), &live), want, "{stop:?} {error:?}");
        }
    }

    #[test]
    fn a_stopped_run_never_fails_over() {
        let stopped = CancellationToken::new();
        stopped.cancel();
        let a = failed(StopReason::Error, "529 overloaded_error: Overloaded");
        assert!(!fails_over(&a, &stopped));
    }

    #[test]
    fn the_chain_skips_what_was_tried_and_repeats() {
        let chain: Vec<String> = ["a/1", "b/2", "a/1", "c/3"].map(String::from).to_vec();
        assert_eq!(untried(&chain, &[]), vec!["a/1", "b/2", "c/3"]);
        assert_eq!(untried(&chain, &["a/1"]), vec!["b/2", "c/3"]);
        assert_eq!(untried(&chain, &["a/1", "b/2", "c/3"]), Vec::<&str>::new());
    }
}
