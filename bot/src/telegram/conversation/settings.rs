//! `chat-settings.json` in `state_dir`: per chat key the time zone (IANA), model, fallback
//! models and thinking level. Written atomically; a corrupt file is set aside and reported.
//!
//! Values are checked when read: a zone that is not an IANA zone, a model the config does not
//! know (or whose provider has no key) or an unknown thinking level is reported at load (a
//! warning naming the chat and the key) and ignored for that chat, which gets the config's
//! default instead; it is never applied. Such a value stays in the file untouched (nothing a
//! user wrote is lost) until the chat sets that key again.

use crate::telegram::conversation::store_file::{Loaded, load_json, save_json};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use volcanic_abstractions::model::ThinkingLevel;
use volcanic_core::models::ModelRegistry;

/// One chat's settings, checked; `None` means the config's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatSettings {
    /// IANA zone, e.g. `Europe/Berlin`.
    pub time_zone: Option<String>,
    /// `provider/id` for new sessions.
    pub model: Option<String>,
    /// Thinking level for new sessions.
    pub thinking: Option<ThinkingLevel>,
    /// `/voice lang CODE`: the language voice notes are transcribed in (ISO-639-1).
    pub voice_language: Option<String>,
    /// `/voice on|off|auto`: whether its answers are spoken (`None`: off).
    pub voice_reply: Option<crate::telegram::voice::Speaking>,
    /// `/model fallback ...`: the chat's fallback models (`provider/id`, in order; empty: none).
    /// A list with a model that does not check out is ignored whole.
    pub fallback_models: Option<Vec<String>>,
}

/// One chat's entry as the file holds it (unchecked; other keys kept as they are).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct StoredSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    time_zone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    thinking: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    voice_language: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    voice_reply: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fallback_models: Option<Vec<String>>,
    #[serde(flatten)]
    other: BTreeMap<String, serde_json::Value>,
}

/// Says why a model key cannot be used (`None`: it can).
type ModelCheck = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The settings of every chat, keyed by chat key.
pub struct SettingsStore {
    path: PathBuf,
    map: Mutex<BTreeMap<String, StoredSettings>>,
    model_problem: ModelCheck,
}

impl std::fmt::Debug for SettingsStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SettingsStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// A value of one chat that is ignored, as [`SettingsStore::load`] reports it.
#[derive(Debug, Clone, PartialEq)]
struct Ignored {
    chat: String,
    key: &'static str,
    value: String,
    why: String,
}

/// The IANA zone chat `chat` (its chat key) set with `/tz`, read from
/// `<state_dir>/chat-settings.json` without changing anything (for a reader beside the running
/// bot, such as the console's `/usage`). `None` when the file, the chat or its zone is missing,
/// unreadable or not an IANA name: the caller uses the config's default, as the bot does.
pub fn stored_time_zone(state_dir: &std::path::Path, chat: &str) -> Option<chrono_tz::Tz> {
    let bytes = std::fs::read(state_dir.join("chat-settings.json")).ok()?;
    let map: BTreeMap<String, StoredSettings> = serde_json::from_slice(&bytes).ok()?;
    map.get(chat)?.time_zone.as_deref()?.parse().ok()
}

impl SettingsStore {
    /// Loads `<state_dir>/chat-settings.json`, checking models against `models` (known, and
    /// its provider has a key). Logs a warning for each ignored value. Returns the store and,
    /// if the file was corrupt, where it was set aside.
    pub fn load(
        state_dir: &std::path::Path,
        models: &ModelRegistry,
    ) -> std::io::Result<(SettingsStore, Option<PathBuf>)> {
        let models = models.clone();
        let check: ModelCheck = Box::new(move |key| match models.find(key) {
            None => Some("no such model is configured".to_owned()),
            Some(m) => models.api_key(&m.provider).err().map(|e| e.to_string()),
        });
        let (store, aside, ignored) = Self::load_checked(state_dir, check)?;
        for i in ignored {
            tracing::warn!(
                file = %store.path.display(),
                chat = %i.chat,
                key = i.key,
                "chat {}: ignoring {} `{}` ({}); the chat uses the config's default until it sets one",
                i.chat,
                i.key,
                i.value,
                i.why
            );
        }
        Ok((store, aside))
    }

    fn load_checked(
        state_dir: &std::path::Path,
        model_problem: ModelCheck,
    ) -> std::io::Result<(SettingsStore, Option<PathBuf>, Vec<Ignored>)> {
        let path = state_dir.join("chat-settings.json");
        let (map, aside) = match load_json(&path)? {
            Loaded::Ok(m) => (m, None),
            Loaded::Missing => (BTreeMap::new(), None),
            Loaded::SetAside(p) => (BTreeMap::new(), Some(p)),
        };
        let store = SettingsStore {
            path,
            map: Mutex::new(map),
            model_problem,
        };
        let mut ignored = Vec::new();
        for (chat, stored) in store.map.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            store.check(chat, stored, &mut ignored);
        }
        Ok((store, aside, ignored))
    }

    /// The usable part of `stored`; what it drops goes to `ignored`.
    fn check(&self, chat: &str, stored: &StoredSettings, ignored: &mut Vec<Ignored>) -> ChatSettings {
        let mut drop = |key: &'static str, value: &str, why: String| {
            ignored.push(Ignored {
                chat: chat.to_owned(),
                key,
                value: value.to_owned(),
                why,
            });
        };
        let time_zone = stored
            .time_zone
            .as_deref()
            .and_then(|z| match z.parse::<chrono_tz::Tz>() {
                Ok(tz) => Some(tz.name().to_owned()),
                Err(_) => {
                    drop("time_zone", z, "not an IANA time zone".to_owned());
                    None
                }
            });
        let model = stored.model.as_deref().and_then(|m| match (self.model_problem)(m) {
            None => Some(m.to_owned()),
            Some(why) => {
                drop("model", m, why);
                None
            }
        });
        let thinking = stored
            .thinking
            .as_deref()
            .and_then(|t| match t.parse::<ThinkingLevel>() {
                Ok(level) => Some(level),
                Err(e) => {
                    drop("thinking", t, e.to_string());
                    None
                }
            });
        let voice_language = stored.voice_language.as_deref().and_then(|l| {
            if crate::config::is_language(l) {
                Some(l.to_owned())
            } else {
                drop("voice_language", l, "not an ISO-639-1 language code".to_owned());
                None
            }
        });
        let voice_reply = stored.voice_reply.as_deref().and_then(|v| {
            let speaking = crate::telegram::voice::Speaking::parse(v);
            if speaking.is_none() {
                drop("voice_reply", v, "not on, off or auto".to_owned());
            }
            speaking
        });
        let fallback_models = stored.fallback_models.as_ref().and_then(|list| {
            let problem = list
                .iter()
                .find_map(|m| (self.model_problem)(m).map(|why| format!("`{m}`: {why}")));
            match problem {
                None => Some(list.clone()),
                Some(why) => {
                    drop("fallback_models", &list.join(", "), why);
                    None
                }
            }
        });
        ChatSettings {
            time_zone,
            model,
            thinking,
            voice_language,
            voice_reply,
            fallback_models,
        }
    }

    /// A chat's settings (defaults when unknown); values that do not check out are `None`.
    pub fn get(&self, chat: &str) -> ChatSettings {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        match map.get(chat) {
            Some(stored) => self.check(chat, stored, &mut Vec::new()),
            None => ChatSettings::default(),
        }
    }

    /// Changes a chat's settings and writes the file. `f` sees the checked settings; only the
    /// values it changes are written over the stored ones.
    pub fn update(&self, chat: &str, f: impl FnOnce(&mut ChatSettings)) -> std::io::Result<()> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let stored = map.entry(chat.to_owned()).or_default();
        let before = self.check(chat, stored, &mut Vec::new());
        let mut after = before.clone();
        f(&mut after);
        if after.time_zone != before.time_zone {
            stored.time_zone = after.time_zone;
        }
        if after.model != before.model {
            stored.model = after.model;
        }
        if after.thinking != before.thinking {
            stored.thinking = after.thinking.map(|t| t.as_str().to_owned());
        }
        if after.voice_language != before.voice_language {
            stored.voice_language = after.voice_language;
        }
        if after.voice_reply != before.voice_reply {
            stored.voice_reply = after.voice_reply.map(|v| v.as_str().to_owned());
        }
        if after.fallback_models != before.fallback_models {
            stored.fallback_models = after.fallback_models;
        }
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
    use pretty_assertions::assert_eq;

    fn known_models() -> ModelCheck {
        Box::new(|key| (key != "anthropic/claude-sonnet-4-5").then(|| "no such model is configured".to_owned()))
    }

    fn load(dir: &std::path::Path) -> (SettingsStore, Option<PathBuf>, Vec<Ignored>) {
        SettingsStore::load_checked(dir, known_models()).unwrap()
    }

    #[test]
    fn settings_survive_reload_and_rename() {
        let dir = tempfile::tempdir().unwrap();
        let (s, aside, _) = load(dir.path());
        assert!(aside.is_none());
        s.update("42", |c| c.time_zone = Some("Europe/Berlin".into())).unwrap();
        s.update("g7", |c| c.thinking = Some(ThinkingLevel::High)).unwrap();
        s.rename("g7", "g1007").unwrap();
        let (s2, _, ignored) = load(dir.path());
        assert_eq!(ignored, Vec::new());
        assert_eq!(s2.get("42").time_zone.as_deref(), Some("Europe/Berlin"));
        assert_eq!(s2.get("g1007").thinking, Some(ThinkingLevel::High));
        assert_eq!(s2.get("g7"), ChatSettings::default());
    }

    #[test]
    fn a_fallback_list_with_an_unknown_model_is_ignored_whole_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("chat-settings.json");
        std::fs::write(
            &file,
            r#"{"42": {"fallback_models": ["anthropic/claude-sonnet-4-5", "nope/none"]},
                "43": {"fallback_models": ["anthropic/claude-sonnet-4-5"]}}"#,
        )
        .unwrap();
        let (s, _, ignored) = load(dir.path());
        let keys: Vec<(&str, &str)> = ignored.iter().map(|i| (i.chat.as_str(), i.key)).collect();
        assert_eq!(keys, vec![("42", "fallback_models")]);
        assert!(ignored[0].why.contains("`nope/none`"), "{:?}", ignored[0]);
        assert_eq!(s.get("42").fallback_models, None);
        assert_eq!(
            s.get("43").fallback_models,
            Some(vec!["anthropic/claude-sonnet-4-5".to_owned()])
        );
        // Turning them off for a chat is kept as an empty list, not as the config's.
        s.update("43", |c| c.fallback_models = Some(Vec::new())).unwrap();
        let (s2, _, _) = load(dir.path());
        assert_eq!(s2.get("43").fallback_models, Some(Vec::new()));
    }

    #[test]
    fn corrupt_settings_are_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("chat-settings.json"), "{oops").unwrap();
        let (s, aside, _) = load(dir.path());
        assert_eq!(std::fs::read_to_string(aside.unwrap()).unwrap(), "{oops");
        assert_eq!(s.get("1"), ChatSettings::default());
    }

    #[test]
    fn values_that_do_not_check_out_are_reported_ignored_and_kept_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("chat-settings.json");
        std::fs::write(
            &file,
            r#"{"42": {"time_zone": "Mars/Olympus", "model": "nope/none", "thinking": "max", "pinned": 1},
                "43": {"time_zone": "Asia/Tokyo", "model": "anthropic/claude-sonnet-4-5", "thinking": "low"}}"#,
        )
        .unwrap();
        let (s, aside, ignored) = load(dir.path());
        assert!(aside.is_none());
        let keys: Vec<(&str, &str, &str)> = ignored
            .iter()
            .map(|i| (i.chat.as_str(), i.key, i.value.as_str()))
            .collect();
        assert_eq!(
            keys,
            vec![
                ("42", "time_zone", "Mars/Olympus"),
                ("42", "model", "nope/none"),
                ("42", "thinking", "max")
            ]
        );
        assert_eq!(s.get("42"), ChatSettings::default());
        assert_eq!(
            s.get("43"),
            ChatSettings {
                time_zone: Some("Asia/Tokyo".into()),
                model: Some("anthropic/claude-sonnet-4-5".into()),
                thinking: Some(ThinkingLevel::Low),
                voice_language: None,
                voice_reply: None,
                fallback_models: None,
            }
        );
        // Setting one key writes that key; the other ignored values and unknown keys stay.
        s.update("42", |c| c.time_zone = Some("Europe/Berlin".into())).unwrap();
        let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(
            saved["42"],
            serde_json::json!({"time_zone": "Europe/Berlin", "model": "nope/none", "thinking": "max", "pinned": 1})
        );
        assert_eq!(s.get("42").time_zone.as_deref(), Some("Europe/Berlin"));
        assert_eq!(s.get("42").model, None);
    }

    #[test]
    fn a_stored_zone_is_read_without_touching_the_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(stored_time_zone(dir.path(), "42"), None);
        let path = dir.path().join("chat-settings.json");
        std::fs::write(
            &path,
            r#"{"42":{"time_zone":"Europe/Berlin"},"43":{"time_zone":"Mars/Base"}}"#,
        )
        .unwrap();
        assert_eq!(stored_time_zone(dir.path(), "42"), Some(chrono_tz::Europe::Berlin));
        assert_eq!(stored_time_zone(dir.path(), "43"), None, "not an IANA zone");
        assert_eq!(stored_time_zone(dir.path(), "44"), None, "no such chat");
        std::fs::write(&path, "{garbled").unwrap();
        assert_eq!(stored_time_zone(dir.path(), "42"), None);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{garbled",
            "a corrupt file stays where it is"
        );
    }
}
