//! Killing a child's whole process group (children started with `process_group(0)`), so a
//! timed-out or abandoned command takes its own children with it.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Kills the process group it holds with `SIGKILL`, on request or when dropped while armed (the
/// future running the child was dropped mid-run). Holds nothing when the child has no id.
#[derive(Debug)]
pub struct ProcessGroupKiller(Option<Pid>);

impl ProcessGroupKiller {
    /// Guards the group led by `child` (started with `process_group(0)`, so its pid is the
    /// group id).
    pub fn new(child: &tokio::process::Child) -> Self {
        ProcessGroupKiller(child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw))
    }

    /// Kills the group now (ESRCH, already gone, is fine).
    pub fn kill(&self) {
        if let Some(pgid) = self.0 {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }

    /// The child ended by itself: dropping no longer kills.
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for ProcessGroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}
