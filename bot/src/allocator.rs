//! The process's allocator: jemalloc, set to give freed memory back on its own.
//!
//! A long-running bot loads and evicts sessions all day, and each model request serializes the
//! whole transcript into one buffer that grows with the conversation. With glibc's allocator,
//! the soak benchmark (`bot/benches/soak.rs`, docs/benchmarks.md "Memory over a long run") kept
//! the heap in use flat (about 10 MB) while RSS grew after every busy wave: the free pages its
//! arenas kept after each peak were pinned by a few small blocks that outlived it, and neither
//! `malloc_trim`, two arenas nor a fixed mmap threshold made the last half of the run flat
//! (+7 % to +16 % over the last 1,000 of 2,000 messages). jemalloc keeps small blocks in slabs of
//! their own size class, so a survivor pins one slab, not a stretch of heap, and a background
//! thread returns pages left unused for a second; the figures are in the benchmark docs
//! ("Session 14").
//!
//! Every allocation goes through it, Rust's and the C libraries' alike (the crate's unprefixed
//! `malloc`). Its settings are [`MALLOC_CONF`], read once at the first allocation; an operator's
//! `MALLOC_CONF` environment variable is read after it, so each option set there wins (e.g.
//! `MALLOC_CONF=dirty_decay_ms:10000` for fewer `madvise` calls and more memory held).

/// The allocator of every allocation in the process.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options (`opt.*`, as in its `MALLOC_CONF`), NUL-terminated for C:
/// - `background_thread:true`: background threads return decayed pages, instead of allocating
///   threads now and then (or never, in a process that went quiet);
/// - `dirty_decay_ms:1000`: a freed page is returned to the system within a second (jemalloc's
///   default: ten), so that RSS follows the heap in use soon after a busy wave, while pages
///   freed and reused within one wave are not returned and faulted in again;
/// - `muzzy_decay_ms:0`: returned pages are unmapped at once (`MADV_DONTNEED`), not left
///   "muzzy" (`MADV_FREE`), which the kernel counts in RSS until it needs the memory.
/// - `narenas:2`: two arenas, not four per core (jemalloc's default, for many-core servers):
///   each arena keeps its own partly used slabs, and the bot's threads mostly wait on I/O.
///
/// jemalloc reads the C symbol `malloc_conf` before its first allocation, then the environment's
/// `MALLOC_CONF` (jemalloc's manual, "TUNING"): the static is that symbol.
// `unsafe` only because an exported name could clash with another symbol: jemalloc declares
// this one (weak) for exactly this use.
#[allow(unsafe_code)]
#[unsafe(export_name = "malloc_conf")]
pub static MALLOC_CONF: &[u8; 70] = b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0,narenas:2\0";

/// jemalloc's pseudo-arena index for "all arenas" (`MALLCTL_ARENAS_ALL` in its header).
const ARENAS_ALL: usize = 4096;

/// Returns every arena's unused pages to the system at once (jemalloc's
/// `arena.<ARENAS_ALL>.purge`), instead of within the decay time: after an eviction sweep,
/// whose freed sessions no wave is about to reuse. Blocking (one `madvise` per free extent): call
/// it from a blocking thread. Errors are ignored: pages not purged now go back by decay.
// The one call into the C library: `unsafe` because it is an FFI call, not for what it does.
#[allow(unsafe_code)]
pub fn release_free() {
    let name = format!("arena.{ARENAS_ALL}.purge\0");
    // SAFETY: `mallctl` with a NUL-terminated name and null old/new pointers and lengths: the
    // form jemalloc documents for void controls such as `purge`; it reads nothing of ours past
    // the name and writes nothing.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            name.as_ptr().cast(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        );
    }
}

#[cfg(test)]
#[allow(unsafe_code)] // reads jemalloc's options through its control interface
mod tests {
    use super::*;
    use tikv_jemalloc_ctl::{background_thread, raw};

    /// The `option:value` pairs of [`MALLOC_CONF`].
    fn options() -> Vec<(String, String)> {
        let conf = std::ffi::CStr::from_bytes_with_nul(MALLOC_CONF).map(|c| c.to_string_lossy().into_owned());
        let conf = conf.unwrap_or_default();
        let pairs = conf.split(',').filter_map(|pair| pair.split_once(':'));
        pairs.map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
    }

    /// The test binary has the same global allocator and `malloc_conf` symbol as the bot: each
    /// option read back from jemalloc is the one set (run without `MALLOC_CONF` set).
    #[test]
    fn jemalloc_runs_with_the_bots_settings() {
        assert_eq!(
            std::env::var_os("MALLOC_CONF"),
            None,
            "unset MALLOC_CONF to run this test"
        );
        let options = options();
        assert_eq!(options.len(), 4, "{options:?}");
        for (name, value) in options {
            let key = format!("opt.{name}\0");
            // SAFETY: the read's type is the option's in jemalloc's manual: `bool` for
            // `background_thread`, `unsigned` for `narenas`, `ssize_t` for the decay times.
            let read = match name.as_str() {
                "background_thread" => unsafe { raw::read::<bool>(key.as_bytes()) }.map(|v| v.to_string()),
                "narenas" => unsafe { raw::read::<u32>(key.as_bytes()) }.map(|v| v.to_string()),
                _ => unsafe { raw::read::<isize>(key.as_bytes()) }.map(|v| v.to_string()),
            };
            assert_eq!(read.ok(), Some(value), "{name}");
        }
        // And the threads run.
        assert_eq!(background_thread::read().ok(), Some(true));
    }

    /// An operator's `MALLOC_CONF` is read after [`MALLOC_CONF`]: what it sets wins, the rest
    /// stays ours. Seen in this test binary run again (`--list`: it runs no test) with
    /// jemalloc's options printed at its exit.
    #[test]
    fn an_operators_malloc_conf_wins() {
        let exe = std::env::current_exe().map_err(|e| e.to_string());
        let run = exe.and_then(|exe| {
            let mut cmd = std::process::Command::new(exe);
            cmd.arg("--list")
                .env("MALLOC_CONF", "stats_print:true,dirty_decay_ms:5000");
            cmd.output().map_err(|e| e.to_string())
        });
        let printed = run.map(|out| String::from_utf8_lossy(&out.stderr).into_owned());
        let printed = printed.unwrap_or_else(|e| format!("cannot run the test binary: {e}"));
        assert!(printed.contains("opt.dirty_decay_ms: 5000"), "{printed}");
        assert!(printed.contains("opt.muzzy_decay_ms: 0"), "{printed}");
        assert!(printed.contains("opt.background_thread: true"), "{printed}");
    }

    /// Resident pages of this process (`/proc/self/statm`'s second field).
    fn resident_pages() -> usize {
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
        statm.split(' ').nth(1).and_then(|n| n.parse().ok()).unwrap_or(0)
    }

    #[test]
    fn a_purge_returns_freed_pages_at_once() {
        // 64 MiB in 16 KiB blocks (small enough to come from the arenas, not mappings of their
        // own), touched so that they are resident, then freed: decay alone would take a second.
        let blocks: Vec<Vec<u8>> = (0..4096).map(|_| vec![1u8; 16 * 1024]).collect();
        let full = resident_pages();
        drop(blocks);
        release_free();
        let after = resident_pages();
        let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
            .ok()
            .flatten()
            .unwrap_or(4096);
        let returned_mib = (full.saturating_sub(after) * usize::try_from(page).unwrap_or(4096)) >> 20;
        assert!(
            returned_mib >= 48,
            "{returned_mib} MiB returned ({full} pages resident before)"
        );
    }
}
