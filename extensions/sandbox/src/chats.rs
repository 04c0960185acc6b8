//! Per-chat network policies, set by the chat's owners at run time (`/network`): one small file
//! per chat, `<state_dir>/network/<chat key>`, read at every spawn of that chat's processes (so a
//! change applies to the next command and survives restarts). No file: the bot's default.
//!
//! File format, one item per line: `on`, `off`, or `allow` followed by one host per line.

use crate::{AllowList, NetworkPolicy};
use std::path::{Path, PathBuf};

/// The folder under `state_dir` holding the per-chat files.
pub const CHAT_NETWORKS_DIR: &str = "network";

/// The per-chat policies in one folder.
#[derive(Debug, Clone)]
pub struct ChatNetworks {
    dir: PathBuf,
}

/// A per-chat policy file cannot be read, written or understood.
#[derive(Debug, thiserror::Error)]
pub enum ChatNetworkError {
    /// Not a chat key (`123` or `g123`): never used as a file name.
    #[error("`{0}` is not a chat key")]
    Key(String),
    /// Reading or writing failed.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The file holds something else than the format above.
    #[error("{path}: {why}; fix the file or set the chat's policy again with /network")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

impl ChatNetworks {
    /// The policies kept in `<state_dir>/`[`CHAT_NETWORKS_DIR`].
    pub fn under(state_dir: &Path) -> ChatNetworks {
        ChatNetworks {
            dir: state_dir.join(CHAT_NETWORKS_DIR),
        }
    }

    /// The file of chat `chat_key`. Errors: not a chat key.
    pub fn file(&self, chat_key: &str) -> Result<PathBuf, ChatNetworkError> {
        let digits = chat_key.strip_prefix('g').unwrap_or(chat_key);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ChatNetworkError::Key(chat_key.to_owned()));
        }
        Ok(self.dir.join(chat_key))
    }

    /// The chat's own policy; `None`: the bot's default.
    pub fn get(&self, chat_key: &str) -> Result<Option<NetworkPolicy>, ChatNetworkError> {
        let path = self.file(chat_key)?;
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(ChatNetworkError::Io { path, error }),
        };
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let format = |why: String| ChatNetworkError::Format {
            path: path.clone(),
            why,
        };
        let policy = match lines.next() {
            Some("on") => NetworkPolicy::On,
            Some("off") => NetworkPolicy::Off,
            Some("allow") => {
                NetworkPolicy::AllowList(AllowList::parse(&lines.by_ref().collect::<Vec<_>>()).map_err(format)?)
            }
            other => return Err(format(format!("`{}` is not on, off or allow", other.unwrap_or("")))),
        };
        match lines.next() {
            Some(extra) => Err(format(format!("unexpected `{extra}` after the policy"))),
            None => Ok(Some(policy)),
        }
    }

    /// Sets the chat's policy (`None`: back to the bot's default), written whole (a temporary
    /// file renamed over the old one).
    pub fn set(&self, chat_key: &str, policy: Option<&NetworkPolicy>) -> Result<(), ChatNetworkError> {
        let path = self.file(chat_key)?;
        let io = |error| ChatNetworkError::Io {
            path: path.clone(),
            error,
        };
        let Some(policy) = policy else {
            return match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
                _ => Ok(()),
            };
        };
        let text = match policy {
            NetworkPolicy::On => "on\n".to_owned(),
            NetworkPolicy::Off => "off\n".to_owned(),
            NetworkPolicy::AllowList(list) => format!(
                "allow\n{}",
                list.hosts().iter().map(|h| format!("{h}\n")).collect::<String>()
            ),
        };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let temporary = self.dir.join(format!(".{chat_key}.new"));
        std::fs::write(&temporary, text).map_err(io)?;
        std::fs::rename(&temporary, &path).map_err(io)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_policy_is_kept_read_back_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let chats = ChatNetworks::under(dir.path());
        assert!(chats.get("123").unwrap().is_none());
        let list = NetworkPolicy::AllowList(AllowList::parse(&["api.github.com", "*.pypi.org"]).unwrap());
        for policy in [NetworkPolicy::Off, NetworkPolicy::On, list] {
            chats.set("g123", Some(&policy)).unwrap();
            assert_eq!(chats.get("g123").unwrap(), Some(policy));
        }
        chats.set("g123", None).unwrap();
        assert!(chats.get("g123").unwrap().is_none());
        chats.set("g123", None).unwrap();
    }

    #[test]
    fn bad_keys_and_files_are_errors_naming_them() {
        let dir = tempfile::tempdir().unwrap();
        let chats = ChatNetworks::under(dir.path());
        for key in ["../x", "", "g", "a2a-alice", "1/2"] {
            assert!(matches!(chats.get(key), Err(ChatNetworkError::Key(_))), "{key}");
        }
        std::fs::create_dir_all(dir.path().join(CHAT_NETWORKS_DIR)).unwrap();
        for text in ["maybe\n", "off\nextra\n", "allow\nhttps://x\n"] {
            std::fs::write(dir.path().join(CHAT_NETWORKS_DIR).join("7"), text).unwrap();
            let e = chats.get("7").unwrap_err().to_string();
            assert!(e.contains("/network"), "{text}: {e}");
        }
    }
}
