//! Access control, deny by default (DESIGN.md "Trust model"): a sender must be in
//! `allowed_users` (config, plus `/allow` at run time, minus `/deny`); in a group the chat must
//! also be in `allowed_chats` (or be the supergroup a listed group became). Owners change the
//! run-time list, kept in `<state_dir>/access.json` with those supergroups. A stranger gets at
//! most one short reply per hour; nothing else happens.

use super::store_file::{Loaded, load_json, save_json};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a stranger waits for the next reply.
pub const STRANGER_REPLY_INTERVAL: Duration = Duration::from_secs(3600);

#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq)]
struct AccessFile {
    #[serde(default)]
    allowed: BTreeSet<i64>,
    #[serde(default)]
    denied: BTreeSet<i64>,
    /// Supergroups that an allowed group became (`migrate_to_chat_id`).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    chats: BTreeSet<i64>,
}

/// Who may talk to the bot.
#[derive(Debug)]
pub struct Access {
    path: PathBuf,
    config_users: BTreeSet<i64>,
    allowed_chats: BTreeSet<i64>,
    owners: BTreeSet<i64>,
    runtime: Mutex<AccessFile>,
    stranger_replies: Mutex<HashMap<i64, Instant>>,
}

impl Access {
    /// Loads `<state_dir>/access.json` (a corrupt file is set aside) on top of the config lists.
    pub fn load(
        state_dir: &Path,
        allowed_users: &[i64],
        allowed_chats: &[i64],
        owners: &[i64],
    ) -> std::io::Result<Access> {
        let path = state_dir.join("access.json");
        let runtime = match load_json(&path)? {
            Loaded::Ok(f) => f,
            Loaded::Missing | Loaded::SetAside(_) => AccessFile::default(),
        };
        Ok(Access {
            path,
            config_users: allowed_users.iter().copied().collect(),
            allowed_chats: allowed_chats.iter().copied().collect(),
            owners: owners.iter().copied().collect(),
            runtime: Mutex::new(runtime),
            stranger_replies: Mutex::new(HashMap::new()),
        })
    }

    /// Whether `user` may talk to the bot.
    pub fn is_allowed_user(&self, user: i64) -> bool {
        let rt = self.runtime.lock().unwrap_or_else(|e| e.into_inner());
        !rt.denied.contains(&user) && (self.config_users.contains(&user) || rt.allowed.contains(&user))
    }

    /// Whether the bot works in group `chat`.
    pub fn is_allowed_chat(&self, chat: i64) -> bool {
        self.allowed_chats.contains(&chat)
            || self
                .runtime
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .chats
                .contains(&chat)
    }

    /// Group `old` became supergroup `new`: if `old` was allowed, `new` is (persisted).
    pub fn migrate_chat(&self, old: i64, new: i64) -> std::io::Result<()> {
        if !self.is_allowed_chat(old) || self.is_allowed_chat(new) {
            return Ok(());
        }
        let mut rt = self.runtime.lock().unwrap_or_else(|e| e.into_inner());
        rt.chats.insert(new);
        save_json(&self.path, &*rt)
    }

    /// Whether `user` may `/allow` and `/deny`.
    pub fn is_owner(&self, user: i64) -> bool {
        self.owners.contains(&user)
    }

    /// Allows `user` (persisted).
    pub fn allow(&self, user: i64) -> std::io::Result<()> {
        let mut rt = self.runtime.lock().unwrap_or_else(|e| e.into_inner());
        rt.denied.remove(&user);
        rt.allowed.insert(user);
        save_json(&self.path, &*rt)
    }

    /// Denies `user` (persisted); owners cannot be denied.
    pub fn deny(&self, user: i64) -> std::io::Result<bool> {
        if self.is_owner(user) {
            return Ok(false);
        }
        let mut rt = self.runtime.lock().unwrap_or_else(|e| e.into_inner());
        rt.allowed.remove(&user);
        rt.denied.insert(user);
        save_json(&self.path, &*rt)?;
        Ok(true)
    }

    /// Whether a stranger should get the one short reply now (at most once per
    /// [`STRANGER_REPLY_INTERVAL`]).
    pub fn should_reply_to_stranger(&self, user: i64, now: Instant) -> bool {
        let mut map = self.stranger_replies.lock().unwrap_or_else(|e| e.into_inner());
        match map.get(&user) {
            Some(t) if now.duration_since(*t) < STRANGER_REPLY_INTERVAL => false,
            _ => {
                map.insert(user, now);
                true
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn deny_by_default_allow_and_deny_persist() {
        let dir = tempfile::tempdir().unwrap();
        let a = Access::load(dir.path(), &[1], &[-100], &[1]).unwrap();
        assert!(a.is_allowed_user(1));
        assert!(!a.is_allowed_user(2));
        assert!(a.is_allowed_chat(-100) && !a.is_allowed_chat(-5));
        a.allow(2).unwrap();
        assert!(a.deny(3).unwrap());
        assert!(!a.deny(1).unwrap(), "owners cannot be denied");
        let b = Access::load(dir.path(), &[1, 3], &[], &[1]).unwrap();
        assert!(b.is_allowed_user(2));
        assert!(!b.is_allowed_user(3), "a run-time deny beats the config list");
        b.migrate_chat(-5, -1005).unwrap();
        assert!(!b.is_allowed_chat(-1005), "an unlisted group stays unlisted");
        let c = Access::load(dir.path(), &[1], &[-100], &[1]).unwrap();
        c.migrate_chat(-100, -1000100).unwrap();
        let d = Access::load(dir.path(), &[1], &[-100], &[1]).unwrap();
        assert!(
            d.is_allowed_chat(-1000100),
            "the supergroup stays allowed after a restart"
        );
    }

    #[test]
    fn stranger_gets_one_reply_per_hour() {
        let dir = tempfile::tempdir().unwrap();
        let a = Access::load(dir.path(), &[], &[], &[]).unwrap();
        let t0 = Instant::now();
        assert!(a.should_reply_to_stranger(9, t0));
        assert!(!a.should_reply_to_stranger(9, t0 + Duration::from_secs(60)));
        assert!(a.should_reply_to_stranger(9, t0 + STRANGER_REPLY_INTERVAL));
    }
}
