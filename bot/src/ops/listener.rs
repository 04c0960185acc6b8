//! `GET /metrics` on its own listener (`[metrics] listen`), apart from the bot's public HTTP
//! listener, so a scrape never shares limits or routes with webhooks and A2A callers. With
//! `token_env` set, every request must carry `Authorization: Bearer <token>` (compared by
//! SHA-256 digest, in time independent of where the bytes differ); others get 401 without a
//! body worth reading. It is served within the same `[http.limits]` as the main listener.

use crate::config::{Config, MetricsConfig};
use anyhow::Context;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The expected token's digest, when one is required.
#[derive(Clone)]
struct Guard {
    token: Option<Arc<[u8; 32]>>,
}

impl Guard {
    /// Whether `headers` carry the bearer token (always, when none is configured).
    fn admits(&self, headers: &HeaderMap) -> bool {
        let Some(expected) = &self.token else { return true };
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            });
        let Some(presented) = presented else { return false };
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        digest
            .iter()
            .zip(expected.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

/// The router: `GET /metrics` only.
fn router(config: &MetricsConfig) -> axum::Router {
    let guard = Guard {
        token: config
            .token
            .as_ref()
            .map(|t| Arc::new(Sha256::digest(t.as_bytes()).into())),
    };
    axum::Router::new().route(
        "/metrics",
        axum::routing::get(move |headers: HeaderMap| {
            let guard = guard.clone();
            async move { scrape(&guard, &headers) }
        }),
    )
}

fn scrape(guard: &Guard, headers: &HeaderMap) -> Response {
    if !guard.admits(headers) {
        let mut r = (
            StatusCode::UNAUTHORIZED,
            "missing or wrong bearer token (see [metrics] token_env)\n",
        )
            .into_response();
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"metrics\""),
        );
        return r;
    }
    let body = super::metrics::encode();
    (
        [(
            header::CONTENT_TYPE,
            prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        )],
        body,
    )
        .into_response()
}

/// With `[metrics]` in `config`: turns metrics on and serves them on `[metrics] listen` (within
/// `[http.limits]`) until `stop` is cancelled; `None` (nothing started) without the section.
/// Errors: the address cannot be bound (named with its config key).
pub async fn start_configured(config: &Config, stop: CancellationToken) -> anyhow::Result<Option<JoinHandle<()>>> {
    let Some(metrics) = &config.metrics else {
        return Ok(None);
    };
    super::metrics::install(config.workspaces_dir.clone());
    let listener = tokio::net::TcpListener::bind(metrics.listen)
        .await
        .with_context(|| format!("config key `metrics.listen`: cannot listen on {}", metrics.listen))?;
    let auth = if metrics.token.is_some() {
        "bearer token required"
    } else {
        "no token"
    };
    tracing::info!("metrics on http://{}/metrics ({auth})", metrics.listen);
    Ok(Some(crate::http::serve(
        listener,
        router(metrics),
        config.http_limits,
        stop,
    )))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn headers(auth: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(a) = auth {
            h.insert(header::AUTHORIZATION, HeaderValue::from_str(a).unwrap());
        }
        h
    }

    #[test]
    fn the_token_is_required_when_configured() {
        let open = Guard { token: None };
        assert!(open.admits(&headers(None)));
        let guard = Guard {
            token: Some(Arc::new(Sha256::digest(b"0123456789abcdef").into())),
        };
        assert!(guard.admits(&headers(Some("Bearer 0123456789abcdef"))));
        assert!(guard.admits(&headers(Some("bearer  0123456789abcdef "))));
        assert!(!guard.admits(&headers(None)));
        assert!(!guard.admits(&headers(Some("Bearer 0123456789abcdeX"))));
        assert!(!guard.admits(&headers(Some("Basic 0123456789abcdef"))));
        assert_eq!(scrape(&guard, &headers(None)).status(), StatusCode::UNAUTHORIZED);
    }
}
