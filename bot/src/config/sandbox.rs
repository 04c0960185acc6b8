//! `[sandbox]`: how every agent process is confined (docs/sandbox.md).

use super::{ConfigError, invalid};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use volcanic_sandbox::{AllowList, NetworkPolicy, SandboxMode};

/// `[sandbox]` as written; unknown keys are refused.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSandbox {
    mode: Option<String>,
    network: Option<String>,
    allow_hosts: Option<Vec<String>>,
    #[serde(default)]
    read_paths: Vec<PathBuf>,
    #[serde(default)]
    write_paths: Vec<PathBuf>,
}

/// `[sandbox]`, resolved.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SandboxConfig {
    /// `mode`: `auto` (default), `required` or `off`.
    pub mode: SandboxMode,
    /// `network`: `on` (default) or `off`; `allow_hosts = [...]` makes it the allow-list.
    pub network: NetworkPolicy,
    /// `read_paths`: extra read/execute paths (toolchains, `~/.cargo`).
    pub read_paths: Vec<PathBuf>,
    /// `write_paths`: extra read-write paths for every agent process (package caches; `claude`
    /// gets its own login folder without them, docs/sandbox.md).
    pub write_paths: Vec<PathBuf>,
    /// The config file, when one was read: its folder is closed to agent processes.
    pub config_file: Option<PathBuf>,
}

/// Checks `[sandbox]`; every error names its key.
pub(super) fn resolve(raw: Option<RawSandbox>) -> Result<SandboxConfig, ConfigError> {
    let raw = raw.unwrap_or_default();
    let mode = match raw.mode.as_deref() {
        None | Some("auto") => SandboxMode::Auto,
        Some("required") => SandboxMode::Required,
        Some("off") => SandboxMode::Off,
        Some(other) => {
            return Err(invalid(
                "sandbox.mode",
                format!("`{other}`: use \"auto\", \"required\" or \"off\""),
            ));
        }
    };
    let network = match (raw.network.as_deref(), raw.allow_hosts) {
        (None | Some("on"), None) => NetworkPolicy::On,
        (Some("off"), None) => NetworkPolicy::Off,
        (None, Some(hosts)) => {
            NetworkPolicy::AllowList(AllowList::parse(&hosts).map_err(|e| invalid("sandbox.allow_hosts", e))?)
        }
        (Some(network @ ("on" | "off")), Some(_)) => {
            return Err(invalid(
                "sandbox.allow_hosts",
                format!(
                    "set together with network = \"{network}\": the list is the network policy itself; \
                     remove `network` (or the list)"
                ),
            ));
        }
        (Some(other), _) => {
            return Err(invalid("sandbox.network", format!("`{other}`: use \"on\" or \"off\"")));
        }
    };
    for (key, paths) in [
        ("sandbox.read_paths", &raw.read_paths),
        ("sandbox.write_paths", &raw.write_paths),
    ] {
        if let Some(p) = paths.iter().find(|p| !p.is_absolute()) {
            return Err(invalid(
                key,
                format!("`{}` is relative: give absolute paths", p.display()),
            ));
        }
    }
    Ok(SandboxConfig {
        mode,
        network,
        read_paths: raw.read_paths,
        write_paths: raw.write_paths,
        config_file: None,
    })
}

impl SandboxConfig {
    /// Records the config file read (`path`), so its folder stays closed.
    pub(super) fn protect_config(&mut self, path: &Path) {
        self.config_file = Some(path.to_owned());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::config::Config;
    use std::path::Path;
    use volcanic_sandbox::{NetworkPolicy, SandboxMode};

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, Path::new("/etc/volcanic/volcanic.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn the_section_defaults_to_auto_with_network_on() {
        let c = parse("").unwrap();
        assert_eq!(
            (c.sandbox.mode, c.sandbox.network.clone()),
            (SandboxMode::Auto, NetworkPolicy::On)
        );
        assert_eq!(
            c.sandbox.config_file.as_deref(),
            Some(Path::new("/etc/volcanic/volcanic.toml"))
        );
        let c = parse("[sandbox]\nmode = \"required\"\nnetwork = \"off\"\nread_paths = [\"/srv/tools\"]").unwrap();
        assert_eq!(
            (c.sandbox.mode, c.sandbox.network.clone()),
            (SandboxMode::Required, NetworkPolicy::Off)
        );
        assert_eq!(c.sandbox.read_paths, vec![std::path::PathBuf::from("/srv/tools")]);
    }

    #[test]
    fn allow_hosts_makes_the_allow_list() {
        let c = parse("[sandbox]\nallow_hosts = [\"api.github.com\", \"*.pypi.org\"]").unwrap();
        let NetworkPolicy::AllowList(list) = &c.sandbox.network else {
            panic!("not the allow-list: {:?}", c.sandbox.network);
        };
        assert_eq!(list.hosts(), ["api.github.com", "*.pypi.org"]);
    }

    #[test]
    fn bad_values_and_unknown_keys_are_refused_naming_the_key() {
        for (text, needle) in [
            ("[sandbox]\nmode = \"strict\"", "sandbox.mode"),
            ("[sandbox]\nnetwork = \"maybe\"", "sandbox.network"),
            (
                "[sandbox]\nnetwork = \"off\"\nallow_hosts = [\"example.com\"]",
                "sandbox.allow_hosts",
            ),
            (
                "[sandbox]\nallow_hosts = [\"https://example.com\"]",
                "sandbox.allow_hosts",
            ),
            ("[sandbox]\nread_paths = [\"rel\"]", "sandbox.read_paths"),
            ("[sandbox]\nwrite_path = [\"/x\"]", "write_path"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}
