use super::*;
use pretty_assertions::assert_eq;
use std::collections::HashMap;

/// Files in a map; a name in `corrupt` reads as set aside once.
#[derive(Debug, Default)]
pub(crate) struct MapFiles {
    pub files: Mutex<HashMap<String, Memory>>,
    pub corrupt: Mutex<Vec<String>>,
}

impl MemoryFiles for MapFiles {
    fn load(&self, name: &str) -> std::io::Result<Loaded> {
        let mut corrupt = self.corrupt.lock().unwrap();
        if let Some(i) = corrupt.iter().position(|n| n == name) {
            corrupt.remove(i);
            return Ok(Loaded::SetAside(PathBuf::from(format!("{name}.json.corrupt-1"))));
        }
        Ok(self
            .files
            .lock()
            .unwrap()
            .get(name)
            .cloned()
            .map_or(Loaded::Missing, Loaded::Found))
    }

    fn save(&self, name: &str, memory: &Memory) -> std::io::Result<()> {
        self.files.lock().unwrap().insert(name.to_owned(), memory.clone());
        Ok(())
    }
}

fn texts(entries: &[Entry]) -> Vec<(String, &str)> {
    entries.iter().map(|e| (e.label(), e.text.as_str())).collect()
}

#[test]
fn chats_keep_their_own_entries_and_share_only_promoted_ones() {
    let files = Arc::new(MapFiles::default());
    let m = Memories::new(files.clone(), 100);
    m.add("123", "Prefers tea", Scope::Chat, "s1").unwrap();
    m.add("g456", "Meets on Mondays", Scope::Chat, "s2").unwrap();
    assert_eq!(texts(&m.view("123").unwrap().chat), vec![("1".into(), "Prefers tea")]);
    assert_eq!(
        texts(&m.view("g456").unwrap().chat),
        vec![("1".into(), "Meets on Mondays")]
    );

    let promoted = m.promote("123", 1).unwrap();
    assert_eq!((promoted.label(), promoted.session.as_str()), ("g1".into(), "s1"));
    let other = m.view("g456").unwrap();
    assert_eq!(texts(&other.global), vec![("g1".into(), "Prefers tea")]);
    assert!(m.view("123").unwrap().chat.is_empty(), "promotion moves the entry");

    assert_eq!(m.clear("g456").unwrap(), 1);
    assert!(m.view("g456").unwrap().chat.is_empty());
    assert_eq!(
        m.view("g456").unwrap().global.len(),
        1,
        "/forget keeps the global entries"
    );
    m.remove("123", Scope::Global, 1).unwrap();
    assert!(m.view("123").unwrap().global.is_empty());
}

#[test]
fn a_refused_change_writes_nothing_and_a_corrupt_file_is_reported() {
    let files = Arc::new(MapFiles::default());
    let m = Memories::new(files.clone(), 10);
    m.add("1", "0123456789", Scope::Chat, "s").unwrap();
    let err = m.add("1", "x", Scope::Chat, "s").unwrap_err();
    assert!(matches!(err, MemoryError::Refused(ChangeError::Full { .. })), "{err}");
    assert_eq!(files.files.lock().unwrap()["1"].entries.len(), 1);

    files.corrupt.lock().unwrap().push("1".into());
    let view = m.view("1").unwrap();
    assert!(view.chat.is_empty());
    assert_eq!(view.set_aside, vec![PathBuf::from("1.json.corrupt-1")]);
}

#[test]
fn caller_keys_are_file_names_apart_from_chats() {
    assert_eq!(caller_key("ci bot/1"), "a2a-ci_bot_1");
    assert_eq!(caller_key("../x"), "a2a-___x");
}
