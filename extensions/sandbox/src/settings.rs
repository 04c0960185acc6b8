//! What the host asks of the sandbox (from `[sandbox]` and the host's folders).

use crate::AllowList;
use std::path::PathBuf;

/// `[sandbox] mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// Confine with what the kernel offers; warn once at start about what it lacks.
    #[default]
    Auto,
    /// Refuse to start unless Landlock and seccomp are both available.
    Required,
    /// No confinement (children run as the host's OS user), with a warning at start.
    Off,
}

/// `[sandbox] network` and `allow_hosts`: what a confined process may reach over the network.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum NetworkPolicy {
    /// Any host (as without a sandbox).
    #[default]
    On,
    /// No network at all, loopback included: inet sockets refused (seccomp), TCP bind and
    /// connect refused (Landlock ABI ≥ 4).
    Off,
    /// Only the listed hosts, over HTTP(S), through the bot's proxy: the process runs in a
    /// network namespace of its own holding only loopback, where a bridge on
    /// [`PROXY_PORT`](crate::PROXY_PORT) hands each connection to the proxy (docs/sandbox.md).
    AllowList(AllowList),
}

/// The sandbox's inputs. Paths are taken as given; [`LandlockSandbox::new`](crate::LandlockSandbox::new)
/// makes them absolute and resolves them.
#[derive(Debug, Clone, Default)]
pub struct SandboxSettings {
    /// `[sandbox] mode`.
    pub mode: SandboxMode,
    /// `[sandbox] network`.
    pub network: NetworkPolicy,
    /// Extra read/execute paths (`[sandbox] read_paths`: toolchains, `~/.cargo`, ...).
    pub read_paths: Vec<PathBuf>,
    /// Extra read-write paths for every process (`[sandbox] write_paths`: package caches, ...); a
    /// request adds its own ([`ProcessSpawnRequest::write_paths`](volcanic_abstractions::processes::ProcessSpawnRequest::write_paths)).
    pub write_paths: Vec<PathBuf>,
    /// The folder holding the chats' workspaces: a process whose cwd lies inside gets the
    /// workspace folder directly under it (`<root>/<chat>`); elsewhere its cwd is its workspace.
    pub workspaces_root: Option<PathBuf>,
    /// Never reachable, even beneath a system path (`state_dir`, the config file's folder, the
    /// bot user's home): the system paths are opened around them.
    pub protected: Vec<PathBuf>,
    /// The per-chat policies, which replace `network` for the processes of a chat that has one
    /// (a request whose scope starts with the chat's key: `<chat key>/<topic>`); `None`: none.
    pub chat_networks: Option<crate::ChatNetworks>,
    /// Where the private temp folders live (`<temp_root>/<workspace key>/{tmp,home}`), created
    /// 0700 on first use; usually `<state_dir>/sandbox`.
    pub temp_root: PathBuf,
}

/// The sandbox cannot be set up as asked.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// `mode = "required"` and the kernel lacks something.
    #[error(
        "[sandbox] mode = \"required\", but {missing}; run on a kernel with Landlock and seccomp \
         enabled (e.g. `lsm=landlock,...` on the kernel command line), or set mode = \"auto\" to run \
         with what the kernel offers"
    )]
    Unsupported {
        /// What is missing, in words.
        missing: String,
    },
    /// The seccomp filter could not be compiled (a bug: the rules are fixed).
    #[error("cannot build the seccomp filter: {0}")]
    Seccomp(String),
    /// A folder the sandbox needs could not be made.
    #[error("cannot prepare {path}: {error}")]
    Folder {
        /// The folder.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
}
