//! [`GoogleCalendarConnections`]: the process-wide service behind `/calendar` and the
//! `calendar` tool. One Google account per chat; tokens in the [`TokenStore`]; every token
//! registered with the host's [`SecretRedactor`] so no tool output shows it.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use volcanic_abstractions::processes::SecretRedactor;

use crate::config::GoogleConfig;
use crate::error::{CalendarError, Result};
use crate::flow::{ChatRef, Flows, SCOPES, authorization_url, parse_redirect, query_of};
use crate::store::{Account, TokenStore};
use crate::tokens::{self, Connector};

/// Tells a chat something (the host sends it as a message): used once when a connection turns
/// out to be revoked or expired. Arguments: the chat id, the forum topic the chat was connected
/// from (`None`: the main thread), the text.
pub type Notifier = Arc<dyn Fn(i64, Option<i32>, String) + Send + Sync>;

/// How a sign-in link is to be finished (its `Debug` hides the URL, which carries the `state`).
#[derive(Clone, PartialEq, Eq)]
pub struct ConnectLink {
    /// The authorization URL (for an inline URL button).
    pub url: String,
    /// True for the paste-back flow (no public URL): the user pastes the address the browser
    /// ended on back into the chat.
    pub paste_back: bool,
}

impl std::fmt::Debug for ConnectLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectLink")
            .field("paste_back", &self.paste_back)
            .finish_non_exhaustive()
    }
}

/// A finished sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connected {
    /// The chat now connected.
    pub chat: ChatRef,
    /// The forum topic `/calendar connect` was sent in, where the confirmation belongs.
    pub topic: Option<i32>,
    /// The account's email, when Google gave one.
    pub email: Option<String>,
    /// Requested scopes the user unticked (short names, e.g. `calendar.freebusy`).
    pub missing: Vec<String>,
}

impl Connected {
    /// The confirmation for the chat.
    pub fn message(&self) -> String {
        let who = self.email.as_deref().unwrap_or("your Google account");
        let mut text = format!("Google Calendar connected: {who}.");
        if !self.missing.is_empty() {
            text.push_str(&format!(
                " Not granted (you unticked them, so what needs them will fail): {}. Run /calendar connect again to grant them.",
                self.missing.join(", ")
            ));
        }
        text
    }
}

/// Short name of a scope (`calendar.events` for `https://www.googleapis.com/auth/calendar.events`).
pub fn short_scope(scope: &str) -> &str {
    scope.rsplit('/').next().unwrap_or(scope)
}

/// Whether `granted` covers the requested `scope` (Google answers `email` as `…/userinfo.email`).
fn covers(granted: &[String], scope: &str) -> bool {
    granted
        .iter()
        .any(|g| g == scope || (scope == "email" && g.ends_with("/userinfo.email")))
}

/// The per-process Google Calendar service.
pub struct GoogleCalendarConnections {
    config: Option<GoogleConfig>,
    store: TokenStore,
    flows: Flows,
    redactor: Arc<dyn SecretRedactor>,
    pub(crate) http: reqwest::Client,
    pub(crate) connector: Connector,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    notifier: Mutex<Option<Notifier>>,
}

impl std::fmt::Debug for GoogleCalendarConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoogleCalendarConnections")
            .field("config", &self.config)
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl GoogleCalendarConnections {
    /// The service; `config` is `None` when `[google]` has no client. Tokens already stored
    /// under `<state_dir>/google/` are registered with `redactor` at once.
    pub fn new(config: Option<GoogleConfig>, state_dir: &Path, redactor: Arc<dyn SecretRedactor>) -> Result<Arc<Self>> {
        let store = TokenStore::new(state_dir);
        for (_, account) in store.all() {
            redactor.add_secret(&account.access_token);
            if let Some(r) = &account.refresh_token {
                redactor.add_secret(r);
            }
        }
        if let Some(c) = &config {
            redactor.add_secret(&c.client_secret);
        }
        let timeout = config
            .as_ref()
            .map_or(std::time::Duration::from_secs(30), |c| c.timeout);
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| CalendarError::Transient(format!("HTTP client: {e}")))?;
        Ok(Arc::new(Self {
            config,
            store,
            flows: Flows::default(),
            redactor,
            http,
            connector: tokens::connector()?,
            locks: Mutex::new(HashMap::new()),
            notifier: Mutex::new(None),
        }))
    }

    /// Sets who tells a chat about a revoked connection.
    pub fn set_notifier(&self, notifier: Notifier) {
        *self.notifier.lock().unwrap_or_else(|p| p.into_inner()) = Some(notifier);
    }

    /// Whether a client id and secret are configured.
    pub fn is_configured(&self) -> bool {
        self.config.is_some()
    }

    pub(crate) fn config(&self) -> Result<&GoogleConfig> {
        self.config.as_ref().ok_or(CalendarError::NotConfigured)
    }

    /// `/calendar connect`: a new sign-in for `chat` by `user_id`, sent in `topic` (a forum
    /// topic's thread id, or `None`).
    pub fn connect(&self, chat: ChatRef, user_id: i64, topic: Option<i32>) -> Result<ConnectLink> {
        let config = self.config()?;
        let redirect_uri = config.redirect_uri();
        let (state, verifier) = self.flows.start(chat, user_id, topic, redirect_uri.clone());
        Ok(ConnectLink {
            url: authorization_url(&config.auth_url, &config.client_id, &redirect_uri, &state, &verifier)?,
            paste_back: config.public_url.is_none(),
        })
    }

    /// Whether the host must take `text` before any session sees it: Google is configured and
    /// the text contains a loopback address with a `code` or `state` ([`is_paste_back`]), or the
    /// `state` of a pending sign-in, anywhere.
    ///
    /// [`is_paste_back`]: crate::is_paste_back
    pub fn is_paste(&self, text: &str) -> bool {
        self.is_configured() && (crate::flow::is_paste_back(text) || self.flows.mentioned_in(text))
    }

    /// A pasted loopback address (anywhere in `text`), from `chat` and `user_id`.
    pub async fn finish_paste(&self, chat: &ChatRef, user_id: i64, text: &str) -> Result<Connected> {
        let redirect = parse_redirect(&query_of(text)?)?;
        let pending = self.flows.take(&redirect.state, Some((chat, user_id)))?;
        self.finish(pending, &redirect.code).await
    }

    /// The callback's query parameters (`state`, `code`, or `error`).
    pub async fn finish_callback(&self, params: &HashMap<String, String>) -> Result<Connected> {
        let redirect = match parse_redirect(params) {
            Err(CalendarError::Denied(e)) => {
                if let Some(state) = params.get("state") {
                    let _ = self.flows.take(state, None);
                }
                return Err(CalendarError::Denied(e));
            }
            other => other?,
        };
        let pending = self.flows.take(&redirect.state, None)?;
        self.finish(pending, &redirect.code).await
    }

    async fn finish(&self, pending: crate::flow::Pending, code: &str) -> Result<Connected> {
        let config = self.config()?;
        let answer = tokens::exchange(&self.http, config, code, &pending.verifier, &pending.redirect_uri).await?;
        let granted: Vec<String> = answer
            .scope
            .as_deref()
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_else(|| SCOPES.iter().map(|s| (*s).to_owned()).collect());
        let missing = SCOPES
            .iter()
            .filter(|s| !covers(&granted, s))
            .map(|s| short_scope(s).to_owned())
            .collect();
        let email = answer.id_token.as_deref().and_then(tokens::email_of);
        let now = chrono::Utc::now().timestamp();
        let account = Account {
            email: email.clone(),
            scopes: granted,
            access_token: answer.access_token,
            refresh_token: answer.refresh_token,
            expires_at: tokens::expiry(now, answer.expires_in),
            needs_reconnect: false,
            connected_at: now,
            topic: pending.topic,
        };
        self.register(&account);
        {
            let lock = self.lock_for(&pending.chat.key);
            let _guard = lock.lock().await;
            self.store.save(&pending.chat.key, &account)?;
        }
        Ok(Connected {
            chat: pending.chat,
            topic: pending.topic,
            email,
            missing,
        })
    }

    fn register(&self, account: &Account) {
        self.redactor.add_secret(&account.access_token);
        if let Some(r) = &account.refresh_token {
            self.redactor.add_secret(r);
        }
    }

    fn lock_for(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        locks.entry(key.to_owned()).or_default().clone()
    }

    /// The chat's account, if connected.
    pub fn account(&self, chat: &ChatRef) -> Option<Account> {
        self.store.load(&chat.key)
    }

    /// A valid access token for the chat, refreshed when it expires within a minute. After
    /// `invalid_grant` the chat is marked and told once; later calls fail at once.
    pub async fn access_token(&self, chat: &ChatRef) -> Result<(String, Vec<String>)> {
        let config = self.config()?;
        let lock = self.lock_for(&chat.key);
        let _guard = lock.lock().await;
        let mut account = self.store.load(&chat.key).ok_or(CalendarError::NotConnected)?;
        if account.needs_reconnect {
            return Err(CalendarError::NeedsReconnect);
        }
        if account.expires_at.saturating_sub(60) > chrono::Utc::now().timestamp() {
            return Ok((account.access_token, account.scopes));
        }
        let Some(refresh_token) = account.refresh_token.clone() else {
            return Err(CalendarError::NeedsReconnect);
        };
        match tokens::refresh(&self.http, &self.connector, config, &refresh_token).await {
            Ok(r) => {
                // The expired access token is no longer redacted (the set would grow by one an
                // hour per chat); a replaced refresh token likewise.
                let old_access = std::mem::replace(&mut account.access_token, r.access_token);
                if old_access != account.access_token {
                    self.redactor.remove_secret(&old_access);
                }
                if let Some(new_refresh) = r.refresh_token.filter(|n| *n != refresh_token) {
                    self.redactor.remove_secret(&refresh_token);
                    account.refresh_token = Some(new_refresh);
                }
                account.expires_at = r.expires_at;
                self.register(&account);
                self.store.save(&chat.key, &account)?;
                Ok((account.access_token, account.scopes))
            }
            Err(CalendarError::NeedsReconnect) => {
                account.needs_reconnect = true;
                self.store.save(&chat.key, &account)?;
                tracing::warn!(chat = %chat.key, "Google refused the refresh token (invalid_grant); the chat must reconnect");
                let notifier = self.notifier.lock().unwrap_or_else(|p| p.into_inner()).clone();
                if let Some(n) = notifier {
                    n(chat.id, account.topic, CalendarError::NeedsReconnect.to_string());
                }
                Err(CalendarError::NeedsReconnect)
            }
            Err(e) => Err(e),
        }
    }

    /// Forgets the chat's access token (the API refused it), so the next use refreshes.
    pub async fn expire_access(&self, chat: &ChatRef) -> Result<()> {
        let lock = self.lock_for(&chat.key);
        let _guard = lock.lock().await;
        if let Some(mut account) = self.store.load(&chat.key) {
            account.expires_at = 0;
            self.store.save(&chat.key, &account)?;
        }
        Ok(())
    }

    /// `/calendar disconnect`: revokes at Google, deletes the tokens even if revoking failed.
    /// Holds the chat's lock throughout, so a refresh in flight cannot write the tokens back.
    pub async fn disconnect(&self, chat: &ChatRef) -> Result<String> {
        let lock = self.lock_for(&chat.key);
        let _guard = lock.lock().await;
        let Some(account) = self.store.load(&chat.key) else {
            return Ok("This chat has no Google Calendar connected.".into());
        };
        let revoked = match self.config() {
            Ok(config) => {
                let token = account.refresh_token.as_deref().unwrap_or(&account.access_token);
                tokens::revoke(&self.http, config, token).await
            }
            Err(e) => Err(e),
        };
        self.store.delete(&chat.key)?;
        let who = account.email.as_deref().unwrap_or("the Google account");
        Ok(match revoked {
            Ok(()) => format!("Disconnected {who}: access revoked at Google and the tokens deleted."),
            Err(e) => format!(
                "Disconnected {who}: the tokens are deleted, but revoking at Google failed ({e}); you can remove \
                 the app's access at https://myaccount.google.com/permissions"
            ),
        })
    }
}
