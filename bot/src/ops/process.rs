//! Metrics read at scrape time: the process metrics under the names the Prometheus client
//! libraries share (<https://prometheus.io/docs/instrumenting/writing_clientlibs/#process-metrics>:
//! `process_cpu_seconds_total`, `process_resident_memory_bytes`, `process_virtual_memory_bytes`,
//! `process_open_fds`, `process_max_fds`, `process_start_time_seconds`), read from `/proc/self`
//! (proc(5)), and `volcanic_chats_known`, the chats with a workspace. A value that cannot be read
//! (not Linux, `/proc` not mounted) is left out, not reported as 0.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use std::path::PathBuf;

/// The scrape-time collector; `workspaces` is the root of the chats' workspaces.
#[derive(Debug)]
pub struct ProcessCollector {
    workspaces: PathBuf,
}

impl ProcessCollector {
    /// A collector counting the chats under `workspaces`.
    pub fn new(workspaces: PathBuf) -> Self {
        ProcessCollector { workspaces }
    }
}

/// What `/proc/self/stat` (fields 14, 15, 22, 23, 24 of proc(5)) gives, in base units.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Stat {
    cpu_seconds: f64,
    start_after_boot_seconds: f64,
    virtual_bytes: u64,
    resident_bytes: u64,
}

/// Parses `/proc/self/stat`; `tick` is `sysconf(_SC_CLK_TCK)` (Hz), `page` the page size (bytes).
/// `None` when the line is not in the expected shape.
fn parse_stat(line: &str, tick: f64, page: u64) -> Option<Stat> {
    // The command name (field 2) is in parentheses and may hold spaces: fields count from after it.
    let rest = &line[line.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): field N is f[N - 3].
    let num = |n: usize| f.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some(Stat {
        cpu_seconds: (num(14)? + num(15)?) as f64 / tick,
        start_after_boot_seconds: num(22)? as f64 / tick,
        virtual_bytes: num(23)?,
        resident_bytes: num(24)?.saturating_mul(page),
    })
}

/// `btime` (boot time, seconds since the epoch) from `/proc/stat`.
fn boot_time(proc_stat: &str) -> Option<u64> {
    proc_stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// The soft limit of open descriptors from `/proc/self/limits` ("Max open files  1024  4096  files").
fn max_fds(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

fn count_entries(dir: &std::path::Path, keep: impl Fn(&std::fs::DirEntry) -> bool) -> Option<u64> {
    let entries = std::fs::read_dir(dir).ok()?;
    Some(entries.flatten().filter(|e| keep(e)).count() as u64)
}

/// Encodes one scrape-time value (a [`ConstGauge`] or [`ConstCounter`]) under `name`.
fn put(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    metric: impl EncodeMetric,
) -> Result<(), std::fmt::Error> {
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        use nix::unistd::{SysconfVar, sysconf};
        let tick = sysconf(SysconfVar::CLK_TCK).ok().flatten().unwrap_or(100) as f64;
        let page = sysconf(SysconfVar::PAGE_SIZE).ok().flatten().unwrap_or(4096) as u64;
        let read = |p: &str| std::fs::read_to_string(p).ok();
        let e = &mut encoder;
        if let Some(stat) = read("/proc/self/stat").and_then(|l| parse_stat(&l, tick, page)) {
            let cpu = ConstCounter::new(stat.cpu_seconds);
            put(
                e,
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                cpu,
            )?;
            let rss = ConstGauge::new(stat.resident_bytes);
            put(e, "process_resident_memory_bytes", "Resident memory size in bytes", rss)?;
            let vsz = ConstGauge::new(stat.virtual_bytes);
            put(e, "process_virtual_memory_bytes", "Virtual memory size in bytes", vsz)?;
            if let Some(boot) = read("/proc/stat").and_then(|s| boot_time(&s)) {
                let start = ConstGauge::new(boot as f64 + stat.start_after_boot_seconds);
                let help = "Start time of the process since unix epoch in seconds";
                put(e, "process_start_time_seconds", help, start)?;
            }
        }
        if let Some(open) = count_entries(std::path::Path::new("/proc/self/fd"), |_| true) {
            put(
                e,
                "process_open_fds",
                "Number of open file descriptors",
                ConstGauge::new(open),
            )?;
        }
        if let Some(max) = read("/proc/self/limits").and_then(|l| max_fds(&l)) {
            let help = "Maximum number of open file descriptors";
            put(e, "process_max_fds", help, ConstGauge::new(max))?;
        }
        // A chat's workspace is a folder named by its id (`features::port::chat_key`).
        let chats = count_entries(&self.workspaces, |e| {
            e.file_type().is_ok_and(|t| t.is_dir()) && crate::features::port::chat_of_workspace(&e.path()).is_some()
        });
        put(
            e,
            "volcanic_chats_known",
            "Chats with a workspace",
            ConstGauge::new(chats.unwrap_or(0)),
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_are_read_by_their_fields() {
        // proc(5)'s layout, with a command name holding a space and a parenthesis.
        let line = "4242 (volcanic (bot)) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 9 0 12345 \
                    104857600 5000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0";
        let s = parse_stat(line, 100.0, 4096).unwrap();
        assert_eq!(
            s,
            Stat {
                cpu_seconds: 3.0,
                start_after_boot_seconds: 123.45,
                virtual_bytes: 104_857_600,
                resident_bytes: 5000 * 4096,
            }
        );
        assert_eq!(parse_stat("garbage", 100.0, 4096), None);
        assert_eq!(
            boot_time("cpu  1 2 3\nbtime 1700000000\nprocesses 5\n"),
            Some(1_700_000_000)
        );
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1024                 524288               files\n";
        assert_eq!(max_fds(limits), Some(1024));
    }
}
