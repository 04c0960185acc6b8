//! Keeping the allocator's hold on memory small over a long run.
//!
//! A long-running bot loads and evicts sessions all day, and each model request serializes the
//! whole transcript into one buffer that grows with the conversation. Measured with the soak
//! benchmark (`bot/benches/soak.rs`, docs/benchmarks.md "Memory over a long run"): the heap in
//! use stays under 15 MB while glibc's allocator keeps freed pages, so RSS grew with every
//! thousand messages. Two measures hold it back (not flat yet: growth that no allocator setting
//! changed remains, see the benchmark docs):
//! - [`configure`], once at start, before any thread: big buffers are mapped on their own and
//!   unmapped when freed, and fewer arenas hold free pages;
//! - [`release_free`] after an eviction sweep: the free pages of every arena go back.

/// Requests of this size or more (bytes) get their own mapping, unmapped when freed. glibc's
/// default starts at 128 KiB but rises to the largest block freed so far (up to 32 MiB), so once
/// one long transcript's request body was freed, every later one came from the arenas' heaps and
/// fragmented them; setting it fixes it at this value (glibc's `M_MMAP_THRESHOLD`).
const MMAP_THRESHOLD: libc::c_int = 128 * 1024;

/// Most arenas glibc keeps (its default: 8 per core). Each thread that meets a busy arena gets
/// another, and every arena keeps its own free pages (glibc's `M_ARENA_MAX`).
const ARENA_MAX: libc::c_int = 2;

/// Each knob [`configure`] sets: its `GLIBC_TUNABLES` name (one the operator set there wins
/// over ours), its `mallopt` parameter, its value.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const KNOBS: [(&str, libc::c_int, libc::c_int); 2] = [
    ("glibc.malloc.mmap_threshold", libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD),
    ("glibc.malloc.arena_max", libc::M_ARENA_MAX, ARENA_MAX),
];

/// Sets glibc's allocator for a long run ([`MMAP_THRESHOLD`], [`ARENA_MAX`]), except a knob the
/// operator's `GLIBC_TUNABLES` sets. Call it first in `main`, before any thread starts: glibc
/// fixes its arena count when a thread first allocates. A no-op where the allocator is not
/// glibc's.
// The one call into the C library: `unsafe` because it is an FFI call, not for what it does.
#[allow(unsafe_code)]
pub fn configure() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let tunables = std::env::var("GLIBC_TUNABLES").unwrap_or_default();
        for (name, param, value) in KNOBS {
            if !operator_sets(&tunables, name) {
                // SAFETY: `mallopt` takes two integers and only changes the allocator's
                // parameters under its lock. Its result (0: refused) cannot be acted on: the
                // defaults stay, which work, only with more memory held.
                unsafe {
                    libc::mallopt(param, value);
                }
            }
        }
    }
}

/// Whether `tunables` (`GLIBC_TUNABLES`: `name=value` pairs separated by `:`) sets `name`.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
fn operator_sets(tunables: &str, name: &str) -> bool {
    tunables.split(':').any(|pair| pair.split('=').next() == Some(name))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operators_tunable_is_found_by_its_exact_name() {
        let set = "glibc.malloc.arena_max=4:glibc.malloc.tcache_count=0";
        assert!(operator_sets(set, "glibc.malloc.arena_max"));
        assert!(!operator_sets(set, "glibc.malloc.mmap_threshold"));
        assert!(!operator_sets("glibc.malloc.arena_max_x=1", "glibc.malloc.arena_max"));
        assert!(!operator_sets("", "glibc.malloc.arena_max"));
    }
}
