//! [`AnthropicProvider`]: the shared SSE provider over the Messages API ([`Messages`]), one
//! streamed `POST {base_url}/v1/messages` per call, retried while nothing of the answer was
//! streamed, ending in exactly one `done` or `error` event.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use volcanic_abstractions::Api;
use volcanic_provider_support::{SseProvider, WireApi};

use crate::mapper::Mapper;
use crate::{request, wire};

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Anthropic Messages API provider ([`Api::AnthropicMessages`]), for Anthropic itself and any
/// compatible server: the shared [`SseProvider`] over [`Messages`] (build it with
/// [`SseProvider::new`] or [`SseProvider::with_config`]).
///
/// One instance holds one HTTP client (connections are reused) and may serve any number of
/// concurrent calls. Each call POSTs to `{model.base_url}/v1/messages` (a base URL already
/// ending in `/v1` gets `/messages`) with `x-api-key` (from [`StreamOptions::api_key`](volcanic_abstractions::StreamOptions::api_key)),
/// `anthropic-version: 2023-06-01` and `stream: true`.
///
/// Failures never leave the stream out of band: HTTP errors (`"429 rate_limit_error: ..."`),
/// broken or silent streams, in-stream `error` events and aborts all end the stream with one
/// `error` event carrying the partial message, `stopReason` `error` (or `aborted` when
/// [`StreamOptions::cancel`](volcanic_abstractions::StreamOptions::cancel) fired) and the provider's message in `errorMessage`. Transient
/// failures (429, 5xx, 529 / `overloaded_error`, refused or reset connections, a stream that
/// breaks off) are retried with exponential backoff, honouring `retry-after-ms` /
/// `retry-after`, as long as no content block was streamed; see
/// [`ProviderConfig`](volcanic_provider_support::ProviderConfig).
///
/// A tool call whose streamed input is not valid JSON gets `arguments` = the raw text as a
/// JSON string (not an object), so the agent's schema check reports it to the model.
pub type AnthropicProvider = SseProvider<Messages>;

/// The Messages API as [`SseProvider`] speaks it: the endpoint, the `x-api-key` and
/// `anthropic-version` headers, the request body, the error body and the event mapper.
#[derive(Debug)]
pub struct Messages;

impl WireApi for Messages {
    const NAME: &'static str = "anthropic";
    const API: Api = Api::AnthropicMessages;
    type Mapper = Mapper;
    const PATH: &'static str = "/v1/messages";

    /// `{base}/v1/messages`, or `{base}/messages` when the base already ends in `/v1`.
    fn endpoint(base_url: &str) -> String {
        let base = base_url.trim_end_matches('/');
        if base.ends_with("/v1") {
            format!("{base}/messages")
        } else {
            format!("{base}{}", Self::PATH)
        }
    }

    fn key_header(key: &str) -> (HeaderName, String) {
        (HeaderName::from_static("x-api-key"), key.to_owned())
    }

    fn fixed_headers(map: &mut HeaderMap) {
        map.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
    }

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
    fn endpoint_appends_the_messages_path_once() {
        assert_eq!(
            Messages::endpoint("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            Messages::endpoint("http://127.0.0.1:9/"),
            "http://127.0.0.1:9/v1/messages"
        );
        assert_eq!(Messages::endpoint("http://proxy/v1"), "http://proxy/v1/messages");
    }

    #[test]
    fn headers_carry_key_version_and_extras() {
        let options = StreamOptions {
            api_key: Some("sk-ant-1".into()),
            headers: vec![("anthropic-beta".into(), "x".into()), ("bad header".into(), "v".into())],
            ..StreamOptions::default()
        };
        let map = Messages::headers(&options);
        assert_eq!(map.get("x-api-key").map(|v| v.as_bytes()), Some(&b"sk-ant-1"[..]));
        assert_eq!(
            map.get("anthropic-version").map(|v| v.as_bytes()),
            Some(&b"2023-06-01"[..])
        );
        assert_eq!(map.get("anthropic-beta").map(|v| v.as_bytes()), Some(&b"x"[..]));
        assert_eq!(map.len(), 5);
        let keyless = Messages::headers(&StreamOptions::default());
        assert!(keyless.get("x-api-key").is_none());
    }

    #[test]
    fn provider_is_send_sync_static() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<AnthropicProvider>();
        assert_send_sync::<crate::AnthropicError>();
    }
}
