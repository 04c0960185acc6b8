//! Access control, deny by default (DESIGN.md "Trust model"): a sender must be in
//! `allowed_users` (config, plus `/allow` at run time, minus `/deny`); in a group the chat must
//! also be in `allowed_chats` (or be the supergroup a listed group became). Owners change the
//! run-time list, kept in `<state_dir>/access.json` with those supergroups. A stranger gets at
//! most one short reply per hour; nothing else happens. When each stranger was last answered is
//! kept in `<state_dir>/strangers.json` (written atomically, only the last hour's replies, at
//! most [`MAX_STRANGERS`]), so a restart does not answer anyone a second time within the hour.

use crate::telegram::conversation::store_file::{Loaded, load_json, save_json};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a stranger waits for the next reply.
pub const STRANGER_REPLY_INTERVAL: Duration = Duration::from_secs(3600);

/// How many strangers' last replies are remembered at most; past it the oldest are forgotten
/// (such a stranger may get a second reply within the hour).
pub const MAX_STRANGERS: usize = 4096;

/// `<state_dir>/strangers.json`: user id → Unix seconds of the last short reply.
#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq)]
struct StrangersFile {
    #[serde(default)]
    replied: BTreeMap<i64, u64>,
}

/// The strangers answered within the last hour, and the file keeping them.
#[derive(Debug)]
struct Strangers {
    path: PathBuf,
    /// An `Instant` and the Unix time it was, to place the callers' `Instant`s on the wall clock.
    base: (Instant, u64),
    file: StrangersFile,
}

impl Strangers {
    fn unix(&self, at: Instant) -> u64 {
        let (instant, unix) = self.base;
        match at.checked_duration_since(instant) {
            Some(later) => unix + later.as_secs(),
            None => unix.saturating_sub(instant.duration_since(at).as_secs()),
        }
    }
}

/// Whether a reply at `last` (Unix seconds) still silences the stranger at `now`. A time more
/// than an interval ahead (the clock was set back) silences no one.
fn within_interval(last: u64, now: u64) -> bool {
    let interval = STRANGER_REPLY_INTERVAL.as_secs();
    now.saturating_sub(last) < interval && last <= now + interval
}

/// Keeps the replies that still count at `now`, at most `cap` of them (the newest).
fn prune(replied: &mut BTreeMap<i64, u64>, now: u64, cap: usize) {
    replied.retain(|_, last| within_interval(*last, now));
    if replied.len() > cap {
        let mut times: Vec<u64> = replied.values().copied().collect();
        times.sort_unstable();
        let cutoff = times[times.len() - cap];
        replied.retain(|_, last| *last >= cutoff);
        // Ties at the cutoff: drop arbitrary ones of them until the cap holds.
        while replied.len() > cap {
            let Some(user) = replied.iter().find(|(_, last)| **last == cutoff).map(|(u, _)| *u) else {
                break;
            };
            replied.remove(&user);
        }
    }
}

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
    strangers: Mutex<Strangers>,
}

impl Access {
    /// Loads `<state_dir>/access.json` (a corrupt file is set aside) on top of the config lists,
    /// and `<state_dir>/strangers.json` (a corrupt or unreadable one is set aside or logged, and
    /// the bot starts with no stranger remembered).
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
        let strangers_path = state_dir.join("strangers.json");
        let strangers = match load_json(&strangers_path) {
            Ok(Loaded::Ok(f)) => f,
            Ok(Loaded::Missing | Loaded::SetAside(_)) => StrangersFile::default(),
            Err(e) => {
                tracing::warn!(file = %strangers_path.display(), "cannot read the strangers answered lately ({e}); starting without them");
                StrangersFile::default()
            }
        };
        let unix_now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Ok(Access {
            path,
            config_users: allowed_users.iter().copied().collect(),
            allowed_chats: allowed_chats.iter().copied().collect(),
            owners: owners.iter().copied().collect(),
            runtime: Mutex::new(runtime),
            strangers: Mutex::new(Strangers {
                path: strangers_path,
                base: (Instant::now(), unix_now),
                file: strangers,
            }),
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
    /// [`STRANGER_REPLY_INTERVAL`], also across restarts). A reply granted is written to
    /// `strangers.json` first; if that fails it is logged and the reply still goes.
    pub fn should_reply_to_stranger(&self, user: i64, now: Instant) -> bool {
        let mut strangers = self.strangers.lock().unwrap_or_else(|e| e.into_inner());
        let now = strangers.unix(now);
        if strangers
            .file
            .replied
            .get(&user)
            .is_some_and(|last| within_interval(*last, now))
        {
            return false;
        }
        strangers.file.replied.insert(user, now);
        prune(&mut strangers.file.replied, now, MAX_STRANGERS);
        if let Err(e) = save_json(&strangers.path, &strangers.file) {
            tracing::warn!(file = %strangers.path.display(), "cannot keep the strangers answered lately: {e}");
        }
        true
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

    #[test]
    fn a_restart_does_not_answer_a_stranger_twice_within_the_hour() {
        let dir = tempfile::tempdir().unwrap();
        let a = Access::load(dir.path(), &[], &[], &[]).unwrap();
        assert!(a.should_reply_to_stranger(9, Instant::now()));
        drop(a);
        let b = Access::load(dir.path(), &[], &[], &[]).unwrap();
        assert!(
            !b.should_reply_to_stranger(9, Instant::now()),
            "remembered across the restart"
        );
        assert!(
            b.should_reply_to_stranger(10, Instant::now()),
            "another stranger is answered"
        );
        assert!(b.should_reply_to_stranger(9, Instant::now() + STRANGER_REPLY_INTERVAL));
        // A corrupt file is set aside; the bot starts.
        std::fs::write(dir.path().join("strangers.json"), b"{ torn").unwrap();
        let c = Access::load(dir.path(), &[], &[], &[]).unwrap();
        assert!(c.should_reply_to_stranger(10, Instant::now()));
    }

    #[test]
    fn only_the_last_hour_is_kept_and_at_most_the_cap() {
        let hour = STRANGER_REPLY_INTERVAL.as_secs();
        let now = 1_000_000;
        let mut replied: BTreeMap<i64, u64> = (0..10).map(|u| (u, now - hour + 1 + u as u64)).collect();
        replied.insert(100, now - hour);
        replied.insert(101, now + 2 * hour);
        prune(&mut replied, now, 5);
        assert_eq!(replied.keys().copied().collect::<Vec<_>>(), vec![5, 6, 7, 8, 9]);
        assert!(within_interval(now, now + hour - 1) && !within_interval(now, now + hour));
    }
}
