//! Names: scopes, session file names, timestamps.

use chrono::{DateTime, SecondsFormat, Utc};
use std::path::{Path, PathBuf};
use volcanic_abstractions::sessions::{SessionHeader, SessionStoreError};

/// pi's directory name for a working directory: `--` + the path without its leading separator,
/// with `/`, `\` and `:` replaced by `-`, + `--` (`/home/dev/project` → `--home-dev-project--`).
/// The console keeps its sessions in `~/.volcanic/agent/sessions/<this>/`.
pub fn cwd_scope(cwd: &Path) -> String {
    let s = cwd.to_string_lossy();
    let s = s.strip_prefix(['/', '\\']).unwrap_or(&s);
    let encoded: String = s
        .chars()
        .map(|c| if matches!(c, '/' | '\\' | ':') { '-' } else { c })
        .collect();
    format!("--{encoded}--")
}

/// pi's file name for a session: `<header timestamp with : and . replaced by ->_<id>.jsonl`,
/// e.g. `2026-01-15T08-59-55-000Z_019bc0e1-fef8-711e-bec2-7378a661c935.jsonl`.
pub fn session_file_name(header: &SessionHeader) -> String {
    let stamp: String = header
        .timestamp
        .chars()
        .map(|c| if matches!(c, ':' | '.') { '-' } else { c })
        .collect();
    format!("{stamp}_{}.jsonl", header.id)
}

/// `root/scope` for a scope of normal relative components (`123/main`); `""` is the root itself.
pub(crate) fn scope_dir(root: &Path, scope: &str) -> Result<PathBuf, SessionStoreError> {
    let invalid = |reason| SessionStoreError::InvalidScope {
        scope: scope.to_owned(),
        reason,
    };
    let mut dir = root.to_path_buf();
    if scope.is_empty() {
        return Ok(dir);
    }
    if scope.starts_with('/') {
        return Err(invalid("it must be a relative path"));
    }
    for part in scope.split('/') {
        match part {
            "" => return Err(invalid("it has an empty path component")),
            "." | ".." => return Err(invalid("`.` and `..` are not allowed")),
            p if p.contains('\0') => return Err(invalid("it contains a NUL byte")),
            p => dir.push(p),
        }
    }
    Ok(dir)
}

/// ISO-8601 UTC with milliseconds, as pi writes entry timestamps (`2026-01-15T09:00:00.000Z`).
pub(crate) fn iso(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Epoch milliseconds of an entry timestamp (pi's `new Date(timestamp).getTime()`); 0 if unreadable.
pub(crate) fn iso_to_ms(timestamp: &str) -> i64 {
    DateTime::parse_from_rfc3339(timestamp).map_or(0, |t| t.timestamp_millis())
}
