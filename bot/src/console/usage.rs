//! The console's `/usage [chat id]` (docs/costs.md, "/usage"): what a chat spent today and this
//! month, and this month's top chats and people (the console is its owner's: it has the config
//! and the state), the same numbers as that chat's own `/usage` ([`usage`]). Without a chat id
//! it is the first owner's private chat. The spend store is opened to read only on each call
//! ([`SpendStore::open_read_only`]): a console beside the running bot never writes its journal.

use crate::config::Config;
use crate::features::allowance::spend_dir;
use crate::features::port::chat_key;
use crate::features::usage::usage;
use crate::telegram::stored_time_zone;
use std::path::PathBuf;
use volcanic_allowance::{SpendStore, local_day};

/// Where the console's `/usage` reads, from the config.
#[derive(Debug, Clone)]
pub struct UsageSource {
    /// The spend store's folder; `None` without `[allowance]` (nothing is recorded).
    dir: Option<PathBuf>,
    /// The chat shown without an argument: the first owner's private chat.
    owner: Option<i64>,
    /// Where `chat-settings.json` is: days and months are counted in the chat's own zone
    /// (`/tz`), as the chat's `/usage` counts them.
    state_dir: PathBuf,
    /// The zone of a chat that set none: the config's `default_time_zone`.
    zone: chrono_tz::Tz,
}

impl UsageSource {
    /// The source `config` names: its `state_dir`'s spend store when it has `[allowance]`.
    pub fn new(config: &Config) -> UsageSource {
        UsageSource {
            dir: config
                .features
                .contains_key("allowance")
                .then(|| spend_dir(&config.state_dir)),
            owner: config.telegram.owners.first().copied(),
            state_dir: config.state_dir.clone(),
            zone: config.default_time_zone,
        }
    }

    /// What `/usage {arg}` prints.
    ///
    /// # Errors
    /// What to do instead, as a sentence: no `[allowance]` section, no chat named and no owner,
    /// an argument that is not a chat id, or a store that cannot be read.
    pub fn report(&self, arg: &str) -> Result<String, String> {
        let Some(dir) = &self.dir else {
            return Err("spending is not recorded: add an [allowance] section to the config (docs/costs.md)".into());
        };
        let chat = match (arg.trim(), self.owner) {
            ("", Some(owner)) => owner,
            ("", None) => return Err("name a chat: /usage <chat id> (the config lists no owner)".into()),
            (id, _) => id
                .parse::<i64>()
                .map_err(|_| format!("/usage [chat id]: `{id}` is not a chat id (e.g. 123456 or -100123456)"))?,
        };
        let store = SpendStore::open_read_only(dir).map_err(|e| e.to_string())?;
        let key = chat_key(chat);
        let zone = stored_time_zone(&self.state_dir, &key).unwrap_or(self.zone);
        let today = local_day(chrono::Utc::now(), zone);
        let numbers = usage(&store, &key, today, true).numbers(&format!("chat {chat}"));
        Ok(format!("{numbers}\n(Days in {}.)", zone.name()))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use volcanic_allowance::{Account, Charge, MicroUsd};

    fn source(dir: Option<PathBuf>, owner: Option<i64>) -> UsageSource {
        UsageSource {
            dir,
            owner,
            state_dir: PathBuf::from("/nonexistent"),
            zone: chrono_tz::UTC,
        }
    }

    #[test]
    fn a_chat_s_numbers_from_the_store_and_what_to_do_without_one() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("spend");
        {
            let store = SpendStore::open(&dir).unwrap();
            let charge = Charge {
                request: "r1".into(),
                day: local_day(chrono::Utc::now(), chrono_tz::UTC),
                accounts: vec![Account::Chat("g42".into()), Account::User("7".into())],
                estimate: MicroUsd::from_usd(1.0),
            };
            store.reserve(&charge, &[]).unwrap();
            store.settle("r1", MicroUsd::from_usd(0.5)).unwrap();
        }
        let s = source(Some(dir.clone()), Some(7));
        assert_eq!(
            s.report("-42").unwrap(),
            "Spent in chat -42: today $0.50, this month $0.50.\nTop chats this month: g42 $0.50.\n\
             Top people this month: 7 $0.50.\n(Days in UTC.)"
        );
        assert!(s.report("").unwrap().starts_with("Spent in chat 7: today $0.00"));
        assert!(s.report("bob").unwrap_err().contains("`bob` is not a chat id"));
        assert!(source(Some(dir), None).report("").unwrap_err().contains("name a chat"));
        assert!(source(None, Some(7)).report("").unwrap_err().contains("[allowance]"));
        // A chat with its own zone (`/tz`) is counted in it, as its own /usage counts.
        std::fs::write(
            tmp.path().join("chat-settings.json"),
            r#"{"7":{"time_zone":"Asia/Tokyo"}}"#,
        )
        .unwrap();
        let zoned = UsageSource {
            state_dir: tmp.path().to_path_buf(),
            ..source(Some(tmp.path().join("spend")), Some(7))
        };
        assert!(zoned.report("").unwrap().ends_with("(Days in Asia/Tokyo.)"));
        assert!(zoned.report("-42").unwrap().ends_with("(Days in UTC.)"));
    }
}
