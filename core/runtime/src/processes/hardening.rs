//! Host hardening: make the host process non-dumpable, once.

use std::sync::OnceLock;

/// Making the host non-dumpable failed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("could not make the host process non-dumpable (prctl PR_SET_DUMPABLE): {0}")]
pub struct HardeningError(pub String);

/// The outcome of the one hardening attempt of this process.
static HARDENED: OnceLock<Result<bool, HardeningError>> = OnceLock::new();

/// Makes the host process non-dumpable on Linux (`prctl(PR_SET_DUMPABLE, 0)`), so a same-user child
/// can neither read `/proc/<host pid>/environ` or `mem` nor `ptrace` the host. A child the host
/// execs is dumpable again (kernel rule): this protects the host's own memory and environment.
///
/// With `enabled = false` it does nothing and returns `Ok(false)` (tests keep their runner
/// dumpable; `harden_process = false` for debugging). The first enabled call does the work; later
/// calls return its outcome: `Ok(true)` when the host is non-dumpable, `Ok(false)` on platforms
/// without `prctl`.
pub fn harden_host_process(enabled: bool) -> Result<bool, HardeningError> {
    if !enabled {
        return Ok(false);
    }
    HARDENED.get_or_init(set_not_dumpable).clone()
}

#[cfg(target_os = "linux")]
fn set_not_dumpable() -> Result<bool, HardeningError> {
    match nix::sys::prctl::set_dumpable(false) {
        Ok(()) => {
            tracing::info!("host process is non-dumpable (PR_SET_DUMPABLE=0)");
            Ok(true)
        }
        Err(errno) => Err(HardeningError(errno.desc().to_owned())),
    }
}

#[cfg(not(target_os = "linux"))]
fn set_not_dumpable() -> Result<bool, HardeningError> {
    tracing::warn!("host hardening (PR_SET_DUMPABLE) is only available on Linux");
    Ok(false)
}
