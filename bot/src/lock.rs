//! One process per state directory: the Telegram host holds an advisory lock (`flock`, through
//! std's [`File::try_lock`]) on `<state_dir>/volcanic-bot.lock` for its whole life, with its PID
//! written inside. A second process on the same `state_dir` would run each scheduled slot a
//! second time, rewrite the first one's journal and make sessions fail with "changed on disk":
//! it refuses to start instead, naming the first one's PID.
//!
//! The kernel drops the lock when the holder exits, however it exits (`kill -9` included), so a
//! stale lock file is no obstacle: only a live holder blocks. The descriptor is opened with
//! `O_CLOEXEC` (std's default), so the agent's child processes never inherit the lock.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The lock file's name inside `state_dir`.
pub const LOCK_FILE: &str = "volcanic-bot.lock";

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another live process holds it.
    #[error(
        "state_dir {dir} is in use by another volcanic-bot ({}): only one process may use a state \
         directory. Stop that one first ({}), or give this one its own state_dir",
        holder_text(*.pid),
        stop_hint(*.pid)
    )]
    Held {
        /// The state directory.
        dir: PathBuf,
        /// The holder's PID as it wrote it (`None` while it is still starting).
        pid: Option<u32>,
    },
    /// The state directory or the lock file could not be created, opened or written.
    #[error("config key `state_dir`: cannot use the lock file {path}: {error}")]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The cause (in the message, so not a `source` too).
        error: std::io::Error,
    },
}

fn holder_text(pid: Option<u32>) -> String {
    match pid {
        Some(p) => format!("PID {p}"),
        None => "PID not written yet: it is starting".to_owned(),
    }
}

fn stop_hint(pid: Option<u32>) -> String {
    match pid {
        Some(p) => format!("`systemctl stop volcanic-bot` if it runs as the service, else `kill {p}`"),
        None => "`systemctl stop volcanic-bot`, or find it with `pgrep -a volcanic-bot`".to_owned(),
    }
}

/// The held lock; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct StateLock {
    _file: File,
    path: PathBuf,
}

impl StateLock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Who holds the lock of a state directory, as [`probe`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// Nobody: a bot could start here.
    Free,
    /// A live process (its PID when written).
    Held(Option<u32>),
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> LockError + '_ {
    move |error| LockError::Io {
        path: path.to_owned(),
        error,
    }
}

/// Takes the lock of `state_dir` (created if missing) and writes this process's PID into it.
///
/// # Errors
/// [`LockError::Held`] when a live process holds it; [`LockError::Io`] when the folder or file
/// cannot be created or written.
pub fn acquire(state_dir: &Path) -> Result<StateLock, LockError> {
    let path = state_dir.join(LOCK_FILE);
    std::fs::create_dir_all(state_dir).map_err(io_error(&path))?;
    // Not truncated on open: until the lock is ours, the content is the holder's PID.
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io_error(&path))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            return Err(LockError::Held {
                dir: state_dir.to_owned(),
                pid: read_pid(&mut file),
            });
        }
        Err(TryLockError::Error(e)) => return Err(io_error(&path)(e)),
    }
    file.set_len(0).map_err(io_error(&path))?;
    file.rewind().map_err(io_error(&path))?;
    writeln!(file, "{}", std::process::id()).map_err(io_error(&path))?;
    Ok(StateLock { _file: file, path })
}

/// Who holds the lock of `state_dir`, without keeping it (`volcanic-bot doctor`). A missing
/// folder or lock file is [`Holder::Free`]. The probe holds the lock for an instant when it is
/// free: a bot starting in that instant refuses and names this process.
///
/// # Errors
/// When an existing lock file cannot be opened or locked for another reason than a holder.
pub fn probe(state_dir: &Path) -> std::io::Result<Holder> {
    let path = state_dir.join(LOCK_FILE);
    let mut file = match OpenOptions::new().read(true).write(true).open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Holder::Free),
        Err(e) => return Err(e),
    };
    match file.try_lock() {
        Ok(()) => Ok(Holder::Free),
        Err(TryLockError::WouldBlock) => Ok(Holder::Held(read_pid(&mut file))),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_state_dir_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("data");
        let first = acquire(&state).unwrap();
        assert_eq!(
            std::fs::read_to_string(first.path()).unwrap(),
            format!("{}\n", std::process::id())
        );
        // flock belongs to the open file: a second open in this process conflicts as another
        // process would.
        let err = acquire(&state).unwrap_err();
        assert!(
            matches!(err, LockError::Held { pid: Some(p), .. } if p == std::process::id()),
            "{err}"
        );
        let text = err.to_string();
        assert!(text.contains(&format!("PID {}", std::process::id())), "{text}");
        assert!(text.contains(&state.display().to_string()), "{text}");
        assert_eq!(probe(&state).unwrap(), Holder::Held(Some(std::process::id())));
        drop(first);
        assert_eq!(probe(&state).unwrap(), Holder::Free);
        // A lock file left behind (as after kill -9) is no obstacle.
        let again = acquire(&state).unwrap();
        assert_eq!(
            std::fs::read_to_string(again.path()).unwrap(),
            format!("{}\n", std::process::id())
        );
    }

    #[test]
    fn a_missing_state_dir_is_free_and_a_holder_still_starting_is_said_so() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(probe(&dir.path().join("none")).unwrap(), Holder::Free);
        let held = LockError::Held {
            dir: dir.path().to_owned(),
            pid: None,
        };
        assert!(held.to_string().contains("it is starting"), "{held}");
    }
}
