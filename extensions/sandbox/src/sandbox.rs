//! [`LandlockSandbox`]: the backend behind the process contract's sandbox seam.

use crate::child::{ConfinedChild, last_capability};
use crate::netns::{ChildNet, PROXY_PORT};
use crate::paths::{open_around, private_dirs, resolved, workspace_of};
use crate::proxy::{NetworkProxy, Rules};
use crate::rulesets::RulesetKey;
use crate::settings::{NetworkPolicy, SandboxError, SandboxMode, SandboxSettings};
use crate::support::KernelSupport;
use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, RulesetAttr, RulesetCreated, RulesetCreatedAttr,
    RulesetError, Scope, path_beneath_rules,
};
use seccompiler::BpfProgram;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use volcanic_abstractions::processes::{
    Confinement, FileBoundary, ProcessSandbox, ProcessSpawnContext, ProcessSpawnError, ProcessSpawnRequest,
};

/// The newest Landlock ABI this crate knows; the kernel's own (lower) one applies, best effort.
const TARGET_ABI: ABI = ABI::V10;

/// Read and execute for every process: the system's programs, libraries and settings.
const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/proc",
    // CPU count (nproc, make -j, thread pools) and DNS with systemd-resolved.
    "/sys/devices/system/cpu",
    "/run/systemd/resolve",
];

/// Devices every process may read and write.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Host secrets beneath the system paths, closed whatever the config says (a root-run child
/// keeps uid 0 and would pass their file permissions).
const SYSTEM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssl/private",
    "/etc/ssh",
];

/// Confines every agent process with Landlock, seccomp, `no_new_privs` and no capabilities
/// (crate docs). Built once at start; a Landlock ruleset is made once per workspace and grant set
/// and reused by its spawns.
#[derive(Debug)]
pub struct LandlockSandbox {
    mode: SandboxMode,
    network: NetworkPolicy,
    support: KernelSupport,
    /// Read/execute paths, opened around the closed ones.
    read: Vec<PathBuf>,
    /// Configured read-write paths.
    write: Vec<PathBuf>,
    /// Never reachable (protected folders, host secrets).
    closed: Vec<PathBuf>,
    workspaces_root: Option<PathBuf>,
    temp_root: PathBuf,
    /// The seccomp filters with the network on (also under an allow-list: the namespace
    /// confines it) and off.
    filters: Arc<Vec<BpfProgram>>,
    filters_off: Arc<Vec<BpfProgram>>,
    last_cap: u32,
    /// The chats' own policies (replacing `network` for their processes).
    chat_networks: Option<crate::ChatNetworks>,
    /// The Landlock rulesets made so far, per workspace and grants.
    rulesets: crate::rulesets::Rulesets,
    /// The allow-list's proxy, made by the first spawn under an allow-list (on its runtime).
    proxy: OnceLock<Result<NetworkProxy, String>>,
}

impl LandlockSandbox {
    /// The sandbox for `settings` on a kernel offering `support`; `None` with
    /// [`SandboxMode::Off`]. Errors: `required` on a kernel lacking Landlock or seccomp
    /// ([`SandboxError::Unsupported`]); the seccomp filter cannot be compiled.
    pub fn new(settings: SandboxSettings, support: KernelSupport) -> Result<Option<LandlockSandbox>, SandboxError> {
        match (settings.mode, support.missing()) {
            (SandboxMode::Off, _) => return Ok(None),
            (SandboxMode::Required, Some(missing)) => return Err(SandboxError::Unsupported { missing }),
            (SandboxMode::Required | SandboxMode::Auto, _) => {}
        }
        let workspaces_root = settings.workspaces_root.as_deref().map(resolved);
        let mut closed: Vec<PathBuf> = settings.protected.iter().map(|p| resolved(p)).collect();
        closed.extend(workspaces_root.clone());
        closed.extend(SYSTEM_SECRETS.iter().map(PathBuf::from));
        let mut roots: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
        roots.extend(settings.read_paths.iter().map(|p| resolved(p)));
        let read = open_around(&roots, &closed);
        let write = settings.write_paths.iter().map(|p| resolved(p)).collect();
        let filters = |off| match support.seccomp {
            true => crate::seccomp::filters(off, std::process::id()).map(Arc::new),
            false => Ok(Arc::new(Vec::new())),
        };
        Ok(Some(LandlockSandbox {
            mode: settings.mode,
            network: settings.network,
            support,
            read,
            write,
            closed,
            workspaces_root,
            temp_root: resolved(&settings.temp_root),
            chat_networks: settings.chat_networks,
            filters: filters(false)?,
            filters_off: filters(true)?,
            last_cap: last_capability(),
            rulesets: crate::rulesets::Rulesets::default(),
            proxy: OnceLock::new(),
        }))
    }

    /// The mode it was built with.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// The network policy.
    pub fn network(&self) -> &NetworkPolicy {
        &self.network
    }

    /// What the kernel offered at start.
    pub fn support(&self) -> KernelSupport {
        self.support
    }

    /// The workspace a process started in `cwd` (or for `workspace`) works for, checked: it may
    /// not be, or hold, a closed folder. Errors say what to change.
    fn workspace(&self, cwd: &Path, workspace: Option<&Path>) -> Result<PathBuf, String> {
        let found = match workspace {
            Some(w) => Some(resolved(w)),
            None => workspace_of(cwd, self.workspaces_root.as_deref()),
        };
        let Some(workspace) = found else {
            return Err(format!(
                "sandbox: {} is the folder of every chat's workspace; a process must start in one workspace",
                cwd.display()
            ));
        };
        if let Some(closed) = self.closed.iter().find(|c| c.starts_with(&workspace)) {
            return Err(format!(
                "sandbox: the workspace {} holds {}, which agent processes may not reach; start the agent \
                 in a folder of its own (docs/sandbox.md)",
                workspace.display(),
                closed.display()
            ));
        }
        Ok(workspace)
    }

    /// The Landlock ruleset for one process: read/execute of [`Self::read`] and `readable`,
    /// read-write of `writable`, the devices; signals and abstract sockets scoped; TCP closed
    /// with `network_off`.
    fn ruleset(
        &self,
        network_off: bool,
        readable: &[PathBuf],
        writable: &[PathBuf],
    ) -> Result<RulesetCreated, RulesetError> {
        let mut ruleset = landlock::Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(TARGET_ABI))?
            .scope(Scope::from_all(TARGET_ABI))?;
        if network_off {
            ruleset = ruleset.handle_access(AccessNet::from_all(TARGET_ABI))?;
        }
        let read = AccessFs::from_read(TARGET_ABI);
        let all = AccessFs::from_all(TARGET_ABI);
        ruleset
            .create()?
            .add_rules(path_beneath_rules(&self.read, read))?
            .add_rules(path_beneath_rules(readable, read))?
            .add_rules(path_beneath_rules(DEVICES, all))?
            .add_rules(path_beneath_rules(&self.write, all))?
            .add_rules(path_beneath_rules(writable, all))
    }
}

impl LandlockSandbox {
    /// The network policy of `request`'s process: its chat's own (the chat key is the first
    /// part of the request's scope), else the bot's. A scope that names no chat (an A2A caller,
    /// the console) gets the bot's. Errors: the chat's file cannot be read or understood
    /// (refused rather than guessed).
    fn network_for(&self, request: &ProcessSpawnRequest) -> Result<NetworkPolicy, ProcessSpawnError> {
        let chat = request.scope.as_deref().and_then(|s| s.split('/').next());
        let (Some(chats), Some(chat)) = (&self.chat_networks, chat) else {
            return Ok(self.network.clone());
        };
        match chats.get(chat) {
            Ok(Some(policy)) => Ok(policy),
            Ok(None) | Err(crate::ChatNetworkError::Key(_)) => Ok(self.network.clone()),
            Err(e) => Err(ProcessSpawnError(format!("sandbox: the chat's network policy: {e}"))),
        }
    }

    /// One spawn's part of the allow-list: a socket pair whose one end the proxy serves under
    /// `allow` for `chat`, the other the child's ([`ChildNet`]); the proxy variables in `env`.
    /// Errors: no user namespaces, or no socket pair.
    fn join_proxy(
        &self,
        allow: &crate::AllowList,
        chat: String,
        env: &mut std::collections::BTreeMap<String, String>,
    ) -> Result<ChildNet, ProcessSpawnError> {
        if !self.support.user_namespaces {
            return Err(ProcessSpawnError(
                "sandbox: the allow-list needs unprivileged user namespaces, which this kernel refuses \
                 (`volcanic-bot doctor`); use network = \"on\" or \"off\" (docs/sandbox.md)"
                    .to_owned(),
            ));
        }
        let proxy = self
            .proxy
            .get_or_init(NetworkProxy::new)
            .as_ref()
            .map_err(|e| ProcessSpawnError(e.clone()))?;
        let (ours, theirs) =
            socket_pair().map_err(|e| ProcessSpawnError(format!("sandbox: no socket pair for the proxy: {e}")))?;
        proxy.attach(
            ours,
            Rules {
                allow: allow.clone(),
                chat,
            },
        );
        let url = format!("http://127.0.0.1:{PROXY_PORT}");
        for name in [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "http_proxy",
            "https_proxy",
            "ALL_PROXY",
            "all_proxy",
        ] {
            env.insert(name.to_owned(), url.clone());
        }
        for name in ["NO_PROXY", "no_proxy"] {
            env.insert(name.to_owned(), String::new());
        }
        Ok(ChildNet::new(theirs))
    }
}

/// A `SOCK_SEQPACKET` Unix socket pair, both ends close-on-exec (one message per descriptor).
fn socket_pair() -> nix::Result<(OwnedFd, OwnedFd)> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType};
    nix::sys::socket::socketpair(AddressFamily::Unix, SockType::SeqPacket, None, SockFlag::SOCK_CLOEXEC)
}

impl ProcessSandbox for LandlockSandbox {
    fn confine(
        &self,
        request: &ProcessSpawnRequest,
        context: &mut ProcessSpawnContext,
    ) -> Result<(), ProcessSpawnError> {
        let workspace = self
            .workspace(&context.cwd, request.workspace.as_deref())
            .map_err(ProcessSpawnError)?;
        let (tmp, home) = private_dirs(&self.temp_root, &workspace).map_err(|e| {
            ProcessSpawnError(format!(
                "sandbox: cannot make the private temp folder under {}: {e}",
                self.temp_root.display()
            ))
        })?;
        // The request's own grants (host code's, e.g. `claude`'s config folder), resolved as
        // the rules bind inodes.
        let readable: Vec<PathBuf> = request.read_paths.iter().map(|p| resolved(p)).collect();
        let mut writable: Vec<PathBuf> = request.write_paths.iter().map(|p| resolved(p)).collect();
        writable.extend([workspace, tmp.clone(), home.clone()]);
        let network = &self.network_for(request)?;
        let network_off = *network == NetworkPolicy::Off;
        let ruleset = match self.support.landlock_abi {
            Some(_) => {
                let key = RulesetKey {
                    network_off,
                    readable,
                    writable,
                };
                let made = self
                    .rulesets
                    .get(key, |k| self.ruleset(k.network_off, &k.readable, &k.writable))
                    .map_err(|e| ProcessSpawnError(format!("sandbox: Landlock ruleset: {e}")))?;
                Some(made)
            }
            None => None,
        };
        context
            .env
            .insert("TMPDIR".to_owned(), tmp.to_string_lossy().into_owned());
        context
            .env
            .insert("HOME".to_owned(), home.to_string_lossy().into_owned());
        let net = match network {
            NetworkPolicy::AllowList(allow) => {
                let chat = request.scope.clone().unwrap_or_else(|| request.origin.clone());
                Some(self.join_proxy(allow, chat, &mut context.env)?)
            }
            NetworkPolicy::On | NetworkPolicy::Off => None,
        };
        let filters = if network_off { &self.filters_off } else { &self.filters };
        context.confinement = Some(Confinement(Arc::new(ConfinedChild {
            ruleset,
            filters: Arc::clone(filters),
            last_cap: self.last_cap,
            net,
        })));
        Ok(())
    }

    fn file_boundary(&self, cwd: &Path) -> Option<FileBoundary> {
        // Without Landlock nothing bounds the processes; the tools then follow them.
        self.support.landlock_abi?;
        let mut write = self.write.clone();
        // No workspace: nothing writable beyond the configured paths.
        if let Ok(workspace) = self.workspace(cwd, None) {
            if let Ok((tmp, home)) = private_dirs(&self.temp_root, &workspace) {
                write.extend([tmp, home]);
            }
            write.push(workspace);
        }
        Some(FileBoundary {
            read: self.read.clone(),
            write,
            closed: self.closed.clone(),
        })
    }
}
