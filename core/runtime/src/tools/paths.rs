//! Path arguments of the built-in tools.

use std::path::{Path, PathBuf};

/// Resolves a path argument: `~` and `~/…` expand to `$HOME`, a leading `@` (which models copy
/// from file mentions) is dropped, and a relative path is taken against `cwd`.
pub fn resolve_path(cwd: &Path, path: &str) -> PathBuf {
    let path = path.strip_prefix('@').unwrap_or(path);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let expanded = match (path, home) {
        ("~", Some(home)) => home,
        (p, Some(home)) if p.starts_with("~/") => home.join(&p[2..]),
        (p, _) => PathBuf::from(p),
    };
    if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    }
}

/// The image MIME type of `bytes` from its signature (PNG, JPEG, GIF, WebP), if it is one.
pub fn image_mime_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Whether the file name has an image extension (png, jpg, jpeg, gif, webp; any case).
pub fn has_image_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .is_some_and(|e| matches!(e.as_str(), "png" | "jpg" | "jpeg" | "gif" | "webp"))
}

/// Checks that `path` (absolute) lies inside `boundary` the way the kernel would see it: the
/// longest existing prefix resolved through symbolic links and `..` (`..` after a missing
/// folder cannot be resolved: refused), and an existing regular file with other hard links refused (one could lead out
/// of the workspace). `write` asks for write access. `None`: no boundary, always fine.
/// The error says which path was refused and why, for the model.
pub fn check_reach(
    boundary: Option<&volcanic_abstractions::processes::FileBoundary>,
    path: &Path,
    write: bool,
) -> Result<(), volcanic_abstractions::tools::ToolError> {
    let Some(boundary) = boundary else { return Ok(()) };
    let refused = |why: &str| {
        volcanic_abstractions::tools::ToolError::msg(format!(
            "{} is outside what this chat's sandbox may {}: {why} (the tools reach the workspace, its \
             temp folder and the system's read-only folders; docs/sandbox.md)",
            path.display(),
            if write { "write" } else { "read" }
        ))
    };
    let mut existing = path;
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    let real = loop {
        match std::fs::canonicalize(existing) {
            Ok(real) => break real,
            Err(_) => match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name);
                    existing = parent;
                }
                _ => return Err(refused("it cannot be resolved")),
            },
        }
    };
    if rest.is_empty()
        && let Ok(meta) = std::fs::metadata(&real)
    {
        use std::os::unix::fs::MetadataExt;
        if meta.is_file() && meta.nlink() > 1 {
            return Err(refused("the file has other hard links"));
        }
    }
    let target = rest.iter().rev().fold(real, |p, part| p.join(part));
    if boundary.allows(&target, write) {
        Ok(())
    } else {
        Err(refused(&format!("it resolves to {}", target.display())))
    }
}
