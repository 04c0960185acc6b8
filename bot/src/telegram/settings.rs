//! `chat-settings.json` in `state_dir`: per chat key the time zone (IANA), model and thinking
//! level. Written atomically; a corrupt file is set aside and reported.

use super::store_file::{Loaded, load_json, save_json};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use volcanic_abstractions::model::ThinkingLevel;

/// One chat's settings; `None` means the config's default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatSettings {
    /// IANA zone, e.g. `Europe/Berlin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// `provider/id` for new sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Thinking level for new sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<ThinkingLevel>,
}

/// The settings of every chat, keyed by chat key.
#[derive(Debug)]
pub struct SettingsStore {
    path: PathBuf,
    map: Mutex<BTreeMap<String, ChatSettings>>,
}

impl SettingsStore {
    /// Loads `<state_dir>/chat-settings.json`. Returns the store and, if the file was corrupt,
    /// where it was set aside.
    pub fn load(state_dir: &std::path::Path) -> std::io::Result<(SettingsStore, Option<PathBuf>)> {
        let path = state_dir.join("chat-settings.json");
        let (map, aside) = match load_json(&path)? {
            Loaded::Ok(m) => (m, None),
            Loaded::Missing => (BTreeMap::new(), None),
            Loaded::SetAside(p) => (BTreeMap::new(), Some(p)),
        };
        Ok((
            SettingsStore {
                path,
                map: Mutex::new(map),
            },
            aside,
        ))
    }

    /// A chat's settings (defaults when unknown).
    pub fn get(&self, chat: &str) -> ChatSettings {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(chat)
            .cloned()
            .unwrap_or_default()
    }

    /// Changes a chat's settings and writes the file.
    pub fn update(&self, chat: &str, f: impl FnOnce(&mut ChatSettings)) -> std::io::Result<()> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        f(map.entry(chat.to_owned()).or_default());
        save_json(&self.path, &*map)
    }

    /// Moves a chat's settings to a new key (a group that became a supergroup).
    pub fn rename(&self, from: &str, to: &str) -> std::io::Result<()> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = map.remove(from) {
            map.insert(to.to_owned(), s);
            save_json(&self.path, &*map)?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn settings_survive_reload_and_rename() {
        let dir = tempfile::tempdir().unwrap();
        let (s, aside) = SettingsStore::load(dir.path()).unwrap();
        assert!(aside.is_none());
        s.update("42", |c| c.time_zone = Some("Europe/Berlin".into())).unwrap();
        s.update("g7", |c| c.thinking = Some(ThinkingLevel::High)).unwrap();
        s.rename("g7", "g1007").unwrap();
        let (s2, _) = SettingsStore::load(dir.path()).unwrap();
        assert_eq!(s2.get("42").time_zone.as_deref(), Some("Europe/Berlin"));
        assert_eq!(s2.get("g1007").thinking, Some(ThinkingLevel::High));
        assert_eq!(s2.get("g7"), ChatSettings::default());
    }

    #[test]
    fn corrupt_settings_are_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("chat-settings.json"), "{oops").unwrap();
        let (s, aside) = SettingsStore::load(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(aside.unwrap()).unwrap(), "{oops");
        assert_eq!(s.get("1"), ChatSettings::default());
    }
}
