//! Push receivers: per task, `<public_url>/a2a/push/<id>` with a token the agent sends back in
//! `X-A2A-Notification-Token`. The token is derived from the host's key (kept outside every
//! workspace) and the receiver's id, so nothing secret is written in `pending.json` and the
//! tokens survive a restart.

use sha2::{Digest, Sha256};
use url::Url;

/// The route of the receivers, with `{id}`.
pub const PUSH_ROUTE: &str = "/a2a/push/{id}";

/// Where receivers live and the key their tokens come from.
#[derive(Clone)]
pub struct PushSettings {
    /// The host's public URL (`[http] public_url`).
    pub public_url: Url,
    /// At least 32 random bytes, kept by the host outside the workspaces.
    pub key: Vec<u8>,
}

impl std::fmt::Debug for PushSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushSettings")
            .field("public_url", &self.public_url.as_str())
            .finish_non_exhaustive()
    }
}

impl PushSettings {
    /// The receiver URL of `id`.
    pub fn receiver(&self, id: &str) -> Url {
        let base = self.public_url.as_str().trim_end_matches('/');
        Url::parse(&format!("{base}/a2a/push/{id}")).unwrap_or_else(|_| self.public_url.clone())
    }
}

/// The token of receiver `id`: hex SHA-256 of the key, a separator and the id.
pub(crate) fn push_token(key: &[u8], id: &str) -> String {
    let mut h = Sha256::new();
    h.update(key);
    h.update(b"\0a2a-push\0");
    h.update(id.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Equality in time independent of where the inputs differ.
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_per_receiver_and_compared_whole() {
        let a = push_token(b"k", "one");
        assert_eq!(a, push_token(b"k", "one"));
        assert_ne!(a, push_token(b"k", "two"));
        assert_ne!(a, push_token(b"other", "one"));
        assert!(same(a.as_bytes(), a.as_bytes()));
        assert!(!same(a.as_bytes(), &a.as_bytes()[1..]));
        let s = PushSettings {
            public_url: Url::parse("https://bot.example/").unwrap_or_else(|e| panic!("{e}")),
            key: vec![1; 32],
        };
        assert_eq!(s.receiver("abc").as_str(), "https://bot.example/a2a/push/abc");
    }
}
