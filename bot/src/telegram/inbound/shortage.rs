//! Running short of descriptors, memory or disk: such a failure is the machine's state, not the
//! message's, so the message is neither answered with the OS error nor marked done. Its handling
//! waits the shortage out ([`Shortage::wait`]) and tries again, while the update stays unfinished
//! in the journal (a restart meanwhile handles it as if it just arrived, by the
//! [recovery](crate::telegram::conversation::recovery) rule for a prompt that never reached the
//! model). The chat's later messages keep their place behind it.

use std::io::ErrorKind;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// First pause before trying again; doubled up to [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(250);

/// Longest pause between tries.
const LONGEST_PAUSE: Duration = Duration::from_secs(10);

/// The OS error in `e`'s chain (its sources) that says the machine is short of a resource:
/// descriptors (`EMFILE`, `ENFILE`), memory or buffers (`ENOMEM`, `ENOBUFS`), disk or quota
/// (`ENOSPC`, `EDQUOT`); `None` for any other failure.
pub fn cause(e: &anyhow::Error) -> Option<&std::io::Error> {
    e.chain()
        .filter_map(|c| c.downcast_ref::<std::io::Error>())
        .find(|io| is_shortage(io))
}

fn is_shortage(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOMEM | libc::ENOBUFS | libc::ENOSPC | libc::EDQUOT)
    ) || matches!(
        e.kind(),
        ErrorKind::OutOfMemory | ErrorKind::StorageFull | ErrorKind::QuotaExceeded
    )
}

/// Waiting out one shortage, with a growing pause.
#[derive(Debug)]
pub struct Shortage {
    pause: Duration,
    tries: u32,
}

impl Default for Shortage {
    fn default() -> Self {
        Shortage {
            pause: FIRST_PAUSE,
            tries: 0,
        }
    }
}

impl Shortage {
    /// Logs `cause` (the first time at warning level, then at debug) and pauses before the
    /// next try. `false` when `stop` came first: give up without marking anything.
    pub async fn wait(&mut self, what: &str, cause: &std::io::Error, stop: &CancellationToken) -> bool {
        if self.tries == 0 {
            tracing::warn!("{what}: the machine is short of resources ({cause}); trying again until it is not");
        } else {
            tracing::debug!(tries = self.tries, "{what}: still short of resources ({cause})");
        }
        self.tries += 1;
        tokio::select! {
            () = stop.cancelled() => return false,
            () = tokio::time::sleep(self.pause) => {}
        }
        self.pause = (self.pause * 2).min(LONGEST_PAUSE);
        true
    }

    /// After a try that worked: logs that the shortage is over, if there was one.
    pub fn over(&self, what: &str) {
        if self.tries > 0 {
            tracing::info!(tries = self.tries, "{what}: resources are back");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortages_are_found_through_the_chain_and_others_are_not() {
        let emfile = std::io::Error::from_raw_os_error(libc::EMFILE);
        let store = volcanic_abstractions::sessions::SessionStoreError::Io {
            action: "list",
            path: "/data/sessions/1".into(),
            source: emfile,
        };
        let e = anyhow::Error::from(store).context("opening the chat's session");
        assert_eq!(cause(&e).and_then(|io| io.raw_os_error()), Some(libc::EMFILE));
        for errno in [libc::ENFILE, libc::ENOMEM, libc::ENOSPC] {
            let e = anyhow::Error::from(std::io::Error::from_raw_os_error(errno));
            assert!(cause(&e).is_some(), "errno {errno}");
        }
        for errno in [libc::EACCES, libc::ENOENT, libc::EIO] {
            let e = anyhow::Error::from(std::io::Error::from_raw_os_error(errno));
            assert!(cause(&e).is_none(), "errno {errno}");
        }
        assert!(
            cause(&anyhow::anyhow!("Too many open files")).is_none(),
            "text is not a cause"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_pause_grows_and_stop_ends_the_wait() {
        let stop = CancellationToken::new();
        let emfile = std::io::Error::from_raw_os_error(libc::EMFILE);
        let mut s = Shortage::default();
        let start = tokio::time::Instant::now();
        assert!(s.wait("test", &emfile, &stop).await);
        assert!(s.wait("test", &emfile, &stop).await);
        assert_eq!(start.elapsed(), FIRST_PAUSE * 3);
        stop.cancel();
        assert!(!s.wait("test", &emfile, &stop).await);
    }
}
