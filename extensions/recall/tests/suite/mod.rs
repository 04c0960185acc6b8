mod index;
mod search;

use std::path::{Path, PathBuf};
use volcanic_recall::{ChatKey, Hit, Query, Recall, Terms};

/// A state folder with `sessions/` and `recall/`.
pub struct State {
    pub dir: tempfile::TempDir,
    pub recall: Recall,
}

impl State {
    pub fn new() -> State {
        let dir = match tempfile::tempdir() {
            Ok(d) => d,
            Err(e) => panic!("temp dir: {e}"),
        };
        let recall = Recall::new(dir.path().join("sessions"), dir.path().join("recall"));
        State { dir, recall }
    }

    /// A new `Recall` on the same folders, as after a restart of the process.
    pub fn restart(&mut self) {
        self.recall = Recall::new(self.dir.path().join("sessions"), self.dir.path().join("recall"));
    }

    /// Writes (or replaces) `sessions/<rel>`.
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join("sessions").join(rel);
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
        }
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        path
    }

    /// Appends to `sessions/<rel>`.
    pub fn append(&self, rel: &str, text: &str) {
        use std::io::Write;
        let path = self.dir.path().join("sessions").join(rel);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
        f.write_all(text.as_bytes()).unwrap_or_else(|e| panic!("append: {e}"));
    }

    pub fn index_file(&self, chat: &str) -> PathBuf {
        self.recall.index_file(&key(chat))
    }

    pub fn search(&self, chat: &str, words: &str) -> Vec<Hit> {
        self.search_in(chat, words, None, None)
    }

    pub fn search_in(&self, chat: &str, words: &str, since_ms: Option<i64>, until_ms: Option<i64>) -> Vec<Hit> {
        let query = Query {
            terms: Terms::parse(words).unwrap_or_else(|e| panic!("{e}")),
            since_ms,
            until_ms,
            limit: 10,
            skip: None,
        };
        self.recall
            .search(&key(chat), &query)
            .unwrap_or_else(|e| panic!("search {chat}: {e}"))
    }

    /// The rows of `chat`'s index, from doctor's status.
    pub fn rows(&self, chat: &str) -> u64 {
        let status = self.recall.status();
        match status
            .iter()
            .find(|s| s.chat.as_str() == chat)
            .map(|s| s.counts.clone())
        {
            Some(Ok((rows, _))) => rows,
            other => panic!("no readable index for {chat}: {other:?}"),
        }
    }
}

pub fn key(chat: &str) -> ChatKey {
    ChatKey::new(chat).unwrap_or_else(|e| panic!("{e}"))
}

/// Files in `dir` whose name contains `part`.
pub fn files_named(dir: &Path, part: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    out.retain(|n| n.contains(part));
    out
}
