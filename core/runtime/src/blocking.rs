//! Blocking file work (`fsync`) called from async code without stalling the runtime.

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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runs_on_a_multi_thread_runtime_and_in_blocking_threads() {
        assert_eq!(super::run(|| 9), 9);
        let inner = tokio::task::spawn_blocking(|| super::run(|| 10)).await.ok();
        assert_eq!(inner, Some(10));
    }
}
