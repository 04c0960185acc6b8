//! Landlock rulesets built once per workspace and grant set, and reused by every spawn there
//! (building one opens a descriptor per rule path: about half of a spawn's overhead). Rules bind
//! inodes, so an entry remembers the inodes of its own paths and is rebuilt when one of them
//! changed (a workspace removed and made again, a granted path that appeared).

use landlock::{RulesetCreated, RulesetError};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Entries kept; when full, the cache starts over (workspaces in use are rebuilt on demand).
pub(crate) const MAX_RULESETS: usize = 256;

/// What makes one ruleset: the network closed or not, the readable and writable paths beyond
/// the sandbox's fixed ones.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RulesetKey {
    pub network_off: bool,
    pub readable: Vec<PathBuf>,
    pub writable: Vec<PathBuf>,
}

#[derive(Debug)]
struct Entry {
    ruleset: Arc<RulesetCreated>,
    inodes: Vec<Option<(u64, u64)>>,
}

/// The cache.
#[derive(Debug, Default)]
pub(crate) struct Rulesets {
    entries: Mutex<HashMap<RulesetKey, Entry>>,
}

impl Rulesets {
    /// The ruleset for `key`: the cached one while its paths are the same inodes, else one
    /// made by `build` (and kept).
    pub(crate) fn get(
        &self,
        key: RulesetKey,
        build: impl FnOnce(&RulesetKey) -> Result<RulesetCreated, RulesetError>,
    ) -> Result<Arc<RulesetCreated>, RulesetError> {
        let inodes = inodes(&key);
        {
            let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(entry) = entries.get(&key).filter(|e| e.inodes == inodes) {
                return Ok(Arc::clone(&entry.ruleset));
            }
        }
        let ruleset = Arc::new(build(&key)?);
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_RULESETS {
            entries.clear();
        }
        entries.insert(
            key,
            Entry {
                ruleset: Arc::clone(&ruleset),
                inodes,
            },
        );
        Ok(ruleset)
    }
}

/// (device, inode) of each of the key's paths, `None` where missing.
fn inodes(key: &RulesetKey) -> Vec<Option<(u64, u64)>> {
    key.readable
        .iter()
        .chain(&key.writable)
        .map(|p| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino())))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use landlock::{ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, path_beneath_rules};

    /// A real build: its rules hold the paths' inodes, as the sandbox's do (so a path removed
    /// and made again cannot get the same inode number back while the ruleset lives).
    fn build(builds: &std::cell::Cell<u32>) -> impl FnOnce(&RulesetKey) -> Result<RulesetCreated, RulesetError> + '_ {
        move |key| {
            builds.set(builds.get() + 1);
            let all = AccessFs::from_all(ABI::V1);
            Ruleset::default()
                .handle_access(all)?
                .create()?
                .add_rules(path_beneath_rules(&key.writable, all))
        }
    }

    #[test]
    fn a_ruleset_is_reused_until_one_of_its_paths_is_another_inode() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("ws");
        std::fs::create_dir(&workspace).unwrap();
        let key = RulesetKey {
            network_off: false,
            readable: Vec::new(),
            writable: vec![workspace.clone()],
        };
        let (cache, builds) = (Rulesets::default(), std::cell::Cell::new(0));
        let first = cache.get(key.clone(), build(&builds)).unwrap();
        let again = cache.get(key.clone(), build(&builds)).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(builds.get(), 1);
        // Made again: another inode, so the old rules would not cover it.
        std::fs::remove_dir(&workspace).unwrap();
        std::fs::create_dir(&workspace).unwrap();
        let rebuilt = cache.get(key.clone(), build(&builds)).unwrap();
        assert!(!Arc::ptr_eq(&first, &rebuilt));
        assert_eq!(builds.get(), 2);
        let other = RulesetKey {
            network_off: true,
            ..key
        };
        cache.get(other, build(&builds)).unwrap();
        assert_eq!(builds.get(), 3);
    }
}
