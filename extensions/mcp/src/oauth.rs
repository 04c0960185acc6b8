//! OAuth for remote servers (MCP 2025-11-25, "Authorization"), on rmcp's `auth`: the server's
//! protected-resource metadata (RFC 9728, from its 401 challenge or the well-known paths), its
//! authorization server's metadata (RFC 8414 / OpenID discovery), a pre-registered client or
//! dynamic client registration (RFC 7591), the authorization code with PKCE (S256) and the
//! `resource` indicator (RFC 8707), and refresh. Tokens live in one file per chat and server
//! ([`TokenFile`], mode 0600, written atomically, never in a workspace), every token value given
//! to the redactor; logout revokes (RFC 7009) where the authorization server offers it.

use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationRequest, CredentialStore, OAuthState, StoredCredentials,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use volcanic_abstractions::processes::SecretRedactor;

/// What went wrong in a sign-in, a token refresh or a logout.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// Discovery, registration, the code exchange or a refresh failed.
    #[error("{0}")]
    Auth(#[from] AuthError),
    /// The token file could not be read or written.
    #[error("token file {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// There is no sign-in to use.
    #[error("not signed in")]
    NotSignedIn,
}

/// A pre-registered client (config `oauth = { client_id, client_secret, scopes }`); without a
/// client id the client registers itself (dynamic client registration).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientSpec {
    /// The id the authorization server gave this bot.
    pub client_id: Option<String>,
    /// Its secret, for a confidential client (resolved from the host environment).
    pub client_secret: Option<String>,
    /// Scopes to ask for; empty: chosen from the challenge or the server's metadata.
    pub scopes: Vec<String>,
    /// An HTTPS address where this bot's client metadata document is published (SEP-991): used
    /// as the client id by authorization servers that support it, before registration.
    pub client_metadata_url: Option<String>,
}

/// One chat's tokens for one server: a JSON file (rmcp's `StoredCredentials`), mode 0600,
/// replaced atomically; each token value is added to the redactor when read or written.
#[derive(Clone)]
pub struct TokenFile {
    path: PathBuf,
    redactor: Arc<dyn SecretRedactor>,
}

impl std::fmt::Debug for TokenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenFile")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl TokenFile {
    /// The file `<dir>/<chat>/<server>.json` (`dir` under the bot's `state_dir`).
    pub fn new(dir: &Path, chat: &str, server: &str, redactor: Arc<dyn SecretRedactor>) -> Self {
        TokenFile {
            path: dir.join(chat).join(format!("{server}.json")),
            redactor,
        }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether it holds tokens.
    pub fn exists(&self) -> bool {
        self.path.is_file()
    }

    fn file_error(&self, source: std::io::Error) -> AuthError {
        AuthError::CredentialStoreError(format!("{}: {source}", self.path.display()))
    }

    fn protect(&self, c: &StoredCredentials) {
        if let Some(t) = &c.token_response {
            use oauth2::TokenResponse;
            self.redactor.add_secret(t.access_token().secret());
            if let Some(r) = t.refresh_token() {
                self.redactor.add_secret(r.secret());
            }
        }
    }

    /// The stored credentials, if any (read outside the SDK: logout).
    pub fn read(&self) -> Result<Option<StoredCredentials>, OAuthError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => {
                let c: StoredCredentials = serde_json::from_slice(&bytes).map_err(|e| OAuthError::File {
                    path: self.path.clone(),
                    source: std::io::Error::other(e),
                })?;
                self.protect(&c);
                Ok(Some(c))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(OAuthError::File {
                path: self.path.clone(),
                source,
            }),
        }
    }

    fn write(&self, c: &StoredCredentials) -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let tmp = self.path.with_extension("json.tmp");
        let body = serde_json::to_vec(c).map_err(std::io::Error::other)?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(&body)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &self.path)
    }

    /// Deletes it (a missing file is fine).
    pub fn delete(&self) -> Result<(), OAuthError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(OAuthError::File {
                path: self.path.clone(),
                source,
            }),
        }
    }
}

#[async_trait::async_trait]
impl CredentialStore for TokenFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.read().map_err(|e| AuthError::CredentialStoreError(e.to_string()))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.protect(&credentials);
        self.write(&credentials).map_err(|e| self.file_error(e))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.delete()
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))
    }
}

/// A sign-in under way: the address the user opens; [`Login::finish`] takes the address the
/// authorization server sent the browser back to.
pub struct Login {
    state: OAuthState,
    url: String,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login").finish_non_exhaustive()
    }
}

impl Login {
    /// Starts a sign-in to the server at `server_url` (its MCP endpoint): discovery from
    /// `challenge` (a 401's `WWW-Authenticate`, when known) or the well-known paths, then the
    /// client (`client`, or dynamic registration) and the authorization address with PKCE.
    /// Tokens go to `store` when it finishes.
    pub async fn begin(
        server_url: &str,
        client: &ClientSpec,
        redirect_uri: &str,
        challenge: Option<&str>,
        store: TokenFile,
    ) -> Result<Login, OAuthError> {
        let mut manager = AuthorizationManager::new(server_url).await?;
        manager.set_credential_store(store);
        let mut state = OAuthState::Unauthorized(manager);
        let mut request = AuthorizationRequest::new(redirect_uri).with_client_name("Volcanic");
        if let Some(id) = &client.client_id {
            request = request.with_preregistered_client(id);
            if let Some(secret) = &client.client_secret {
                request = request.with_client_secret(secret);
            }
        }
        if let Some(u) = &client.client_metadata_url {
            request = request.with_client_metadata_url(u);
        }
        if !client.scopes.is_empty() {
            request = request.with_scopes(client.scopes.iter().map(String::as_str));
        }
        if let Some(c) = challenge {
            request = request.with_challenge(c);
        }
        state.start_authorization(request).await?;
        let url = match &state {
            OAuthState::Session(s) => s.get_authorization_url().to_owned(),
            _ => {
                return Err(OAuthError::Auth(AuthError::InternalError(
                    "no authorization session".into(),
                )));
            }
        };
        Ok(Login { state, url })
    }

    /// The address the user opens to sign in.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The `state` parameter of the address (matches the callback to this sign-in).
    pub fn state_param(&self) -> Option<String> {
        url_param(&self.url, "state")
    }

    /// Finishes with the address the browser was sent back to (`code`, `state`, `iss`): the
    /// code is exchanged (with the PKCE verifier) and the tokens saved.
    pub async fn finish(self, callback_url: &str) -> Result<(), OAuthError> {
        match &self.state {
            OAuthState::Session(s) => {
                s.handle_callback_url(callback_url).await?;
                Ok(())
            }
            _ => Err(OAuthError::Auth(AuthError::InternalError(
                "no authorization session".into(),
            ))),
        }
    }
}

/// The `WWW-Authenticate` challenge the server at `server_url` answers an unauthenticated
/// `initialize` with (401 or 403), if it does: it names the protected-resource metadata when
/// that is not at a well-known path (RFC 9728 §5.1).
pub async fn probe_challenge(server_url: &str) -> Option<String> {
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "volcanic", "version": env!("CARGO_PKG_VERSION")},
        },
    });
    let answer = reqwest::Client::new()
        .post(server_url)
        .header(http::header::ACCEPT, "application/json, text/event-stream")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(body.to_string())
        .timeout(std::time::Duration::from_secs(15))
        .send()
        .await
        .ok()?;
    if !matches!(answer.status().as_u16(), 401 | 403) {
        return None;
    }
    answer
        .headers()
        .get(http::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Scopes for a new sign-in after a 403 `insufficient_scope` (MCP 2025-11-25, "Scope challenge
/// handling"): those of `configured` (the client's `scopes` in the config), those granted so far
/// (from `store`) and those the challenge's `scope` names, each once, so the new token keeps
/// what the old one could do.
pub fn step_up_scopes(configured: &[String], store: &TokenFile, challenge: &str) -> Vec<String> {
    let granted = store
        .read()
        .ok()
        .flatten()
        .map(|c| c.granted_scopes)
        .unwrap_or_default();
    let asked = challenge_param(challenge, "scope").unwrap_or_default();
    let mut scopes: Vec<String> = Vec::new();
    let all = configured
        .iter()
        .cloned()
        .chain(granted)
        .chain(asked.split_whitespace().map(str::to_owned));
    for s in all {
        if !scopes.contains(&s) {
            scopes.push(s);
        }
    }
    scopes
}

/// The quoted parameter `name` of a `WWW-Authenticate: Bearer k="v", …` challenge.
pub fn challenge_param(challenge: &str, name: &str) -> Option<String> {
    let start = challenge.find(&format!("{name}=\""))? + name.len() + 2;
    let rest = &challenge[start..];
    Some(rest[..rest.find('"')?].to_owned())
}

/// The value of query parameter `name` in `url`.
pub fn url_param(url: &str, name: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
}

/// An HTTP client that sends the stored access token, refreshing it when it expires (and after
/// a 401); `Err(NotSignedIn)` without stored tokens.
pub async fn authorized_client(server_url: &str, store: TokenFile) -> Result<AuthClient<reqwest::Client>, OAuthError> {
    if !store.exists() {
        return Err(OAuthError::NotSignedIn);
    }
    let mut manager = AuthorizationManager::new(server_url).await?;
    manager.set_credential_store(store);
    if !manager.initialize_from_store().await? {
        return Err(OAuthError::NotSignedIn);
    }
    Ok(AuthClient::new(reqwest::Client::new(), manager))
}

/// Signs out: revokes the refresh and access tokens where the authorization server has a
/// `revocation_endpoint` (RFC 7009; a failure is logged, not fatal), then deletes the file.
/// Returns whether the server revoked them.
pub async fn logout(server_url: &str, store: &TokenFile) -> Result<bool, OAuthError> {
    let Some(creds) = store.read()? else {
        return Ok(false);
    };
    let mut revoked = false;
    if let Some(tokens) = &creds.token_response {
        use oauth2::TokenResponse;
        match revocation_endpoint(server_url).await {
            Some(endpoint) => {
                let client = reqwest::Client::new();
                let mut all = vec![("refresh_token", tokens.refresh_token().map(|r| r.secret().clone()))];
                all.push(("access_token", Some(tokens.access_token().secret().clone())));
                revoked = true;
                for (hint, token) in all {
                    let Some(token) = token else { continue };
                    let form = url::form_urlencoded::Serializer::new(String::new())
                        .append_pair("token", &token)
                        .append_pair("token_type_hint", hint)
                        .append_pair("client_id", &creds.client_id)
                        .finish();
                    let request = client
                        .post(&endpoint)
                        .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                        .body(form);
                    match request.send().await {
                        Ok(r) if r.status().is_success() => {}
                        Ok(r) => {
                            revoked = false;
                            tracing::warn!("MCP logout: revoking the {hint} answered HTTP {}", r.status());
                        }
                        Err(e) => {
                            revoked = false;
                            tracing::warn!("MCP logout: cannot revoke the {hint}: {e}");
                        }
                    }
                }
            }
            None => tracing::info!("MCP logout: the authorization server offers no revocation; tokens deleted only"),
        }
    }
    store.delete()?;
    Ok(revoked)
}

/// The authorization server's `revocation_endpoint`, if its metadata has one.
async fn revocation_endpoint(server_url: &str) -> Option<String> {
    let manager = AuthorizationManager::new(server_url).await.ok()?;
    let resolved = manager.resolve_metadata().await.ok()?;
    resolved
        .metadata
        .additional_fields
        .get("revocation_endpoint")
        .and_then(|v| v.as_str())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Keep(std::sync::Mutex<Vec<String>>);
    impl SecretRedactor for Keep {
        fn redact(&self, text: &str) -> String {
            text.to_owned()
        }
        fn add_secret(&self, value: &str) {
            self.0.lock().unwrap_or_else(|e| e.into_inner()).push(value.to_owned());
        }
    }

    #[test]
    fn challenge_params_are_read() {
        let c = r#"Bearer scope="mcp:write", resource_metadata="http://x/.well-known/oauth-protected-resource/mcp", error="insufficient_scope""#;
        assert_eq!(challenge_param(c, "scope").as_deref(), Some("mcp:write"));
        assert_eq!(challenge_param(c, "error").as_deref(), Some("insufficient_scope"));
        assert_eq!(challenge_param(c, "realm"), None);
    }

    #[tokio::test]
    async fn a_step_up_keeps_the_configured_and_granted_scopes_and_adds_the_asked_ones() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = TokenFile::new(dir.path(), "123", "remote", Arc::new(Keep(Default::default())));
        let challenge = r#"Bearer error="insufficient_scope", scope="files:write tools""#;
        // Nothing stored yet: what the config names and what the challenge asks for.
        let configured = vec!["profile".to_owned()];
        assert_eq!(
            step_up_scopes(&configured, &file, challenge),
            ["profile", "files:write", "tools"]
        );
        let json = serde_json::json!({
            "client_id": "cid",
            "token_response": {"access_token": "access-abcdef", "token_type": "bearer"},
            "granted_scopes": ["tools", "files:read"],
        });
        let creds: StoredCredentials = serde_json::from_value(json).unwrap_or_else(|e| panic!("{e}"));
        file.save(creds).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            step_up_scopes(&configured, &file, challenge),
            ["profile", "tools", "files:read", "files:write"]
        );
        assert_eq!(
            step_up_scopes(&[], &file, "Bearer error=\"insufficient_scope\""),
            ["tools", "files:read"]
        );
    }

    #[tokio::test]
    async fn the_token_file_is_0600_atomic_and_its_tokens_are_redacted() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let keep = Arc::new(Keep(Default::default()));
        let file = TokenFile::new(dir.path(), "123", "remote", keep.clone());
        let json = serde_json::json!({
            "client_id": "cid",
            "token_response": {"access_token": "access-abcdef", "token_type": "bearer", "refresh_token": "refresh-abcdef"},
        });
        let creds: StoredCredentials = serde_json::from_value(json).unwrap_or_else(|e| panic!("{e}"));
        file.save(creds).await.unwrap_or_else(|e| panic!("{e}"));
        let mode = std::fs::metadata(file.path())
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or_default();
        assert_eq!(mode, 0o600);
        assert!(file.path().ends_with("123/remote.json"));
        assert!(!dir.path().join("123/remote.json.tmp").exists());
        let secrets = keep.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        assert!(secrets.contains(&"access-abcdef".to_owned()) && secrets.contains(&"refresh-abcdef".to_owned()));
        let back = file.load().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.map(|c| c.client_id), Some("cid".to_owned()));
        file.clear().await.unwrap_or_else(|e| panic!("{e}"));
        assert!(!file.exists());
        assert!(file.load().await.unwrap_or_else(|e| panic!("{e}")).is_none());
    }
}
