//! [`LandlockSandbox`]: the backend behind the process contract's sandbox seam.

use crate::child::{ConfinedChild, last_capability};
use crate::paths::{open_around, private_dirs, resolved, workspace_of};
use crate::settings::{NetworkPolicy, SandboxError, SandboxMode, SandboxSettings};
use crate::support::KernelSupport;
use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, RulesetAttr, RulesetCreated, RulesetCreatedAttr,
    RulesetError, Scope, path_beneath_rules,
};
use seccompiler::BpfProgram;
use std::path::{Path, PathBuf};
use std::sync::Arc;
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
/// (crate docs). Built once at start; each spawn makes its own Landlock ruleset.
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
    filters: Arc<Vec<BpfProgram>>,
    last_cap: u32,
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
        let filters = if support.seccomp {
            crate::seccomp::filters(settings.network, std::process::id())?
        } else {
            Vec::new()
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
            filters: Arc::new(filters),
            last_cap: last_capability(),
        }))
    }

    /// The mode it was built with.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// The network policy.
    pub fn network(&self) -> NetworkPolicy {
        self.network
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
    /// with `network = off`.
    fn ruleset(&self, readable: &[PathBuf], writable: &[PathBuf]) -> Result<RulesetCreated, RulesetError> {
        let mut ruleset = landlock::Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(TARGET_ABI))?
            .scope(Scope::from_all(TARGET_ABI))?;
        if self.network == NetworkPolicy::Off {
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
        let ruleset = match self.support.landlock_abi {
            Some(_) => Some(
                self.ruleset(&readable, &writable)
                    .map_err(|e| ProcessSpawnError(format!("sandbox: Landlock ruleset: {e}")))?,
            ),
            None => None,
        };
        context
            .env
            .insert("TMPDIR".to_owned(), tmp.to_string_lossy().into_owned());
        context
            .env
            .insert("HOME".to_owned(), home.to_string_lossy().into_owned());
        context.confinement = Some(Confinement(Arc::new(ConfinedChild {
            ruleset,
            filters: Arc::clone(&self.filters),
            last_cap: self.last_cap,
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
