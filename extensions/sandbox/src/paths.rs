//! Paths: resolving them, opening the system around protected folders, finding a process's
//! workspace and its private temp folder.

use std::path::{Component, Path, PathBuf};

/// `path` made absolute (from the current directory), `.` and `..` removed, and its longest
/// existing prefix resolved through symbolic links (Landlock rules bind inodes, so the rules and
/// the checks must name the real folders).
pub fn resolved(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut lexical = PathBuf::new();
    for part in absolute.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                lexical.pop();
            }
            other => lexical.push(other),
        }
    }
    let mut existing = lexical.as_path();
    let mut missing = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return missing
                .iter()
                .rev()
                .fold(real, |p, part: &&std::ffi::OsStr| p.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name);
                existing = parent;
            }
            _ => return lexical,
        }
    }
}

/// The paths that give everything beneath `roots` except `closed`: a root with a closed path
/// strictly beneath it is replaced by its entries (recursively), leaving the closed one out; a
/// closed root is dropped. Entries made later in an opened-around folder stay closed. Roots
/// that do not exist are dropped.
pub(crate) fn open_around(roots: &[PathBuf], closed: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for root in roots {
        open_one(root, closed, &mut out);
    }
    out
}

fn open_one(root: &Path, closed: &[PathBuf], out: &mut Vec<PathBuf>) {
    if closed.iter().any(|c| root.starts_with(c)) || std::fs::symlink_metadata(root).is_err() {
        return;
    }
    if !closed.iter().any(|c| c.starts_with(root)) {
        out.push(root.to_owned());
        return;
    }
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        // A symbolic link inside would be resolved when opened: name its target instead.
        let path = if entry.file_type().is_ok_and(|t| t.is_symlink()) {
            resolved(&path)
        } else {
            path
        };
        open_one(&path, closed, out);
    }
}

/// The workspace of a process started in `cwd`: the folder directly under `workspaces_root`
/// when `cwd` lies beneath it, else `cwd` itself (both resolved); `None` when `cwd` is
/// `workspaces_root` itself (every chat's workspace: no process gets that).
pub(crate) fn workspace_of(cwd: &Path, workspaces_root: Option<&Path>) -> Option<PathBuf> {
    let cwd = resolved(cwd);
    match workspaces_root.map(|root| (root, cwd.strip_prefix(root))) {
        Some((root, Ok(rest))) => rest.components().next().map(|first| root.join(first)),
        Some((_, Err(_))) | None => Some(cwd),
    }
}

/// The private folders of `workspace` under `temp_root`: `(tmp, home)`, made 0700 if missing.
/// The key is the workspace's folder name and a hash of its full path (two workspaces never
/// share one).
pub(crate) fn private_dirs(temp_root: &Path, workspace: &Path) -> std::io::Result<(PathBuf, PathBuf)> {
    use std::hash::{Hash, Hasher};
    use std::os::unix::fs::DirBuilderExt;
    let mut hasher = std::hash::DefaultHasher::new();
    workspace.hash(&mut hasher);
    let name: String = workspace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let base = temp_root.join(format!("{name}-{:016x}", hasher.finish()));
    let (tmp, home) = (base.join("tmp"), base.join("home"));
    for dir in [&tmp, &home] {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    }
    Ok((tmp, home))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_root_is_opened_around_a_closed_folder_beneath_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = resolved(dir.path());
        for sub in ["a/secret", "a/open", "b"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        let mut opened = open_around(std::slice::from_ref(&root), &[root.join("a/secret")]);
        opened.sort();
        assert_eq!(opened, vec![root.join("a/open"), root.join("b")]);
        assert!(open_around(std::slice::from_ref(&root), std::slice::from_ref(&root)).is_empty());
        assert_eq!(open_around(std::slice::from_ref(&root), &[]), vec![root]);
    }

    #[test]
    fn the_workspace_is_the_folder_under_the_root_or_the_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let root = resolved(dir.path());
        std::fs::create_dir_all(root.join("chat1/src")).unwrap();
        assert_eq!(
            workspace_of(&root.join("chat1/src"), Some(&root)),
            Some(root.join("chat1"))
        );
        assert_eq!(workspace_of(&root.join("chat1/src/../.."), Some(&root)), None);
        let other = tempfile::tempdir().unwrap();
        assert_eq!(workspace_of(other.path(), Some(&root)), Some(resolved(other.path())));
    }
}
