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
        ProcessGroupKiller::of_pid(child.id())
    }

    /// Guards the group led by the child `pid`; nothing when `None` (the child has no id).
    pub fn of_pid(pid: Option<u32>) -> Self {
        ProcessGroupKiller(pid.and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw))
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

impl volcanic_abstractions::processes::ProcessGroup for ProcessGroupKiller {
    fn kill(&self) {
        ProcessGroupKiller::kill(self);
    }

    fn disarm(self: Box<Self>) {
        ProcessGroupKiller::disarm(*self);
    }
}

impl Drop for ProcessGroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A child started in its own process group: stdin `/dev/null`, stdout and stderr into one pipe.
#[derive(Debug)]
pub struct GroupChild {
    /// The process.
    pub child: tokio::process::Child,
    /// The read side of the output pipe (EOF once every writer, children included, is gone).
    pub output: tokio::net::unix::pipe::Receiver,
    /// Kills the whole group when dropped while armed.
    pub group: ProcessGroupKiller,
}

/// Starts exactly what the policy prepared (`command`, `args`, `cwd`, the complete `env`) in a
/// process group of its own, for the `bash` tool and skill hooks alike.
/// Errors: the pipe cannot be made, or the program cannot start.
pub fn spawn_in_group(spawn: &volcanic_abstractions::processes::ProcessSpawnContext) -> std::io::Result<GroupChild> {
    let (reader, writer) = std::io::pipe()?;
    let mut command = tokio::process::Command::from(spawn.to_group_command());
    command
        .stdin(std::process::Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .kill_on_drop(true);
    let child = command.spawn()?;
    // Our copies of the pipe's write end must close, or the read side never sees EOF.
    drop(command);
    let group = ProcessGroupKiller::new(&child);
    let output = tokio::net::unix::pipe::Receiver::from_owned_fd(std::os::fd::OwnedFd::from(reader))?;
    Ok(GroupChild { child, output, group })
}
