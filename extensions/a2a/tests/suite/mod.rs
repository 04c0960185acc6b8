//! Shared setup: a peer, a workspace listing it, and the `a2a` tool on a client.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bad_peers;
mod dialects;
mod js_peer;
mod sdk_peer;
mod watch;

use std::sync::Arc;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

use volcanic_a2a::{A2aArgs, A2aClient, A2aSettings, A2aTool, Action, Dialect};
use volcanic_testkit::a2a_peer::{A2aPeer, PeerConfig, PeerMode};

pub const MODES: [PeerMode; 3] = [PeerMode::V1Only, PeerMode::Both, PeerMode::V03Only];

/// The dialect our client must pick for a peer in `mode` (1.0 whenever offered).
pub fn dialect(mode: PeerMode) -> Dialect {
    match mode {
        PeerMode::V1Only | PeerMode::Both => Dialect::V1,
        PeerMode::V03Only => Dialect::V03,
    }
}

pub struct Setup {
    pub peer: A2aPeer,
    pub tool: A2aTool,
    pub hop: Arc<AtomicU32>,
    pub dir: tempfile::TempDir,
}

impl Setup {
    pub fn ws(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Runs the tool; `Ok(text)` or `Err(error text)`.
    pub async fn run(&self, args: A2aArgs) -> Result<String, String> {
        self.tool
            .call(args, self.ws())
            .await
            .map(|r| r.text_content())
            .map_err(|e| e.to_string())
    }
}

pub fn args(action: Action) -> A2aArgs {
    A2aArgs {
        action,
        agent: Some("peer".into()),
        text: None,
        files: None,
        context_id: None,
        task_id: None,
        refresh: None,
    }
}

pub fn send(text: &str) -> A2aArgs {
    A2aArgs {
        text: Some(text.into()),
        ..args(Action::Send)
    }
}

/// Writes `.volcanic/a2a/agents.json` naming `peer` at `url`.
pub fn list_agent(ws: &std::path::Path, url: &str) {
    let dir = ws.join(".volcanic/a2a");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("agents.json"),
        serde_json::json!({"agents": [{"name": "peer", "url": url}]}).to_string(),
    )
    .unwrap();
}

pub async fn setup_with(config: PeerConfig, settings: A2aSettings) -> Setup {
    setup_for(config, |_| settings).await
}

/// As [`setup_with`], the settings made knowing the peer's URL (to bind credentials to it).
pub async fn setup_for(config: PeerConfig, settings: impl FnOnce(&str) -> A2aSettings) -> Setup {
    let peer = A2aPeer::start(config).await.unwrap();
    let settings = settings(&peer.url());
    let dir = tempfile::tempdir().unwrap();
    list_agent(dir.path(), &peer.url());
    let client = A2aClient::new(settings).unwrap();
    let hop = Arc::new(AtomicU32::new(0));
    let tool = A2aTool::new(client, hop.clone());
    Setup { peer, tool, hop, dir }
}

pub fn quick() -> A2aSettings {
    A2aSettings {
        send_wait: Duration::from_secs(10),
        ..A2aSettings::default()
    }
}

pub async fn setup(mode: PeerMode) -> Setup {
    setup_with(PeerConfig::new(mode), quick()).await
}

/// The value after `key: ` on a line of `text`.
pub fn field(text: &str, key: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")))
        .unwrap_or_else(|| panic!("no {key} in {text}"))
        .trim()
        .to_owned()
}
