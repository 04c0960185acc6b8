//! Recall (issue 28, docs/memory.md "Recall"): the `recall` tool in every session, searching the
//! past sessions of the session's own chat, and the background indexing of `state_dir/sessions`
//! into `state_dir/recall` (`volcanic-recall`).
//!
//! Whose sessions a session searches comes from where it is, never from the model: a chat's
//! session (any forum topic of a group included: a group's topics are one chat, as for memory)
//! searches its chat key's folder; an A2A caller's searches `a2a-<caller>` (even when it acts for
//! a chat); the console's searches its working directory's scope.

use super::port::chat_key;
use super::{HostFeature, Services, SessionPlace};
use async_trait::async_trait;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::{Extension, ExtensionFactory};
use volcanic_recall::{ChatKey, Pace, Recall, RecallExtension};

/// The recall feature (see the module docs).
pub struct RecallFeature {
    recall: Arc<Recall>,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for RecallFeature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecallFeature")
            .field("recall", &self.recall)
            .finish_non_exhaustive()
    }
}

/// Built unless `[memory] enabled = false` (recall is part of memory: docs/memory.md), in the
/// console too (its session searches its own past sessions). Errors: a bad `[memory]` section.
pub fn build(services: &Services) -> anyhow::Result<Option<Arc<dyn HostFeature>>> {
    if !super::memory::settings(services)?.enabled {
        return Ok(None);
    }
    Ok(Some(Arc::new(RecallFeature {
        recall: Arc::new(recall_of(&services.state_dir)),
        shutdown: services.shutdown.clone(),
    })))
}

/// The recall over `state_dir`'s sessions with its indexes in `state_dir/recall` (doctor reads
/// the same).
pub fn recall_of(state_dir: &std::path::Path) -> Recall {
    Recall::new(state_dir.join("sessions"), state_dir.join("recall"))
}

/// The key of the sessions a session at `place` may search (see the module docs).
fn key_of(place: &SessionPlace<'_>) -> String {
    match (place.caller, place.chat) {
        // A caller's sessions are under the folder named like its workspace (`a2a-<name>`).
        (Some(caller), _) => super::a2a_server::caller_workspace(std::path::Path::new(""), &caller.name)
            .to_string_lossy()
            .into_owned(),
        (None, Some(target)) => chat_key(target.chat_id),
        (None, None) => volcanic_core::sessions::cwd_scope(place.workspace),
    }
}

#[async_trait]
impl HostFeature for RecallFeature {
    fn name(&self) -> &'static str {
        "recall"
    }

    fn session_extensions(&self, place: &SessionPlace<'_>) -> Vec<ExtensionFactory> {
        let chat = match ChatKey::new(key_of(place)) {
            Ok(k) => k,
            Err(e) => {
                tracing::warn!("no recall tool for this session: {e}");
                return Vec::new();
            }
        };
        let (recall, zone) = (self.recall.clone(), place.time_zone);
        vec![Arc::new(move || {
            Box::new(RecallExtension::new(recall.clone(), chat.clone(), zone)) as Box<dyn Extension>
        })]
    }

    fn start(&self) {
        // The indexing thread ends when this sender is dropped, at shutdown; a pass under way
        // stops after its current chat and is not waited for (what it committed stays).
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        if let Err(e) = self.recall.clone().spawn_indexer(Pace::default(), rx) {
            tracing::warn!("recall: no background indexing (searches still index their chat): {e}");
            return;
        }
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            shutdown.cancelled().await;
            drop(tx);
        });
    }

    fn chat_files(&self, chat_key: &str) -> Vec<PathBuf> {
        // Moved with a group that becomes a supergroup, with SQLite's companions and the manifest.
        let Ok(chat) = ChatKey::new(chat_key) else {
            return Vec::new();
        };
        self.recall.chat_index_files(&chat)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::features::port::{CallerGrant, Target};
    use pretty_assertions::assert_eq;

    #[test]
    fn the_key_comes_from_the_place_a_topic_is_its_group_and_a_caller_is_its_own() {
        fn place<'a>(chat: Option<Target>, caller: Option<&'a CallerGrant>) -> SessionPlace<'a> {
            SessionPlace {
                chat,
                time_zone: chrono_tz::UTC,
                workspace: std::path::Path::new("/srv/ws/g100"),
                caller,
            }
        }
        let topic = Target {
            chat_id: -100,
            thread: Some(7),
        };
        let bob = CallerGrant {
            name: "bob".into(),
            bash: false,
        };
        let keys = [
            key_of(&place(
                Some(Target {
                    chat_id: 42,
                    thread: None,
                }),
                None,
            )),
            key_of(&place(Some(topic), None)),
            key_of(&place(Some(topic), Some(&bob))),
            key_of(&place(None, None)),
        ];
        assert_eq!(keys, ["42", "g100", "a2a-bob", "--srv-ws-g100--"].map(String::from));
    }

    #[test]
    fn memory_turned_off_turns_recall_off_too() {
        let built = |toml: &str| build(&crate::features::tests::services(toml)).map(|f| f.map(|f| f.name()));
        assert_eq!(built("").unwrap(), Some("recall"));
        assert_eq!(built("[memory]\nenabled = true\n").unwrap(), Some("recall"));
        assert_eq!(built("[memory]\nenabled = false\n").unwrap(), None);
        let bad = built("[memory]\nenabled = \"no\"\n").unwrap_err();
        assert!(format!("{bad:#}").contains("memory"), "{bad:#}");
    }
}
