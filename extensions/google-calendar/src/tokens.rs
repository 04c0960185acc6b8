//! Talking to Google's OAuth endpoints: the code exchange and revocation (plain form posts),
//! and the refresh, done by `yup-oauth2` (its `InstalledFlowAuthenticator` with a one-chat
//! token storage and `ApplicationSecret.token_uri` from `[google] token_url`).
//!
//! yup-oauth2 12 keeps the old refresh token when a refresh answer has none (`refresh.rs`), as
//! Google's answers usually have none. It does not report why a refresh failed: on any failure
//! it falls back to its interactive flow (`authenticator.rs`, `find_token_info`), which our
//! delegate refuses. So after a failed refresh one plain refresh request tells `invalid_grant`
//! (the chat must reconnect; never retried) from a transient failure.

use std::pin::Pin;
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;
use yup_oauth2::authenticator_delegate::InstalledFlowDelegate;
use yup_oauth2::storage::{TokenInfo, TokenStorage, TokenStorageError};
use yup_oauth2::{ApplicationSecret, CustomHyperClientBuilder, InstalledFlowAuthenticator, InstalledFlowReturnMethod};

use crate::config::GoogleConfig;
use crate::error::{CalendarError, Result};
use crate::flow::SCOPES;

/// The hyper connector for yup-oauth2 and google-calendar3: rustls with ring and the webpki
/// roots; plain `http` allowed (a double on 127.0.0.1).
pub(crate) type Connector = HttpsConnector<HttpConnector>;

/// Builds the connector.
pub(crate) fn connector() -> Result<Connector> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_webpki_roots(provider)
        .map_err(|e| CalendarError::Transient(format!("TLS setup: {e}")))?;
    Ok(builder.https_or_http().enable_http1().build())
}

/// A token endpoint answer (RFC 6749 §5.1; Google adds `id_token` and `scope`).
#[derive(Deserialize)]
pub(crate) struct TokenAnswer {
    pub(crate) access_token: String,
    pub(crate) expires_in: Option<i64>,
    pub(crate) refresh_token: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) id_token: Option<String>,
}

/// An OAuth error answer (RFC 6749 §5.2).
#[derive(Debug, Deserialize)]
struct ErrorAnswer {
    error: String,
    error_description: Option<String>,
}

/// The email claim of an ID token. The token came straight from Google's token endpoint over
/// TLS, so its signature need not be checked (Google Identity, "OpenID Connect": "Validating an
/// ID token").
pub(crate) fn email_of(id_token: &str) -> Option<String> {
    let payload = id_token.split('.').nth(1)?;
    let claims: serde_json::Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    claims["email"].as_str().map(str::to_owned)
}

fn form(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

async fn post_form(http: &reqwest::Client, url: &str, pairs: &[(&str, &str)]) -> Result<(u16, String)> {
    let response = http
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(pairs))
        .send()
        .await
        .map_err(|e| CalendarError::Transient(e.without_url().to_string()))?;
    let status = response.status().as_u16();
    let text = response
        .text()
        .await
        .map_err(|e| CalendarError::Transient(e.to_string()))?;
    Ok((status, text))
}

fn oauth_error(text: &str) -> String {
    match serde_json::from_str::<ErrorAnswer>(text) {
        Ok(e) => match e.error_description {
            Some(d) => format!("{} ({d})", e.error),
            None => e.error,
        },
        Err(_) => "unreadable answer".into(),
    }
}

/// Exchanges an authorization code (with its PKCE verifier) for tokens.
pub(crate) async fn exchange(
    http: &reqwest::Client,
    config: &GoogleConfig,
    code: &str,
    verifier: &str,
    redirect_uri: &str,
) -> Result<TokenAnswer> {
    let (status, text) = post_form(
        http,
        &config.token_url,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", &config.client_id),
            ("client_secret", &config.client_secret),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
        ],
    )
    .await?;
    if status != 200 {
        return Err(CalendarError::Exchange(oauth_error(&text)));
    }
    serde_json::from_str(&text).map_err(|e| CalendarError::Exchange(format!("unreadable token answer: {e}")))
}

/// Revokes a token at Google (RFC 7009 as Google serves it: `POST /revoke`, form `token`).
pub(crate) async fn revoke(http: &reqwest::Client, config: &GoogleConfig, token: &str) -> Result<()> {
    let (status, text) = post_form(http, &config.revoke_url, &[("token", token)]).await?;
    if status == 200 {
        Ok(())
    } else {
        Err(CalendarError::Exchange(oauth_error(&text)))
    }
}

/// Holds one chat's token for yup-oauth2 and keeps what it stores.
struct OneChat {
    current: Option<TokenInfo>,
    saved: Mutex<Option<TokenInfo>>,
}

#[async_trait::async_trait]
impl TokenStorage for OneChat {
    async fn set(&self, _scopes: &[&str], token: TokenInfo) -> std::result::Result<(), TokenStorageError> {
        *self.saved.lock().unwrap_or_else(|p| p.into_inner()) = Some(token);
        Ok(())
    }

    async fn get(&self, _scopes: &[&str]) -> Option<TokenInfo> {
        self.current.clone()
    }
}

/// Refuses yup-oauth2's interactive fallback: a chat signs in only through `/calendar connect`.
struct NoInteractiveSignIn;

impl InstalledFlowDelegate for NoInteractiveSignIn {
    fn present_user_url<'a>(
        &'a self,
        _url: &'a str,
        _need_code: bool,
    ) -> Pin<Box<dyn Future<Output = std::result::Result<String, String>> + Send + 'a>> {
        Box::pin(async { Err("refresh failed; no interactive sign-in here".to_owned()) })
    }
}

/// A refreshed access token.
#[derive(Clone)]
pub(crate) struct Refreshed {
    pub(crate) access_token: String,
    pub(crate) refresh_token: Option<String>,
    /// Unix seconds.
    pub(crate) expires_at: i64,
}

impl std::fmt::Debug for Refreshed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Refreshed")
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for TokenAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenAnswer")
            .field("expires_in", &self.expires_in)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// Refreshes through yup-oauth2 (on failure, one plain request classifies it), within
/// `[google]`'s timeout: a hanging token endpoint fails the call instead of holding the chat.
pub(crate) async fn refresh(
    http: &reqwest::Client,
    connector: &Connector,
    config: &GoogleConfig,
    refresh_token: &str,
) -> Result<Refreshed> {
    tokio::time::timeout(config.timeout, refresh_now(http, connector, config, refresh_token))
        .await
        .map_err(|_| {
            CalendarError::Transient(format!(
                "Google's token endpoint did not answer within {} s",
                config.timeout.as_secs_f32()
            ))
        })?
}

async fn refresh_now(
    http: &reqwest::Client,
    connector: &Connector,
    config: &GoogleConfig,
    refresh_token: &str,
) -> Result<Refreshed> {
    let secret = ApplicationSecret {
        client_id: config.client_id.clone(),
        client_secret: config.client_secret.clone(),
        token_uri: config.token_url.clone(),
        auth_uri: config.auth_url.clone(),
        redirect_uris: vec![config.redirect_uri()],
        ..ApplicationSecret::default()
    };
    let storage = Arc::new(OneChat {
        current: Some(TokenInfo {
            access_token: None,
            refresh_token: Some(refresh_token.to_owned()),
            expires_at: Some(time::OffsetDateTime::UNIX_EPOCH),
            id_token: None,
        }),
        saved: Mutex::new(None),
    });
    let client = Client::builder(TokioExecutor::new()).build::<_, String>(connector.clone());
    let auth = InstalledFlowAuthenticator::with_client(
        secret,
        InstalledFlowReturnMethod::Interactive,
        CustomHyperClientBuilder::from(client),
    )
    .with_timeout(config.timeout)
    .with_storage(Box::new(SharedStorage(storage.clone())))
    .flow_delegate(Box::new(NoInteractiveSignIn))
    .build()
    .await
    .map_err(|e| CalendarError::Transient(format!("OAuth client setup: {e}")))?;
    if auth.token(SCOPES).await.is_ok()
        && let Some(token) = storage.saved.lock().unwrap_or_else(|p| p.into_inner()).clone()
        && let Some(access_token) = token.access_token
    {
        return Ok(Refreshed {
            access_token,
            refresh_token: token.refresh_token,
            expires_at: token.expires_at.map_or(0, |t| t.unix_timestamp()),
        });
    }
    classify(http, config, refresh_token).await
}

/// The plain refresh that tells why yup-oauth2's failed.
async fn classify(http: &reqwest::Client, config: &GoogleConfig, refresh_token: &str) -> Result<Refreshed> {
    let (status, text) = post_form(
        http,
        &config.token_url,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", &config.client_id),
            ("client_secret", &config.client_secret),
        ],
    )
    .await?;
    if status == 200 {
        let answer: TokenAnswer = serde_json::from_str(&text)
            .map_err(|e| CalendarError::Transient(format!("unreadable token answer: {e}")))?;
        return Ok(Refreshed {
            access_token: answer.access_token,
            refresh_token: answer.refresh_token.or_else(|| Some(refresh_token.to_owned())),
            expires_at: expiry(chrono::Utc::now().timestamp(), answer.expires_in),
        });
    }
    match serde_json::from_str::<ErrorAnswer>(&text) {
        Ok(e) if e.error == "invalid_grant" => Err(CalendarError::NeedsReconnect),
        _ => Err(CalendarError::Transient(format!(
            "token refresh failed with HTTP {status}: {}",
            oauth_error(&text)
        ))),
    }
}

/// When a token given `expires_in` seconds ago at `now` expires: Google's value (default an
/// hour) bounded to a day, so a wild answer cannot overflow or keep a token forever.
pub(crate) fn expiry(now: i64, expires_in: Option<i64>) -> i64 {
    now.saturating_add(expires_in.unwrap_or(3600).clamp(0, 86_400))
}

/// Lets the authenticator own a handle while we keep one.
struct SharedStorage(Arc<OneChat>);

#[async_trait::async_trait]
impl TokenStorage for SharedStorage {
    async fn set(&self, scopes: &[&str], token: TokenInfo) -> std::result::Result<(), TokenStorageError> {
        self.0.set(scopes, token).await
    }

    async fn get(&self, scopes: &[&str]) -> Option<TokenInfo> {
        self.0.get(scopes).await
    }
}

#[cfg(test)]
mod tests {
    use super::expiry;

    #[test]
    fn debug_output_hides_tokens() {
        let answer: super::TokenAnswer = serde_json::from_str(
            r#"{"access_token": "ya29.secret", "refresh_token": "1//secret", "id_token": "a.b.c", "expires_in": 5}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let refreshed = super::Refreshed {
            access_token: "ya29.other".into(),
            refresh_token: Some("1//other".into()),
            expires_at: 1,
        };
        let shown = format!("{answer:?} {refreshed:?}");
        assert!(
            !shown.contains("secret") && !shown.contains("other") && !shown.contains("a.b.c"),
            "{shown}"
        );
    }

    #[test]
    fn a_wild_expires_in_neither_overflows_nor_lasts() {
        assert_eq!(expiry(1_000, Some(3599)), 4_599);
        assert_eq!(expiry(1_000, None), 4_600);
        assert_eq!(expiry(1_000, Some(i64::MAX)), 87_400);
        assert_eq!(expiry(1_000, Some(-5)), 1_000);
        assert_eq!(expiry(i64::MAX, Some(10)), i64::MAX);
    }
}
