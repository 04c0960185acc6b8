//! Per-chat token files: `<state_dir>/google/<chat key>.json`, mode 0600, written atomically
//! (a temporary file in the same folder, synced, then renamed). A file that cannot be read as
//! an account is moved aside to `<file>.corrupt-<unix seconds>` and the chat counts as not
//! connected. The state dir is never a workspace, so the agent cannot read these files.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A connected Google account, as stored.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct Account {
    /// The account's email (from the ID token), if Google gave one.
    pub email: Option<String>,
    /// Granted scopes, as Google listed them.
    pub scopes: Vec<String>,
    /// Current access token.
    pub access_token: String,
    /// Refresh token (offline access).
    pub refresh_token: Option<String>,
    /// When the access token expires, Unix seconds.
    pub expires_at: i64,
    /// Set after `invalid_grant`: the chat must connect again; no refresh is attempted.
    #[serde(default)]
    pub needs_reconnect: bool,
    /// When the chat was connected, Unix seconds.
    pub connected_at: i64,
    /// The forum topic `/calendar connect` was run in (where notices about the connection go).
    #[serde(default)]
    pub topic: Option<i32>,
}

impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account")
            .field("email", &self.email)
            .field("scopes", &self.scopes)
            .field("expires_at", &self.expires_at)
            .field("needs_reconnect", &self.needs_reconnect)
            .finish_non_exhaustive()
    }
}

/// The token files under `<state_dir>/google/`.
#[derive(Debug, Clone)]
pub struct TokenStore {
    dir: PathBuf,
}

impl TokenStore {
    /// Tokens under `<state_dir>/google/` (created on first write).
    pub fn new(state_dir: &Path) -> Self {
        Self {
            dir: state_dir.join("google"),
        }
    }

    /// The file of a chat.
    pub fn path(&self, chat_key: &str) -> PathBuf {
        self.dir.join(format!("{chat_key}.json"))
    }

    /// The chat's account; `None` when there is none or the file was corrupt (then set aside).
    pub fn load(&self, chat_key: &str) -> Option<Account> {
        let path = self.path(chat_key);
        let text = std::fs::read_to_string(&path).ok()?;
        match serde_json::from_str(&text) {
            Ok(account) => Some(account),
            Err(e) => {
                let aside = path.with_extension(format!("json.corrupt-{}", chrono::Utc::now().timestamp()));
                tracing::warn!(file = %path.display(), aside = %aside.display(), "corrupt Google token file set aside: {e}");
                if let Err(e) = std::fs::rename(&path, &aside) {
                    tracing::warn!(file = %path.display(), "could not set the corrupt token file aside: {e}");
                }
                None
            }
        }
    }

    /// Every stored account with its chat key (for registering secrets at start).
    pub fn all(&self) -> Vec<(String, Account)> {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        dir.filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let key = name.strip_suffix(".json")?.to_owned();
                self.load(&key).map(|a| (key, a))
            })
            .collect()
    }

    /// Writes the chat's account atomically with mode 0600: through a temporary file of its
    /// own (created new, with a random name), so concurrent writers never share one.
    pub fn save(&self, chat_key: &str, account: &Account) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let path = self.path(chat_key);
        let text = serde_json::to_vec_pretty(account).map_err(std::io::Error::other)?;
        let (tmp, mut file) = loop {
            let tmp = self
                .dir
                .join(format!(".{chat_key}.json.{:016x}.tmp", rand::random::<u64>()));
            match OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp) {
                Ok(file) => break (tmp, file),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        };
        let written = file
            .write_all(&text)
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&tmp, &path));
        drop(file);
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        if let Ok(dir) = std::fs::File::open(&self.dir) {
            let _ = dir.sync_all();
        }
        Ok(())
    }

    /// Deletes the chat's tokens (no error when there were none).
    pub fn delete(&self, chat_key: &str) -> std::io::Result<()> {
        match std::fs::remove_file(self.path(chat_key)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn account() -> Account {
        Account {
            email: Some("a@example.com".into()),
            scopes: vec!["openid".into()],
            access_token: "ya29.x".into(),
            refresh_token: Some("1//r".into()),
            expires_at: 10,
            needs_reconnect: false,
            connected_at: 1,
            topic: None,
        }
    }

    #[test]
    fn saves_with_mode_0600_and_loads_back() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let store = TokenStore::new(dir.path());
        store.save("42", &account())?;
        let mode = std::fs::metadata(store.path("42"))?.permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(store.load("42"), Some(account()));
        assert_eq!(store.all().len(), 1);
        store.delete("42")?;
        assert_eq!(store.load("42"), None);
        store.delete("42")
    }

    #[test]
    fn concurrent_saves_never_share_a_temporary_file() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let store = TokenStore::new(dir.path());
        let failures: Vec<String> = std::thread::scope(|scope| {
            let writers: Vec<_> = (0..6)
                .map(|n| {
                    let store = &store;
                    scope.spawn(move || {
                        let mut a = account();
                        (0..40)
                            .filter_map(|i| {
                                a.expires_at = n * 1000 + i;
                                store.save("5", &a).err().map(|e| e.to_string())
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            writers
                .into_iter()
                .flat_map(|w| w.join().unwrap_or_else(|_| vec!["writer panicked".into()]))
                .collect()
        });
        assert_eq!(failures, Vec::<String>::new());
        assert!(store.load("5").is_some());
        let left: Vec<String> = std::fs::read_dir(dir.path().join("google"))?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        assert_eq!(left, vec!["5.json".to_owned()], "no temporary file left behind");
        Ok(())
    }

    #[test]
    fn a_corrupt_file_is_set_aside() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let store = TokenStore::new(dir.path());
        std::fs::create_dir_all(dir.path().join("google"))?;
        std::fs::write(store.path("g7"), "{not json")?;
        assert_eq!(store.load("g7"), None);
        assert!(!store.path("g7").exists());
        let aside: Vec<String> = std::fs::read_dir(dir.path().join("google"))?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        assert!(aside.iter().any(|n| n.starts_with("g7.json.corrupt-")), "{aside:?}");
        Ok(())
    }
}
