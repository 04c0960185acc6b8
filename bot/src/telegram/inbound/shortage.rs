//! Running short of descriptors, memory or disk: such a failure is the machine's state, not the
//! message's, so the message is neither answered with the OS error nor marked done. Its handling
//! waits the shortage out ([`Shortage::wait`]) and tries again, while the update stays unfinished
//! in the journal (a restart meanwhile handles it as if it just arrived, by the
//! [recovery](crate::telegram::conversation::recovery) rule for a prompt that never reached the
//! model). The chat's later messages keep their place behind it.
//!
//! What a shortage is and how to tell one ([`Lack`], `lack`, `lack_of`, `lack_in_text`) is
//! `volcanic_abstractions::shortage`'s; this module holds the bot's own: the `anyhow` form, the
//! wait and the retry.

use tokio_util::sync::CancellationToken;
use volcanic_abstractions::shortage::{Lack, lack_in_chain};
use volcanic_provider_support::shortage::Pauses;

/// [`lack_of`](volcanic_abstractions::shortage::lack_of) for an `anyhow` error (its context and sources).
pub fn lack_of_any(e: &anyhow::Error) -> Option<Lack> {
    lack_in_chain(e.chain())
}

/// `e` as a place that passes its text on to a chat may show it (a scheduled job's failure
/// note, through the chat port): a shortage ([`lack_of_any`]) becomes a sentence saying what ran
/// short, without the OS error's text; any other error is returned as it was (its type and
/// causes kept).
pub fn plainly(e: anyhow::Error) -> anyhow::Error {
    match lack_of_any(&e) {
        Some(lack) => anyhow::anyhow!(lack.plainly()),
        None => e,
    }
}

/// Waiting out one shortage, with a growing pause ([`Pauses`], as a model call's connection
/// waits one out).
#[derive(Debug, Default)]
pub struct Shortage {
    pauses: Pauses,
}

impl Shortage {
    /// Logs `cause` (the first time at warning level, then at debug) and pauses before the
    /// next try. `false` when `stop` came first: give up without marking anything.
    pub async fn wait(&mut self, what: &str, cause: &(dyn std::fmt::Display + Sync), stop: &CancellationToken) -> bool {
        if self.pauses.tries() == 0 {
            tracing::warn!("{what}: the machine is short of resources ({cause:#}); trying again until it is not");
        } else {
            tracing::debug!(
                tries = self.pauses.tries(),
                "{what}: still short of resources ({cause:#})"
            );
        }
        let pause = self.pauses.next_pause();
        tokio::select! {
            () = stop.cancelled() => return false,
            () = tokio::time::sleep(pause) => {}
        }
        true
    }

    /// After a try that worked: logs that the shortage is over, if there was one.
    pub fn over(&self, what: &str) {
        if self.pauses.tries() > 0 {
            tracing::info!(tries = self.pauses.tries(), "{what}: resources are back");
        }
    }
}

/// Runs `attempt` until it succeeds or fails for another reason than a shortage (`lack` of its
/// error), waiting each shortage out ([`Shortage::wait`]); `short` hears of each shortage met
/// before its wait. `None`: `stop` came first (nothing is marked; the journal keeps the update).
pub async fn retry<T, E, Fut>(
    what: &str,
    stop: &CancellationToken,
    lack: impl Fn(&E) -> Option<Lack>,
    short: impl Fn(Lack),
    mut attempt: impl FnMut() -> Fut,
) -> Option<Result<T, E>>
where
    Fut: Future<Output = Result<T, E>>,
    E: std::fmt::Display + Sync,
{
    let mut waiting = Shortage::default();
    loop {
        let tried = attempt().await;
        match tried.as_ref().err().and_then(|e| Some((e, lack(e)?))) {
            Some((e, lacking)) => {
                short(lacking);
                if !waiting.wait(what, e, stop).await {
                    return None;
                }
            }
            None => {
                waiting.over(what);
                return Some(tried);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use volcanic_abstractions::shortage::{lack, lack_of};
    use volcanic_provider_support::shortage::FIRST_PAUSE;

    #[test]
    fn shortages_are_found_through_the_chain_and_others_are_not() {
        let emfile = std::io::Error::from_raw_os_error(libc::EMFILE);
        let store = volcanic_abstractions::sessions::SessionStoreError::Io {
            action: "list",
            path: "/data/sessions/1".into(),
            source: emfile,
        };
        let e = anyhow::Error::from(store).context("opening the chat's session");
        assert_eq!(lack_of_any(&e), Some(Lack::Descriptors));
        for errno in [libc::ENFILE, libc::ENOMEM, libc::ENOSPC] {
            let e = anyhow::Error::from(std::io::Error::from_raw_os_error(errno));
            assert!(lack_of_any(&e).is_some(), "errno {errno}");
        }
        for errno in [libc::EACCES, libc::ENOENT, libc::EIO] {
            let e = anyhow::Error::from(std::io::Error::from_raw_os_error(errno));
            assert!(lack_of_any(&e).is_none(), "errno {errno}");
        }
        assert!(
            lack_of_any(&anyhow::anyhow!("Too many open files")).is_none(),
            "words alone are not a cause"
        );
        let store = volcanic_abstractions::sessions::SessionStoreError::Io {
            action: "append to",
            path: "/data/s.jsonl".into(),
            source: std::io::Error::from_raw_os_error(libc::EDQUOT),
        };
        assert_eq!(lack_of(&store), Some(Lack::Disk));
        // A level that kept only the text (a download's error).
        let text = anyhow::anyhow!(
            "the download failed ({})",
            std::io::Error::from_raw_os_error(libc::EMFILE)
        );
        assert_eq!(lack_of_any(&text), Some(Lack::Descriptors));
    }

    #[test]
    fn a_shortage_is_passed_on_without_the_os_text_and_other_errors_as_they_were() {
        let emfile =
            anyhow::Error::from(std::io::Error::from_raw_os_error(libc::EMFILE)).context("opening the session");
        let shown = format!("{:#}", plainly(emfile));
        assert_eq!(shown, "the bot's machine is short of open files");
        let other = anyhow::Error::from(std::io::Error::from_raw_os_error(libc::EACCES)).context("opening the session");
        let kept = plainly(other);
        assert!(kept.downcast_ref::<std::io::Error>().is_some(), "the cause is kept");
        assert!(format!("{kept:#}").starts_with("opening the session: "));
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

    #[tokio::test(start_paused = true)]
    async fn retry_waits_out_shortages_only() {
        let stop = CancellationToken::new();
        let tries = std::cell::Cell::new(0);
        let heard = std::cell::RefCell::new(Vec::new());
        let got = retry(
            "test",
            &stop,
            |e: &std::io::Error| lack(e),
            |l| heard.borrow_mut().push(l),
            || {
                tries.set(tries.get() + 1);
                let n = tries.get();
                async move {
                    match n {
                        1 => Err(std::io::Error::from_raw_os_error(libc::ENOSPC)),
                        2 => Err(std::io::Error::from_raw_os_error(libc::EMFILE)),
                        _ => Err(std::io::Error::from_raw_os_error(libc::EACCES)),
                    }
                }
            },
        )
        .await;
        let e: std::io::Error = got.and_then(Result::<(), _>::err).unwrap();
        assert_eq!(e.raw_os_error(), Some(libc::EACCES), "other failures end the retry");
        assert_eq!(heard.into_inner(), [Lack::Disk, Lack::Descriptors]);
        stop.cancel();
        let never = retry(
            "test",
            &stop,
            |e: &std::io::Error| lack(e),
            |_| {},
            || async { Err::<(), _>(std::io::Error::from_raw_os_error(libc::ENOMEM)) },
        )
        .await;
        assert!(never.is_none(), "stop ends the wait");
    }
}
