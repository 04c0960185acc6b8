//! The child's own namespaces, made between `fork` and `exec` (system calls only): an
//! unprivileged user namespace keeping the process's uid and gid, then, as the policy needs, a
//! mount namespace hiding the host's name services and the allow-list's network namespace.
//!
//! Why the mount namespace: a Unix socket with a path crosses network namespaces and seccomp's
//! socket filter, so a child could ask the host's resolver for names (`systemd-resolved`'s varlink
//! and D-Bus APIs, `nscd`) — a DNS exfiltration channel. Under every policy but `on`, each folder
//! of [`RESOLVER_FOLDERS`] that exists is covered by an empty read-only tmpfs in the child's view.
//!
//! ```text
//! unshare(user [+ mount] [+ net]) → uid/gid map of its own ids → tmpfs over each masked folder
//!   → [allow-list: lo up, listen on 127.0.0.1:PROXY_PORT (crate::netns)]
//! ```

use crate::child::check;
use crate::netns::ChildNet;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The host folders whose Unix sockets answer name lookups or lead to services that do:
/// `systemd-resolved` (varlink `io.systemd.Resolve`, stub files), `nscd`, and the system D-Bus
/// (`org.freedesktop.resolve1` resolves names too). Masked where they exist, under every policy
/// but `on`.
pub const RESOLVER_FOLDERS: &[&str] = &[
    "/run/systemd/resolve",
    "/run/nscd",
    "/var/run/nscd",
    "/run/dbus",
    "/var/run/dbus",
];

/// Debug builds only: `:`-separated extra folders masked like [`RESOLVER_FOLDERS`] (the
/// end-to-end tests put a listening Unix socket in one; a release build ignores it).
pub const TEST_MASK_ENV: &str = "VOLCANIC_SANDBOX_TEST_MASK";

/// The folders to mask on this host: [`RESOLVER_FOLDERS`] plus [`TEST_MASK_ENV`]'s (debug
/// builds), read once at start; which exist is checked at every spawn.
#[derive(Debug, Clone, Default)]
pub(crate) struct Masks {
    folders: Vec<PathBuf>,
}

impl Masks {
    /// The list for this process (the test variable read from the environment).
    pub(crate) fn from_env() -> Masks {
        let mut folders: Vec<PathBuf> = RESOLVER_FOLDERS.iter().map(PathBuf::from).collect();
        if let Some(value) = std::env::var_os(TEST_MASK_ENV).filter(|v| !v.is_empty()) {
            if cfg!(debug_assertions) {
                tracing::warn!(?value, "{TEST_MASK_ENV}: extra folders masked (tests only)");
                folders.extend(std::env::split_paths(&value));
            } else {
                tracing::warn!("{TEST_MASK_ENV} is set but ignored: it is honoured by debug builds only (tests)");
            }
        }
        Masks { folders }
    }

    /// The folders that exist now, with symlinks resolved (`/var/run` is usually `/run`), each
    /// once, ready for the child (which may not allocate).
    pub(crate) fn present(&self) -> Vec<CString> {
        let mut found: Vec<PathBuf> = self
            .folders
            .iter()
            .filter_map(|f| std::fs::canonicalize(f).ok())
            .filter(|f| f.is_dir())
            .collect();
        found.sort();
        found.dedup();
        found.iter().filter_map(|f| c_path(f)).collect()
    }
}

/// `path` as a C string; `None` for one holding a NUL byte (no such folder exists).
fn c_path(path: &Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}

/// What one spawn makes in the child: the id maps (formatted in the host), the folders to mask
/// (may be empty), and the allow-list's network part.
#[derive(Debug)]
pub(crate) struct ChildNamespaces {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    masks: Vec<CString>,
    net: Option<ChildNet>,
}

impl ChildNamespaces {
    /// The namespaces for `masks` (from [`Masks::present`]) and `net`; the process keeps its own
    /// uid and gid inside the new user namespace.
    pub(crate) fn new(masks: Vec<CString>, net: Option<ChildNet>) -> ChildNamespaces {
        // SAFETY: getuid/getgid cannot fail and touch no memory.
        #[allow(unsafe_code)]
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        ChildNamespaces {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            masks,
            net,
        }
    }

    /// Enters the namespaces and masks the folders; with the allow-list, the bridge's listener
    /// (close-on-exec). Before the rest of the confinement: seccomp then forbids namespaces and
    /// mounts, and Landlock mounts.
    pub(crate) fn enter(&self) -> std::io::Result<Option<libc::c_int>> {
        let mut flags = libc::CLONE_NEWUSER;
        if !self.masks.is_empty() {
            flags |= libc::CLONE_NEWNS;
        }
        if self.net.is_some() {
            flags |= libc::CLONE_NEWNET;
        }
        check(sys::unshare(flags).into())?;
        sys::write_file(c"/proc/self/setgroups", b"deny")?;
        sys::write_file(c"/proc/self/uid_map", &self.uid_map)?;
        sys::write_file(c"/proc/self/gid_map", &self.gid_map)?;
        // A mount namespace made by a user namespace gets the host's shared mounts as slaves:
        // these mounts never propagate back to the host.
        for folder in &self.masks {
            sys::mask(folder)?;
        }
        self.net.as_ref().map(ChildNet::enter).transpose()
    }

    /// Starts the allow-list's bridge on `listener` (from [`enter`](Self::enter)); nothing
    /// without the allow-list.
    pub(crate) fn start_bridge(&self, listener: Option<libc::c_int>) -> std::io::Result<()> {
        match (&self.net, listener) {
            (Some(net), Some(listener)) => net.start_bridge(listener),
            _ => Ok(()),
        }
    }
}

/// The raw system calls (no crate wraps them without allocating, which a forked child of a
/// multi-threaded process must not do).
#[allow(unsafe_code)]
pub(crate) mod sys {
    use crate::child::check;
    use std::ffi::CStr;

    pub(crate) fn unshare(flags: libc::c_int) -> libc::c_int {
        // SAFETY: integer argument only.
        unsafe { libc::unshare(flags) }
    }

    pub(crate) fn close(fd: libc::c_int) {
        // SAFETY: closing a descriptor this code opened; an error changes nothing.
        unsafe { libc::close(fd) };
    }

    /// Writes `bytes` to the file `path` in one `write` (the id-map files take one write).
    pub(crate) fn write_file(path: &CStr, bytes: &[u8]) -> std::io::Result<()> {
        // SAFETY: a NUL-terminated path; flags only.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
        check(fd.into())?;
        // SAFETY: `bytes` is valid for its length.
        let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        let result = if written < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        };
        close(fd);
        result
    }

    /// Covers `folder` with an empty read-only tmpfs: its sockets cannot be reached.
    pub(crate) fn mask(folder: &CStr) -> std::io::Result<()> {
        let flags = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        // SAFETY: NUL-terminated strings that outlive the call.
        let rc = unsafe {
            libc::mount(
                c"none".as_ptr(),
                folder.as_ptr(),
                c"tmpfs".as_ptr(),
                flags,
                c"size=4k,mode=0555".as_ptr().cast(),
            )
        };
        check(rc.into())
    }
}
