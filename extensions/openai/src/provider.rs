//! [`OpenAiCompletionsProvider`]: the shared SSE provider over the Chat Completions API
//! ([`ChatCompletions`]), one streamed `POST {base_url}/chat/completions` per call, retried
//! while nothing of the answer was streamed, ending in exactly one `done` or `error` event.

use volcanic_abstractions::Api;
use volcanic_provider_support::{SseProvider, WireApi};

use crate::mapper::Mapper;
use crate::{request, wire};

/// OpenAI Chat Completions provider ([`Api::OpenAiCompletions`]), for OpenAI and compatible
/// servers (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter): the shared [`SseProvider`] over
/// [`ChatCompletions`] (build it with [`SseProvider::new`] or [`SseProvider::with_config`]).
///
/// One instance holds one HTTP client (connections are reused) and may serve any number of
/// concurrent calls. Each call POSTs to `{model.base_url}/chat/completions` (the base URL
/// includes `/v1`) with `authorization: Bearer KEY` when [`StreamOptions::api_key`](volcanic_abstractions::StreamOptions::api_key) is set
/// (local servers take none), `stream: true` and `stream_options.include_usage`.
///
/// Failures never leave the stream out of band: HTTP errors
/// (`"429 rate_limit_exceeded: ..."`), broken or silent streams, in-stream error chunks and
/// aborts all end the stream with one `error` event carrying the partial message,
/// `stopReason` `error` (or `aborted` when [`StreamOptions::cancel`](volcanic_abstractions::StreamOptions::cancel) fired) and the provider's
/// message in `errorMessage`. Transient failures (429, 5xx, refused or reset connections, a
/// stream that breaks off) are retried with exponential backoff, honouring `retry-after-ms` /
/// `retry-after`, as long as no content block was streamed; see
/// [`ProviderConfig`](volcanic_provider_support::ProviderConfig).
///
/// Malformed tool arguments: a tool call whose streamed `arguments` text is not valid JSON
/// gets `arguments` = that raw text as a JSON **string** (not an object). Validating it
/// against the tool's object schema then fails with a clear "not an object" error that the
/// agent reports to the model, and the raw text goes back to the server unchanged in the
/// transcript. Empty arguments become `{}`.
pub type OpenAiCompletionsProvider = SseProvider<ChatCompletions>;

/// The Chat Completions API as [`SseProvider`] speaks it: the endpoint, the bearer key, the
/// request body, the error body and the event mapper.
#[derive(Debug)]
pub struct ChatCompletions;

impl WireApi for ChatCompletions {
    const NAME: &'static str = "openai-completions";
    const API: Api = Api::OpenAiCompletions;
    type Mapper = Mapper;
    const PATH: &'static str = "/chat/completions";

    type Body<'a> = request::Body<'a>;

    fn error_body(text: &str) -> Option<(Option<String>, Option<String>)> {
        wire::error_body(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use volcanic_abstractions::StreamOptions;

    #[test]
    fn endpoint_appends_chat_completions() {
        assert_eq!(
            ChatCompletions::endpoint("https://api.openai.com/v1"),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            ChatCompletions::endpoint("http://127.0.0.1:11434/v1/"),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
    }

    #[test]
    fn headers_carry_the_bearer_key_only_when_set() {
        let options = StreamOptions {
            api_key: Some("sk-1".into()),
            headers: vec![
                ("openai-organization".into(), "org".into()),
                ("bad header".into(), "v".into()),
            ],
            ..StreamOptions::default()
        };
        let map = ChatCompletions::headers(&options);
        assert_eq!(
            map.get("authorization").map(|v| v.as_bytes()),
            Some(&b"Bearer sk-1"[..])
        );
        assert_eq!(map.get("openai-organization").map(|v| v.as_bytes()), Some(&b"org"[..]));
        assert_eq!(map.len(), 4);
        let local = StreamOptions {
            api_key: Some(String::new()),
            ..StreamOptions::default()
        };
        assert!(ChatCompletions::headers(&local).get("authorization").is_none());
        assert!(
            ChatCompletions::headers(&StreamOptions::default())
                .get("authorization")
                .is_none()
        );
    }

    #[test]
    fn provider_is_send_sync_static() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<OpenAiCompletionsProvider>();
        assert_send_sync::<crate::OpenAiError>();
    }
}
