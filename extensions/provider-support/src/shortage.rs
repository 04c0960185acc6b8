//! A shortage on this machine met while connecting to the provider: the process or the machine
//! ran out of descriptors or memory (`EMFILE`, `ENFILE`, `ENOMEM`, `ENOBUFS`) before the request
//! left. Nothing reached the server, so another try is safe however often it comes, and the
//! failure says nothing about the provider: the provider's `send` waits it out (until the
//! call is cancelled) instead of spending the call's retries or ending the run with an error the
//! user would see. The bot waits the same shortages out for a message that meets them
//! (issue 25: "no message is lost ... the chat never sees a raw OS error").

use std::time::Duration;

/// First pause before trying again; doubled up to [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(250);

/// Longest pause between tries.
const LONGEST_PAUSE: Duration = Duration::from_secs(10);

/// The OS errors that mean this machine is short of something, not that the provider failed.
const SHORT: [i32; 4] = [libc::EMFILE, libc::ENFILE, libc::ENOMEM, libc::ENOBUFS];

/// Whether `e` or one of its sources is an OS error of [`SHORT`].
pub(crate) fn local_shortage(e: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(e), |e| e.source()).any(|level| {
        level
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
            .is_some_and(|n| SHORT.contains(&n))
    })
}

/// The growing pauses of one wait for a shortage to pass.
#[derive(Debug)]
pub(crate) struct Pauses {
    next: Duration,
    /// Tries that met the shortage so far.
    pub(crate) tries: u32,
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
    /// The pause before the next try: [`FIRST_PAUSE`], doubled each time up to [`LONGEST_PAUSE`].
    pub(crate) fn next(&mut self) -> Duration {
        let pause = self.next;
        self.next = (self.next * 2).min(LONGEST_PAUSE);
        self.tries += 1;
        pause
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that wraps another, as the HTTP client's layers do.
    #[derive(Debug, thiserror::Error)]
    #[error("connect failed")]
    struct Wrapped(#[source] std::io::Error);

    #[test]
    fn shortages_are_found_through_the_sources_and_others_are_not() {
        for errno in [libc::EMFILE, libc::ENFILE, libc::ENOMEM, libc::ENOBUFS] {
            let e = Wrapped(std::io::Error::from_raw_os_error(errno));
            assert!(local_shortage(&e), "errno {errno}");
        }
        for errno in [libc::ECONNREFUSED, libc::ENETUNREACH, libc::ENOSPC] {
            let e = Wrapped(std::io::Error::from_raw_os_error(errno));
            assert!(!local_shortage(&e), "errno {errno}");
        }
        let words = std::io::Error::other("Too many open files");
        assert!(!local_shortage(&words), "words alone are not a cause");
    }

    #[test]
    fn pauses_double_up_to_the_longest() {
        let mut p = Pauses::default();
        let taken: Vec<Duration> = (0..8).map(|_| p.next()).collect();
        assert_eq!(taken[0], FIRST_PAUSE);
        assert_eq!(taken[1], FIRST_PAUSE * 2);
        assert_eq!(taken[7], LONGEST_PAUSE);
        assert_eq!(p.tries, 8);
    }
}
