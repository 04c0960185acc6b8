//! Reading entries by position from a session file, in parallel.
//!
//! The positions asked for are split into one contiguous group per core (by bytes); each group
//! reads runs of nearby lines with one `pread` into a reused buffer, parses each line in place
//! and hands the entry to a mapping function in the worker. The first group appends straight to
//! the caller's vector (sized for everything), the others to their own, appended after.
//! A context path is mostly one run (a path is in file order), so this is a few large reads.

use super::file_store::Span;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::thread;
use volcanic_abstractions::sessions::{EntryPos, SessionEntry, SessionStoreError};

/// Below this many bytes one thread parses everything.
const PARALLEL_MIN_BYTES: u64 = 512 * 1024;
/// Lines at most this far apart are read together (the gap is read and ignored).
const MAX_GAP: u64 = 64 * 1024;
/// Largest run read at once (a single longer line is read alone).
const MAX_RUN: u64 = 1 << 20;

/// Appends `map(entry)` for the entries at `positions` to `out`, in order, leaving out `None`
/// results. `map` gets `None` for a line that does not parse (logged) or a position without one.
pub(crate) fn read_mapped<T: Send>(
    file: &File,
    path: &Path,
    spans: &[Span],
    positions: &[EntryPos],
    out: &mut Vec<T>,
    map: impl Fn(Option<SessionEntry>) -> Option<T> + Sync,
) -> Result<(), SessionStoreError> {
    let wanted: Vec<Option<Span>> = positions.iter().map(|&p| spans.get(p as usize).copied()).collect();
    let total: u64 = wanted.iter().flatten().map(|s| u64::from(s.len)).sum();
    out.reserve(wanted.len());
    let threads = if total < PARALLEL_MIN_BYTES {
        1
    } else {
        thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8)
    };
    if threads == 1 {
        return read_group(file, path, &wanted, &map, out);
    }
    let groups = split_by_bytes(&wanted, total, threads);
    let Some((first, rest)) = groups.split_first() else {
        return Ok(());
    };
    let (map, wanted) = (&map, &wanted);
    let others = thread::scope(|scope| {
        let handles: Vec<_> = rest
            .iter()
            .map(|r| {
                scope.spawn(move || {
                    let mut part = Vec::with_capacity(r.len());
                    read_group(file, path, &wanted[r.clone()], map, &mut part).map(|()| part)
                })
            })
            .collect();
        let mine = read_group(file, path, &wanted[first.clone()], map, out);
        let others: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect();
        mine.map(|()| others)
    })?;
    for part in others {
        out.extend(part?);
    }
    Ok(())
}

/// Splits `wanted` into at most `n` contiguous ranges of about equal bytes.
fn split_by_bytes(wanted: &[Option<Span>], total: u64, n: usize) -> Vec<std::ops::Range<usize>> {
    let per = total.div_ceil(n as u64).max(1);
    let mut groups = Vec::with_capacity(n);
    let (mut start, mut acc) = (0, 0u64);
    for (i, s) in wanted.iter().enumerate() {
        acc += s.map_or(0, |s| u64::from(s.len));
        if acc >= per && groups.len() + 1 < n {
            groups.push(start..i + 1);
            start = i + 1;
            acc = 0;
        }
    }
    groups.push(start..wanted.len());
    groups
}

fn read_group<T>(
    file: &File,
    path: &Path,
    wanted: &[Option<Span>],
    map: &impl Fn(Option<SessionEntry>) -> Option<T>,
    out: &mut Vec<T>,
) -> Result<(), SessionStoreError> {
    let mut buf = Vec::new();
    let mut i = 0;
    while i < wanted.len() {
        let Some(first) = wanted[i] else {
            out.extend(map(None));
            i += 1;
            continue;
        };
        // Extend the run while the next line follows closely.
        let (run_start, mut run_end, mut j) = (first.offset, first.end(), i + 1);
        while let Some(Some(next)) = wanted.get(j) {
            if next.offset < run_end || next.offset - run_end > MAX_GAP || next.end() - run_start > MAX_RUN {
                break;
            }
            run_end = next.end();
            j += 1;
        }
        buf.resize(usize::try_from(run_end - run_start).unwrap_or(0), 0);
        file.read_exact_at(&mut buf, run_start)
            .map_err(|source| SessionStoreError::Io {
                action: "read",
                path: path.to_path_buf(),
                source,
            })?;
        for span in wanted[i..j].iter().flatten() {
            let from = usize::try_from(span.offset - run_start).unwrap_or(0);
            let line = &buf[from..from + span.len as usize];
            out.extend(map(parse(path, span.offset, line)));
        }
        i = j;
    }
    Ok(())
}

fn parse(path: &Path, offset: u64, line: &[u8]) -> Option<SessionEntry> {
    match SessionEntry::from_json(line) {
        Ok(entry) => Some(entry),
        Err(error) => {
            tracing::warn!(file = %path.display(), offset, %error, "skipping an unreadable session entry (left in place)");
            None
        }
    }
}
