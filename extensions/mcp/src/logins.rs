//! Sign-ins under way (`/mcp login NAME`): each kept by its `state` parameter for
//! [`PENDING_FOR`], finished once by the callback route or a pasted loopback address.

use crate::oauth::{Login, url_param};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a sign-in link works.
pub const PENDING_FOR: Duration = Duration::from_secs(10 * 60);

/// Who a sign-in is for.
#[derive(Debug, Clone, PartialEq)]
pub struct LoginFor {
    /// The chat's key (tokens are per chat and server).
    pub chat: String,
    /// The chat and topic whose session uses the server (restarted when signed in).
    pub scope: String,
    /// The server's name.
    pub server: String,
}

struct Pending {
    login: Login,
    whom: LoginFor,
    at: Instant,
}

/// The sign-ins under way.
#[derive(Default)]
pub struct Logins {
    pending: Mutex<HashMap<String, Pending>>,
}

impl std::fmt::Debug for Logins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logins").finish_non_exhaustive()
    }
}

impl Logins {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `login` for `whom` (a newer sign-in for the same chat and server replaces it).
    pub fn add(&self, login: Login, whom: LoginFor) -> Result<(), String> {
        let state = login
            .state_param()
            .ok_or("the authorization address has no state parameter")?;
        let mut pending = self.lock();
        pending.retain(|_, p| p.at.elapsed() < PENDING_FOR && p.whom != whom);
        pending.insert(
            state,
            Pending {
                login,
                whom,
                at: Instant::now(),
            },
        );
        Ok(())
    }

    /// Whether `text` is the address of a sign-in under way (a pasted loopback redirect).
    pub fn is_callback(&self, text: &str) -> bool {
        let text = text.trim();
        text.starts_with("http")
            && url_param(text, "state")
                .is_some_and(|s| self.lock().get(&s).is_some_and(|p| p.at.elapsed() < PENDING_FOR))
    }

    /// Takes the sign-in `callback_url` answers (once), if it is under way and, when `chat` is
    /// given, for that chat.
    pub fn take(&self, callback_url: &str, chat: Option<&str>) -> Result<(Login, LoginFor), String> {
        let state = url_param(callback_url.trim(), "state")
            .ok_or("the address has no state parameter: copy the whole address from the browser")?;
        let mut pending = self.lock();
        match pending.get(&state) {
            Some(p) if chat.is_some_and(|c| c != p.whom.chat) => {
                Err("this sign-in was started in another chat: finish it there".into())
            }
            Some(p) if p.at.elapsed() >= PENDING_FOR => {
                pending.remove(&state);
                Err("this sign-in link has expired: run /mcp login NAME again".into())
            }
            Some(_) => pending
                .remove(&state)
                .map(|p| (p.login, p.whom))
                .ok_or_else(|| "unknown sign-in".into()),
            None => Err(
                "no sign-in is waiting for this address (used already, or expired): run /mcp login NAME again".into(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_no_sign_in_waits_for_is_neither_taken_nor_finished() {
        let logins = Logins::default();
        let address = "http://127.0.0.1:53683/volcanic/mcp-oauth?code=abc&state=nobody";
        assert!(!logins.is_callback(address));
        assert!(!logins.is_callback("just a message about state=x"));
        let e = logins.take(address, Some("123")).err().unwrap_or_default();
        assert!(e.contains("no sign-in is waiting"), "{e}");
        let e = logins
            .take("http://127.0.0.1/x?code=abc", None)
            .err()
            .unwrap_or_default();
        assert!(e.contains("no state parameter"), "{e}");
    }
}
