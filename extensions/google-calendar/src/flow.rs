//! Sign-in: the authorization-code flow with PKCE (RFC 7636, S256), as Google documents it in
//! "OAuth 2.0 for Mobile & Desktop Apps" and "… for Web Server Applications".
//!
//! Each `/calendar connect` makes a pending sign-in keyed by a random single-use `state` (32
//! bytes, base64url) and bound to the chat, the user, the PKCE verifier, the redirect URI and
//! a 10-minute expiry. Finishing takes the `state` out of the table whatever the outcome, so a
//! replayed address is refused. The device flow and the "oob" redirect are not used (Google
//! refuses Calendar scopes on the first and has shut the second down).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use crate::error::{CalendarError, Result};

/// How long a sign-in link stays valid.
pub const FLOW_TTL: Duration = Duration::from_secs(600);

/// The scopes requested (Google Calendar API scopes, plus `openid email` for the account's
/// address): events read/write, the calendar list read-only, free/busy.
pub const SCOPES: &[&str] = &[
    "https://www.googleapis.com/auth/calendar.events",
    "https://www.googleapis.com/auth/calendar.calendarlist.readonly",
    "https://www.googleapis.com/auth/calendar.freebusy",
    "openid",
    "email",
];

/// The chat a sign-in or a connection belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChatRef {
    /// Telegram chat id.
    pub id: i64,
    /// The chat key (`<id>` for private chats, `g<id without the minus>` for groups): names the token file.
    pub key: String,
}

/// A sign-in waiting for its redirect.
#[derive(Clone)]
pub(crate) struct Pending {
    pub(crate) chat: ChatRef,
    pub(crate) user_id: i64,
    /// Where in the chat to confirm (a forum topic), if not the main thread.
    pub(crate) topic: Option<i32>,
    pub(crate) verifier: String,
    pub(crate) redirect_uri: String,
    pub(crate) expires: Instant,
}

/// The pending sign-ins.
#[derive(Default)]
pub(crate) struct Flows {
    pending: Mutex<HashMap<String, Pending>>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("chat", &self.chat)
            .field("user_id", &self.user_id)
            .field("topic", &self.topic)
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Flows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.pending.lock().unwrap_or_else(|p| p.into_inner()).len();
        f.debug_struct("Flows").field("pending", &n).finish()
    }
}

/// `n` random bytes, base64url without padding.
pub(crate) fn random_b64(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The S256 challenge of a verifier: base64url(SHA-256(verifier)).
pub fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

impl Flows {
    /// Starts a sign-in; returns its `state` and the verifier. Expired entries are dropped.
    pub(crate) fn start(
        &self,
        chat: ChatRef,
        user_id: i64,
        topic: Option<i32>,
        redirect_uri: String,
    ) -> (String, String) {
        let state = random_b64(32);
        // 48 random bytes → 64 base64url characters: within RFC 7636's 43-128.
        let verifier = random_b64(48);
        let now = Instant::now();
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.retain(|_, p| p.expires > now);
        pending.insert(
            state.clone(),
            Pending {
                chat,
                user_id,
                topic,
                verifier: verifier.clone(),
                redirect_uri,
                expires: now + FLOW_TTL,
            },
        );
        (state, verifier)
    }

    /// Takes the sign-in of `state` out (single use) and checks its expiry and, when given, the
    /// chat and user it came from.
    pub(crate) fn take(&self, state: &str, from: Option<(&ChatRef, i64)>) -> Result<Pending> {
        let taken = self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(state);
        let pending = taken.ok_or(CalendarError::UnknownState)?;
        if pending.expires <= Instant::now() {
            return Err(CalendarError::Expired);
        }
        if let Some((chat, user)) = from
            && (pending.chat.id != chat.id || pending.user_id != user)
        {
            return Err(CalendarError::WrongChat);
        }
        Ok(pending)
    }
}

/// The authorization URL for a sign-in.
pub(crate) fn authorization_url(
    auth_url: &str,
    client_id: &str,
    redirect_uri: &str,
    state: &str,
    verifier: &str,
) -> Result<String> {
    let mut url = url::Url::parse(auth_url).map_err(|e| CalendarError::Invalid(format!("`[google] auth_url`: {e}")))?;
    url.query_pairs_mut()
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", redirect_uri)
        .append_pair("response_type", "code")
        .append_pair("scope", &SCOPES.join(" "))
        .append_pair("access_type", "offline")
        .append_pair("prompt", "consent")
        .append_pair("state", state)
        .append_pair("code_challenge", &challenge(verifier))
        .append_pair("code_challenge_method", "S256");
    Ok(url.to_string())
}

/// What came back on the redirect (its `Debug` hides both values).
#[derive(Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The `state` parameter.
    pub state: String,
    /// The authorization code.
    pub code: String,
}

impl std::fmt::Debug for Redirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redirect").finish_non_exhaustive()
    }
}

/// Reads a redirect's query parameters (`state`, `code`, or `error`).
pub fn parse_redirect(params: &HashMap<String, String>) -> Result<Redirect> {
    if let Some(error) = params.get("error") {
        return Err(CalendarError::Denied(error.clone()));
    }
    let state = params.get("state").filter(|s| !s.is_empty());
    let code = params.get("code").filter(|s| !s.is_empty());
    match (state, code) {
        (Some(state), Some(code)) => Ok(Redirect {
            state: state.clone(),
            code: code.clone(),
        }),
        (None, _) => Err(CalendarError::BadRedirect("it has no `state`".into())),
        (_, None) => Err(CalendarError::BadRedirect("it has no `code`".into())),
    }
}

/// Whether `host` is a loopback host (`127.0.0.1`, `localhost`, `[::1]`).
fn is_loopback(host: Option<&str>) -> bool {
    matches!(host, Some("127.0.0.1" | "localhost" | "[::1]"))
}

/// The pieces of `text` that may be an address: split at whitespace and at characters that
/// cannot be in one (quotes, brackets), with trailing punctuation removed.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '"' | '\'' | '`' | '(' | ')'))
        .map(|w| w.trim_end_matches(['.', ',', ';', ':', '!']))
        .filter(|w| !w.is_empty())
}

/// A word read as an address: as is when it has a scheme, else as `http://<word>`.
fn as_url(word: &str) -> Option<url::Url> {
    if word.contains("://") {
        url::Url::parse(word).ok()
    } else {
        url::Url::parse(&format!("http://{word}")).ok()
    }
}

/// Whether a query carries what a redirect carries (`state` or `code`).
fn has_redirect_params(pairs: &HashMap<String, String>) -> bool {
    pairs.contains_key("state") || pairs.contains_key("code")
}

/// The redirect parameters in one word: an address's query, or a bare `state=…&code=…`.
fn redirect_params(word: &str) -> Option<HashMap<String, String>> {
    if let Some(url) = as_url(word) {
        let pairs: HashMap<String, String> = url.query_pairs().into_owned().collect();
        if has_redirect_params(&pairs) {
            return Some(pairs);
        }
    }
    let query = word.rsplit_once('?').map_or(word, |(_, q)| q);
    let pairs: HashMap<String, String> = url::form_urlencoded::parse(query.as_bytes()).into_owned().collect();
    has_redirect_params(&pairs).then_some(pairs)
}

/// Whether `text` contains, anywhere, a loopback address carrying a `code` or a `state` (with
/// or without its `http://`): what a user pastes back after the browser landed on
/// [`LOOPBACK_REDIRECT`](crate::config::LOOPBACK_REDIRECT), maybe with words around it. The host
/// takes such a message before the session sees it (as it does a message containing the
/// `state` of a pending sign-in: [`GoogleCalendarConnections::is_paste`](crate::GoogleCalendarConnections::is_paste)).
pub fn is_paste_back(text: &str) -> bool {
    words(text).any(|w| {
        as_url(w)
            .is_some_and(|u| is_loopback(u.host_str()) && u.query_pairs().any(|(k, _)| k == "code" || k == "state"))
    })
}

/// The redirect parameters of a pasted message: the query of the first address (or bare
/// query) in it that carries a `state` or a `code`.
pub fn query_of(text: &str) -> Result<HashMap<String, String>> {
    words(text)
        .find_map(redirect_params)
        .ok_or_else(|| CalendarError::BadRedirect("it has no address with `state` and `code`".into()))
}

impl Flows {
    /// Whether `text` contains the `state` of a pending sign-in.
    pub(crate) fn mentioned_in(&self, text: &str) -> bool {
        let pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.keys().any(|state| text.contains(state.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(id: i64) -> ChatRef {
        ChatRef {
            id,
            key: id.to_string(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_state_is_single_use_bound_to_its_chat_and_expires() {
        let flows = Flows::default();
        let (state, verifier) = flows.start(chat(1), 7, None, "r".into());
        assert!((43..=128).contains(&verifier.len()));
        assert!(matches!(
            flows.take(&state, Some((&chat(2), 7))),
            Err(CalendarError::WrongChat)
        ));
        assert!(matches!(
            flows.take(&state, Some((&chat(1), 7))),
            Err(CalendarError::UnknownState)
        ));

        let (state, _) = flows.start(chat(1), 7, None, "r".into());
        assert!(flows.take(&state, Some((&chat(1), 7))).is_ok());
        assert!(matches!(
            flows.take(&state, Some((&chat(1), 7))),
            Err(CalendarError::UnknownState)
        ));

        let (state, _) = flows.start(chat(1), 7, None, "r".into());
        tokio::time::advance(FLOW_TTL + Duration::from_secs(1)).await;
        assert!(matches!(flows.take(&state, None), Err(CalendarError::Expired)));
    }

    #[test]
    fn pasted_loopback_addresses_are_recognised_anywhere_in_a_message() {
        for text in [
            " http://127.0.0.1:53682/volcanic/oauth?state=abc&code=4/0x ",
            "http://127.0.0.1:53682/volcanic/oauth?code=4/0x",
            "here: http://127.0.0.1:53682/volcanic/oauth?state=abc&code=4/0x thanks",
            "127.0.0.1:53682/volcanic/oauth?state=abc&code=4/0x",
            "done (localhost:53682/?code=4/0x).",
            "<http://[::1]:53682/?state=abc&code=4/0x>",
        ] {
            assert!(is_paste_back(text), "{text}");
        }
        assert!(!is_paste_back("https://example.org/?state=a&code=b"));
        assert!(!is_paste_back("http://127.0.0.1:8080/index.html"));
        assert!(!is_paste_back("hello"));
    }

    #[test]
    fn the_redirect_is_found_inside_a_message() -> Result<()> {
        let q = query_of("here: 127.0.0.1:53682/volcanic/oauth?state=abc&code=4/0x, thanks")?;
        assert_eq!(q.get("state").map(String::as_str), Some("abc"));
        assert_eq!(q.get("code").map(String::as_str), Some("4/0x"));
        let bare = query_of("state=abc&code=4/0y")?;
        assert_eq!(bare.get("code").map(String::as_str), Some("4/0y"));
        assert!(query_of("hello there").is_err());
        Ok(())
    }

    #[test]
    fn a_pending_state_is_found_anywhere() {
        let flows = Flows::default();
        let (state, _) = flows.start(chat(1), 7, None, "r".into());
        assert!(flows.mentioned_in(&format!("look: {state}")));
        assert!(!flows.mentioned_in("look: nothing"));
        assert!(flows.take(&state, None).is_ok());
        assert!(!flows.mentioned_in(&format!("look: {state}")));
    }

    #[test]
    fn debug_output_hides_codes_states_and_verifiers() {
        let flows = Flows::default();
        let (state, verifier) = flows.start(chat(1), 7, None, "r".into());
        let redirect = Redirect {
            state: state.clone(),
            code: "4/0secretcode".into(),
        };
        let shown = format!("{flows:?} {redirect:?} {:?}", flows.take(&state, None).ok());
        for secret in [state.as_str(), verifier.as_str(), "4/0secretcode"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }

    #[test]
    fn the_challenge_is_rfc_7636s_example() {
        // RFC 7636, appendix B.
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
