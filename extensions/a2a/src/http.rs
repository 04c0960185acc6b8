//! HTTP under the client: one reqwest client with no automatic redirects, so that each hop of a
//! redirect gets only the credential bound to its own origin; bodies read with a size cap;
//! every call bounded in time.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, LOCATION};
use reqwest::{Method, StatusCode};
use url::Url;

use crate::config::{A2aSettings, Credential};
use crate::error::{A2aError, Result};

/// Largest JSON body taken from an agent.
pub const MAX_BODY: usize = 4 * 1024 * 1024;
/// Largest agent card taken.
pub const MAX_CARD: usize = 256 * 1024;
/// Largest SSE stream taken, all events together.
pub const MAX_STREAM: usize = 16 * 1024 * 1024;
/// Redirects followed per call.
const MAX_REDIRECTS: usize = 5;

/// The HTTP client of the A2A client.
#[derive(Debug, Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
    settings: Arc<A2aSettings>,
}

/// A request to send, re-sent as it is on each redirect hop.
pub(crate) struct Request {
    pub method: Method,
    pub url: Url,
    pub headers: HeaderMap,
    pub body: Option<Vec<u8>>,
}

impl Http {
    /// A client with the settings' connect timeout and no automatic redirects.
    pub(crate) fn new(settings: Arc<A2aSettings>) -> Result<Self> {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| A2aError::Transport {
                url: String::new(),
                reason: format!("HTTP client: {e}"),
            })?;
        Ok(Self { client, settings })
    }

    /// The settings in use.
    pub(crate) fn settings(&self) -> &A2aSettings {
        &self.settings
    }

    /// Sends `req`, following up to five redirects by hand (307/308 for any method; 301, 302,
    /// 303 only for GET). Each hop carries the credential of its own origin and no other.
    /// Returns the final URL and the response (status not checked).
    pub(crate) async fn send(&self, req: Request) -> Result<(Url, reqwest::Response)> {
        let mut url = req.url;
        for _ in 0..=MAX_REDIRECTS {
            let mut builder = self
                .client
                .request(req.method.clone(), url.clone())
                .headers(req.headers.clone());
            if let Some(credential) = self.settings.credential_for(&url) {
                builder = with_credential(builder, credential);
            }
            if let Some(body) = &req.body {
                builder = builder.body(body.clone());
            }
            let resp = builder.send().await.map_err(|e| transport(&url, &e))?;
            let status = resp.status();
            let follow = match status {
                StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT => true,
                StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND | StatusCode::SEE_OTHER => req.method == Method::GET,
                _ => false,
            };
            let location = resp.headers().get(LOCATION).and_then(|l| l.to_str().ok());
            match (follow, location) {
                (true, Some(location)) => {
                    url = url.join(location).map_err(|e| A2aError::Transport {
                        url: url.to_string(),
                        reason: format!("redirect to a bad address `{location}`: {e}"),
                    })?;
                }
                _ if status.is_redirection() && status != StatusCode::NOT_MODIFIED => {
                    return Err(A2aError::Transport {
                        url: url.to_string(),
                        reason: format!(
                            "HTTP {} redirect not followed for a {} call",
                            status.as_u16(),
                            req.method
                        ),
                    });
                }
                _ => return Ok((url, resp)),
            }
        }
        Err(A2aError::Transport {
            url: url.to_string(),
            reason: format!("more than {MAX_REDIRECTS} redirects"),
        })
    }

    /// [`Http::send`] and the whole body (at most `cap` bytes), within the call timeout.
    pub(crate) async fn fetch(&self, req: Request, cap: usize) -> Result<(Url, StatusCode, HeaderMap, Bytes)> {
        let shown = req.url.to_string();
        let work = async {
            let (url, resp) = self.send(req).await?;
            let status = resp.status();
            let headers = resp.headers().clone();
            let body = read_capped(&url, resp, cap).await?;
            Ok((url, status, headers, body))
        };
        bounded(self.settings.call_timeout, &shown, work).await
    }
}

/// Runs `work` within `limit`, else a timeout error naming `url`.
pub(crate) async fn bounded<T>(limit: Duration, url: &str, work: impl Future<Output = Result<T>>) -> Result<T> {
    tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
        Err(A2aError::Transport {
            url: url.to_owned(),
            reason: format!("no complete answer within {} s", limit.as_secs()),
        })
    })
}

fn with_credential(builder: reqwest::RequestBuilder, credential: &Credential) -> reqwest::RequestBuilder {
    match credential {
        Credential::Bearer(token) => builder.bearer_auth(token),
        Credential::Header { name, value } => match (HeaderName::try_from(name.as_str()), HeaderValue::try_from(value))
        {
            (Ok(n), Ok(mut v)) => {
                v.set_sensitive(true);
                builder.header(n, v)
            }
            _ => builder,
        },
    }
}

fn transport(url: &Url, e: &reqwest::Error) -> A2aError {
    let mut reason = volcanic_abstractions::errors::error_chain(e);
    if e.is_connect() {
        reason = format!("cannot connect ({reason})");
    }
    A2aError::Transport {
        url: url.to_string(),
        reason,
    }
}

/// The body of `resp`, refused past `cap` bytes (a declared length is checked first).
pub(crate) async fn read_capped(url: &Url, resp: reqwest::Response, cap: usize) -> Result<Bytes> {
    if resp.content_length().is_some_and(|n| n > cap as u64) {
        return Err(too_big(cap));
    }
    let mut out = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| transport(url, &e))?;
        if out.len() + chunk.len() > cap {
            return Err(too_big(cap));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(out))
}

fn too_big(cap: usize) -> A2aError {
    A2aError::Malformed(format!("body larger than {} KiB", cap / 1024))
}

/// The byte stream of `resp`, ending with an error once more than `cap` bytes came.
pub(crate) fn capped_stream(
    url: Url,
    resp: reqwest::Response,
    cap: usize,
) -> impl Stream<Item = std::result::Result<Bytes, A2aError>> + Send + 'static {
    let mut seen = 0usize;
    resp.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(|e| transport(&url, &e))?;
        seen += chunk.len();
        if seen > cap { Err(too_big(cap)) } else { Ok(chunk) }
    })
}
