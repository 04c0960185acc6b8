//! The chat's agents: `.volcanic/a2a/agents.json` in its workspace, names and base URLs only
//! (credentials live in the host config, never in a workspace):
//!
//! ```json
//! {"agents": [{"name": "research", "url": "https://agents.example.org/research"}]}
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;
use url::Url;

use crate::error::{A2aError, Result};

/// The file, relative to the workspace.
pub const AGENTS_FILE: &str = ".volcanic/a2a/agents.json";

/// One agent the chat may talk to.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentEntry {
    /// Its name (what the tool's `agent` argument takes).
    pub name: String,
    /// Its base URL; the card is at `<url>/.well-known/agent-card.json`.
    pub url: Url,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    agents: Vec<RawEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    name: String,
    url: String,
}

/// The path of the file in `workspace`.
pub fn agents_path(workspace: &Path) -> PathBuf {
    workspace.join(AGENTS_FILE)
}

/// The agents listed in `workspace`; none when the file does not exist.
///
/// # Errors
/// [`A2aError::Invalid`] naming the file and what is wrong (bad JSON, unknown key, empty or
/// duplicate name, a URL that is not http(s)).
pub fn read_agents(workspace: &Path) -> Result<Vec<AgentEntry>> {
    let path = agents_path(workspace);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(A2aError::Invalid(format!("{AGENTS_FILE}: {e}"))),
    };
    let bad = |what: String| A2aError::Invalid(format!("{AGENTS_FILE}: {what}; expected {EXAMPLE}"));
    let file: File = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let mut out: Vec<AgentEntry> = Vec::new();
    for raw in file.agents {
        let name = raw.name.trim().to_owned();
        if name.is_empty() {
            return Err(bad("an agent without a name".into()));
        }
        if out.iter().any(|a| a.name == name) {
            return Err(bad(format!("the name `{name}` is listed twice")));
        }
        let url = Url::parse(raw.url.trim()).map_err(|e| bad(format!("agent `{name}`: url `{}`: {e}", raw.url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad(format!("agent `{name}`: url `{url}` is not http(s)")));
        }
        out.push(AgentEntry { name, url });
    }
    Ok(out)
}

/// The file's shape, for error messages.
const EXAMPLE: &str = r#"{"agents": [{"name": "NAME", "url": "https://HOST/BASE"}]}"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) {
        let p = agents_path(dir);
        std::fs::create_dir_all(p.parent().unwrap_or(dir)).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(p, text).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn agents_are_read_and_bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_agents(dir.path()).ok(), Some(vec![]));
        write(dir.path(), r#"{"agents":[{"name":"a","url":"http://127.0.0.1:9/x"}]}"#);
        let list = read_agents(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(list[0].name, "a");
        for (text, needle) in [
            (r#"{"agents":[{"name":"a","url":"ftp://x"}]}"#, "not http(s)"),
            (
                r#"{"agents":[{"name":"a","url":"http://x"},{"name":"a","url":"http://y"}]}"#,
                "twice",
            ),
            (
                r#"{"agents":[{"name":"a","url":"http://x","token":"t"}]}"#,
                "unknown field",
            ),
            ("{", "EOF"),
        ] {
            write(dir.path(), text);
            let e = read_agents(dir.path()).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains(needle) && e.contains(AGENTS_FILE), "{e}");
        }
    }
}
