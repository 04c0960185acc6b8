//! Where the config file, `state_dir` and `workspaces_dir` lie relative to each other.
//!
//! The agents' tools work in the workspaces (`workspaces_dir/<chat key>`). The config file holds
//! keys and `state_dir` every chat's sessions, access list and Google tokens, so both belong
//! outside `workspaces_dir`; the defaults (`config/volcanic.toml`, `data`, `workspaces`, all
//! relative to the directory the bot starts in) are three separate folders. This is a warning at
//! start and a note of `doctor` (both from [`warnings`]), not a refusal: the sandbox keeps
//! `state_dir` and the config's folder from agent processes wherever they lie (docs/sandbox.md),
//! but without it a state or config inside the workspaces is one `ls` or `cat` away for every
//! agent, and it is easily shared along with them.

use crate::config::Config;
use std::path::Path;
use volcanic_sandbox::resolved;

/// Warnings (one sentence each, naming the config keys) when `state_dir` and `workspaces_dir`
/// overlap (one is the other or inside it) or when `config_file` lies inside `workspaces_dir`.
/// Relative paths are taken from the current directory; existing parts are resolved through
/// symbolic links.
pub fn warnings(config: &Config, config_file: Option<&Path>) -> Vec<String> {
    let state = resolved(&config.state_dir);
    let workspaces = resolved(&config.workspaces_dir);
    let mut out = Vec::new();
    if state.starts_with(&workspaces) {
        out.push(format!(
            "`state_dir` ({}) is inside `workspaces_dir` ({}): every chat's sessions, the access list and \
             Google tokens would lie where the agents' tools work; set `state_dir` to a folder outside \
             `workspaces_dir` (the defaults are `data` and `workspaces`)",
            state.display(),
            workspaces.display()
        ));
    } else if workspaces.starts_with(&state) {
        out.push(format!(
            "`workspaces_dir` ({}) is inside `state_dir` ({}): the agents' workspaces and the bot's state \
             (sessions, access list, Google tokens) would share one folder tree; keep them apart \
             (the defaults are `data` and `workspaces`)",
            workspaces.display(),
            state.display()
        ));
    }
    if let Some(file) = config_file {
        let file = resolved(file);
        if file.starts_with(&workspaces) {
            out.push(format!(
                "the config file ({}) is inside `workspaces_dir` ({}): it holds the bot's keys and every \
                 agent could read it; move it out (e.g. config/volcanic.toml beside `workspaces`)",
                file.display(),
                workspaces.display()
            ));
        }
    }
    out
}

/// A warning when the bot runs as root: its agents' tools then run as root too, and the
/// non-dumpable process no longer keeps `/proc/<pid>/environ` (the keys) from them
/// (`proc(5)`: root may read any process's). `None` for any other user.
pub fn root_warning() -> Option<String> {
    nix::unistd::geteuid().is_root().then(|| {
        "running as root: the agents' commands run as root too and can read the bot's keys from \
         /proc; run it as its own user (docs/security.md, \"Running it as its own user\")"
            .to_owned()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn config(dir: &Path, state: &str, workspaces: &str) -> Config {
        let text = format!(
            "state_dir = \"{}\"\nworkspaces_dir = \"{}\"\n",
            dir.join(state).display(),
            dir.join(workspaces).display()
        );
        Config::parse(&text, Path::new("test.toml")).unwrap()
    }

    #[test]
    fn separate_folders_give_no_warning() {
        let dir = tempfile::tempdir().unwrap();
        let c = config(dir.path(), "data", "workspaces");
        assert_eq!(
            warnings(&c, Some(&dir.path().join("config/volcanic.toml"))),
            Vec::<String>::new()
        );
        // A name that merely starts like the other is not inside it.
        let c = config(dir.path(), "workspaces-state", "workspaces");
        assert!(warnings(&c, None).is_empty());
    }

    #[test]
    fn the_defaults_are_apart() {
        let c = Config::parse("", Path::new("test.toml")).unwrap();
        assert!(warnings(&c, Some(Path::new("config/volcanic.toml"))).is_empty());
    }

    #[test]
    fn overlapping_state_and_workspaces_are_named_both_ways() {
        let dir = tempfile::tempdir().unwrap();
        let inside = warnings(&config(dir.path(), "workspaces/state", "workspaces"), None);
        assert_eq!(inside.len(), 1, "{inside:?}");
        assert!(inside[0].starts_with("`state_dir` ("), "{}", inside[0]);
        assert!(inside[0].contains("is inside `workspaces_dir`"), "{}", inside[0]);
        let same = warnings(&config(dir.path(), "shared/./", "shared"), None);
        assert_eq!(same.len(), 1, "{same:?}");
        let around = warnings(&config(dir.path(), "data", "data/sub/../workspaces"), None);
        assert_eq!(around.len(), 1, "{around:?}");
        assert!(around[0].starts_with("`workspaces_dir` ("), "{}", around[0]);
        assert!(around[0].contains("is inside `state_dir`"), "{}", around[0]);
    }

    #[test]
    fn a_config_file_inside_the_workspaces_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let c = config(dir.path(), "data", "workspaces");
        let w = warnings(&c, Some(&dir.path().join("workspaces/123/volcanic.toml")));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("the config file ("), "{}", w[0]);
        assert!(w[0].contains("`workspaces_dir`"), "{}", w[0]);
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_into_the_workspaces_is_seen_through() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("workspaces/inner")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("workspaces/inner"), dir.path().join("data")).unwrap();
        let w = warnings(&config(dir.path(), "data", "workspaces"), None);
        assert_eq!(w.len(), 1, "{w:?}");
    }
}
