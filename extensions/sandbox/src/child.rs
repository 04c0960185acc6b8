//! What runs in the child between `fork` and `exec`: system calls only (the child of a
//! multi-threaded host may not allocate or lock).

use crate::netns::ChildNet;
use landlock::RulesetCreated;
use seccompiler::BpfProgram;
use std::sync::Arc;
use volcanic_abstractions::processes::ChildConfinement;

/// One spawn's confinement: its Landlock ruleset (made in the host, applied in the child) and
/// the shared seccomp filters.
#[derive(Debug)]
pub(crate) struct ConfinedChild {
    /// `None` without Landlock; shared by the spawns of one workspace (each applies a duplicate
    /// of its descriptor).
    pub ruleset: Option<Arc<RulesetCreated>>,
    /// Installed in order; empty without seccomp.
    pub filters: Arc<Vec<BpfProgram>>,
    /// The highest capability number (`/proc/sys/kernel/cap_last_cap`, read at start).
    pub last_cap: u32,
    /// The allow-list's network namespace and bridge; `None` under `network = on | off`.
    pub net: Option<ChildNet>,
}

impl ChildConfinement for ConfinedChild {
    fn confine_child(&self) -> std::io::Result<()> {
        // Namespaces first: the capabilities that make them go next, and seccomp forbids them.
        let listener = self.net.as_ref().map(ChildNet::enter).transpose()?;
        drop_capabilities(self.last_cap)?;
        set_no_new_privs()?;
        if let Some(ruleset) = &self.ruleset {
            // A duplicate of the ruleset's descriptor: the original stays for the next spawn.
            ruleset
                .try_clone()?
                .restrict_self()
                .map_err(|_| std::io::Error::other("landlock_restrict_self failed"))?;
        }
        for filter in self.filters.iter() {
            seccompiler::apply_filter(filter)
                .map_err(|_| std::io::Error::other("installing the seccomp filter failed"))?;
        }
        // The bridge is confined as the command is.
        match (&self.net, listener) {
            (Some(net), Some(listener)) => net.start_bridge(listener),
            _ => Ok(()),
        }
    }
}

/// `_LINUX_CAPABILITY_VERSION_3` (linux/capability.h): two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
/// `CAP_SETPCAP`: needed to shrink the bounding set and set securebits.
const CAP_SETPCAP: u32 = 8;
/// `SECBIT_NOROOT | _LOCKED | SECBIT_NO_SETUID_FIXUP | _LOCKED | SECBIT_KEEP_CAPS_LOCKED
/// | SECBIT_NO_CAP_AMBIENT_RAISE | _LOCKED` (linux/securebits.h): uid 0 gains nothing at exec.
const SECUREBITS_LOCKED_DOWN: libc::c_ulong = 0b1110_1111;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// A system call's result: `Err` with `errno` when negative.
pub(crate) fn check(rc: libc::c_long) -> std::io::Result<()> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Drops every capability for good: the bounding set and securebits (when the process holds
/// `CAP_SETPCAP`, i.e. a root-run host), the ambient set, then effective, permitted and
/// inheritable. A root-run child keeps uid 0 but no power over other users' files or processes.
// Raw capget/capset/prctl: the crates wrapping them allocate, which a forked child of a
// multi-threaded process must not.
#[allow(unsafe_code)]
fn drop_capabilities(last_cap: u32) -> std::io::Result<()> {
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: header and a two-element data array as capget(2) requires for version 3.
    check(unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) })?;
    if data[0].effective & (1 << CAP_SETPCAP) != 0 {
        for cap in 0..=last_cap {
            // SAFETY: integer arguments only.
            check(unsafe { libc::prctl(libc::PR_CAPBSET_DROP, libc::c_ulong::from(cap), 0, 0, 0) }.into())?;
        }
        // SAFETY: integer arguments only.
        check(unsafe { libc::prctl(libc::PR_SET_SECUREBITS, SECUREBITS_LOCKED_DOWN, 0, 0, 0) }.into())?;
    }
    // SAFETY: integer arguments only.
    check(
        unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
                0,
                0,
                0,
            )
        }
        .into(),
    )?;
    let empty = [CapData::default(); 2];
    // SAFETY: header and a two-element data array as capset(2) requires for version 3.
    check(unsafe { libc::syscall(libc::SYS_capset, &header, empty.as_ptr()) })
}

#[allow(unsafe_code)]
fn set_no_new_privs() -> std::io::Result<()> {
    // SAFETY: integer arguments only.
    check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }.into())
}

/// `/proc/sys/kernel/cap_last_cap`, or 40 (`CAP_CHECKPOINT_RESTORE`; the bounding-set drop
/// fails the spawn with `EINVAL` on a number the kernel does not know).
pub(crate) fn last_capability() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(40)
}
