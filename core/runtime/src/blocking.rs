//! Blocking file work (`fsync`) called from async code without stalling the runtime.

use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};

/// Threads kept for [`off_thread`].
const SYNC_THREADS: usize = 4;

/// Runs `f`, which may block for a while (an `fsync`). On a worker thread of a multi-threaded
/// tokio runtime the worker's other tasks move to another thread meanwhile
/// ([`tokio::task::block_in_place`]), so one chat waiting for the disk does not hold up the others;
/// elsewhere (a current-thread runtime, a blocking thread, no runtime) `f` just runs.
pub fn run<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// Runs `f` (an `fsync`) on one of a few threads kept for it and waits for its result without
/// holding an async worker thread. A burst (a hundred chats finishing at once) queues up there
/// instead of starting a thread each, as `spawn_blocking` and [`run`] would. `None` if the thread
/// died running it.
pub async fn off_thread<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> Option<R> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _ = tx.send(f());
    });
    match sync_pool() {
        Some(pool) => {
            if let Err(mpsc::SendError(job)) = pool.send(job) {
                job();
            }
        }
        // No thread could be started: run here, as a plain call would.
        None => run(job),
    }
    rx.await.ok()
}

/// The queue of the sync threads (started on first use), `None` if none could be started.
fn sync_pool() -> Option<&'static mpsc::Sender<Job>> {
    static POOL: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    POOL.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let started = (0..SYNC_THREADS)
            .filter(|n| {
                let rx = rx.clone();
                std::thread::Builder::new()
                    .name(format!("volcanic-sync-{n}"))
                    .spawn(move || {
                        loop {
                            let job = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                            match job {
                                Ok(job) => job(),
                                Err(_) => return,
                            }
                        }
                    })
                    .is_ok()
            })
            .count();
        (started > 0).then_some(tx)
    })
    .as_ref()
}

#[cfg(test)]
mod tests {
    #[test]
    fn runs_without_a_runtime() {
        assert_eq!(super::run(|| 7), 7);
    }

    #[tokio::test]
    async fn runs_on_a_current_thread_runtime() {
        assert_eq!(super::run(|| 8), 8);
    }

    #[tokio::test]
    async fn off_thread_runs_elsewhere_and_returns_the_result() {
        let here = std::thread::current().id();
        let there = super::off_thread(|| std::thread::current().id()).await;
        assert!(there.is_some_and(|t| t != here));
        let many = futures::future::join_all((0..50).map(|n| super::off_thread(move || n * 2))).await;
        assert_eq!(
            many.into_iter().flatten().sum::<i32>(),
            (0..50).map(|n| n * 2).sum::<i32>()
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runs_on_a_multi_thread_runtime_and_in_blocking_threads() {
        assert_eq!(super::run(|| 9), 9);
        let inner = tokio::task::spawn_blocking(|| super::run(|| 10)).await.ok();
        assert_eq!(inner, Some(10));
    }
}
