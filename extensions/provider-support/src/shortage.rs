//! The provider's policy for a shortage on this machine ([`volcanic_abstractions::shortage`]):
//! which failures of a connection are one (`local_shortage`) and the pauses that wait one out
//! ([`Pauses`]).
//!
//! A shortage met while connecting to the provider: the process or the machine
//! ran out of descriptors or memory (`EMFILE`, `ENFILE`, `ENOMEM`, `ENOBUFS`) before the request
//! left. Nothing reached the server, so another try is safe however often it comes, and the
//! failure says nothing about the provider: the provider's `send` waits it out (until the
//! call is cancelled) instead of spending the call's retries or ending the run with an error the
//! user would see. The bot waits the same shortages out, with the same [`Pauses`], for a message
//! that meets them (issue 25: "no message is lost ... the chat never sees a raw OS error").

use std::time::Duration;
use volcanic_abstractions::shortage::{Lack, lack};

/// First pause before trying again; doubled up to [`LONGEST_PAUSE`].
pub const FIRST_PAUSE: Duration = Duration::from_millis(250);

/// Longest pause between tries.
pub const LONGEST_PAUSE: Duration = Duration::from_secs(10);

/// Whether `e` or one of its sources is an OS error saying this machine is short of descriptors
/// or memory (a full disk does not stop a connection).
pub(crate) fn local_shortage(e: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(e), |e| e.source()).any(|level| {
        level
            .downcast_ref::<std::io::Error>()
            .and_then(lack)
            .is_some_and(|lack| lack != Lack::Disk)
    })
}

/// The growing pauses of one wait for a shortage to pass.
#[derive(Debug)]
pub struct Pauses {
    next: Duration,
    tries: u32,
}

impl Default for Pauses {
    fn default() -> Self {
        Pauses {
            next: FIRST_PAUSE,
            tries: 0,
        }
    }
}

impl Pauses {
    /// The pause before the next try: [`FIRST_PAUSE`] (250 ms), doubled each time up to
    /// [`LONGEST_PAUSE`] (10 s).
    pub fn next_pause(&mut self) -> Duration {
        let pause = self.next;
        self.next = (self.next * 2).min(LONGEST_PAUSE);
        self.tries += 1;
        pause
    }

    /// Tries that met the shortage so far (pauses taken).
    pub fn tries(&self) -> u32 {
        self.tries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that wraps an OS error, as the HTTP client's layers do.
    fn wrapped(errno: i32) -> volcanic_abstractions::sessions::SessionStoreError {
        volcanic_abstractions::sessions::SessionStoreError::Io {
            action: "connect",
            path: "/x".into(),
            source: std::io::Error::from_raw_os_error(errno),
        }
    }

    #[test]
    fn shortages_are_found_through_the_sources_and_others_are_not() {
        for errno in [libc::EMFILE, libc::ENFILE, libc::ENOMEM, libc::ENOBUFS] {
            assert!(local_shortage(&wrapped(errno)), "errno {errno}");
        }
        for errno in [libc::ECONNREFUSED, libc::ENETUNREACH, libc::ENOSPC] {
            assert!(!local_shortage(&wrapped(errno)), "errno {errno}");
        }
        let words = std::io::Error::other("Too many open files");
        assert!(!local_shortage(&words), "words alone are not a cause");
    }

    #[test]
    fn pauses_double_up_to_the_longest() {
        let mut p = Pauses::default();
        let taken: Vec<Duration> = (0..8).map(|_| p.next_pause()).collect();
        assert_eq!(taken[0], FIRST_PAUSE);
        assert_eq!(taken[1], FIRST_PAUSE * 2);
        assert_eq!(taken[7], LONGEST_PAUSE);
        assert_eq!(p.tries(), 8);
    }
}
