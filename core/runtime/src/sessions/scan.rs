//! Indexing a session file without parsing its entries.
//!
//! The file is read in chunks with one reused buffer; each line is found with `memchr` and its
//! `type`, `id`, `parentId` (and, for messages, `role`) are taken from pi's fixed key order
//! `{"type":"…","id":"…","parentId":…,"timestamp":"…","message":{"role":"…"`. A line in another
//! order (pi's `custom`/`custom_message` entries, hand-written files) falls back to a small serde
//! probe. Only the index and each line's offset are kept. The last line is validated in full,
//! since that is where a crash leaves a torn write.

use super::file_store::Span;
use memchr::{memchr, memrchr};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::HashSet;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use volcanic_abstractions::sessions::{
    EntryPos, EntryTag, RoleTag, SessionEntry, SessionHeader, SessionIndex, SessionStoreError,
};

/// Bytes read per chunk while indexing.
const CHUNK: usize = 256 * 1024;

/// How a file ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tail {
    /// After a complete line and its newline.
    Clean,
    /// The last line is a complete entry without its newline; the next append writes one first.
    MissingNewline,
    /// The bytes from `from` to the end are a torn line: saved aside and cut before the next append.
    Torn {
        /// Offset of the torn line.
        from: u64,
    },
}

/// A scanned file.
#[derive(Debug)]
pub(crate) struct Scanned {
    pub(crate) header: SessionHeader,
    pub(crate) index: SessionIndex,
    pub(crate) spans: Vec<Span>,
    /// Length of the file when scanned.
    pub(crate) len: u64,
    pub(crate) tail: Tail,
}

/// Below this many bytes of entries one thread indexes the file.
const PARALLEL_MIN_BYTES: u64 = 4 << 20;

/// Reads the header, checks the tail and indexes every line of `file`.
pub(crate) fn scan(file: &File, path: &Path) -> Result<Scanned, SessionStoreError> {
    let io = |source| SessionStoreError::Io {
        action: "read",
        path: path.to_path_buf(),
        source,
    };
    let len = file.metadata().map_err(io)?.len();
    let (header, header_end) = read_header(file, path, len)?;
    if header_end >= len {
        // Only the header; `header_end > len` means it lacks its newline.
        let tail = if header_end > len {
            Tail::MissingNewline
        } else {
            Tail::Clean
        };
        return Ok(Scanned {
            header,
            index: SessionIndex::new(),
            spans: Vec::new(),
            len,
            tail,
        });
    }
    let (tail, scan_end) = check_tail(file, path, header_end, len)?;
    let parts = scan_parts(file, header_end, scan_end).map_err(io)?;
    let (index, spans) = build_index(&parts, path);
    Ok(Scanned {
        header,
        index,
        spans,
        len,
        tail,
    })
}

/// An entry as logged: its position and line number.
type Seen = Option<(EntryPos, usize)>;

/// Indexes the parts' lines in file order. An entry whose parent is in no line of the file
/// but follows an unreadable line (its parent was, most likely, on that line) continues from
/// the last readable entry before that line, so the path to the root passes over the loss
/// instead of stopping there. Both are logged with their line numbers; the file is unchanged.
fn build_index(parts: &[Part], path: &Path) -> (SessionIndex, Vec<Span>) {
    let entries: usize = parts.iter().map(|p| p.recs.len()).sum();
    let mut index = SessionIndex::with_capacity(entries);
    let mut spans = Vec::with_capacity(entries);
    // Every id of the file, only when a line was lost (without a loss, a parent id found
    // nowhere is pi's reading of a root, and left so).
    let lost_any = parts.iter().any(|p| p.skipped.iter().any(|&(_, _, header)| !header));
    let ids: HashSet<&str> = if lost_any {
        parts.iter().flat_map(|p| p.recs.iter().map(|r| p.str(r.id))).collect()
    } else {
        HashSet::new()
    };
    let file = path.display();
    // The last unreadable line so far, and the last entry read before it.
    let mut gap: Option<(usize, Seen)> = None;
    let mut last: Seen = None;
    let mut line_base = 1; // the header's line
    for part in parts {
        let mut skipped = part.skipped.iter().peekable();
        let mut skip_until = |upto: u64, gap: &mut Option<(usize, Seen)>, last: Seen| {
            while let Some(&(line, offset, header)) = skipped.next_if(|s| s.1 < upto) {
                let line = line_base + line;
                if header {
                    tracing::warn!(%file, line, "skipping a second session header");
                } else {
                    tracing::warn!(%file, line, offset, "skipping an unreadable session line (left in place)");
                    *gap = Some((line, last));
                }
            }
        };
        for r in &part.recs {
            skip_until(r.offset, &mut gap, last);
            let line = line_base + r.line as usize;
            let mut parent = r.parent.map(|p| part.str(p));
            let relinked: Option<String>;
            if let (Some(missing), Some((gap_line, before))) = (parent, gap)
                && !ids.contains(missing)
            {
                relinked = before.map(|(pos, _)| index.id(pos).to_owned());
                let id = part.str(r.id);
                match before {
                    Some((_, before_line)) => tracing::warn!(
                        %file, line, id, missing, continues_from = relinked.as_deref(),
                        continues_from_line = before_line, unreadable_line = gap_line,
                        "the parent of an entry was on an unreadable line: the entry continues from \
                         the last readable one before that line, and the context keeps everything else"
                    ),
                    None => tracing::warn!(
                        %file, line, id, missing, unreadable_line = gap_line,
                        "the parent of an entry was on an unreadable line before any readable entry: \
                         the context starts at this entry"
                    ),
                }
                parent = relinked.as_deref();
            }
            let pos = index.push(part.str(r.id), parent, r.tag, r.role);
            spans.push(Span {
                offset: r.offset,
                len: r.len,
            });
            last = Some((pos, line));
        }
        skip_until(u64::MAX, &mut gap, last);
        line_base += part.lines;
    }
    index.finish();
    (index, spans)
}

/// One indexed line of a part; strings are ranges of the part's arena.
#[derive(Debug)]
struct Rec {
    offset: u64,
    /// Line within the part (1-based).
    line: u32,
    len: u32,
    tag: EntryTag,
    role: Option<RoleTag>,
    id: (u32, u32),
    parent: Option<(u32, u32)>,
}

/// The lines of one stretch of the file, indexed by one thread.
#[derive(Debug, Default)]
struct Part {
    recs: Vec<Rec>,
    arena: String,
    /// Lines seen, blank ones included.
    lines: usize,
    /// Skipped lines: (line within the part, offset, is a second header).
    skipped: Vec<(usize, u64, bool)>,
}

impl Part {
    fn str(&self, (start, end): (u32, u32)) -> &str {
        self.arena.get(start as usize..end as usize).unwrap_or_default()
    }

    fn keep(&mut self, s: &str) -> (u32, u32) {
        let start = self.arena.len() as u32;
        self.arena.push_str(s);
        (start, self.arena.len() as u32)
    }

    fn add(&mut self, offset: u64, line: &[u8]) {
        self.lines += 1;
        let line = trim_end(line);
        if line.is_empty() {
            return;
        }
        match index_line(line) {
            Some(info) if info.tag_name == "session" => self.skipped.push((self.lines, offset, true)),
            Some(info) => {
                let id = self.keep(&info.id);
                let parent = info.parent_id.as_deref().map(|p| self.keep(p));
                let tag = EntryTag::from_type_name(info.tag_name.as_bytes());
                self.recs.push(Rec {
                    offset,
                    line: self.lines as u32,
                    len: line.len() as u32,
                    tag,
                    role: info.role,
                    id,
                    parent,
                });
            }
            None => self.skipped.push((self.lines, offset, false)),
        }
    }
}

/// Indexes `[from, to)` in one part per core, split at line starts.
fn scan_parts(file: &File, from: u64, to: u64) -> std::io::Result<Vec<Part>> {
    let threads = if to - from < PARALLEL_MIN_BYTES {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8)
    };
    let mut bounds = vec![from];
    for i in 1..threads as u64 {
        let at = next_line_start(file, from + (to - from) * i / threads as u64, to)?;
        if bounds.last().is_some_and(|&b| at > b) && at < to {
            bounds.push(at);
        }
    }
    bounds.push(to);
    let scan_one = |(a, b): (u64, u64)| -> std::io::Result<Part> {
        let mut part = Part {
            recs: Vec::with_capacity(usize::try_from((b - a) / 1024).unwrap_or(0)),
            ..Part::default()
        };
        for_each_line(file, a, b, |offset, line| part.add(offset, line))?;
        Ok(part)
    };
    let ranges: Vec<(u64, u64)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
    if let [only] = ranges.as_slice() {
        // A small file: no thread scope to set up.
        return Ok(vec![scan_one(*only)?]);
    }
    std::thread::scope(|scope| {
        let Some((first, rest)) = ranges.split_first() else {
            return Ok(Vec::new());
        };
        let handles: Vec<_> = rest.iter().map(|&r| scope.spawn(move || scan_one(r))).collect();
        let mut parts = vec![scan_one(*first)?];
        for h in handles {
            parts.push(h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))?);
        }
        Ok(parts)
    })
}

/// The first line start at or after `at` (`to` if none before it).
fn next_line_start(file: &File, at: u64, to: u64) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut pos = at.saturating_sub(1); // a newline just before `at` makes `at` a line start
    while pos < to {
        let n = usize::try_from(to - pos).unwrap_or(usize::MAX).min(buf.len());
        file.read_exact_at(&mut buf[..n], pos)?;
        if let Some(nl) = memchr(b'\n', &buf[..n]) {
            return Ok(pos + nl as u64 + 1);
        }
        pos += n as u64;
    }
    Ok(to)
}

/// Parses the first non-blank line as the header. Returns it and the offset after its newline
/// (`len + 1` when the file ends without one).
fn read_header(file: &File, path: &Path, len: u64) -> Result<(SessionHeader, u64), SessionStoreError> {
    let bad = |reason: String| SessionStoreError::BadHeader {
        path: path.to_path_buf(),
        reason,
    };
    let io = |source| SessionStoreError::Io {
        action: "read",
        path: path.to_path_buf(),
        source,
    };
    let mut buf = Vec::new();
    let mut want = 64 * 1024;
    let (start, end) = loop {
        let n = usize::try_from(len.min(want as u64)).unwrap_or(want);
        buf.resize(n, 0);
        file.read_exact_at(&mut buf, 0).map_err(io)?;
        let start = buf.iter().position(|b| !b.is_ascii_whitespace());
        match start {
            None if (n as u64) == len => return Err(bad("the file is empty".to_owned())),
            Some(s) => match memchr(b'\n', &buf[s..]) {
                Some(nl) => break (s, s + nl),
                None if (n as u64) == len => break (s, n),
                None => {}
            },
            None => {}
        }
        want *= 4;
    };
    let line = trim_end(&buf[start..end]);
    let header: SessionHeader = serde_json::from_slice(line).map_err(|e| bad(e.to_string()))?;
    if header.entry_type != "session" {
        return Err(bad(format!(
            "the first line is a `{}` entry, not a session header",
            header.entry_type
        )));
    }
    match header.version {
        Some(2..) => {}
        v => {
            return Err(SessionStoreError::UnsupportedVersion {
                path: path.to_path_buf(),
                version: v.unwrap_or(1),
            });
        }
    }
    Ok((header, end as u64 + 1))
}

/// Finds and validates the last line. Returns the tail state and where indexing stops.
fn check_tail(file: &File, path: &Path, from: u64, len: u64) -> Result<(Tail, u64), SessionStoreError> {
    let io = |source| SessionStoreError::Io {
        action: "read",
        path: path.to_path_buf(),
        source,
    };
    let mut window: u64 = 64 * 1024;
    let mut buf = Vec::new();
    let (start, line_start, line_end) = loop {
        let start = len.saturating_sub(window).max(from);
        buf.resize(usize::try_from(len - start).unwrap_or(0), 0);
        file.read_exact_at(&mut buf, start).map_err(io)?;
        match last_line(&buf, start == from) {
            None => window *= 4,
            Some(None) => return Ok((Tail::Clean, len)), // only blank lines after the header
            Some(Some((s, e))) => break (start, s, e),
        }
    };
    let at = start + line_start as u64;
    let terminated = line_end < buf.len();
    let complete = SessionEntry::from_json(trim_end(&buf[line_start..line_end])).is_ok();
    let tail = match (complete, terminated) {
        (true, true) => Tail::Clean,
        (true, false) => Tail::MissingNewline,
        (false, _) => {
            tracing::warn!(
                file = %path.display(),
                offset = at,
                bytes = len - at,
                "session file ends with a torn line; it is saved aside and cut off before the next append"
            );
            Tail::Torn { from: at }
        }
    };
    let scan_end = if let Tail::Torn { from } = tail { from } else { len };
    Ok((tail, scan_end))
}

/// The last line of `buf`: the bytes after the last newline when `buf` does not end with one,
/// else the last non-blank line (without its newline). `Some(None)` when there is none,
/// `None` when the line may start before `buf` (`starts_line`: `buf` begins at a line start).
fn last_line(buf: &[u8], starts_line: bool) -> Option<Option<(usize, usize)>> {
    if buf.last() != Some(&b'\n') {
        return match memrchr(b'\n', buf) {
            Some(nl) => Some(Some((nl + 1, buf.len()))),
            None if starts_line => Some(Some((0, buf.len()))),
            None => None,
        };
    }
    let mut nl = buf.len() - 1; // buf[nl] == b'\n'
    loop {
        let line_start = match memrchr(b'\n', &buf[..nl]) {
            Some(p) => p + 1,
            None if starts_line => 0,
            None => return None,
        };
        if !trim_end(&buf[line_start..nl]).is_empty() {
            return Some(Some((line_start, nl)));
        }
        if line_start == 0 {
            return Some(None);
        }
        nl = line_start - 1;
    }
}

/// Calls `f(offset, line)` for every line in `[from, to)` (without its newline; the last one
/// may lack it), reading `CHUNK` bytes at a time into one buffer.
pub(crate) fn for_each_line(file: &File, from: u64, to: u64, mut f: impl FnMut(u64, &[u8])) -> std::io::Result<()> {
    let mut buf = vec![0u8; CHUNK.min(usize::try_from(to - from).unwrap_or(CHUNK))];
    let mut base = from; // file offset of buf[0]
    let mut filled = 0;
    loop {
        let remaining = to - (base + filled as u64);
        let want = (buf.len() - filled).min(usize::try_from(remaining).unwrap_or(usize::MAX));
        file.read_exact_at(&mut buf[filled..filled + want], base + filled as u64)?;
        filled += want;
        let at_end = base + filled as u64 == to;
        let mut line_start = 0;
        for nl in memchr::memchr_iter(b'\n', &buf[..filled]) {
            f(base + line_start as u64, &buf[line_start..nl]);
            line_start = nl + 1;
        }
        if at_end {
            if line_start < filled {
                f(base + line_start as u64, &buf[line_start..filled]);
            }
            return Ok(());
        }
        if line_start == 0 {
            buf.resize(buf.len() * 2, 0); // a line longer than the buffer
        } else {
            buf.copy_within(line_start..filled, 0);
            filled -= line_start;
            base += line_start as u64;
        }
    }
}

/// What indexing needs from one line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct LineInfo<'a> {
    pub(crate) tag_name: Cow<'a, str>,
    pub(crate) id: Cow<'a, str>,
    pub(crate) parent_id: Option<Cow<'a, str>>,
    pub(crate) role: Option<RoleTag>,
}

/// Indexes one non-blank line; `None` if it is not an entry (no JSON object, no string `id`).
pub(crate) fn index_line(line: &[u8]) -> Option<LineInfo<'_>> {
    if line.last() != Some(&b'}') {
        return None;
    }
    prefix(line).or_else(|| probe(line))
}

/// The fast path: pi's key order, no escapes in the leading strings.
fn prefix(line: &[u8]) -> Option<LineInfo<'_>> {
    let rest = line.strip_prefix(b"{\"type\":\"")?;
    let (tag_name, rest) = take_str(rest)?;
    let rest = rest.strip_prefix(b",\"id\":\"")?;
    let (id, rest) = take_str(rest)?;
    let rest = rest.strip_prefix(b",\"parentId\":")?;
    let (parent_id, rest) = match rest.strip_prefix(b"null") {
        Some(rest) => (None, rest),
        None => {
            let (p, rest) = take_str(rest.strip_prefix(b"\"")?)?;
            (Some(p), rest)
        }
    };
    let role = if tag_name == "message" {
        let rest = rest.strip_prefix(b",\"timestamp\":\"")?;
        let (_, rest) = take_str(rest)?;
        let rest = rest.strip_prefix(b",\"message\":{\"role\":\"")?;
        let (role, _) = take_str(rest)?;
        Some(RoleTag::from_role_name(role.as_bytes()))
    } else {
        None
    };
    Some(LineInfo {
        tag_name: Cow::Borrowed(tag_name),
        id: Cow::Borrowed(id),
        parent_id: parent_id.map(Cow::Borrowed),
        role,
    })
}

/// A JSON string body up to its closing quote; `None` if it has escapes (left to the probe).
fn take_str(s: &[u8]) -> Option<(&str, &[u8])> {
    let end = memchr(b'"', s)?;
    let body = &s[..end];
    if memchr(b'\\', body).is_some() {
        return None;
    }
    Some((std::str::from_utf8(body).ok()?, &s[end + 1..]))
}

#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(rename = "type", borrow, default)]
    tag_name: Cow<'a, str>,
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(rename = "parentId", borrow, default)]
    parent_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<RoleProbe<'a>>,
}

#[derive(Deserialize)]
struct RoleProbe<'a> {
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
}

/// The slow path: any key order, escapes, unknown fields.
fn probe(line: &[u8]) -> Option<LineInfo<'_>> {
    let p: Probe<'_> = serde_json::from_slice(line).ok()?;
    let role = (p.tag_name == "message").then(|| {
        p.message
            .and_then(|m| m.role)
            .map_or(RoleTag::Other, |r| RoleTag::from_role_name(r.as_bytes()))
    });
    Some(LineInfo {
        tag_name: p.tag_name,
        id: p.id,
        parent_id: p.parent_id,
        role,
    })
}

pub(crate) fn trim_end(line: &[u8]) -> &[u8] {
    let end = line.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(0, |p| p + 1);
    &line[..end]
}
