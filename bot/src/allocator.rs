//! Giving freed memory back to the system.
//!
//! A long-running bot loads and evicts sessions all day: measured with the soak benchmark
//! (`bot/benches/soak.rs`), the heap in use stayed under 15 MB (heaptrack) while glibc's
//! allocator kept the freed pages, and RSS grew with every thousand messages. After an eviction
//! sweep freed sessions, [`release_free`] asks glibc to return the free pages of every arena.

/// Returns the allocator's free pages to the system (glibc's `malloc_trim(0)`: in every arena,
/// whole free pages anywhere in the heap, not only at its top). Blocking, a few milliseconds:
/// call it from a blocking thread. A no-op where the allocator is not glibc's.
// The one call into the C library: `unsafe` because it is an FFI call, not for what it does.
#[allow(unsafe_code)]
pub fn release_free() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes no pointers and only walks the allocator's own free lists
    // under its locks; it is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
