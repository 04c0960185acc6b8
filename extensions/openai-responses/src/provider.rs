//! [`OpenAiResponsesProvider`]: the shared SSE provider over the Responses API ([`Responses`]),
//! one streamed `POST {base_url}/responses` per call, retried while nothing of the answer was
//! streamed, ending in exactly one `done` or `error` event.

use volcanic_abstractions::Api;
use volcanic_abstractions::provider::ProviderRegistration;
use volcanic_provider_support::{SseProvider, WireApi};

use crate::mapper::Mapper;
use crate::{request, wire};

/// OpenAI Responses provider ([`Api::OpenAiResponses`]), stateless (`store: false`): the shared
/// [`SseProvider`] over [`Responses`] (build it with [`SseProvider::new`] or
/// [`SseProvider::with_config`]).
///
/// One instance holds one HTTP client and may serve any number of concurrent calls. Each call
/// POSTs to `{model.base_url}/responses` (the base URL includes `/v1`) with
/// `authorization: Bearer KEY` when [`StreamOptions::api_key`](volcanic_abstractions::StreamOptions::api_key) is set, `stream: true`,
/// `store: false` and, for reasoning models, `include: ["reasoning.encrypted_content"]` and
/// `reasoning.effort` from the thinking level ([`reasoning_effort`](crate::reasoning_effort)).
///
/// Failures never leave the stream out of band: HTTP errors (`"429 rate_limit_exceeded: ..."`,
/// `"400 context_length_exceeded: ..."`), `error` events, `response.failed`, a content-filtered
/// `response.incomplete`, broken or silent streams and aborts all end the stream with one `error`
/// event. Transient failures (429, 5xx, dropped connections, a `server_error` event or failed
/// response) are retried with backoff honouring `retry-after`, as long as no content block was
/// streamed; see [`ProviderConfig`](volcanic_provider_support::ProviderConfig).
/// `response.incomplete` for `max_output_tokens` ends with stop reason `length`.
pub type OpenAiResponsesProvider = SseProvider<Responses>;

/// The Responses API as [`SseProvider`] speaks it: the endpoint, the bearer key, the request
/// body, the error body and the event mapper.
#[derive(Debug)]
pub struct Responses;

impl WireApi for Responses {
    const NAME: &'static str = "openai-responses";
    const API: Api = Api::OpenAiResponses;
    type Mapper = Mapper;
    const PATH: &'static str = "/responses";

    type Body<'a> = request::Body<'a>;

    fn error_body(text: &str) -> Option<(Option<String>, Option<String>)> {
        wire::error_body(text)
    }
}

/// The Responses API for the model registry: the provider `openai-responses`, with no catalogue
/// and no key of its own. The `openai` catalogue's reasoning models (`volcanic-openai`) and
/// `[providers.*]` sections with `api = "openai-responses"` are served by it.
///
/// # Errors
/// When the HTTP client cannot be built (TLS set-up).
pub fn registration() -> crate::Result<ProviderRegistration> {
    volcanic_provider_support::registration::<Responses>("openai-responses", Vec::new(), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn endpoint_appends_responses() {
        assert_eq!(
            Responses::endpoint("https://api.openai.com/v1/"),
            "https://api.openai.com/v1/responses"
        );
    }

    #[test]
    fn provider_is_send_sync_static() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<OpenAiResponsesProvider>();
    }
}
